package mcpparse

import (
	"strconv"
	"strings"
	"unicode/utf8"
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

// Message is one JSON-RPC message, validated.
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
	// Arguments is params.arguments in RFC 8785 canonical form for
	// tools/call and prompts/get, and `{}` when absent, for every other
	// method, and for responses. Never nil.
	Arguments []byte
	// ArgsDigest is Digest(Arguments): "sha256:" + lowercase hex.
	ArgsDigest string
	// Args is Arguments decoded for policy expressions: objects
	// map[string]any, arrays []any, strings string, booleans bool, null nil,
	// numbers int64 when their canonical text is an integer that fits int64,
	// else float64 (so 1E2 and 100 both give int64(100), since they have the
	// same canonical form and digest). Never nil: `{}` gives an empty map.
	Args map[string]any
	// Params is the params object exactly as in the body; nil when absent.
	// It aliases the body passed to Parse.
	Params []byte
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
}

// Parse validates body strictly, as one JSON-RPC 2.0 message (or, with
// AllowBatch, a non-empty array of them), and returns its messages. The
// rules, each with its ErrorKind:
//
//   - JSON (RFC 8259, I-JSON RFC 7493): valid UTF-8 with no BOM, no lone
//     surrogates in \u escapes, no duplicate member names and no names that
//     are equal under Unicode case folding in one object (at any depth),
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
// Errors are always *ParseError. Parse does not decide whether a method is
// known or allowed; that is the policy's job.
func Parse(body []byte, opt ParseOptions) (*Body, error) {
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
	root, perr := parseDocument(body, lim, true, false)
	if perr != nil {
		return nil, perr
	}
	if root.kind != vArray {
		m, perr := newMessage(body, &root, -1)
		if perr != nil {
			return nil, perr
		}
		return &Body{Messages: []Message{m}}, nil
	}
	if len(root.elems) == 0 {
		return nil, &ParseError{Kind: ErrBatchEmpty, Offset: int64(root.off), Index: -1, Msg: "empty batch"}
	}
	out := &Body{Batch: true, Messages: make([]Message, len(root.elems))}
	for i := range root.elems {
		m, perr := newMessage(body, &root.elems[i], i)
		if perr != nil {
			return nil, perr
		}
		out.Messages[i] = m
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
)

// emptyObject is the canonical form of absent arguments.
var emptyObject = []byte("{}")

// variantOf returns the protocol member (from names, all lowercase ASCII)
// that key case-folds onto without being equal to it, or "".
func variantOf(key string, names []string) string {
	f1, f2 := foldKeys(key)
	for _, n := range names {
		if key != n && (f1 == n || f2 == n) {
			return n
		}
	}
	return ""
}

func member1(v *value, key string) *value {
	for i := range v.mems {
		if v.mems[i].key == key {
			return &v.mems[i].val
		}
	}
	return nil
}

// newMessage validates one envelope. index is the batch index or -1.
func newMessage(in []byte, v *value, index int) (Message, *ParseError) {
	fail := func(k ErrorKind, off int, msg string) (Message, *ParseError) {
		return Message{}, &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if v.kind != vObject {
		return fail(ErrInvalidRequest, v.off, "a JSON-RPC message must be an object")
	}
	var jsonrpc, id, method, params, result, errv *value
	for i := range v.mems {
		mb := &v.mems[i]
		switch mb.key {
		case "jsonrpc":
			jsonrpc = &mb.val
		case "id":
			id = &mb.val
		case "method":
			method = &mb.val
		case "params":
			params = &mb.val
		case "result":
			result = &mb.val
		case "error":
			errv = &mb.val
		default:
			if n := variantOf(mb.key, envelopeMembers); n != "" {
				return fail(ErrCaseVariantKey, mb.keyOff, "member "+quoteKey(mb.key)+" is a case variant of "+quoteKey(n))
			}
			return fail(ErrInvalidRequest, mb.keyOff, "unknown member "+quoteKey(mb.key)+" in a JSON-RPC message")
		}
	}
	if jsonrpc == nil {
		return fail(ErrInvalidRequest, v.off, `missing "jsonrpc"`)
	}
	if jsonrpc.kind != vString || jsonrpc.s != "2.0" {
		return fail(ErrInvalidRequest, jsonrpc.off, `"jsonrpc" must be "2.0"`)
	}
	var m Message
	if id != nil {
		switch {
		case id.kind == vString, id.kind == vNull:
		case id.kind == vNumber && isIntegerLiteral(in[id.off:id.end]):
		default:
			return fail(ErrInvalidRequest, id.off, `"id" must be a string, an integer or null`)
		}
		m.ID = in[id.off:id.end]
	}
	if params != nil {
		if params.kind != vObject {
			return fail(ErrInvalidRequest, params.off, `"params" must be an object`)
		}
		m.Params = in[params.off:params.end]
	}

	if method == nil { // response
		m.Kind = KindResponse
		switch {
		case id == nil:
			return fail(ErrInvalidRequest, v.off, `a response needs an "id"`)
		case params != nil:
			return fail(ErrInvalidRequest, params.off, `a response must not carry "params"`)
		case (result == nil) == (errv == nil):
			return fail(ErrInvalidRequest, v.off, `a response needs exactly one of "result" and "error"`)
		case id.kind == vNull && errv == nil:
			return fail(ErrInvalidRequest, id.off, `a null "id" is only allowed on an error response`)
		}
		if errv != nil {
			if errv.kind != vObject {
				return fail(ErrInvalidRequest, errv.off, `"error" must be an object`)
			}
			code, msg := member1(errv, "code"), member1(errv, "message")
			if code == nil || code.kind != vNumber || !isIntegerLiteral(in[code.off:code.end]) {
				return fail(ErrInvalidRequest, errv.off, `"error.code" must be an integer`)
			}
			if msg == nil || msg.kind != vString {
				return fail(ErrInvalidRequest, errv.off, `"error.message" must be a string`)
			}
		}
		setArgs(&m, nil, in)
		return m, nil
	}

	if method.kind != vString || method.s == "" {
		return fail(ErrInvalidRequest, method.off, `"method" must be a non-empty string`)
	}
	m.Method = method.s
	if result != nil || errv != nil {
		off := v.off
		if result != nil {
			off = result.off
		} else {
			off = errv.off
		}
		return fail(ErrInvalidRequest, off, `a request or notification must not carry "result" or "error"`)
	}
	notif := strings.HasPrefix(m.Method, "notifications/")
	switch {
	case id == nil && !notif:
		return fail(ErrInvalidRequest, v.off, `missing "id": only "notifications/" methods may be notifications`)
	case id == nil:
		m.Kind = KindNotification
	case notif:
		return fail(ErrInvalidRequest, id.off, `a "notifications/" method must not carry an "id"`)
	case id.kind == vNull:
		return fail(ErrInvalidRequest, id.off, `a request "id" must not be null`)
	default:
		m.Kind = KindRequest
	}
	if perr := target(&m, in, params, index); perr != nil {
		return Message{}, perr
	}
	return m, nil
}

// target checks params' member names and fills the method's target and
// arguments.
func target(m *Message, in []byte, params *value, index int) *ParseError {
	fail := func(k ErrorKind, off int, msg string) *ParseError {
		return &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if params != nil {
		if perr := checkVariants(params, paramsMembers, index); perr != nil {
			return perr
		}
	}
	// str returns params[key] (or obj[key]) as a required non-empty string.
	str := func(obj *value, where, key string, off int) (string, *ParseError) {
		if obj == nil {
			return "", fail(ErrInvalidParams, off, `missing "`+where+`"`)
		}
		f := member1(obj, key)
		if f == nil {
			return "", fail(ErrInvalidParams, obj.off, `missing "`+where+"."+key+`"`)
		}
		if f.kind != vString || f.s == "" {
			return "", fail(ErrInvalidParams, f.off, `"`+where+"."+key+`" must be a non-empty string`)
		}
		return f.s, nil
	}
	msgOff := 0
	if params != nil {
		msgOff = params.off
	}
	var perr *ParseError
	var args *value
	switch m.Method {
	case "tools/call":
		m.Tool, perr = str(params, "params", "name", msgOff)
		if perr == nil && utf8.RuneCountInString(m.Tool) > MaxToolNameLen {
			perr = fail(ErrInvalidParams, member1(params, "name").off, `"params.name" is longer than `+strconv.Itoa(MaxToolNameLen)+" characters")
		}
		args = argsOf(params)
	case "prompts/get":
		m.Prompt, perr = str(params, "params", "name", msgOff)
		if perr == nil && utf8.RuneCountInString(m.Prompt) > MaxPromptNameLen {
			perr = fail(ErrInvalidParams, member1(params, "name").off, `"params.name" is longer than `+strconv.Itoa(MaxPromptNameLen)+" characters")
		}
		args = argsOf(params)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		m.URI, perr = str(params, "params", "uri", msgOff)
	case "subscriptions/listen":
		if perr := subscriptions(m, params, msgOff, index); perr != nil {
			return perr
		}
	case "completion/complete":
		if params == nil {
			return fail(ErrInvalidParams, msgOff, `missing "params"`)
		}
		ref := member1(params, "ref")
		if ref == nil || ref.kind != vObject {
			return fail(ErrInvalidParams, params.off, `"params.ref" must be an object`)
		}
		if perr := checkVariants(ref, refMembers, index); perr != nil {
			return perr
		}
		m.RefType, perr = str(ref, "params.ref", "type", ref.off)
		if perr != nil {
			return perr
		}
		switch m.RefType {
		case "ref/prompt":
			m.Prompt, perr = str(ref, "params.ref", "name", ref.off)
			if perr == nil && utf8.RuneCountInString(m.Prompt) > MaxPromptNameLen {
				perr = fail(ErrInvalidParams, member1(ref, "name").off, `"params.ref.name" is longer than `+strconv.Itoa(MaxPromptNameLen)+" characters")
			}
		case "ref/resource":
			m.URI, perr = str(ref, "params.ref", "uri", ref.off)
		default:
			return fail(ErrInvalidParams, member1(ref, "type").off, `unknown "params.ref.type"`)
		}
	}
	if perr != nil {
		return perr
	}
	if args != nil && args.kind != vObject {
		return fail(ErrInvalidParams, args.off, `"params.arguments" must be an object`)
	}
	setArgs(m, args, in)
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
func subscriptions(m *Message, params *value, msgOff, index int) *ParseError {
	fail := func(k ErrorKind, off int, msg string) *ParseError {
		return &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if params == nil {
		return fail(ErrInvalidParams, msgOff, `missing "params"`)
	}
	if perr := checkVariants(params, []string{"notifications"}, index); perr != nil {
		return perr
	}
	n := member1(params, "notifications")
	if n == nil || n.kind != vObject {
		return fail(ErrInvalidParams, params.off, `"params.notifications" must be an object`)
	}
	const key = "resourceSubscriptions"
	for i := range n.mems {
		if k := n.mems[i].key; k != key {
			if f1, f2 := foldKeys(k); f1 == "resourcesubscriptions" || f2 == "resourcesubscriptions" {
				return &ParseError{Kind: ErrCaseVariantKey, Offset: int64(n.mems[i].keyOff), Index: index,
					Msg: "member " + quoteKey(k) + " is a case variant of " + quoteKey(key)}
			}
		}
	}
	subs := member1(n, key)
	if subs == nil {
		return nil
	}
	if subs.kind != vArray {
		return fail(ErrInvalidParams, subs.off, `"params.notifications.resourceSubscriptions" must be an array`)
	}
	if len(subs.elems) > MaxSubscriptions {
		return fail(ErrTooManyElements, subs.off, "more than "+strconv.Itoa(MaxSubscriptions)+" resource subscriptions")
	}
	m.URIs = make([]string, 0, len(subs.elems))
	for i := range subs.elems {
		e := &subs.elems[i]
		if e.kind != vString || e.s == "" {
			return fail(ErrInvalidParams, e.off, `"params.notifications.resourceSubscriptions" holds a non-string or empty URI`)
		}
		m.URIs = append(m.URIs, e.s)
	}
	return nil
}

func argsOf(params *value) *value {
	if params == nil {
		return nil
	}
	return member1(params, "arguments")
}

// checkVariants rejects a member of obj that case-folds onto one of names
// without being equal to it.
func checkVariants(obj *value, names []string, index int) *ParseError {
	for i := range obj.mems {
		mb := &obj.mems[i]
		if n := variantOf(mb.key, names); n != "" {
			return &ParseError{Kind: ErrCaseVariantKey, Offset: int64(mb.keyOff), Index: index,
				Msg: "member " + quoteKey(mb.key) + " is a case variant of " + quoteKey(n)}
		}
	}
	return nil
}

// setArgs fills Arguments, ArgsDigest and Args from args (an object, or
// nil for `{}`).
func setArgs(m *Message, args *value, in []byte) {
	if args == nil {
		m.Arguments = emptyObject[:len(emptyObject):len(emptyObject)]
		m.ArgsDigest = emptyObjectDigest
		m.Args = map[string]any{}
		return
	}
	m.Arguments = appendCanonical(make([]byte, 0, args.end-args.off), in, args)
	m.ArgsDigest = Digest(m.Arguments)
	m.Args = decodeObject(in, args)
}

var emptyObjectDigest = Digest(emptyObject)

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

func decodeObject(in []byte, v *value) map[string]any {
	out := make(map[string]any, len(v.mems))
	for i := range v.mems {
		out[v.mems[i].key] = decode(in, &v.mems[i].val)
	}
	return out
}

// decode converts a parsed value to the types documented on Message.Args.
func decode(in []byte, v *value) any {
	switch v.kind {
	case vNull:
		return nil
	case vTrue:
		return true
	case vFalse:
		return false
	case vString:
		return v.s
	case vNumber:
		text := v.numText(in)
		if !strings.ContainsAny(text, ".eE") {
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return n
			}
		}
		f, _ := strconv.ParseFloat(text, 64) // checked by the parser
		return f
	case vArray:
		out := make([]any, len(v.elems))
		for i := range v.elems {
			out[i] = decode(in, &v.elems[i])
		}
		return out
	case vObject:
		return decodeObject(in, v)
	}
	return nil
}
