package extauthz

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
)

// Responder turns Decisions into CheckResponses.
type Responder struct {
	// ResourceMetadataURL is the RFC 9728 protected resource metadata URL
	// advertised in WWW-Authenticate on 401 and on 403 insufficient_scope
	// (MCP authorization, 2025-06-18 and 2025-11-25), unless the route
	// names its audience (context extension mcp_audience), whose metadata URL
	// is then advertised.
	ResourceMetadataURL string
	// DenialStatus chooses the HTTP status of policy denials; the zero
	// value is DenialStatusAuto.
	DenialStatus DenialStatus
	// ConcealAs is the SDK whose unknown-target answer a concealed refusal
	// reproduces; "" means ConcealGoSDK.
	ConcealAs ConcealStyle
	// ConcealJSONResponse says the MCP server answers POSTs with
	// application/json rather than an SSE stream (go-sdk
	// StreamableHTTPOptions.JSONResponse, TypeScript enableJsonResponse), so
	// a concealed refusal does too. See concealAnswer.
	ConcealJSONResponse bool
	// DecidedHeaders are further request headers (lower-case) the service
	// decides on, such as a configured idempotency key header: client
	// spellings that fold onto one of them are removed like those of the
	// built-in ones (see foldsOntoOurs).
	DecidedHeaders []string
	// Decisions, when set, signs every allowed decision into the
	// x-mcp-decision header (package mcpdecision; never on a denial, nor
	// on a dry run's would-be denial); nil sends none, and a client-sent
	// x-mcp-decision is removed like every x-mcp-* header.
	Decisions *mcpdecision.Signer
	// Now is the clock of the signed decision's iat; nil means time.Now.
	Now func() time.Time
	// MarkSeam says Envoy runs the response seam (--response-seam): every
	// OK response (dry run too) marks its decision with seam_class, the
	// seamcover class of its method, for the processor to name it met
	// (internal/seamcover). Denials never reach the MCP server, nor the
	// processor, and are not marked.
	MarkSeam bool
}

// seamClass is d's seam_class member of an OK response: "" unless
// MarkSeam.
func (rs *Responder) seamClass(d *decision.Decision) string {
	if !rs.MarkSeam {
		return ""
	}
	return seamcover.ClassOf(d.Method)
}

// Response builds the CheckResponse for d, a request with headers
// reqHeaders, advertising rs.ResourceMetadataURL on 401. See ResponseFor.
func (rs *Responder) Response(d *decision.Decision, reqHeaders decision.Headers) *authv3.CheckResponse {
	return rs.respond(d, reqHeaders, rs.ResourceMetadataURL)
}

// ResponseFor builds the CheckResponse for d, decided on r. Allowed: status
// OK with an OkHttpResponse that sets the x-mcp-* headers and removes
// client-sent copies. Otherwise: a non-OK gRPC status naming the real
// decision, with a DeniedHttpResponse whose status is Status(d, r.Headers)
// and whose body is the JSON-RPC 2.0 error response (application/json); 401
// adds WWW-Authenticate (RFC 6750 section 3, RFC 9728 resource_metadata: the
// route's mcp_audience metadata URL, else rs.ResourceMetadataURL), 503 adds
// Retry-After. A concealed refusal (concealable) is instead the MCP server's
// own answer to an unknown target, status, headers and body (concealAnswer).
// Both carry d as dynamic metadata (namespace envoy.filters.http.ext_authz
// in Envoy's access log).
func (rs *Responder) ResponseFor(d *decision.Decision, r *decision.Request) *authv3.CheckResponse {
	rm := rs.ResourceMetadataURL
	if aud := r.RouteAudience; aud != "" {
		if u := resourcemeta.URL(aud); u != "" {
			rm = u
		}
	}
	return rs.respond(d, r.Headers, rm)
}

func (rs *Responder) respond(d *decision.Decision, reqHeaders decision.Headers, resourceMetadata string) *authv3.CheckResponse {
	if d.Allowed() {
		signed, err := rs.signDecision(d)
		if err == nil {
			return rs.okCheckResponse(d, reqHeaders, false, signed)
		}
		// No statement, no admission: fail closed.
		e := *d
		e.Reason, e.Detail = decision.ReasonInternalError, "signing the decision: "+err.Error()
		d = &e
	}
	if d.Reason == decision.ReasonResultRecovered && len(d.Recovered) == 0 {
		// No result to answer with: a fault, never an empty answer.
		e := *d
		e.Reason, e.Detail = decision.ReasonInternalError, "result_recovered without a recorded result"
		d = &e
	}
	b := new(deniedBlock)
	o := outcomeOf(d.Reason)
	var status int
	var body []byte
	switch {
	case o.class == classRecovered: // the first call's result, for this request's id
		b.add("content-type", "application/json")
		b.add(HeaderRetry, "true")
		id := d.RPCID
		if len(id) == 0 {
			id = []byte("null")
		}
		status, body = http.StatusOK, jsonrpcEnvelope(id, "result", d.Recovered, false)
	case concealable(d): // the MCP server's own answer to an unknown target
		a := concealAnswer(rs.ConcealAs, rs.ConcealJSONResponse, d, reqHeaders)
		for _, h := range a.headers[:a.n] {
			b.add(h.k, h.v)
		}
		status, body = a.status, a.body
	case o.challenge == challengeScope:
		b.add("content-type", "application/json")
		b.add("www-authenticate", insufficientScopeChallenge(d.RequiredScopes, resourceMetadata))
	case o.challenge != challengeNone:
		b.add("content-type", "application/json")
		b.add("www-authenticate", wwwAuthenticate(o.challenge, reqHeaders, resourceMetadata))
	default:
		b.add("content-type", "application/json")
	}
	if body == nil {
		status, body = rs.Status(d, reqHeaders), errorBody(d)
	}
	if o.retryAfter > 0 {
		b.add("retry-after", strconv.Itoa(o.retryAfter))
	} else if d.Reason == decision.ReasonRateLimited {
		b.add("retry-after", strconv.Itoa(retryAfterSeconds(d.RetryAfter)))
	}
	b.st = rpcstatus.Status{Code: int32(o.grpc), Message: string(d.Reason)}
	b.hs.Code = typev3.StatusCode(status)
	b.dr.Status, b.dr.Headers, b.dr.Body = &b.hs, b.ptrs[:b.n:b.n], string(body)
	b.hr.DeniedResponse = &b.dr
	b.r.Status, b.r.DynamicMetadata, b.r.HttpResponse = &b.st, b.mb.fill(d, false, ""), &b.hr
	return &b.r
}

// retryAfterSeconds is d as Retry-After's delay-seconds (RFC 9110 section
// 10.2.3): whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// deniedBlock is a denying CheckResponse and everything it points to but
// its body, allocated together.
type deniedBlock struct {
	r    authv3.CheckResponse
	st   rpcstatus.Status
	hr   authv3.CheckResponse_DeniedResponse
	dr   authv3.DeniedHttpResponse
	hs   typev3.HttpStatus
	ptrs [5]*corev3.HeaderValueOption // content-type, www-authenticate, retry-after; or a concealed answer's (4) and retry-after
	opts [5]corev3.HeaderValueOption
	vals [5]corev3.HeaderValue
	n    int
	mb   metadataBlock
}

// add appends the header k: v (overwriting the upstream's, as header does).
func (b *deniedBlock) add(k, v string) {
	b.vals[b.n] = corev3.HeaderValue{Key: k, Value: v}
	b.opts[b.n] = corev3.HeaderValueOption{Header: &b.vals[b.n], AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
	b.ptrs[b.n] = &b.opts[b.n]
	b.n++
}

// DryRunResponse admits the request whatever d decided, passing the decision
// upstream in x-mcp-dry-run-decision and x-mcp-dry-run-reason. Dynamic
// metadata carries the real decision and dry_run "true".
// A would-be allowed decision carries its signed decision when rs signs;
// a signing error leaves it out (the upstream's verifier then refuses).
func (rs *Responder) DryRunResponse(d *decision.Decision, reqHeaders decision.Headers) *authv3.CheckResponse {
	signed, _ := rs.signDecision(d)
	return rs.okCheckResponse(d, reqHeaders, true, signed)
}

// okBlock is an OK CheckResponse and everything it points to, allocated
// together.
type okBlock struct {
	r  authv3.CheckResponse
	st rpcstatus.Status
	hr authv3.CheckResponse_OkResponse
	hb headerBlock
	mb metadataBlock
}

// okCheckResponse is the OK CheckResponse for d: the x-mcp-* headers
// (fillOkResponse) and d as dynamic metadata, with dry_run "true" when
// dryRun; signed is the x-mcp-decision value ("" sends none).
func (rs *Responder) okCheckResponse(d *decision.Decision, reqHeaders decision.Headers, dryRun bool, signed string) *authv3.CheckResponse {
	b := new(okBlock)
	md := b.mb.fill(d, dryRun, rs.seamClass(d))
	b.hr.OkResponse = rs.fillOkResponse(&b.hb, d, reqHeaders, dryRun, signed)
	b.r.Status, b.r.DynamicMetadata, b.r.HttpResponse = &b.st, md, &b.hr
	return &b.r
}

// fillOkResponse builds in hb the OkHttpResponse of an allowed (or dry-run)
// d: the x-mcp-* headers set, in name order, and every client-sent header
// that folds onto one of them removed. signed is the x-mcp-decision value
// ("" sends none).
func (rs *Responder) fillOkResponse(hb *headerBlock, d *decision.Decision, reqHeaders decision.Headers, dryRun bool, signed string) *authv3.OkHttpResponse {
	// The headers we set, in name order (TestOkResponseHeaderOrder); an
	// empty value is not sent (e.g. no digest for a body that did not
	// parse).
	var set [11]headerKV
	n := 0
	add := func(k, v string) {
		if v != "" {
			set[n] = headerKV{k, v}
			n++
		}
	}
	requestDigest := d.RequestDigest
	if len(d.BatchDigests) > 0 {
		requestDigest = strings.Join(d.BatchDigests, ",")
	}
	principal := ""
	if d.Principal != nil {
		principal = d.Principal.Subject
	}
	var dryDecision, dryReason string
	if dryRun {
		dryDecision, dryReason = d.Reason.Verdict().String(), string(d.Reason)
	}
	retry, sealed := "", ""
	if d.Retry {
		retry = "true"
	}
	if d.SealedCursor {
		sealed = "sealed"
	}
	add(HeaderArgsDigest, d.ArgsDigest)
	add(HeaderCursor, sealed)
	add(HeaderDecision, signed)
	add(HeaderDecisionID, d.ID)
	add(HeaderDryRunDecision, dryDecision)
	add(HeaderDryRunReason, dryReason)
	add(HeaderMethod, d.Method)
	add(HeaderPrincipal, principal)
	add(HeaderRequestDigest, requestDigest)
	add(HeaderRetry, retry)
	add(HeaderTool, d.Tool)
	ours := set[:n]

	ok := &hb.ok
	var ptrs []*corev3.HeaderValueOption
	opts, vals := hb.opts[:], hb.vals[:]
	if n <= len(hb.ptrs) {
		ptrs = hb.ptrs[:0:n]
	} else { // a dry run's two more
		ptrs, opts, vals = make([]*corev3.HeaderValueOption, 0, n), make([]corev3.HeaderValueOption, n), make([]corev3.HeaderValue, n)
	}
	for i, h := range ours {
		// Field by field into zero memory (see RequestFromCheck).
		vals[i].Key, vals[i].Value = h.k, headerValue(h.v)
		opts[i].Header, opts[i].AppendAction = &vals[i], corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
		ptrs = append(ptrs, &opts[i])
	}
	ok.Headers = ptrs
	for k := range reqHeaders {
		if !setsHeader(ours, k) && foldsOntoOurs(k, rs.DecidedHeaders) {
			ok.HeadersToRemove = append(ok.HeadersToRemove, k)
		}
	}
	sort.Strings(ok.HeadersToRemove)
	return ok
}

// headerBlock holds an OkHttpResponse and its header options, allocated
// together: room for the 7 headers an allowed request gets at most (a
// dry run's 9 are allocated apart). With
// metadataBlock's room it keeps okBlock in the 2,688-byte size class,
// below 3,072 with room for all 9 headers and 16 members.
type headerBlock struct {
	ok   authv3.OkHttpResponse
	ptrs [7]*corev3.HeaderValueOption
	opts [7]corev3.HeaderValueOption
	vals [7]corev3.HeaderValue
}
