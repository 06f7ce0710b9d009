package mcpparse

import (
	"crypto/sha256"
	"strconv"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// keyRec is the first member of an object whose name case-folds onto a
// protocol member without being it.
type keyRec struct {
	off       int    // offset of the name
	variantOf string // the protocol member; "" when there is none
}

// envRec is what the scan records of one message for the envelope and
// target checks that follow it: where each protocol member is.
type envRec struct {
	v                                         vref // the message itself
	jsonrpc, id, method, params, result, errv vref
	unknown                                   keyRec // first non-protocol member
	unknownSet                                bool
	methodSeen, methodArgs                    bool // method scanned, and is tools/call or prompts/get

	name, uri, args, ref, notifs, task vref // params members
	pVariant, nVariant                 keyRec
	argsSum                            [sha256.Size]byte
	hashed                             bool
	argMems                            [2]int // p.argMems[argMems[0]:argMems[1]]: the members of args

	refType, refName, refURI vref
	refVariant               keyRec

	subs        vref // notifications.resourceSubscriptions
	subsVariant keyRec
	subsN       int // elements, of which the first MaxSubscriptions are p.subs[subsAt:]
	subsAt      int

	code, message vref // error members

	proto int // 1 + offset of the first "__proto__" member in params; 0: none
}

// reservedKey is the member name refused anywhere in params (ErrReservedKey).
const reservedKey = "__proto__"

// isObject reports whether the next value is an object (without consuming
// or counting it).
func (p *scanner) isObject() bool { return p.pos < len(p.in) && p.in[p.pos] == '{' }

// parse scans a whole body, then checks each message.
func (p *scanner) parse() (*Body, *ParseError) {
	if err := p.begin(); err != nil {
		return nil, err
	}
	batch := p.in[p.pos] == '['
	rootOff := p.pos
	if !batch {
		if err := p.message(); err != nil {
			return nil, err
		}
	} else if err := p.batch(); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if batch && len(p.envs) == 0 {
		return nil, &ParseError{Kind: ErrBatchEmpty, Offset: int64(rootOff), Index: -1, Msg: "empty batch"}
	}
	var out *Body
	if len(p.envs) == 1 { // the usual body: one allocation for it and its message
		b := new(struct {
			body Body
			msg  [1]Message
		})
		out = &b.body
		out.Batch, out.Messages = batch, b.msg[:]
	} else {
		out = &Body{Batch: batch, Messages: make([]Message, len(p.envs))}
	}
	for i := range p.envs {
		index := i
		if !batch {
			index = -1
		}
		if err := p.check(&p.envs[i], index, &out.Messages[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batch scans a top-level array of messages.
func (p *scanner) batch() *ParseError {
	if err := p.count(); err != nil {
		return err
	}
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '['
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		p.skipWS()
		p.index = len(p.envs)
		if len(p.envs) >= p.lim.MaxBatch {
			return p.fail(ErrTooManyElements, p.pos, "more than "+strconv.Itoa(p.lim.MaxBatch)+" messages in the batch")
		}
		if err := p.message(); err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.in) {
			return p.fail(ErrSyntax, p.pos, "unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			p.index = -1
			return nil
		default:
			return p.fail(ErrSyntax, p.pos, "expected ',' or ']'")
		}
	}
}

// message scans one message (any value; an object is an envelope).
func (p *scanner) message() *ParseError {
	p.envs = append(p.envs, envRec{})
	r := &p.envs[len(p.envs)-1]
	if !p.isObject() {
		var err *ParseError
		r.v, err = p.ref(false)
		return err
	}
	off := p.pos
	if err := p.count(); err != nil {
		return err
	}
	err := p.members(func(nm name, key []byte, keyOff int) (err *ParseError) {
		switch string(key) {
		case "jsonrpc":
			r.jsonrpc, err = p.ref(false)
		case "id":
			r.id, err = p.ref(true)
		case "method":
			r.method, err = p.ref(false)
			if err == nil && r.method.kind == vString {
				m := p.stringAt(r.method)
				r.methodSeen, r.methodArgs = true, string(m) == mcpmethod.ToolsCall || string(m) == mcpmethod.PromptsGet
			}
		case "params":
			r.params, err = p.special(p.params, r)
		case "result":
			r.result, err = p.ref(false)
		case "error":
			r.errv, err = p.special(p.errorObject, r)
		default:
			if !r.unknownSet {
				r.unknown, r.unknownSet = keyRec{keyOff, p.variantOf(nm, envelopeMembers)}, true
			}
			_, err = p.ref(false)
		}
		return err
	})
	r.v = vref{kind: vObject, off: off, end: p.pos}
	return err
}

// special scans an object with scan, or any other value as ref does.
func (p *scanner) special(scan func(*envRec) *ParseError, r *envRec) (vref, *ParseError) {
	if !p.isObject() {
		return p.ref(false)
	}
	off := p.pos
	if err := p.count(); err != nil {
		return vref{}, err
	}
	err := scan(r)
	return vref{kind: vObject, off: off, end: p.pos}, err
}

// members scans the object at p.pos, calling fn with each member's name
// (checked) and p.pos at its value, which fn must scan.
func (p *scanner) members(fn func(nm name, key []byte, keyOff int) *ParseError) *ParseError {
	o, empty, err := p.open()
	if err != nil || empty {
		return err
	}
	for {
		nm, key, keyOff, _, err := p.memberName(&o)
		if err != nil {
			return err
		}
		if err := fn(nm, key, keyOff); err != nil {
			return err
		}
		more, err := p.next()
		if err != nil {
			return err
		}
		if !more {
			p.close(&o)
			return nil
		}
	}
}

// variant records in *k the first member named a variant of names.
func (p *scanner) variant(k *keyRec, nm name, keyOff int, names []string) {
	if k.variantOf == "" {
		if n := p.variantOf(nm, names); n != "" {
			*k = keyRec{keyOff, n}
		}
	}
}

// params scans the params object: the targets, and the RFC 8785 digest of
// arguments unless the method is known not to take any.
func (p *scanner) params(r *envRec) *ParseError {
	p.inParams, p.proto = true, 0
	defer func() { r.proto, p.inParams = p.proto, false }()
	return p.members(func(nm name, key []byte, keyOff int) (err *ParseError) {
		p.variant(&r.pVariant, nm, keyOff, paramsMembers)
		p.variant(&r.nVariant, nm, keyOff, notifMembers)
		switch string(key) {
		case "name":
			r.name, err = p.ref(false)
		case "uri":
			r.uri, err = p.ref(false)
		case "arguments":
			if !p.isObject() || r.methodSeen && !r.methodArgs {
				r.args, err = p.ref(false)
				return err
			}
			off := p.pos
			if err := p.count(); err != nil {
				return err
			}
			p.out = p.out[:0]
			p.argDepth = p.depth + 1
			r.argMems[0] = len(p.argMems)
			err := p.object(true)
			p.argDepth = 0
			if err != nil {
				return err
			}
			r.argMems[1] = len(p.argMems)
			r.args = vref{kind: vObject, off: off, end: p.pos}
			r.argsSum, r.hashed = sha256.Sum256(p.out), true
		case "task":
			r.task, err = p.ref(false)
		case "ref":
			r.ref, err = p.special(p.refObject, r)
		case "notifications":
			r.notifs, err = p.special(p.notifications, r)
		default:
			_, err = p.ref(false)
		}
		return err
	})
}

// refObject scans completion/complete's params.ref.
func (p *scanner) refObject(r *envRec) *ParseError {
	return p.members(func(nm name, key []byte, keyOff int) (err *ParseError) {
		p.variant(&r.refVariant, nm, keyOff, refMembers)
		switch string(key) {
		case "type":
			r.refType, err = p.ref(false)
		case "name":
			r.refName, err = p.ref(false)
		case "uri":
			r.refURI, err = p.ref(false)
		default:
			_, err = p.ref(false)
		}
		return err
	})
}

// notifications scans subscriptions/listen's params.notifications.
func (p *scanner) notifications(r *envRec) *ParseError {
	return p.members(func(nm name, key []byte, keyOff int) (err *ParseError) {
		const subsKey = "resourceSubscriptions"
		if string(key) != subsKey {
			if r.subsVariant.variantOf == "" && string(p.bytes(nm.fold)) == "resourcesubscriptions" {
				r.subsVariant = keyRec{keyOff, subsKey}
			}
			_, err = p.ref(false)
			return err
		}
		if p.pos >= len(p.in) || p.in[p.pos] != '[' {
			r.subs, err = p.ref(false)
			return err
		}
		off := p.pos
		if err := p.count(); err != nil {
			return err
		}
		r.subsAt = len(p.subs)
		if err := p.elements(func() *ParseError {
			v, err := p.ref(false)
			if r.subsN < MaxSubscriptions {
				p.subs = append(p.subs, v)
			}
			r.subsN++
			return err
		}); err != nil {
			return err
		}
		r.subs = vref{kind: vArray, off: off, end: p.pos}
		return nil
	})
}

// elements scans the array at p.pos, calling fn with p.pos at each element.
func (p *scanner) elements(fn func() *ParseError) *ParseError {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '['
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		p.skipWS()
		if err := fn(); err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.in) {
			return p.fail(ErrSyntax, p.pos, "unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return nil
		default:
			return p.fail(ErrSyntax, p.pos, "expected ',' or ']'")
		}
	}
}

// errorObject scans a response's error object.
func (p *scanner) errorObject(r *envRec) *ParseError {
	return p.members(func(_ name, key []byte, _ int) (err *ParseError) {
		switch string(key) {
		case "code":
			r.code, err = p.ref(false)
		case "message":
			r.message, err = p.ref(false)
		default:
			_, err = p.ref(false)
		}
		return err
	})
}

// stringAt returns the decoded string v (scanned before, so valid),
// aliasing the input or p.str.
func (p *scanner) stringAt(v vref) []byte {
	pos := p.pos
	p.pos = v.off
	s, _, _ := p.scanString()
	p.pos = pos
	return s
}

// keyAt returns the member name at off, decoded.
func (p *scanner) keyAt(off int) string {
	return string(p.stringAt(vref{kind: vString, off: off}))
}
