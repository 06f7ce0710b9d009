package mcpparse

import (
	"strconv"
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
	// Task is params.task exactly as in the body (MCP 2025-11-25 task
	// augmentation: an object with ttl; not checked here), whatever the
	// method; nil when params has no such member. It aliases the body
	// passed to Parse.
	Task []byte
	// Result is a response's result value exactly as in the body; nil for
	// error responses, requests and notifications. It aliases the body
	// passed to Parse.
	Result []byte

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

// Bounds on the names the policy folds (NFKC, case folding), checked before
// any folding so that a name's cost is bounded: MCP 2025-11-25 gives tool
// names 1 to 128 characters; prompt names have no bound in MCP, so ours is
// generous. Longer names are ErrInvalidParams.
const (
	MaxToolNameLen   = 128
	MaxPromptNameLen = 1024
)
