package mcpparse

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// check applies the envelope and target rules to one scanned message and
// fills m. index is the batch index or -1.
func (p *scanner) check(r *envRec, index int, m *Message) *ParseError {
	in := p.in
	m.exactKeys = p.exactKeys
	fail := func(k ErrorKind, off int, msg string) *ParseError {
		return &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if r.v.kind != vObject {
		return fail(ErrInvalidRequest, r.v.off, "a JSON-RPC message must be an object")
	}
	if r.unknownSet {
		key := p.keyAt(r.unknown.off)
		if n := r.unknown.variantOf; n != "" {
			return fail(ErrCaseVariantKey, r.unknown.off, "member "+quoteKey(key)+" is a case variant of "+quoteKey(n))
		}
		return fail(ErrInvalidRequest, r.unknown.off, "unknown member "+quoteKey(key)+" in a JSON-RPC message")
	}
	jsonrpc, id, method, params, result, errv := r.jsonrpc, r.id, r.method, r.params, r.result, r.errv
	if jsonrpc.kind == 0 {
		return fail(ErrInvalidRequest, r.v.off, `missing "jsonrpc"`)
	}
	if jsonrpc.kind != vString || string(p.stringAt(jsonrpc)) != "2.0" {
		return fail(ErrInvalidRequest, jsonrpc.off, `"jsonrpc" must be "2.0"`)
	}
	if id.kind != 0 {
		switch {
		case id.kind == vString, id.kind == vNull:
		case id.kind == vNumber && isIntegerLiteral(in[id.off:id.end]):
		default:
			return fail(ErrInvalidRequest, id.off, `"id" must be a string, an integer or null`)
		}
		m.ID = in[id.off:id.end]
	}
	if params.kind != 0 {
		if params.kind != vObject {
			return fail(ErrInvalidRequest, params.off, `"params" must be an object`)
		}
		m.Params = in[params.off:params.end]
		if r.task.kind != 0 {
			m.Task = in[r.task.off:r.task.end]
		}
		if r.proto != 0 {
			return fail(ErrReservedKey, r.proto-1, `a member named "__proto__" in params (JavaScript decoders drop it)`)
		}
	}

	if method.kind == 0 { // response
		m.Kind = KindResponse
		switch {
		case id.kind == 0:
			return fail(ErrInvalidRequest, r.v.off, `a response needs an "id"`)
		case params.kind != 0:
			return fail(ErrInvalidRequest, params.off, `a response must not carry "params"`)
		case (result.kind == 0) == (errv.kind == 0):
			return fail(ErrInvalidRequest, r.v.off, `a response needs exactly one of "result" and "error"`)
		case id.kind == vNull && errv.kind == 0:
			return fail(ErrInvalidRequest, id.off, `a null "id" is only allowed on an error response`)
		}
		if errv.kind != 0 {
			if errv.kind != vObject {
				return fail(ErrInvalidRequest, errv.off, `"error" must be an object`)
			}
			if r.code.kind != vNumber || !isIntegerLiteral(in[r.code.off:r.code.end]) {
				return fail(ErrInvalidRequest, errv.off, `"error.code" must be an integer`)
			}
			if r.message.kind != vString {
				return fail(ErrInvalidRequest, errv.off, `"error.message" must be a string`)
			}
		}
		if result.kind != 0 {
			m.Result = in[result.off:result.end]
		}
		m.ArgsDigest = emptyObjectDigest
		return nil
	}

	if method.kind != vString || method.end-method.off == 2 {
		return fail(ErrInvalidRequest, method.off, `"method" must be a non-empty string`)
	}
	m.Method = internMethod(p.stringAt(method))
	if result.kind != 0 || errv.kind != 0 {
		off := result.off
		if result.kind == 0 {
			off = errv.off
		}
		return fail(ErrInvalidRequest, off, `a request or notification must not carry "result" or "error"`)
	}
	notif := strings.HasPrefix(m.Method, "notifications/")
	switch {
	case id.kind == 0 && !notif:
		return fail(ErrInvalidRequest, r.v.off, `missing "id": only "notifications/" methods may be notifications`)
	case id.kind == 0:
		m.Kind = KindNotification
	case notif:
		return fail(ErrInvalidRequest, id.off, `a "notifications/" method must not carry an "id"`)
	case id.kind == vNull:
		return fail(ErrInvalidRequest, id.off, `a request "id" must not be null`)
	default:
		m.Kind = KindRequest
	}
	return p.target(r, index, m)
}

// target checks params' member names and fills the method's target and
// arguments.
func (p *scanner) target(r *envRec, index int, m *Message) *ParseError {
	fail := func(k ErrorKind, off int, msg string) *ParseError {
		return &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	variant := func(k keyRec) *ParseError {
		return fail(ErrCaseVariantKey, k.off, "member "+quoteKey(p.keyAt(k.off))+" is a case variant of "+quoteKey(k.variantOf))
	}
	hasParams := r.params.kind != 0
	if hasParams && r.pVariant.variantOf != "" {
		return variant(r.pVariant)
	}
	// strBytes returns a required non-empty string member f of obj,
	// decoded: it aliases the input or p.str, until the next string scan.
	strBytes := func(obj, f vref, where, key string, off int) ([]byte, *ParseError) {
		if obj.kind == 0 {
			return nil, fail(ErrInvalidParams, off, `missing "`+where+`"`)
		}
		if f.kind == 0 {
			return nil, fail(ErrInvalidParams, obj.off, `missing "`+where+"."+key+`"`)
		}
		if f.kind != vString || f.end-f.off == 2 {
			return nil, fail(ErrInvalidParams, f.off, `"`+where+"."+key+`" must be a non-empty string`)
		}
		return p.stringAt(f), nil
	}
	// str is strBytes as a string.
	str := func(obj, f vref, where, key string, off int) (string, *ParseError) {
		b, err := strBytes(obj, f, where, key, off)
		return string(b), err
	}
	// bounded fails when s is longer than max characters.
	bounded := func(s []byte, max int, f vref, where string) *ParseError {
		if utf8.RuneCount(s) > max {
			return fail(ErrInvalidParams, f.off, `"`+where+`" is longer than `+strconv.Itoa(max)+" characters")
		}
		return nil
	}
	msgOff := r.params.off
	digested := false // named set m.ArgsDigest
	// named returns the tool or prompt name of a tools/call or
	// prompts/get, and sets m.ArgsDigest when the arguments were hashed:
	// the two strings share one allocation.
	named := func(f vref, max int, where string) (string, *ParseError) {
		b, err := strBytes(r.params, f, "params", "name", msgOff)
		if err == nil {
			err = bounded(b, max, f, where)
		}
		if err != nil {
			return "", err
		}
		if !r.hashed || r.args.kind != vObject {
			return string(b), nil
		}
		var sb strings.Builder
		sb.Grow(digestLen + len(b))
		sb.Write(appendDigest(make([]byte, 0, digestLen), r.argsSum))
		sb.Write(b)
		joint := sb.String()
		m.ArgsDigest, digested = joint[:digestLen], true
		return joint[digestLen:], nil
	}
	var err *ParseError
	takesArgs := false
	switch m.Method {
	case mcpmethod.ToolsCall:
		m.Tool, err = named(r.name, MaxToolNameLen, "params.name")
		takesArgs = true
	case mcpmethod.PromptsGet:
		m.Prompt, err = named(r.name, MaxPromptNameLen, "params.name")
		takesArgs = true
	case mcpmethod.ResourcesRead, mcpmethod.ResourcesSubscribe, mcpmethod.ResourcesUnsubscribe:
		m.URI, err = str(r.params, r.uri, "params", "uri", msgOff)
	case mcpmethod.SubscriptionsListen:
		err = p.subscriptions(r, m, fail, variant)
	case mcpmethod.CompletionComplete:
		if !hasParams {
			return fail(ErrInvalidParams, msgOff, `missing "params"`)
		}
		ref := r.ref
		if ref.kind != vObject {
			return fail(ErrInvalidParams, r.params.off, `"params.ref" must be an object`)
		}
		if r.refVariant.variantOf != "" {
			return variant(r.refVariant)
		}
		m.RefType, err = str(ref, r.refType, "params.ref", "type", ref.off)
		if err != nil {
			return err
		}
		switch m.RefType {
		case "ref/prompt":
			var b []byte
			b, err = strBytes(ref, r.refName, "params.ref", "name", ref.off)
			if err == nil {
				err = bounded(b, MaxPromptNameLen, r.refName, "params.ref.name")
			}
			m.Prompt = string(b)
		case "ref/resource":
			m.URI, err = str(ref, r.refURI, "params.ref", "uri", ref.off)
		default:
			return fail(ErrInvalidParams, r.refType.off, `unknown "params.ref.type"`)
		}
	}
	if err != nil {
		return err
	}
	if !digested {
		m.ArgsDigest = emptyObjectDigest
	}
	if !takesArgs || r.args.kind == 0 {
		return nil
	}
	if r.args.kind != vObject {
		return fail(ErrInvalidParams, r.args.off, `"params.arguments" must be an object`)
	}
	if !r.hashed { // unreachable: arguments of these methods are always hashed
		return fail(ErrInvalidParams, r.args.off, `"params.arguments" not canonicalized`)
	}
	m.RawArguments = p.in[r.args.off:r.args.end]
	if !digested { // unreachable: named digests hashed arguments
		m.ArgsDigest = digestOf(r.argsSum)
	}
	if mems := p.argMems[r.argMems[0]:r.argMems[1]]; len(mems) > 0 {
		m.argOffs = m.argBuf[:0]
		if len(mems) > len(m.argBuf) {
			m.argOffs = make([]int32, 0, len(mems))
		}
		m.argOffs = m.argOffs[:len(mems)]
		for i, off := range mems {
			m.argOffs[i] = off - int32(r.args.off)
		}
	}
	return nil
}

// MaxSubscriptions bounds the resource URIs of one subscriptions/listen.
const MaxSubscriptions = 256

// subscriptions fills m.URIs from params.notifications.resourceSubscriptions.
func (p *scanner) subscriptions(r *envRec, m *Message, fail func(ErrorKind, int, string) *ParseError, variant func(keyRec) *ParseError) *ParseError {
	if r.params.kind == 0 {
		return fail(ErrInvalidParams, r.params.off, `missing "params"`)
	}
	if r.nVariant.variantOf != "" {
		return variant(r.nVariant)
	}
	if r.notifs.kind != vObject {
		return fail(ErrInvalidParams, r.params.off, `"params.notifications" must be an object`)
	}
	if r.subsVariant.variantOf != "" {
		return variant(r.subsVariant)
	}
	subs := r.subs
	if subs.kind == 0 {
		return nil
	}
	if subs.kind != vArray {
		return fail(ErrInvalidParams, subs.off, `"params.notifications.resourceSubscriptions" must be an array`)
	}
	if r.subsN > MaxSubscriptions {
		return fail(ErrTooManyElements, subs.off, "more than "+strconv.Itoa(MaxSubscriptions)+" resource subscriptions")
	}
	m.URIs = make([]string, 0, r.subsN)
	for _, e := range p.subs[r.subsAt : r.subsAt+r.subsN] {
		if e.kind != vString || e.end-e.off == 2 {
			return fail(ErrInvalidParams, e.off, `"params.notifications.resourceSubscriptions" holds a non-string or empty URI`)
		}
		m.URIs = append(m.URIs, string(p.stringAt(e)))
	}
	return nil
}

// isIntegerLiteral reports whether a number literal has no fraction and no
// exponent.
func isIntegerLiteral(lit []byte) bool {
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// knownMethods are the method names Parse returns without allocating:
// every client method of internal/mcpmethod's table.
var knownMethods = func() map[string]string {
	m := map[string]string{}
	for _, mm := range mcpmethod.Methods {
		if mm.From&mcpmethod.Client != 0 {
			m[mm.Name] = mm.Name
		}
	}
	return m
}()

// internMethod returns b as a string, shared for the common methods.
func internMethod(b []byte) string {
	if s, ok := knownMethods[string(b)]; ok {
		return s
	}
	return string(b)
}
