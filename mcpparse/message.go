package mcpparse

import (
	"crypto/sha256"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Kind is the JSON-RPC 2.0 message type of a Message.
type Kind int

// The kinds of Message.
const (
	// KindRequest has a method and a non-null id; it expects a response.
	KindRequest Kind = iota + 1
	// KindNotification has a method under "notifications/" and no id.
	KindNotification
	// KindResponse has no method, an id, and exactly one of result/error.
	KindResponse
)

// String returns "request", "notification" or "response", or "Kind(n)".
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one JSON-RPC message, validated. Its methods are not safe for
// concurrent use.
type Message struct {
	Kind Kind
	// ID is the id exactly as it appeared in the body: `7`, `"abc"`,
	// `12345678901234567890123`, or `null` (responses with null id only).
	// Nil when absent (notifications). Integer ids of any size are kept
	// byte for byte; they are exempt from the canonical-number rule.
	ID []byte
	// Method is the method name, byte-exact and case-sensitive; "" for
	// responses. Unknown methods are not an error here.
	Method string
	// Tool, URI, Prompt and RefType are the call's target, filled per method:
	//   tools/call                                -> Tool = params.name
	//   resources/read|subscribe|unsubscribe      -> URI = params.uri
	//   prompts/get                               -> Prompt = params.name
	//   completion/complete                       -> RefType = params.ref.type,
	//       and Prompt = ref.name ("ref/prompt") or URI = ref.uri ("ref/resource")
	// Each named member is required and must be a non-empty string
	// (else ErrInvalidParams).
	Tool, URI, Prompt, RefType string
	// URIs are the resource URIs of subscriptions/listen (MCP 2026-07-28)
	// params.notifications.resourceSubscriptions, in body order: each a
	// non-empty string, at most MaxSubscriptions of them
	// (ErrTooManyElements). params.notifications is required and must be
	// an object (else ErrInvalidParams). Nil for other methods.
	URIs []string
	// ArgsDigest is Digest(m.Arguments()), "sha256:" + lowercase hex: the
	// SHA-256 of the RFC 8785 form of params.arguments for tools/call and
	// prompts/get, of `{}` when absent, for every other method, and for
	// responses. Parse computes it in its one pass over the body.
	ArgsDigest string
	// RawArguments is params.arguments exactly as in the body, for
	// tools/call and prompts/get; nil when absent and for other methods.
	// It aliases the body passed to Parse.
	RawArguments []byte
	// Params is the params object exactly as in the body; nil when absent.
	// It aliases the body passed to Parse.
	Params []byte

	args  map[string]any // Args, once decoded
	index *argIndex      // Arg's index of the top-level members, once built
	// argOffs are the top-level members of RawArguments as Parse scanned
	// them: pairs of name and value offsets. Nil for `{}`, and for a
	// Message not made by Parse (Arg then builds index).
	argOffs []int32
	argBuf  [8]int32 // argOffs of up to four members
	// exactKeys: parsed with ParseOptions.CaseSensitiveKeys, so
	// RawArguments may hold case variants that Arguments must admit.
	exactKeys bool
}

// argIndex locates the top-level members of RawArguments.
type argIndex struct {
	names []byte // decoded names, joined
	ends  []int  // end of each name in names
	vals  []int  // offset of each value in RawArguments
}

// Arg returns the top-level argument name decoded as Args documents, and
// whether there is one, decoding that member only: a policy expression
// reading args.amount does not decode the rest. The first call indexes the
// top-level members (one scan that skips nested values).
func (m *Message) Arg(name string) (any, bool) {
	if m.args != nil {
		v, ok := m.args[name]
		return v, ok
	}
	if m.RawArguments == nil {
		return nil, false
	}
	p := getScanner(m.RawArguments, unlimited)
	defer putScanner(p)
	if m.argOffs != nil {
		for i := 0; i+1 < len(m.argOffs); i += 2 {
			p.pos = int(m.argOffs[i])
			key, _, err := p.scanString()
			if err == nil && string(key) == name {
				p.pos = int(m.argOffs[i+1])
				return p.build(), true
			}
		}
		return nil, false
	}
	if m.index == nil {
		m.index = p.indexMembers()
	}
	x := m.index
	start := 0
	for i, end := range x.ends {
		if string(x.names[start:end]) == name {
			p.pos = x.vals[i]
			return p.build(), true
		}
		start = end
	}
	return nil, false
}

// indexMembers indexes the top-level members of the object at p.in, which
// the scan accepted (bounds are checked all the same).
func (p *scanner) indexMembers() *argIndex {
	x := &argIndex{}
	p.skipWS()
	p.pos++ // '{'
	for {
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return x
		}
		key, _, err := p.scanString()
		if err != nil {
			return x
		}
		x.names = append(x.names, key...)
		x.ends = append(x.ends, len(x.names))
		p.skipWS()
		p.pos++ // ':'
		p.skipWS()
		x.vals = append(x.vals, p.pos)
		p.skip()
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != ',' {
			return x
		}
		p.pos++
	}
}

// skip moves past the value at p.pos, which the scan accepted: a string,
// brackets counted up to the matching close (strings skipped), or a
// scalar up to the next delimiter.
func (p *scanner) skip() {
	in := p.in
	switch {
	case p.pos >= len(in):
		return
	case in[p.pos] == '"':
		p.skipString()
		return
	case in[p.pos] == '{' || in[p.pos] == '[':
		depth := 0
		for p.pos < len(in) {
			switch in[p.pos] {
			case '"':
				p.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.pos++
					return
				}
			}
			p.pos++
		}
		return
	}
	for p.pos < len(in) {
		switch in[p.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return
		}
		p.pos++
	}
}

// skipString moves past the string at p.pos, escapes included.
func (p *scanner) skipString() {
	in := p.in
	for p.pos++; p.pos < len(in); p.pos++ {
		switch in[p.pos] {
		case '"':
			p.pos++
			return
		case '\\':
			p.pos++
		}
	}
}

// Arguments returns the RFC 8785 form of RawArguments, `{}` when there are
// none. It canonicalizes again on every call, into a new slice: Parse
// itself only hashes the canonical form (ArgsDigest).
func (m *Message) Arguments() []byte {
	if m.RawArguments == nil {
		return []byte("{}")
	}
	p := getScanner(m.RawArguments, unlimited)
	defer putScanner(p)
	p.exactKeys = m.exactKeys
	out, err := p.canonicalize(false)
	if err != nil { // unreachable: Parse accepted these bytes under the same rules
		return nil
	}
	return out
}

// unlimited lifts every limit, for re-reading bytes Parse already bounded.
var unlimited = Limits{MaxBytes: math.MaxInt, MaxDepth: math.MaxInt, MaxKeys: math.MaxInt,
	MaxElements: math.MaxInt, MaxStringLen: math.MaxInt, MaxBatch: math.MaxInt}

// Args returns the arguments decoded for policy expressions: objects
// map[string]any, arrays []any, strings string, booleans bool, null nil,
// numbers int64 when their RFC 8785 text is an integer that fits int64,
// else float64 (so 1E2 and 100 both give int64(100), since they have the
// same canonical form and digest). Never nil: no arguments give an empty
// map. It decodes on the first call and returns the same map after, so a
// request whose policy never reads args never pays for them; callers must
// not modify the map.
func (m *Message) Args() map[string]any {
	if m.args == nil {
		m.args = decodeArgs(m.RawArguments)
	}
	return m.args
}

// decodeArgs decodes raw, an object Parse accepted, as Args documents.
func decodeArgs(raw []byte) map[string]any {
	if raw == nil {
		return map[string]any{}
	}
	p := getScanner(raw, unlimited)
	defer putScanner(p)
	p.skipWS()
	m, ok := p.build().(map[string]any)
	if !ok { // unreachable: raw is an object Parse accepted
		return map[string]any{}
	}
	return m
}

// build decodes the value at p.pos from input the scan accepted. It checks
// bounds only, so that bytes changed since the scan cannot make it panic;
// what it returns for such bytes is unspecified.
func (p *scanner) build() any {
	if p.pos >= len(p.in) {
		return nil
	}
	switch c := p.in[p.pos]; c {
	case '{':
		p.pos++
		m := map[string]any{}
		for {
			p.skipWS()
			if p.pos >= len(p.in) || p.in[p.pos] != '"' {
				p.pos++ // '}'
				return m
			}
			key, _, err := p.scanString()
			if err != nil {
				return m
			}
			k := string(key)
			p.skipWS()
			p.pos++ // ':'
			p.skipWS()
			m[k] = p.build()
			p.skipWS()
			if p.pos < len(p.in) && p.in[p.pos] == ',' {
				p.pos++
			}
		}
	case '[':
		p.pos++
		a := []any{}
		for {
			p.skipWS()
			if p.pos >= len(p.in) || p.in[p.pos] == ']' {
				p.pos++
				return a
			}
			a = append(a, p.build())
			p.skipWS()
			if p.pos < len(p.in) && p.in[p.pos] == ',' {
				p.pos++
			}
		}
	case '"':
		s, _, err := p.scanString()
		if err != nil {
			return nil
		}
		return string(s)
	case 't':
		p.pos += 4
		return true
	case 'f':
		p.pos += 5
		return false
	case 'n':
		p.pos += 4
		return nil
	}
	start := p.pos
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			break
		}
		p.pos++
	}
	return numberValue(p.in[start:p.pos])
}

// numberValue converts a number literal Parse accepted: int64 when its
// RFC 8785 text is an integer that fits int64, else float64.
func numberValue(lit []byte) any {
	if len(lit) <= 18 && isIntegerLiteral(lit) { // fits int64 as is
		n, neg := int64(0), false
		for i, c := range lit {
			if i == 0 && c == '-' {
				neg = true
				continue
			}
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n
	}
	f, _ := strconv.ParseFloat(string(lit), 64) // in range: checked by Parse
	// The integer is that of the RFC 8785 text, which above 2^53 need not
	// be f's exact value (8.0000000000001e16 is 80000000000001000, the
	// double 80000000000000992).
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if text, err := jcs.NumberToJSON(f); err == nil {
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return n
			}
		}
	}
	return f
}

// Body is a parsed POST body.
type Body struct {
	// Batch reports that the top level was an array.
	Batch bool
	// Messages holds at least one message, in body order.
	Messages []Message
}

// ParseOptions controls Parse.
type ParseOptions struct {
	// Limits bounds the work; zero fields take the defaults.
	Limits Limits
	// AllowBatch permits a top-level array. Batches were removed in MCP
	// 2025-06-18; set this only for sessions on 2025-03-26 or with no
	// MCP-Protocol-Version header. When false, a top-level array is
	// ErrBatchNotSupported, reported before the array is parsed.
	AllowBatch bool
	// CaseSensitiveKeys admits members whose names differ only by case
	// (as fold.go folds) in every object but the protocol ones (envelope,
	// params, params.ref, params.notifications), for servers whose SDK
	// matches member names case-sensitively (TypeScript, Python): there
	// "amount" and "Amount" are two arguments, digested as two. Duplicate
	// names are refused regardless, and so is a protocol object's member
	// that folds onto a protocol name ("Name").
	CaseSensitiveKeys bool
}

// Parse validates body strictly, as one JSON-RPC 2.0 message (or, with
// AllowBatch, a non-empty array of them), and returns its messages. The
// rules, each with its ErrorKind:
//
//   - JSON (RFC 8259, I-JSON RFC 7493): valid UTF-8 with no BOM, no lone
//     surrogates in \u escapes, no duplicate member names and no names that
//     are equal under simple case folding as decoders match them (fold.go;
//     unless opt.CaseSensitiveKeys) in one object (at any depth),
//     nothing after the value but whitespace, every number except the
//     envelope id exactly equal to its RFC 8785 serialization, all within
//     opt.Limits.
//   - Envelope: an object with "jsonrpc":"2.0" and only the members jsonrpc,
//     id, method, params, result, error (a name that case-folds onto one of
//     those is ErrCaseVariantKey). method is a non-empty string; id is a
//     string, an integer literal, or null.
//   - A message with method and id is a request (id not null). A message
//     with method and no id is a notification, and only methods starting
//     with "notifications/" may be one; such methods must not have an id.
//     A message without method is a response: an id (null only with
//     error), exactly one of result (any value) and error (an object with
//     integer code and string message), no params.
//   - params, when present, is an object (JSON-RPC also allows arrays; MCP
//     never uses them, so they are ErrInvalidRequest). In params and
//     params.ref, a name that case-folds onto name, uri, arguments, ref,
//     argument, cursor, task or _meta (or onto type in ref) without being
//     it is ErrCaseVariantKey.
//   - Targets per method, as documented on Message (ErrInvalidParams).
//
// Every JSON rule is checked before any envelope rule, so the error kind
// does not depend on the order of members. Parse reads the body once,
// builds no tree, and hashes the canonical arguments as it goes; its cost
// is linear in len(body).
//
// Errors are always *ParseError. Parse does not decide whether a method is
// known or allowed; that is the policy's job.
func Parse(body []byte, opt ParseOptions) (*Body, error) {
	p := scanners.Get().(*scanner)
	defer putScanner(p)
	return parseOn(p, body, opt)
}

// parseOn is Parse on the scanner p, fresh (new(scanner)) or used before
// and truncated: the tests parse every input on both and compare. Nothing
// in the result aliases p.
func parseOn(p *scanner, body []byte, opt ParseOptions) (*Body, error) {
	lim := opt.Limits.withDefaults()
	if len(body) > lim.MaxBytes {
		return nil, &ParseError{Kind: ErrTooLarge, Offset: int64(lim.MaxBytes), Index: -1,
			Msg: "body longer than " + strconv.Itoa(lim.MaxBytes) + " bytes"}
	}
	if !opt.AllowBatch {
		if i := firstNonWS(body); i < len(body) && body[i] == '[' {
			return nil, &ParseError{Kind: ErrBatchNotSupported, Offset: int64(i), Index: -1,
				Msg: "JSON-RPC batches are not supported (removed in MCP 2025-06-18)"}
		}
	}
	p.reset(body, lim)
	p.exactKeys = opt.CaseSensitiveKeys
	out, err := p.parse()
	if err != nil {
		return nil, err
	}
	return out, nil
}

func firstNonWS(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(b)
}

// Member names of the protocol objects.
var (
	envelopeMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	paramsMembers   = []string{"name", "uri", "arguments", "ref", "argument", "cursor", "task", "_meta"}
	refMembers      = []string{"type", "name", "uri"}
	notifMembers    = []string{"notifications"}
)

// emptyObject is the canonical form of absent arguments.
var emptyObject = []byte("{}")

var emptyObjectDigest = Digest(emptyObject)

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

	name, uri, args, ref, notifs vref // params members
	pVariant, nVariant           keyRec
	argsSum                      [sha256.Size]byte
	hashed                       bool
	argMems                      [2]int // p.argMems[argMems[0]:argMems[1]]: the members of args

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
				r.methodSeen, r.methodArgs = true, string(m) == "tools/call" || string(m) == "prompts/get"
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
	// str returns a required non-empty string member f of obj.
	str := func(obj, f vref, where, key string, off int) (string, *ParseError) {
		if obj.kind == 0 {
			return "", fail(ErrInvalidParams, off, `missing "`+where+`"`)
		}
		if f.kind == 0 {
			return "", fail(ErrInvalidParams, obj.off, `missing "`+where+"."+key+`"`)
		}
		if f.kind != vString || f.end-f.off == 2 {
			return "", fail(ErrInvalidParams, f.off, `"`+where+"."+key+`" must be a non-empty string`)
		}
		return string(p.stringAt(f)), nil
	}
	// bounded fails when s is longer than max characters.
	bounded := func(s string, max int, f vref, where string) *ParseError {
		if utf8.RuneCountInString(s) > max {
			return fail(ErrInvalidParams, f.off, `"`+where+`" is longer than `+strconv.Itoa(max)+" characters")
		}
		return nil
	}
	msgOff := r.params.off
	var err *ParseError
	takesArgs := false
	switch m.Method {
	case "tools/call":
		m.Tool, err = str(r.params, r.name, "params", "name", msgOff)
		if err == nil {
			err = bounded(m.Tool, MaxToolNameLen, r.name, "params.name")
		}
		takesArgs = true
	case "prompts/get":
		m.Prompt, err = str(r.params, r.name, "params", "name", msgOff)
		if err == nil {
			err = bounded(m.Prompt, MaxPromptNameLen, r.name, "params.name")
		}
		takesArgs = true
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		m.URI, err = str(r.params, r.uri, "params", "uri", msgOff)
	case "subscriptions/listen":
		err = p.subscriptions(r, m, fail, variant)
	case "completion/complete":
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
			m.Prompt, err = str(ref, r.refName, "params.ref", "name", ref.off)
			if err == nil {
				err = bounded(m.Prompt, MaxPromptNameLen, r.refName, "params.ref.name")
			}
		case "ref/resource":
			m.URI, err = str(ref, r.refURI, "params.ref", "uri", ref.off)
		default:
			return fail(ErrInvalidParams, r.refType.off, `unknown "params.ref.type"`)
		}
	}
	if err != nil {
		return err
	}
	m.ArgsDigest = emptyObjectDigest
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
	m.ArgsDigest = digestOf(r.argsSum)
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

// Bounds on the names the policy folds (NFKC, case folding), checked before
// any folding so that a name's cost is bounded: MCP 2025-11-25 gives tool
// names 1 to 128 characters; prompt names have no bound in MCP, so ours is
// generous. Longer names are ErrInvalidParams.
const (
	MaxToolNameLen   = 128
	MaxPromptNameLen = 1024
)

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

// knownMethods are the method names Parse returns without allocating.
var knownMethods = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"initialize", "ping", "tools/call", "tools/list", "prompts/get", "prompts/list",
		"resources/read", "resources/list", "resources/templates/list", "resources/subscribe",
		"resources/unsubscribe", "subscriptions/listen", "completion/complete", "logging/setLevel",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed", "tasks/get", "tasks/result", "tasks/cancel", "tasks/list"} {
		m[s] = s
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
