package decision

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/internal/argschema"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Config is what a Decider decides with. NewDecider validates it; it is not
// changed afterwards.
type Config struct {
	// ServerID is the MCP server id when neither the route
	// (Request.RouteServer) nor ServersByPrincipal names one; "" leaves such
	// requests unknown_server.
	ServerID string
	// ServersByPrincipal maps a destination principal (SPIFFE id) to the
	// MCP server id, for one service behind several Istio workloads (Istio
	// sets no context extension). Consulted after the route's server and
	// before ServerID.
	ServersByPrincipal map[string]string
	// Verifier verifies bearer tokens; required. Its Audiences are the
	// audiences a route may name (Request.RouteAudience).
	Verifier bearer.TokenVerifier
	// DPoP checks DPoP proofs (RFC 9449) of tokens bound with cnf.jkt. Nil
	// means no DPoP: the DPoP scheme is refused and so are bound tokens.
	DPoP *bearer.DPoPVerifier
	// Policies holds the live policy; required. Before its first Store every
	// request is policy_unavailable.
	Policies *PolicyStore
	// Limits bounds the strict parse; zero fields take mcpparse's defaults.
	Limits mcpparse.Limits
	// Binding applies approvals and idempotency keys; nil disables both.
	Binding *Binding
	// Definitions looks up what the response seam observed of a tools/call's
	// tool (internal/toolpin.Observations), when the policy's pin_mode is
	// not off; nil then refuses every tools/call (state_store_unavailable):
	// pinning without observations fails closed.
	Definitions ToolDefinitions
	// CaseSensitiveKeys holds the MCP server ids whose SDK matches argument
	// names case-sensitively (TypeScript, Python): their requests parse
	// with mcpparse.ParseOptions.CaseSensitiveKeys, so "amount" and
	// "Amount" are two arguments. Every other server's requests refuse such
	// names (case_variant_key), since Go's encoding/json would merge them.
	CaseSensitiveKeys map[string]bool
	// Explain fills Decision.Trace (extauthz check --explain, extauthz
	// test). It costs an evaluation of every rule: never set it in serve.
	Explain bool
	// Tasks, when set, refuses tasks/get, tasks/result, tasks/cancel and
	// tasks/update naming a task id not bound to the caller on this server
	// (ReasonTaskNotOwned); nil leaves task ownership to the MCP server.
	Tasks TaskOwners
	// Cursors, when set, refuses a list request whose params.cursor does not
	// open for this caller (ReasonInvalidParams); nil passes cursors as sent.
	Cursors CursorOpener
	// Schemas gives the inputSchema of pinned tool definitions by
	// fingerprint (toolpin.Observations), for argument validation
	// (arguments.go); nil refuses a validated call whose definition is
	// known (state_store_unavailable).
	Schemas InputSchemas
	// Prompts gives the declared arguments of prompts the response seam
	// observed (toolpin.Observations), for prompts/get validation without
	// a schema_file; nil: none known.
	Prompts PromptSchemas
	// SchemaCacheSize bounds the compiled schemas kept by fingerprint
	// (argschema.DefaultCacheSize when 0).
	SchemaCacheSize int
	// Quotas keeps the buckets of the policy's quotas (quota.go); nil
	// refuses every request a quota applies to (state_store_unavailable,
	// or admits it when the quota says on_store_error: allow).
	Quotas QuotaBuckets
	// QuotaObserver, when set, is told each quota charged and its outcome
	// (QuotaOutcomes), for metrics by quota id.
	QuotaObserver func(quotaID, outcome string)
}

// Decider decides Requests. It is safe for concurrent use.
type Decider struct {
	cfg     Config
	schemas *argschema.Cache // compiled inputSchemas by fingerprint
}

// ToolDefinitions gives policy.Input.Definition for a tools/call of
// server's tool under policy p (nil when p's pin_mode is off). Errors mean
// the observations cannot be read: the call is refused.
type ToolDefinitions interface {
	Lookup(ctx context.Context, p *policy.Policy, server, session, tool string) (*policy.ToolDefinition, error)
}

// TaskOwners is the task binding store the response seam writes
// (state.Tasks): Check refuses a task method naming a task that is not the
// caller's.
type TaskOwners interface {
	Owner(ctx context.Context, server, taskID string) (principal string, found bool, err error)
}

// CursorOpener opens sealed pagination cursors (cursor.Sealer): Check
// refuses a list request whose params.cursor was not sealed for this
// caller, method, server and policy version.
type CursorOpener interface {
	Open(b cursor.Binding, sealed string) (string, error)
}

// NewDecider returns a Decider for c, or an error naming what is missing or
// malformed: a nil Verifier or Policies, negative limits, an empty server id
// in ServersByPrincipal.
func NewDecider(c Config) (*Decider, error) {
	switch {
	case c.Verifier == nil:
		return nil, errors.New("decider: no token verifier")
	case c.Policies == nil:
		return nil, errors.New("decider: no policy store")
	case c.Limits.MaxBytes < 0 || c.Limits.MaxDepth < 0 || c.Limits.MaxKeys < 0 || c.Limits.MaxElements < 0 ||
		c.Limits.MaxStringLen < 0 || c.Limits.MaxBatch < 0:
		return nil, fmt.Errorf("decider: negative limit in %+v", c.Limits)
	}
	for p, s := range c.ServersByPrincipal {
		if p == "" || s == "" {
			return nil, fmt.Errorf("decider: server by principal %q = %q: both must be set", p, s)
		}
	}
	return &Decider{cfg: c, schemas: argschema.NewCache(c.SchemaCacheSize)}, nil
}

// Config returns the configuration d decides with (a copy: changing it
// changes nothing).
func (d *Decider) Config() Config { return d.cfg }

// Decide runs the whole decision for r, as stages from the cheapest: the
// deadline, the live policy, the MCP server, the HTTP framing, the token,
// the strict parse and header agreement, the policy for each message, then
// approvals and idempotency (Binding). Each stage returns a reason; the
// first that is not allowed decides. It never returns nil and never panics
// out: a recovered panic is a denial with reason internal_error.
func (d *Decider) Decide(ctx context.Context, r *Request) *Decision {
	dec := new(Decision)
	d.DecideTo(ctx, r, dec)
	return dec
}

// DecideTo is Decide writing the Decision into *dec, whatever it held, for
// a caller that holds the Decision itself (Check keeps it on its stack). It
// keeps no pointer to dec.
func (d *Decider) DecideTo(ctx context.Context, r *Request, dec *Decision) {
	*dec = Decision{ID: newDecisionID(), BatchIndex: -1}
	defer func() {
		if p := recover(); p != nil {
			*dec = Decision{ID: dec.ID, Reason: ReasonInternalError, BatchIndex: -1, Detail: fmt.Sprintf("panic: %v", p)}
		}
	}()
	dec.Reason = d.decide(ctx, r, dec)
	if d.cfg.Binding != nil {
		dec.Reason = d.cfg.Binding.bind(ctx, r, dec)
	}
	if dec.Reason != ReasonAllowed && !dec.parsed {
		d.peek(r, dec)
	}
}

// peek fills the JSON-RPC id and method of a request denied before its body
// was parsed (a bad token, media type or length), so the error answers the
// request's id and the log and metrics name its method. It reads them with
// mcpparse.PeekEnvelope, one scan that allocates nothing per element: a
// request nobody vouched for never pays for a strict parse, a canonical form
// or a digest (id null when the scan cannot tell).
func (d *Decider) peek(r *Request, dec *Decision) {
	if r.Method != "POST" || len(r.Body) == 0 {
		return
	}
	limit := d.cfg.Limits.MaxBytes
	if limit <= 0 {
		limit = mcpparse.DefaultMaxBytes
	}
	if len(r.Body) > limit {
		return
	}
	dec.RPCID, dec.Method = mcpparse.PeekEnvelope(r.Body)
}

// decide runs every stage but Binding's.
func (d *Decider) decide(ctx context.Context, r *Request, dec *Decision) Reason {
	if ctx.Err() != nil {
		return ReasonDeadlineExceeded
	}
	lp := d.cfg.Policies.Load()
	if lp == nil {
		return ReasonPolicyUnavailable
	}
	dec.PolicyVersion = lp.Version
	sid, _ := r.Headers.Get("mcp-session-id")
	dec.ProtocolVersion, _ = r.Headers.Get("mcp-protocol-version")
	dec.session = toolpin.Session(sid, r.Path, dec.ProtocolVersion)
	if lp.Policy.PinMode() != policy.PinOff && lp.Policy.PinScope() == policy.PinScopeSession {
		dec.SessionHash = sessionHash(dec.session)
	}
	if dec.Server = d.server(r); dec.Server == "" {
		return ReasonUnknownServer
	}
	op, reason := framing(r)
	if op == policy.OpHTTPGet || op == policy.OpHTTPDelete {
		dec.Method = r.Method // mcpmethod.HTTPGet, HTTPDelete
	}
	if reason != "" {
		return reason
	}
	principal, reason, detail := d.authenticate(ctx, r)
	if reason != "" {
		dec.Detail = detail
		return reason
	}
	dec.Principal = principal
	dec.Client = policy.ClientOf(principal.Claims)
	if op != policy.OpRequest {
		dec.ArgsDigest = emptyArgsDigest
		dec.RequestDigest = requestDigest(requestEnvelope{
			Audience: principal.Audience, Client: dec.Client, Server: dec.Server, Method: dec.Method,
			ArgsDigest: dec.ArgsDigest, Issuer: principal.Issuer, Subject: principal.Subject,
		})
		return d.evaluateCharged(ctx, lp, dec, &policy.Input{Op: op, Server: dec.Server, Claims: principal.Claims})
	}
	body, reason := d.parse(r, dec)
	if reason != "" {
		return reason
	}
	if !body.Batch {
		dec.RPCID = body.Messages[0].ID
		return d.decideMessage(ctx, lp, dec, &body.Messages[0], r.Headers)
	}
	return d.decideBatch(ctx, lp, dec, body)
}

// server is the request's MCP server id: the route's, else the one of its
// destination principal, else Config.ServerID; "" when none names one.
func (d *Decider) server(r *Request) string {
	if r.RouteServer != "" {
		return r.RouteServer
	}
	if s := d.cfg.ServersByPrincipal[r.DestinationPrincipal]; r.DestinationPrincipal != "" && s != "" {
		return s
	}
	return d.cfg.ServerID
}

// framing checks the HTTP request as the proxy delivered it and returns
// what the policy decides on: a POST (OpRequest) whose body was not cut and
// agrees with its Content-Length, or a bodiless GET or DELETE.
func framing(r *Request) (policy.Op, Reason) {
	switch r.Method {
	case "POST":
		if v, _ := r.Headers.Get("x-envoy-auth-partial-body"); strings.EqualFold(v, "true") {
			return policy.OpRequest, ReasonBodyTruncated
		}
		return policy.OpRequest, checkContentLength(r)
	case mcpmethod.HTTPGet, mcpmethod.HTTPDelete:
		op := policy.OpHTTPGet
		if r.Method == mcpmethod.HTTPDelete {
			op = policy.OpHTTPDelete
		}
		// Bodiless by definition: a body, announced, cut or delivered, is
		// refused. Envoy adds x-envoy-auth-partial-body: false whenever it
		// buffered, even an empty body (a chunked DELETE, an empty HTTP/2
		// DATA frame): that says nothing was cut, not that a body exists.
		if len(r.Body) != 0 || checkContentLength(r) != "" {
			return op, ReasonInvalidRequest
		}
		if v, n := r.Headers.Get("x-envoy-auth-partial-body"); n > 1 || (n == 1 && !strings.EqualFold(v, "false")) {
			return op, ReasonInvalidRequest
		}
		return op, ""
	}
	return 0, ReasonMethodNotAllowed
}

// parse checks the body's media type and parses it strictly (mcpparse),
// then checks that MCP 2026-07-28's Mcp-Method and Mcp-Name headers agree
// with it.
func (d *Decider) parse(r *Request, dec *Decision) (*mcpparse.Body, Reason) {
	if reason := checkBodyEncoding(r.Headers); reason != "" {
		return nil, reason
	}
	if len(r.Body) == 0 {
		return nil, ReasonBodyMissing
	}
	version := dec.ProtocolVersion // decide read the MCP-Protocol-Version header
	dec.parsed = true
	body, err := mcpparse.Parse(r.Body, mcpparse.ParseOptions{
		Limits: d.cfg.Limits,
		// Batches exist only in 2025-03-26, the version a server assumes
		// when the header is absent.
		AllowBatch:        version == "" || version == mcpmethod.Revision20250326,
		CaseSensitiveKeys: d.cfg.CaseSensitiveKeys[dec.Server],
	})
	if err != nil {
		var pe *mcpparse.ParseError
		if errors.As(err, &pe) {
			dec.Detail = parseDetail(pe, r.Body)
			return nil, parseReason(pe.Kind)
		}
		return nil, ReasonInternalError
	}
	if body.Batch {
		// MCP 2026-07-28 has no batches: its headers name one message.
		if r.Headers["mcp-method"] != nil || r.Headers["mcp-name"] != nil {
			dec.Method = mcpmethod.Batch
			return nil, ReasonHeaderMismatch
		}
	} else if reason := checkMCPHeaders(r.Headers, &body.Messages[0]); reason != "" {
		dec.RPCID = body.Messages[0].ID
		return nil, reason
	}
	return body, ""
}

// decideBatch decides every element of a batch. The first element that is
// not allowed decides the whole body (answered with id null, its index in
// BatchIndex); an allowed batch is named mcpmethod.Batch, with the digest
// of its elements' digests and the rule and shadow matches of its first.
func (d *Decider) decideBatch(ctx context.Context, lp *LoadedPolicy, dec *Decision, body *mcpparse.Body) Reason {
	els := make([]Decision, len(body.Messages))
	dec.BatchDigests = make([]string, len(els))
	refused := -1
	for i := range body.Messages {
		el := &els[i]
		el.Server, el.Principal, el.PolicyVersion, el.BatchIndex, el.session = dec.Server, dec.Principal, dec.PolicyVersion, -1, dec.session
		el.Client = dec.Client
		el.ProtocolVersion = dec.ProtocolVersion
		el.Reason = d.decideMessage(ctx, lp, el, &body.Messages[i], nil) // no Mcp-Param-* for batch elements
		dec.BatchDigests[i] = el.RequestDigest
		dec.SealedCursor = dec.SealedCursor || el.SealedCursor
		if el.Reason != ReasonAllowed && refused < 0 {
			refused = i
		}
	}
	if refused >= 0 {
		el := els[refused]
		el.ID, el.BatchIndex, el.BatchDigests, el.parsed = dec.ID, refused, dec.BatchDigests, true
		// A dry run admits the whole batch: the seam still needs to swap
		// any element's sealed cursor (x-mcp-cursor).
		el.SealedCursor = dec.SealedCursor
		*dec = el
		return el.Reason
	}
	dec.Method = mcpmethod.Batch
	dec.RequestDigest = mcpparse.Digest([]byte(strings.Join(dec.BatchDigests, ",")))
	dec.BatchElements = make([]BatchElement, len(els))
	for i := range els {
		dec.BatchElements[i] = BatchElement{Method: els[i].Method, Target: els[i].Target, ArgsDigest: els[i].ArgsDigest, RequestDigest: els[i].RequestDigest}
	}
	dec.RuleID, dec.Shadow, dec.WhenErrors, dec.Trace = els[0].RuleID, els[0].Shadow, els[0].WhenErrors, els[0].Trace
	return ReasonAllowed
}

// decideMessage fills el for one JSON-RPC message and returns its reason;
// h are the request's headers when m is its only message (nil in a batch).
func (d *Decider) decideMessage(ctx context.Context, lp *LoadedPolicy, el *Decision, m *mcpparse.Message, h Headers) Reason {
	if ctx.Err() != nil {
		return ReasonDeadlineExceeded
	}
	in := &policy.Input{Server: el.Server, Claims: el.Principal.Claims}
	switch m.Kind {
	case mcpparse.KindResponse:
		in.Op = policy.OpResponse
		el.Method = mcpmethod.Response
	default:
		in.Op = policy.OpRequest
		in.Method = m.Method
		el.Method = m.Method
	}
	in.Tool, in.URI, in.URIs, in.Prompt, in.LazyArgs = m.Tool, m.URI, m.URIs, m.Prompt, m
	if reason := d.definition(ctx, lp, el, in); reason != "" {
		return reason
	}
	el.Tool, el.params = m.Tool, m.Params
	switch {
	case m.Tool != "":
		el.Target = m.Tool
	case m.URI != "":
		el.Target = m.URI
	case m.Prompt != "":
		el.Target = m.Prompt
	case len(m.URIs) > 0: // subscriptions/listen: every URI is a target
		el.Target = listenTarget(m.URIs)
	}
	el.ArgsDigest = m.ArgsDigest
	el.RequestDigest = requestDigest(requestEnvelope{
		Audience: el.Principal.Audience, Client: el.Client, Server: el.Server, Method: el.Method, Target: el.Target,
		ArgsDigest: el.ArgsDigest, Issuer: el.Principal.Issuer, Subject: el.Principal.Subject,
	})
	el.TaskRequested = m.Method == mcpmethod.ToolsCall && m.Task != nil // found by Parse's one pass
	if m.Kind == mcpparse.KindRequest && mcpmethod.Task(m.Method) {
		el.TaskID, _ = paramString(m.Params, "taskId")
	}
	reason := d.evaluate(lp, el, in)
	if reason == ReasonAllowed || reason == ReasonAuthorizationRequired || reason == ReasonDefinitionChanged {
		// Arguments before quotas: a call the tool would reject takes no
		// token.
		if r := d.arguments(ctx, lp, el, m, h); r != "" {
			return r
		}
	}
	reason = d.chargeQuotas(ctx, el, reason)
	if reason != ReasonAllowed && reason != ReasonAuthorizationRequired {
		return reason
	}
	if r := d.seam(ctx, lp, el, m); r != "" {
		return r
	}
	return reason
}

// seam runs the checks the response seam's state needs, after the policy
// admitted (or asked for) m: task ownership and sealed cursors. It returns
// "" when they pass.
func (d *Decider) seam(ctx context.Context, lp *LoadedPolicy, el *Decision, m *mcpparse.Message) Reason {
	if m.Kind != mcpparse.KindRequest {
		return ""
	}
	if d.cfg.Tasks != nil && mcpmethod.Task(m.Method) {
		id, ok := paramString(m.Params, "taskId")
		if !ok {
			el.Detail = "params.taskId missing or not a string"
			return ReasonInvalidParams
		}
		owner, found, err := d.cfg.Tasks.Owner(ctx, el.Server, id)
		switch {
		case err != nil:
			el.Detail = "task store: " + err.Error()
			return ReasonStateStoreUnavailable
		case !found:
			el.Detail = "task id not bound"
			return ReasonTaskNotOwned
		case owner != state.TaskOwner(el.Principal.Issuer, el.Principal.Subject):
			el.Detail = "task id bound to another principal"
			return ReasonTaskNotOwned
		}
	}
	if d.cfg.Cursors != nil && mcpmethod.Paginated(m.Method) {
		if paramMember(m.Params, "cursor") == nil {
			return ""
		}
		c, ok := paramString(m.Params, "cursor")
		if !ok {
			el.Detail = "params.cursor is not a string"
			return ReasonInvalidParams
		}
		b := cursor.Binding{Method: m.Method, Server: el.Server, Principal: state.TaskOwner(el.Principal.Issuer, el.Principal.Subject), PolicyVersion: lp.Version}
		if _, err := d.cfg.Cursors.Open(b, c); err != nil {
			el.Detail = "params.cursor not sealed for this caller, server, method and policy version"
			return ReasonInvalidParams
		}
		el.SealedCursor = true
	}
	return ""
}

// paramMember returns the raw value of params member name, or nil: the
// last member whose name decodes to name exactly (mcpparse refused case
// variants of cursor; a case variant of taskId is not taskId, and its
// absence denies).
func paramMember(params []byte, name string) []byte {
	v, _ := jsonscan.Member(params, jsonscan.SkipSpace(params, 0), name, false)
	return v
}

// paramString returns params member name as a decoded string.
func paramString(params []byte, name string) (string, bool) {
	return jsonscan.Unquote(paramMember(params, name))
}

// supersededDetail is the decision log's detail of a definition_changed
// call whose baseline holds tooldef-v1 fingerprints only
// (policy.ToolDefinition.Superseded): how to migrate.
const supersededDetail = "the tool's baseline is a tooldef-v1 fingerprint, which never matches a " + toolpin.Version +
	" one (the fingerprint now covers MCP Apps' _meta.ui): review the definition and pin it again (extauthz pin prints its " + toolpin.Version + " fingerprint)"

// definition fills in.Definition for a tools/call when the policy pins tool
// definitions, and el.ToolFingerprint with the observed fingerprint.
func (d *Decider) definition(ctx context.Context, lp *LoadedPolicy, el *Decision, in *policy.Input) Reason {
	if in.Op != policy.OpRequest || in.Method != mcpmethod.ToolsCall || lp.Policy.PinMode() == policy.PinOff {
		return ""
	}
	if d.cfg.Definitions == nil {
		el.Detail = "pin_mode is on but no tool definitions are observed here"
		return ReasonStateStoreUnavailable
	}
	def, err := d.cfg.Definitions.Lookup(ctx, lp.Policy, in.Server, el.session, in.Tool)
	if err != nil {
		el.Detail = "tool definitions: " + err.Error()
		return ReasonStateStoreUnavailable
	}
	in.Definition = def
	if def != nil {
		el.ToolFingerprint = def.Fingerprint
	}
	return ""
}

// evaluateCharged is evaluate, then the quotas the policy charged the
// request to (charge): a deny rule decides before the quotas, an empty
// bucket before ask, allow and the default.
func (d *Decider) evaluateCharged(ctx context.Context, lp *LoadedPolicy, el *Decision, in *policy.Input) Reason {
	return d.chargeQuotas(ctx, el, d.evaluate(lp, el, in))
}

// chargeQuotas charges el to the quotas its evaluation named and returns
// rate_limited (or the store's reason) when one refuses, reason otherwise.
func (d *Decider) chargeQuotas(ctx context.Context, el *Decision, reason Reason) Reason {
	if len(el.quotas) == 0 {
		return reason
	}
	ruleID := el.RuleID
	if r := d.charge(ctx, el); r != "" {
		el.RequiredScopes = nil
		return r
	}
	el.RuleID = ruleID
	return reason
}

// evaluate runs the policy on in and maps its result to a reason.
func (d *Decider) evaluate(lp *LoadedPolicy, el *Decision, in *policy.Input) Reason {
	var res policy.Result
	if d.cfg.Explain {
		tr := lp.Policy.Explain(in)
		res, el.Trace = tr.Result, &tr
	} else {
		res = lp.Policy.Evaluate(in)
	}
	el.RuleID, el.Shadow, el.WhenErrors = res.RuleID, res.Shadow, res.WhenErrors
	el.quotas = res.Quotas
	el.RecoverResults = res.RecoverResults
	el.Conceal = res.Refusal == policy.RefusalConceal
	switch {
	case res.Cause == policy.CauseUnsafeURI:
		return ReasonUnsafeURI
	case res.Cause == policy.CauseInvalidInput: // a target mcpparse should have refused
		return ReasonInvalidParams
	case res.Cause == policy.CauseDefinitionChanged:
		if in.Definition != nil && in.Definition.Superseded {
			el.Detail = supersededDetail
		}
		return ReasonDefinitionChanged
	case res.Cause == policy.CauseToolNotListed:
		return ReasonToolNotListed
	case res.Cause == policy.CauseDefault && in.Op == policy.OpRequest && !mcpmethod.FromClient(in.Method):
		// A method MCP does not define, that no rule names: denied even
		// under default ask, since no approval can make it meaningful.
		return ReasonUnknownMethod
	case res.Decision == policy.Allow:
		return stepUp(lp.Policy, el, res.Scopes, ReasonAllowed)
	case res.Decision == policy.Ask:
		return stepUp(lp.Policy, el, res.Scopes, ReasonAuthorizationRequired)
	case res.Cause == policy.CauseDefault:
		return ReasonDefaultDeny
	}
	return ReasonPolicyDenied
}

// authenticate reads the single Authorization header, "Bearer" or "DPoP"
// 1*SP token (RFC 6750 section 2.1, RFC 9449 section 7.1; the scheme is
// case-insensitive), verifies the token and, for a token bound by cnf.jkt,
// its DPoP proof. On failure it returns the reason and why, for the
// decision log: which check failed and, for issuer and audience, what the
// token carried; never the token.
func (d *Decider) authenticate(ctx context.Context, r *Request) (*bearer.Principal, Reason, string) {
	h, n := r.Headers.Get("authorization")
	if n == 0 {
		return nil, ReasonTokenMissing, "no Authorization header"
	}
	if n > 1 {
		return nil, ReasonTokenMalformed, fmt.Sprintf("%d Authorization headers", n)
	}
	scheme, tok, ok := bearer.ParseAuthorization(h)
	switch {
	case !ok:
		return nil, ReasonTokenMalformed, "Authorization is not Bearer or DPoP, 1*SP, one token (RFC 6750 section 2.1, RFC 9449 section 7.1)"
	case scheme == "dpop" && d.cfg.DPoP == nil:
		return nil, ReasonTokenMalformed, "the DPoP scheme, but DPoP proofs are not checked here"
	}
	p, err := d.cfg.Verifier.Verify(ctx, tok)
	if err != nil {
		var te *bearer.TokenError
		if errors.As(err, &te) {
			why := string(bearerReason(te.Kind))
			if te.Err != nil {
				why = te.Err.Error()
			}
			return nil, bearerReason(te.Kind), why
		}
		return nil, ReasonTokenInvalid, err.Error()
	}
	if aud := r.RouteAudience; aud != "" {
		if !slices.Contains(p.Audiences, aud) {
			return nil, ReasonTokenWrongAudience, fmt.Sprintf("token aud %s lacks the route's audience %q (the route's audience)", bearer.ClipList(p.Audiences), aud)
		}
		if !d.audienceConfigured(aud) {
			return nil, ReasonTokenWrongAudience, fmt.Sprintf("the route's audience %q is not a configured --audience", aud)
		}
		if p.Audience != aud { // the digest names the route's audience
			q := *p
			q.Audience = aud
			p = &q
		}
	}
	jkt, ok := bearer.TokenBinding(p.Claims)
	switch {
	case !ok || jkt != "" && d.cfg.DPoP == nil:
		return nil, ReasonTokenBindingUnsupported, "cnf holds a binding this service cannot check"
	case scheme == "bearer" && jkt != "":
		return nil, ReasonDPoPProofMissing, "a DPoP-bound token (cnf.jkt) presented as Bearer"
	case scheme == "dpop" && jkt == "":
		return nil, ReasonDPoPProofMismatch, "DPoP scheme with a token that has no cnf.jkt"
	case scheme == "dpop":
		proof, np := r.Headers.Get("dpop")
		if np == 0 {
			return nil, ReasonDPoPProofMissing, "no DPoP header"
		}
		if np > 1 {
			return nil, ReasonDPoPProofInvalid, "several DPoP headers"
		}
		err := d.cfg.DPoP.Verify(proof, bearer.DPoPRequest{Method: r.Method, Scheme: r.Scheme, Host: r.Host, Path: r.Path, AccessToken: tok, JKT: jkt})
		if err != nil {
			var de *bearer.DPoPError
			if errors.As(err, &de) {
				return nil, bearerReason(de.Kind), err.Error()
			}
			return nil, ReasonDPoPProofInvalid, err.Error()
		}
	}
	return p, "", ""
}

// audienceConfigured reports whether aud is one the verifier accepts (a
// verifier with no audiences accepts none: fail closed).
func (d *Decider) audienceConfigured(aud string) bool {
	return slices.Contains(d.cfg.Verifier.Audiences(), aud)
}

// checkContentLength compares a Content-Length header with the body Envoy
// delivered: fewer bytes are a truncated body, more or a malformed header an
// invalid request.
func checkContentLength(r *Request) Reason {
	cl, n := r.Headers.Get("content-length")
	if n == 0 {
		return ""
	}
	want, err := strconv.ParseUint(cl, 10, 63)
	switch {
	case n > 1 || err != nil || cl[0] == '+':
		return ReasonInvalidRequest
	case uint64(len(r.Body)) < want:
		return ReasonBodyTruncated
	case uint64(len(r.Body)) > want:
		return ReasonInvalidRequest
	}
	return ""
}

// checkMCPHeaders enforces MCP 2026-07-28's rule (SEP-2243) that Mcp-Method
// and Mcp-Name, when present, equal the body's method and its name: params.name
// of tools/call and prompts/get, params.uri of resources/read, and
// params.taskId of the tasks extension's tasks/get, tasks/update and
// tasks/cancel (SEP-2663, "Streamable HTTP: Routing Headers"). Values of the
// form =?base64?…?= are decoded first; a repeated header, an undecodable
// value, or an Mcp-Name on any other method (tasks/result included: SEP-2663
// removed it and names no header for it) is ReasonHeaderMismatch. An absent
// header is not checked here.
func checkMCPHeaders(h Headers, m *mcpparse.Message) Reason {
	if v, n := h.Get("mcp-method"); n > 0 {
		got, err := mcpparse.DecodeHeaderValue(v)
		if n > 1 || err != nil || m.Kind == mcpparse.KindResponse || got != m.Method {
			return ReasonHeaderMismatch
		}
	}
	if v, n := h.Get("mcp-name"); n > 0 {
		want := ""
		switch mm, _ := mcpmethod.Lookup(m.Method); mm.Target {
		case mcpmethod.Tool:
			want = m.Tool
		case mcpmethod.Prompt:
			want = m.Prompt
		case mcpmethod.Resource:
			want = m.URI
		}
		if m.Kind == mcpparse.KindRequest && mcpmethod.TaskIDInName(m.Method) {
			want, _ = paramString(m.Params, "taskId")
		}
		got, err := mcpparse.DecodeHeaderValue(v)
		if n > 1 || err != nil || want == "" || got != want {
			return ReasonHeaderMismatch
		}
	}
	return ""
}

// newDecisionID returns 16 random bytes as 32 lowercase hex digits.
func newDecisionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// listenTarget is the target of a subscriptions/listen: its
// resourceSubscriptions URIs as a JSON array in request order, so the
// request digest (and an approval of it) names every URI.
func listenTarget(uris []string) string {
	b := []byte{'['}
	for i, u := range uris {
		if i > 0 {
			b = append(b, ',')
		}
		b = mcpparse.AppendJCSString(b, u)
	}
	return string(append(b, ']'))
}
