package extauthz

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Request is one HTTP request as Envoy forwards it to Check, independent of
// the wire form (CheckRequest, or a captured request for `extauthz check`).
type Request struct {
	ID                string            // Envoy's request id (x-request-id), for the log only
	Method            string            // HTTP method
	Scheme            string            // URI scheme as Envoy reports it ("http", "https"); only for DPoP's htu
	Host              string            // the :authority; only for DPoP's htu
	Path              string            // path and query; only for DPoP's htu, never to decide the policy
	Headers           Headers           // lower-cased names
	Body              []byte            // exact bytes
	ContextExtensions map[string]string // attributes.context_extensions
	// DestinationPrincipal is attributes.destination.principal: under Istio,
	// the SPIFFE id of the workload the request is for (from the proxy's
	// own certificate, not from the client).
	DestinationPrincipal string
}

// Headers maps lower-cased header names to every value received for them.
type Headers map[string][]string

// Get returns the value of name (lower-case) and how many times it occurred.
func (h Headers) Get(name string) (string, int) {
	v := h[name]
	if len(v) == 0 {
		return "", 0
	}
	return v[0], len(v)
}

// Decision is the outcome of one Check, with everything the response, the
// decision log and the metrics need. It never holds the token or raw
// arguments.
type Decision struct {
	ID            string          // decision id: 32 lowercase hex digits
	Decision      policy.Decision // allow, deny or ask (ask is answered as a denial)
	Reason        Reason
	RuleID        string
	Server        string
	Method        string // JSON-RPC method; "GET", "DELETE" for bodiless requests; "response" for client responses; "batch"
	Tool          string // tools/call params.name
	Target        string // tool name, resource URI, prompt name or completion ref
	ArgsDigest    string // sha256:<hex> of the JCS form of params.arguments ({} when absent)
	RequestDigest string // see requestDigest
	Principal     *bearer.Principal
	RPCID         []byte // the request's JSON-RPC id, byte for byte; nil answers with id null
	BatchIndex    int    // index of the deciding batch element; -1 outside batches
	BatchDigests  []string
	Detail        string               // internal detail for the log (a parse error's message); never argument values
	PolicyVersion string               // sha256:<hex> of the policy file
	Shadow        []policy.ShadowMatch // shadow rules that matched; they never decide
	// WhenErrors are the `when` expressions that failed at run time while
	// deciding (policy.Result.WhenErrors): counted by rule id and named in
	// the decision line's detail.
	WhenErrors []policy.WhenError
	// Trace is how the policy reached its decision, when the Decider's
	// Explain is set and the policy was evaluated; nil otherwise.
	Trace *policy.Trace

	// Binding (binding.go, stepup.go, conceal.go).
	RequiredScopes []string // the deciding rule's scopes, on insufficient_scope
	Conceal        bool     // refusal: conceal applies to this operation
	Retry          bool     // allowed as a retry: idempotency key already bound to this digest
	Approver       string   // the approval's approver claim, when an approval admitted the request
	ApprovalID     string   // the approval's jti
	ApprovalURL    string   // where to get an approval (--approval-url), on asks

	parsed bool   // the body went through mcpparse.Parse
	params []byte // params of the deciding message, for _meta
}

// Allowed reports whether the request may reach the upstream.
func (d *Decision) Allowed() bool { return d.Reason == ReasonAllowed && d.Decision == policy.Allow }

// LoadedPolicy is a compiled policy and the identity of the file it came
// from. It is never mutated after it is stored.
type LoadedPolicy struct {
	Policy  *policy.Policy
	File    string
	Version string // "sha256:" + lowercase hex SHA-256 of the file bytes
}

// PolicyStore holds the live policy; Load and Store are atomic, so a Check sees
// either the old or the new policy, never a mix.
type PolicyStore struct{ p atomic.Pointer[LoadedPolicy] }

// Load returns the live policy, or nil before the first Store.
func (s *PolicyStore) Load() *LoadedPolicy { return s.p.Load() }

// Store publishes lp.
func (s *PolicyStore) Store(lp *LoadedPolicy) { s.p.Store(lp) }

// CompilePolicy compiles src (the bytes of file) into a LoadedPolicy.
// Errors are *policy.CompileError.
func CompilePolicy(file string, src []byte) (*LoadedPolicy, error) {
	p, err := policy.Compile(file, src)
	if err != nil {
		return nil, err
	}
	return &LoadedPolicy{Policy: p, File: file, Version: mcpparse.Digest(src)}, nil
}

// Decider decides Requests. It is safe for concurrent use.
type Decider struct {
	ServerID string // default MCP server id when the route names none
	// ServersByPrincipal maps a destination principal (SPIFFE id) to the
	// MCP server id, for one service behind several Istio workloads (Istio
	// sets no context extension). Consulted after the route's mcp_server
	// and before ServerID.
	ServersByPrincipal map[string]string
	Verifier           bearer.TokenVerifier
	// DPoP checks DPoP proofs (RFC 9449) of tokens bound with cnf.jkt. Nil
	// means no DPoP: the DPoP scheme is refused and so are bound tokens.
	DPoP     *bearer.DPoPVerifier
	Policies *PolicyStore
	Limits   mcpparse.Limits
	// Binding applies approvals and idempotency keys; nil disables both.
	Binding *Binding
	// CaseSensitiveKeys holds the MCP server ids whose SDK matches argument
	// names case-sensitively (TypeScript, Python): their requests parse
	// with mcpparse.ParseOptions.CaseSensitiveKeys, so "amount" and
	// "Amount" are two arguments. Every other server's requests refuse such
	// names (case_variant_key), since Go's encoding/json would merge them.
	CaseSensitiveKeys map[string]bool
	// Explain fills Decision.Trace (extauthz check --explain, extauthz
	// test). It costs an evaluation of every rule: never set it in serve.
	Explain bool
}

// Decide runs the whole decision for r: server, body framing, token, strict
// parse, digests, policy. It never returns nil and never panics out: a
// recovered panic is a denial with reason internal_error.
func (d *Decider) Decide(ctx context.Context, r *Request) (dec *Decision) {
	dec = &Decision{ID: newDecisionID(), Decision: policy.Deny, BatchIndex: -1}
	defer func() {
		if p := recover(); p != nil {
			*dec = Decision{ID: dec.ID, Decision: policy.Deny, Reason: ReasonInternalError, BatchIndex: -1,
				Detail: fmt.Sprintf("panic: %v", p)}
		}
	}()
	dec.Reason = d.decide(ctx, r, dec)
	if d.Binding != nil {
		dec.Reason = d.Binding.bind(ctx, r, dec)
	}
	if dec.Reason != ReasonAllowed && dec.Decision == policy.Allow {
		dec.Decision = policy.Deny // fail closed: only ReasonAllowed admits
	}
	if dec.Reason != ReasonAllowed && !dec.parsed {
		d.peek(r, dec)
	}
	return dec
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
	limit := d.Limits.MaxBytes
	if limit <= 0 {
		limit = mcpparse.DefaultMaxBytes
	}
	if len(r.Body) > limit {
		return
	}
	dec.RPCID, dec.Method = mcpparse.PeekEnvelope(r.Body)
}

func (d *Decider) decide(ctx context.Context, r *Request, dec *Decision) Reason {
	if ctx.Err() != nil {
		return ReasonDeadlineExceeded
	}
	lp := d.Policies.Load()
	if lp == nil {
		return ReasonPolicyUnavailable
	}
	dec.PolicyVersion = lp.Version

	dec.Server = r.ContextExtensions[ContextExtensionServer]
	if dec.Server == "" && r.DestinationPrincipal != "" {
		dec.Server = d.ServersByPrincipal[r.DestinationPrincipal]
	}
	if dec.Server == "" {
		dec.Server = d.ServerID
	}
	if dec.Server == "" {
		return ReasonUnknownServer
	}

	var op policy.Op
	switch r.Method {
	case "POST":
		op = policy.OpRequest
		if v, _ := r.Headers.Get("x-envoy-auth-partial-body"); strings.EqualFold(v, "true") {
			return ReasonBodyTruncated
		}
		if reason := checkContentLength(r); reason != "" {
			return reason
		}
	case "GET", "DELETE":
		op, dec.Method = policy.OpHTTPGet, r.Method
		if r.Method == "DELETE" {
			op = policy.OpHTTPDelete
		}
		// Bodiless by definition: a body, announced, cut or delivered, is
		// refused. Envoy adds x-envoy-auth-partial-body: false whenever it
		// buffered, even an empty body (a chunked DELETE, an empty HTTP/2
		// DATA frame): that says nothing was cut, not that a body exists.
		if len(r.Body) != 0 || checkContentLength(r) != "" {
			return ReasonInvalidRequest
		}
		if v, n := r.Headers.Get("x-envoy-auth-partial-body"); n > 1 || (n == 1 && !strings.EqualFold(v, "false")) {
			return ReasonInvalidRequest
		}
	default:
		return ReasonMethodNotAllowed
	}

	principal, reason, detail := d.authenticate(ctx, r)
	if reason != "" {
		dec.Detail = detail
		return reason
	}
	dec.Principal = principal

	if op != policy.OpRequest {
		return d.evaluate(lp, dec, &policy.Input{Op: op, Server: dec.Server, Claims: principal.Claims}, nil)
	}

	if reason := checkBodyEncoding(r.Headers); reason != "" {
		return reason
	}
	if len(r.Body) == 0 {
		return ReasonBodyMissing
	}
	version, _ := r.Headers.Get("mcp-protocol-version")
	dec.parsed = true
	body, err := mcpparse.Parse(r.Body, mcpparse.ParseOptions{
		Limits: d.Limits,
		// Batches exist only in 2025-03-26, the version a server assumes
		// when the header is absent.
		AllowBatch:        version == "" || version == "2025-03-26",
		CaseSensitiveKeys: d.CaseSensitiveKeys[dec.Server],
	})
	if err != nil {
		var pe *mcpparse.ParseError
		if errors.As(err, &pe) {
			dec.Detail = pe.Error()
			return parseReason(pe.Kind)
		}
		return ReasonInternalError
	}
	if body.Batch {
		dec.Method = "batch"
		// MCP 2026-07-28 has no batches: its headers name one message.
		if r.Headers["mcp-method"] != nil || r.Headers["mcp-name"] != nil {
			return ReasonHeaderMismatch
		}
	} else if reason := checkMCPHeaders(r.Headers, &body.Messages[0]); reason != "" {
		dec.RPCID = body.Messages[0].ID
		return reason
	}

	// Every element is decided; the first that is not allowed decides the
	// whole body. Its id answers a single message; a batch answers id null.
	var first *Decision
	var single Decision // the element of a lone message: no allocation
	for i := range body.Messages {
		m := &body.Messages[i]
		el := &single
		if body.Batch {
			el = new(Decision)
		}
		*el = Decision{Server: dec.Server, Principal: principal, PolicyVersion: dec.PolicyVersion}
		if !body.Batch {
			el.RPCID = m.ID
		}
		reason := d.decideMessage(ctx, lp, el, m)
		el.Reason = reason
		if body.Batch {
			dec.BatchDigests = append(dec.BatchDigests, el.RequestDigest)
		}
		if reason != ReasonAllowed && first == nil {
			first = el
			first.BatchIndex = -1
			if body.Batch {
				first.BatchIndex = i
			}
		}
		if i == 0 {
			copyDecision(dec, el)
		}
	}
	if first == nil {
		if body.Batch {
			dec.Method, dec.Tool, dec.Target = "batch", "", ""
			dec.ArgsDigest, dec.RequestDigest = "", mcpparse.Digest([]byte(strings.Join(dec.BatchDigests, ",")))
		}
		return ReasonAllowed
	}
	copyDecision(dec, first)
	dec.BatchIndex = first.BatchIndex
	return first.Reason
}

func copyDecision(dst, src *Decision) {
	dst.Decision, dst.RuleID = src.Decision, src.RuleID
	dst.Method, dst.Tool, dst.Target = src.Method, src.Tool, src.Target
	dst.ArgsDigest, dst.RequestDigest, dst.RPCID = src.ArgsDigest, src.RequestDigest, src.RPCID
	dst.Shadow, dst.Trace, dst.WhenErrors = src.Shadow, src.Trace, src.WhenErrors
	dst.RequiredScopes, dst.Conceal, dst.params = src.RequiredScopes, src.Conceal, src.params
}

// decideMessage fills el for one JSON-RPC message and returns its reason.
func (d *Decider) decideMessage(ctx context.Context, lp *LoadedPolicy, el *Decision, m *mcpparse.Message) Reason {
	if ctx.Err() != nil {
		return ReasonDeadlineExceeded
	}
	in := &policy.Input{Server: el.Server, Claims: el.Principal.Claims}
	switch m.Kind {
	case mcpparse.KindResponse:
		in.Op = policy.OpResponse
		el.Method = "response"
	default:
		in.Op = policy.OpRequest
		in.Method = m.Method
		el.Method = m.Method
	}
	in.Tool, in.URI, in.URIs, in.Prompt, in.LazyArgs = m.Tool, m.URI, m.URIs, m.Prompt, m
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
		Audience: el.Principal.Audience, Server: el.Server, Method: el.Method, Target: el.Target,
		ArgsDigest: el.ArgsDigest, Issuer: el.Principal.Issuer, Subject: el.Principal.Subject,
	})
	return d.evaluate(lp, el, in, m)
}

// evaluate runs the policy and maps its result to a reason.
func (d *Decider) evaluate(lp *LoadedPolicy, el *Decision, in *policy.Input, m *mcpparse.Message) Reason {
	if m == nil { // bodiless GET / DELETE
		el.ArgsDigest = emptyArgsDigest
		el.RequestDigest = requestDigest(requestEnvelope{
			Audience: el.Principal.Audience, Server: el.Server, Method: el.Method,
			ArgsDigest: el.ArgsDigest, Issuer: el.Principal.Issuer, Subject: el.Principal.Subject,
		})
	}
	var res policy.Result
	if d.Explain {
		tr := lp.Policy.Explain(in)
		res, el.Trace = tr.Result, &tr
	} else {
		res = lp.Policy.Evaluate(in)
	}
	el.Decision, el.RuleID, el.Shadow, el.WhenErrors = res.Decision, res.RuleID, res.Shadow, res.WhenErrors
	el.Conceal = res.Refusal == policy.RefusalConceal
	switch {
	case res.Cause == policy.CauseUnsafeURI:
		el.Decision = policy.Deny
		return ReasonUnsafeURI
	case res.Cause == policy.CauseInvalidInput: // a target mcpparse should have refused
		el.Decision = policy.Deny
		return ReasonInvalidParams
	case res.Cause == policy.CauseDefault && in.Op == policy.OpRequest && !mcpmethod.FromClient(in.Method):
		// A method MCP does not define, that no rule names: denied even
		// under default ask, since no approval can make it meaningful.
		el.Decision = policy.Deny
		return ReasonUnknownMethod
	case res.Decision == policy.Allow:
		return stepUp(el, res.Scopes, ReasonAllowed)
	case res.Decision == policy.Ask:
		return stepUp(el, res.Scopes, ReasonAuthorizationRequired)
	case res.Cause == policy.CauseDefault:
		return ReasonDefaultDeny
	default:
		el.Decision = policy.Deny
		return ReasonPolicyDenied
	}
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
	case scheme == "dpop" && d.DPoP == nil:
		return nil, ReasonTokenMalformed, "the DPoP scheme, but DPoP proofs are not checked here"
	}
	p, err := d.Verifier.Verify(ctx, tok)
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
	if aud := r.ContextExtensions[ContextExtensionAudience]; aud != "" {
		if !slices.Contains(p.Audiences, aud) {
			return nil, ReasonTokenWrongAudience, fmt.Sprintf("token aud %s lacks the route's audience %q (context extension %s)", bearer.ClipList(p.Audiences), aud, ContextExtensionAudience)
		}
		if !d.audienceConfigured(aud) {
			return nil, ReasonTokenWrongAudience, fmt.Sprintf("the route's audience %q (context extension %s) is not a configured --audience", aud, ContextExtensionAudience)
		}
		if p.Audience != aud { // the digest names the route's audience
			q := *p
			q.Audience = aud
			p = &q
		}
	}
	jkt, ok := bearer.TokenBinding(p.Claims)
	switch {
	case !ok || jkt != "" && d.DPoP == nil:
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
		err := d.DPoP.Verify(proof, bearer.DPoPRequest{Method: r.Method, Scheme: r.Scheme, Host: r.Host, Path: r.Path, AccessToken: tok, JKT: jkt})
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
	return slices.Contains(d.Verifier.Audiences(), aud)
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

// checkMCPHeaders enforces MCP 2026-07-28's rule that Mcp-Method and Mcp-Name,
// when present, equal the body's method and name (or URI); values of the form
// =?base64?…?= are decoded first.
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
		got, err := mcpparse.DecodeHeaderValue(v)
		if n > 1 || err != nil || want == "" || got != want {
			return ReasonHeaderMismatch
		}
	}
	return ""
}

func parseReason(k mcpparse.ErrorKind) Reason {
	switch k {
	case mcpparse.ErrSyntax:
		return ReasonParseError
	case mcpparse.ErrInvalidUTF8:
		return ReasonInvalidUTF8
	case mcpparse.ErrDuplicateKey:
		return ReasonDuplicateKey
	case mcpparse.ErrCaseVariantKey:
		return ReasonCaseVariantKey
	case mcpparse.ErrTrailingData:
		return ReasonTrailingData
	case mcpparse.ErrTooLarge:
		return ReasonBodyTooLarge
	case mcpparse.ErrTooDeep, mcpparse.ErrTooManyKeys, mcpparse.ErrTooManyElements, mcpparse.ErrStringTooLong:
		return ReasonLimitExceeded
	case mcpparse.ErrInvalidRequest, mcpparse.ErrBatchEmpty:
		return ReasonInvalidRequest
	case mcpparse.ErrInvalidParams:
		return ReasonInvalidParams
	case mcpparse.ErrNonCanonicalNumber:
		return ReasonNonCanonicalNumber
	case mcpparse.ErrBatchNotSupported:
		return ReasonBatchNotSupported
	case mcpparse.ErrReservedKey:
		return ReasonReservedKey
	}
	return ReasonParseError
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
