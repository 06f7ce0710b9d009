package policy

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// Decision is the outcome of Evaluate. The zero value is Deny, so a Result
// that was never filled in fails closed.
type Decision int

const (
	Deny Decision = iota
	Ask
	Allow
)

// String returns "deny", "ask" or "allow".
func (d Decision) String() string {
	switch d {
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	case Allow:
		return "allow"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Cause says why Evaluate decided as it did.
type Cause int

const (
	// CauseRule: a rule matched; Result.RuleID names it.
	CauseRule Cause = iota + 1
	// CauseDefault: no rule matched; the decision is the policy default.
	CauseDefault
	// CauseUnsafeURI: the resource URI failed NormalizeURI; always Deny.
	CauseUnsafeURI
	// CauseInvalidInput: the Input cannot be decided (nil, unknown Op,
	// OpRequest without a method, or a tools/call, resources/* or
	// prompts/get without the name or URI it needs); always Deny.
	CauseInvalidInput
	// CauseDefinitionChanged: pinning is on and the tool's observed
	// definition is not its baseline (pins.go); Ask, after the deny rules.
	CauseDefinitionChanged
	// CauseToolNotListed: pinning is on, the tool was never listed and no
	// allow rule names it literally (pins.go); Deny, after the deny rules.
	CauseToolNotListed
)

// String returns "rule", "default", "unsafe_uri" or "invalid_input".
func (c Cause) String() string {
	switch c {
	case CauseRule:
		return "rule"
	case CauseDefault:
		return "default"
	case CauseUnsafeURI:
		return "unsafe_uri"
	case CauseInvalidInput:
		return "invalid_input"
	case CauseDefinitionChanged:
		return "definition_changed"
	case CauseToolNotListed:
		return "tool_not_listed"
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// Op says what kind of operation is being decided.
type Op int

const (
	// OpRequest is a JSON-RPC request or notification; Input.Method is set.
	OpRequest Op = iota + 1
	// OpResponse is a client's JSON-RPC response to a server request.
	OpResponse
	// OpHTTPGet is a bodiless HTTP GET (an SSE stream).
	OpHTTPGet
	// OpHTTPDelete is a bodiless HTTP DELETE (session end).
	OpHTTPDelete
)

// String returns "request", "response", "GET" or "DELETE".
func (o Op) String() string {
	switch o {
	case OpRequest:
		return "request"
	case OpResponse:
		return mcpmethod.Response
	case OpHTTPGet:
		return mcpmethod.HTTPGet
	case OpHTTPDelete:
		return mcpmethod.HTTPDelete
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Input is one operation to decide. Evaluate does not modify it.
type Input struct {
	Op     Op
	Method string // JSON-RPC method ("tools/call", ...); empty for OpResponse and OpHTTP*
	Server string // MCP server id
	Tool   string // tools/call params.name
	URI    string // resources/read|subscribe|unsubscribe params.uri, raw as sent
	// URIs are subscriptions/listen's resource URIs (MCP 2026-07-28
	// params.notifications.resourceSubscriptions), raw as sent; each is
	// decided as a resources/subscribe of it would be.
	URIs   []string
	Prompt string // prompts/get params.name
	// Args holds tools/call or prompts/get arguments as decoded JSON
	// (int64, float64, string, bool, nil, []any, map[string]any). nil is an
	// empty map, unless LazyArgs is set.
	Args map[string]any
	// LazyArgs, when Args is nil, gives the arguments to `when`
	// expressions on demand: args.name decodes that member only, and
	// only expressions that use args as a whole (size, iteration,
	// equality) decode them all. Nil (with Args nil) is an empty map.
	LazyArgs LazyArgs
	// Claims holds the verified token claims. nil is an empty map.
	Claims map[string]any
	// Definition is what the response seam observed of a tools/call's
	// tool, when pinning is on; nil otherwise (pins.go). Rules' annotations
	// come from it, never from the request.
	Definition *ToolDefinition
}

// LazyArgs is a request's arguments, decoded on demand (mcpparse.Message
// implements it). Evaluate calls it from one goroutine at a time.
type LazyArgs interface {
	// Arg returns the top-level argument name, decoded as Input.Args
	// documents, and whether there is one.
	Arg(name string) (any, bool)
	// Args returns every argument; never nil.
	Args() map[string]any
}

// Result is the outcome of Evaluate.
type Result struct {
	Decision Decision
	Cause    Cause
	// RuleID is the id of the deciding rule; "" unless Cause is CauseRule.
	RuleID string
	// Shadow lists the shadow rules (`shadow: true`) that matched, in file
	// order, with the decision each would have given. They never change
	// Decision. nil when none matched.
	Shadow []ShadowMatch
	// Scopes are the OAuth scopes (RFC 6749 section 3.3) the deciding allow
	// or ask rule requires of the token; nil when it requires none or no
	// rule decided. Evaluate does not check them: the caller compares them
	// with the token's scope claim.
	Scopes []string
	// Refusal says how a refusal of this operation is answered: the
	// deciding rule's `refusal`, else the policy's. Always RefusalExplain
	// for operations other than tools/call, prompts/get, resources/read and
	// the task methods naming one task (tasks/get, tasks/result,
	// tasks/cancel, tasks/update), whose refusal the caller may answer as
	// the server answers an unknown task.
	Refusal Refusal
	// RecoverResults: the deciding allow rule says `recover_results: true`:
	// a retry of this call under the same idempotency key and request
	// digest may be answered from the result recorded for the first one,
	// instead of running again. The caller does the recording and answering.
	RecoverResults bool
	// Quotas are the quota rules (`quotas`) the operation is charged to,
	// in file order; nil when none matched or a deny rule (or a refusal
	// before any rule) decided: quotas are decided after the deny rules
	// and before everything else. Evaluate keeps no buckets: the caller
	// charges each and refuses the operation when one is empty. The caller
	// must not modify the slice.
	Quotas []*Quota
	// WhenErrors are the `when` expressions evaluated for this decision
	// that failed at run time (a missing args member, a wrong type, the
	// cost limit), shadow rules' included, in evaluation order; nil when
	// none failed. A failed expression matched a deny or ask rule and did
	// not match an allow rule.
	WhenErrors []WhenError
}

// WhenError is one `when` expression that failed at run time.
type WhenError struct {
	RuleID string
	Err    error
}

func (e WhenError) Error() string { return fmt.Sprintf("rule %q: when: %v", e.RuleID, e.Err) }

// Refusal is how a refused operation is answered.
type Refusal int

const (
	// RefusalExplain answers with the machine-readable denial (decision,
	// reason, rule id, digest). The default (zero value).
	RefusalExplain Refusal = iota
	// RefusalConceal answers a refused tools/call, prompts/get or
	// resources/read as the MCP server answers an unknown tool, prompt or
	// resource, so the caller cannot learn that it exists.
	RefusalConceal
)

// String returns "explain" or "conceal".
func (r Refusal) String() string {
	if r == RefusalConceal {
		return "conceal"
	}
	return "explain"
}

// ShadowMatch is a shadow rule that matched and the decision it would have
// given.
type ShadowMatch struct {
	RuleID   string
	Decision Decision
}

// Policy is a compiled policy. It is immutable after Compile and safe for
// concurrent use by any number of goroutines.
type Policy struct {
	def     Decision
	refusal Refusal // top-level `refusal`
	// rules[decision][kind] in file order; a request has one kind, so the
	// first match among its kind is the first match in the list. Shadow
	// rules are kept apart, in file order.
	rules  [numDecisions][numKinds][]*rule
	shadow []*rule
	scopes []string

	// Tool definition pinning (pins.go).
	pinMode       PinMode
	pinScope      PinScope
	pins          map[string]map[string][]string // server → tool → approved fingerprints
	allowNewTools bool
	trusted       map[string]bool // trusted_servers

	args   *argumentsPolicy // `arguments` (arguments.go); nil: off everywhere
	hier   *scopeHierarchy  // `scope_hierarchy` (scopehier.go); nil: none
	quotas []*Quota         // `quotas`, in file order (quota.go)

	visCache *visibleCache // Visible's answers (visiblecache.go); nil: none
	readsAnn bool          // some tool rule tests annotations (ReadsAnnotations)
}

// Scopes returns the policy's top-level scopes list in file order, then the
// scopes its rules require not already listed: the OAuth scopes advertised
// as RFC 9728 scopes_supported. It never
// changes a decision. The caller must not modify the slice.
func (p *Policy) Scopes() []string { return p.scopes }

const numDecisions = int(Allow) + 1

// Refusal returns the policy-wide refusal style (top-level `refusal`).
func (p *Policy) Refusal() Refusal { return p.refusal }

// ReadsAnnotations reports whether some tool rule reads a tool's
// annotations (an `annotations` match field, or a `when` that mentions
// annotations): then what a list item declares matters to Visible
// (Input.Definition of the listed item).
func (p *Policy) ReadsAnnotations() bool { return p.readsAnn }

// Default returns the decision given when no rule matches: Deny or Ask.
func (p *Policy) Default() Decision { return p.def }

// Methods decided by tool, resource and prompt rules (method rules never
// apply to them), and the reserved names of the pseudo-methods; the names
// are internal/mcpmethod's.
const (
	methodToolsCall  = mcpmethod.ToolsCall
	methodPromptsGet = mcpmethod.PromptsGet
	methodResRead    = mcpmethod.ResourcesRead
	methodResSub     = mcpmethod.ResourcesSubscribe
	methodResUnsub   = mcpmethod.ResourcesUnsubscribe
	methodSubListen  = mcpmethod.SubscriptionsListen
	reservedGET      = mcpmethod.HTTPGet
	reservedDELETE   = mcpmethod.HTTPDelete
	reservedResponse = mcpmethod.Response
)

// kind is the kind of operation a rule or an input is about.
type kind int

const (
	kindTool kind = iota + 1
	kindResource
	kindPrompt
	kindMethod   // OpRequest with any other method
	kindGET      // OpHTTPGet
	kindDELETE   // OpHTTPDelete
	kindResponse // OpResponse

	numKinds
)

// Evaluate decides in. Deny rules win over ask rules, ask over allow, and
// allow over the default; within one decision the first matching rule in
// file order is reported. Shadow rules are all evaluated and reported but
// never decide. A resource URI that NormalizeURI rejects is denied before
// any rule (CauseUnsafeURI). A nil or malformed Input is denied
// (CauseInvalidInput).
//
// A `when` expression that fails (missing key, wrong type, cost limit) or
// does not yield a bool counts as matching in deny and ask rules and as not
// matching in allow rules.
//
// A subscriptions/listen with URIs is decided as its method, then as a
// resources/subscribe of each URI in order: the first of these with the
// lowest decision (deny < ask < allow) decides, so every URI must be
// allowed for the request to be; shadow matches of all are reported.
func (p *Policy) Evaluate(in *Input) Result {
	if in == nil {
		return Result{Decision: Deny, Cause: CauseInvalidInput}
	}
	if in.Op == OpRequest && in.Method == methodSubListen && len(in.URIs) > 0 {
		return p.evaluateListen(in)
	}
	return p.evaluate(in)
}

// evaluateListen decides a subscriptions/listen and each of its URIs.
func (p *Policy) evaluateListen(in *Input) Result {
	m := *in
	m.URIs = nil
	res := p.evaluate(&m)
	shadow := res.Shadow
	quotas := res.Quotas
	sub := m
	sub.Method = methodResSub
	scopes := res.Scopes
	for _, u := range in.URIs {
		sub.URI = u
		r := p.evaluate(&sub)
		shadow = append(shadow, r.Shadow...)
		for _, s := range r.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(slices.Clip(scopes), s)
			}
		}
		for _, q := range r.Quotas {
			if !slices.Contains(quotas, q) {
				quotas = append(slices.Clip(quotas), q)
			}
		}
		if r.Decision < res.Decision {
			res = r
		}
	}
	res.Shadow = shadow
	// Every URI must be allowed, so the token needs every scope their
	// deciding rules name: one challenge names them all (SEP-2350).
	res.Scopes = scopes
	if res.Cause == CauseRule && res.Decision == Deny || res.Cause == CauseUnsafeURI || res.Cause == CauseInvalidInput {
		quotas = nil // a deny decides before the quotas
	}
	res.Quotas = quotas
	return res
}

func (p *Policy) evaluate(in *Input) Result {
	r := requestPool.Get().(*request)
	defer putRequest(r)
	if cause := p.initRequest(r, in); cause != 0 {
		return Result{Decision: Deny, Cause: cause}
	}
	var res Result
	var by *rule
	var quotas []*Quota
	switch {
	case r.first(p.rules[Deny][r.kind], &res, Deny, &by):
	case p.quotas != nil && p.chargeQuotas(r, &quotas):
	case p.pinStep(r, &res, &by):
	case r.first(p.rules[Ask][r.kind], &res, Ask, &by):
	case r.first(p.rules[Allow][r.kind], &res, Allow, &by):
	default:
		res = Result{Decision: p.def, Cause: CauseDefault}
	}
	if mcpmethod.Concealable(in.Method) {
		res.Refusal = p.refusal
		if by != nil && by.refusal != nil {
			res.Refusal = *by.refusal
		}
	}
	if by != nil {
		res.Scopes = by.scopes
		res.RecoverResults = by.recoverResults && res.Decision == Allow
	}
	for _, ru := range p.shadow {
		if ru.matches(r) {
			res.Shadow = append(res.Shadow, ShadowMatch{RuleID: ru.id, Decision: ru.decision})
		}
	}
	res.Quotas = quotas
	res.WhenErrors = r.whenErrs
	return res
}

// chargeQuotas sets *quotas to the quotas r is charged to; it never
// decides (false), so evaluation goes on to the pins, ask and allow.
func (p *Policy) chargeQuotas(r *request, quotas *[]*Quota) bool {
	*quotas = p.matchQuotas(r)
	return false
}

// newRequest is the package's newRequest with what r needs of p.
func (p *Policy) newRequest(in *Input) (*request, Cause) {
	r := new(request)
	return r, p.initRequest(r, in)
}

// initRequest makes the zero request r the request of in under p.
func (p *Policy) initRequest(r *request, in *Input) Cause {
	cause := r.init(in)
	if in != nil {
		r.trusted = p.trusted[in.Server]
	}
	return cause
}

// requestPool holds the requests of evaluate, which keeps none once it
// returns (what its Result carries is the rules' or freshly allocated:
// whenErrs' array leaves with it): an evaluation then allocates no
// request, as Visible's visiblePool does for list items.
var requestPool = sync.Pool{New: func() any { return new(request) }}

// putRequest clears r, so the pool keeps no Input, claims or decoded
// arguments alive, and returns it to requestPool.
func putRequest(r *request) {
	*r = request{}
	requestPool.Put(r)
}

// newRequest classifies in, or returns the cause of its denial before any
// rule (CauseInvalidInput, CauseUnsafeURI). r.in points to r's own copy of
// *in (own), so a caller's Input need not outlive the evaluation.
func newRequest(in *Input) (r *request, cause Cause) {
	r = new(request)
	return r, r.init(in)
}

// init makes the zero request r the request of in, as newRequest does.
func (r *request) init(in *Input) (cause Cause) {
	if in == nil {
		return CauseInvalidInput
	}
	r.own, r.in = *in, &r.own
	switch in.Op {
	case OpRequest:
		switch {
		case in.Method == "":
			return CauseInvalidInput
		case in.Method == methodToolsCall:
			if in.Tool == "" {
				return CauseInvalidInput
			}
			r.kind, r.name = kindTool, in.Tool
		case in.Method == methodPromptsGet:
			if in.Prompt == "" {
				return CauseInvalidInput
			}
			r.kind, r.name = kindPrompt, in.Prompt
		case mcpmethod.OneResource(in.Method):
			if in.URI == "" {
				return CauseInvalidInput
			}
			u, ok := ParseURI(in.URI)
			if !ok {
				return CauseUnsafeURI
			}
			r.kind, r.name, r.res.u = kindResource, u.String(), u
		default:
			r.kind, r.name = kindMethod, in.Method
		}
	case OpResponse:
		r.kind = kindResponse
	case OpHTTPGet:
		r.kind = kindGET
	case OpHTTPDelete:
		r.kind = kindDELETE
	default:
		return CauseInvalidInput
	}
	return 0
}

// first sets *res and *by and reports true if a rule in rules matches.
func (r *request) first(rules []*rule, res *Result, d Decision, by **rule) bool {
	for _, ru := range rules {
		if ru.matches(r) {
			*res = Result{Decision: d, Cause: CauseRule, RuleID: ru.id}
			*by = ru
			return true
		}
	}
	return false
}
