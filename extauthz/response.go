package extauthz

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
)

// RequestFromCheck converts Envoy's CheckRequest into a Request. Headers come
// from header_map when Envoy's encode_raw_headers is on (one entry per
// occurrence), else from headers (duplicates already joined with ","). The
// body comes from raw_body (pack_as_bytes: exact bytes) or else body.
func RequestFromCheck(req *authv3.CheckRequest) *Request {
	attrs := req.GetAttributes()
	h := attrs.GetRequest().GetHttp()
	// The Request and the header values of a usual request: one allocation.
	rb := new(struct {
		r    Request
		vals [16]string
	})
	r := &rb.r
	*r = Request{
		ID:                   h.GetId(),
		Method:               h.GetMethod(),
		Scheme:               h.GetScheme(),
		Host:                 h.GetHost(),
		Path:                 h.GetPath(),
		ContextExtensions:    attrs.GetContextExtensions(),
		DestinationPrincipal: attrs.GetDestination().GetPrincipal(),
	}
	// Each name gets a one-value slice of one shared backing array (cap 1:
	// a second value for a name appends into a new array, never over the
	// next name's value).
	if hm := h.GetHeaderMap(); len(hm.GetHeaders()) > 0 {
		r.Headers = make(Headers, len(hm.GetHeaders()))
		vals := rb.vals[:]
		if len(hm.GetHeaders()) > len(vals) {
			vals = make([]string, len(hm.GetHeaders()))
		}
		for i, hv := range hm.GetHeaders() {
			v := hv.GetValue()
			if len(hv.GetRawValue()) > 0 {
				v = string(hv.GetRawValue())
			}
			k := strings.ToLower(hv.GetKey())
			if old, ok := r.Headers[k]; ok {
				r.Headers[k] = append(old, v)
				continue
			}
			vals[i] = v
			r.Headers[k] = vals[i : i+1 : i+1]
		}
	} else {
		r.Headers = make(Headers, len(h.GetHeaders()))
		vals := rb.vals[:0]
		if len(h.GetHeaders()) > cap(vals) {
			vals = make([]string, 0, len(h.GetHeaders()))
		}
		for k, v := range h.GetHeaders() {
			k = strings.ToLower(k)
			if old, ok := r.Headers[k]; ok {
				r.Headers[k] = append(old, v)
				continue
			}
			i := len(vals)
			vals = append(vals, v)
			r.Headers[k] = vals[i : i+1 : i+1]
		}
	}
	if raw := h.GetRawBody(); len(raw) > 0 {
		r.Body = raw
	} else if b := h.GetBody(); b != "" {
		r.Body = []byte(b)
	}
	return r
}

// DenialStatus chooses the HTTP status of policy denials (deny and ask).
type DenialStatus int

const (
	// DenialStatusAuto answers a policy denial of a JSON-RPC request on
	// Streamable HTTP (a POST whose Accept includes text/event-stream) with
	// HTTP 200 and the JSON-RPC error response, as an MCP server that refuses
	// a call itself does: every SDK hands that error to the caller intact
	// and keeps the session. Everything else gets its HTTP error status.
	DenialStatusAuto DenialStatus = iota
	// DenialStatusHTTPError answers every denial with its HTTP error status
	// (403 for policy denials).
	DenialStatusHTTPError
)

// ParseDenialStatus parses the --denial-status values "auto" and "http-error".
func ParseDenialStatus(s string) (DenialStatus, error) {
	switch s {
	case "auto":
		return DenialStatusAuto, nil
	case "http-error":
		return DenialStatusHTTPError, nil
	}
	return 0, fmt.Errorf("denial status %q: want auto or http-error", s)
}

func (s DenialStatus) String() string {
	if s == DenialStatusHTTPError {
		return "http-error"
	}
	return "auto"
}

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
}

// Status returns the HTTP status of the answer to d, a request with headers
// h. Allowed: 200. Token denials: 401. Request faults: 400, 405, 413, 415.
// Unavailable: 503; internal: 500. Policy denials (deny, ask): 200 under
// DenialStatusAuto when the request is a JSON-RPC request (it has an id and
// is not a batch or a response) on Streamable HTTP, else 403. The
// CheckResponse's gRPC status names the real decision either way.
func (rs *Responder) Status(d *Decision, h Headers) int {
	o := d.Reason.outcome()
	if o.class == classPolicy && rs.DenialStatus == DenialStatusAuto && streamableRequest(d, h) {
		return http.StatusOK
	}
	return o.http
}

// streamableRequest reports whether d decided a single JSON-RPC request
// (not a notification, response or batch) sent over Streamable HTTP: a POST
// whose Accept lists text/event-stream (MCP 2025-03-26 and later, "Sending
// Messages to the Server"). Legacy HTTP+SSE clients (2024-11-05) do not send
// it; they read responses from their GET stream only, so an HTTP 200 would
// leave them waiting.
func streamableRequest(d *Decision, h Headers) bool {
	if len(d.RPCID) == 0 || d.BatchIndex >= 0 || d.Method == "" || d.Method == "response" || d.Method == "batch" {
		return false
	}
	for _, v := range h["accept"] {
		for _, mr := range strings.Split(v, ",") {
			typ, params, _ := strings.Cut(mr, ";")
			if !strings.EqualFold(strings.TrimSpace(typ), "text/event-stream") {
				continue
			}
			if q, ok := qValue(params); ok && q == 0 {
				continue // "q=0": not acceptable (RFC 9110 section 12.4.2)
			}
			return true
		}
	}
	return false
}

// qValue returns the q parameter of a media range's parameters, if any.
func qValue(params string) (float64, bool) {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, true // an unreadable weight counts as "not acceptable"
		}
		return q, true
	}
	return 0, false
}

// Response builds the CheckResponse for d, a request with headers
// reqHeaders, advertising rs.ResourceMetadataURL on 401. See ResponseFor.
func (rs *Responder) Response(d *Decision, reqHeaders Headers) *authv3.CheckResponse {
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
func (rs *Responder) ResponseFor(d *Decision, r *Request) *authv3.CheckResponse {
	rm := rs.ResourceMetadataURL
	if aud := r.ContextExtensions[ContextExtensionAudience]; aud != "" {
		if u := resourcemeta.URL(aud); u != "" {
			rm = u
		}
	}
	return rs.respond(d, r.Headers, rm)
}

func (rs *Responder) respond(d *Decision, reqHeaders Headers, resourceMetadata string) *authv3.CheckResponse {
	if d.Allowed() {
		return rs.okCheckResponse(d, reqHeaders, false)
	}
	b := new(deniedBlock)
	o := d.Reason.outcome()
	var status int
	var body []byte
	switch {
	case concealable(d): // the MCP server's own answer to an unknown target
		a := concealAnswer(rs.ConcealAs, rs.ConcealJSONResponse, d, reqHeaders)
		for _, h := range a.headers[:a.n] {
			b.add(h.k, h.v)
		}
		status, body = a.status, a.body
	case o.class == classToken:
		b.add("content-type", "application/json")
		b.add("www-authenticate", wwwAuthenticate(d.Reason, reqHeaders, resourceMetadata))
	case d.Reason == ReasonInsufficientScope:
		b.add("content-type", "application/json")
		b.add("www-authenticate", insufficientScopeChallenge(d.RequiredScopes, resourceMetadata))
	default:
		b.add("content-type", "application/json")
	}
	if body == nil {
		status, body = rs.Status(d, reqHeaders), errorBody(d)
	}
	if o.retryAfter > 0 {
		b.add("retry-after", strconv.Itoa(o.retryAfter))
	}
	b.st = rpcstatus.Status{Code: int32(o.grpc), Message: string(d.Reason)}
	b.hs.Code = typev3.StatusCode(status)
	b.dr.Status, b.dr.Headers, b.dr.Body = &b.hs, b.ptrs[:b.n:b.n], string(body)
	b.hr.DeniedResponse = &b.dr
	b.r.Status, b.r.DynamicMetadata, b.r.HttpResponse = &b.st, b.mb.fill(d), &b.hr
	return &b.r
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
func (rs *Responder) DryRunResponse(d *Decision, reqHeaders Headers) *authv3.CheckResponse {
	return rs.okCheckResponse(d, reqHeaders, true)
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
// (okResponse) and d as dynamic metadata, with dry_run "true" when dryRun.
func (rs *Responder) okCheckResponse(d *Decision, reqHeaders Headers, dryRun bool) *authv3.CheckResponse {
	b := new(okBlock)
	md := b.mb.fill(d)
	if dryRun {
		b.mb.set("dry_run", "true")
	}
	b.hr.OkResponse = rs.fillOkResponse(&b.hb, d, reqHeaders, dryRun)
	b.r.Status, b.r.DynamicMetadata, b.r.HttpResponse = &b.st, md, &b.hr
	return &b.r
}

func (rs *Responder) okResponse(d *Decision, reqHeaders Headers, dryRun bool) *authv3.OkHttpResponse {
	return rs.fillOkResponse(new(headerBlock), d, reqHeaders, dryRun)
}

// fillOkResponse builds okResponse's answer in hb.
func (rs *Responder) fillOkResponse(hb *headerBlock, d *Decision, reqHeaders Headers, dryRun bool) *authv3.OkHttpResponse {
	// The headers we set, in name order (TestOkResponseHeaderOrder); an
	// empty value is not sent (e.g. no digest for a body that did not
	// parse).
	var set [9]headerKV
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
		dryDecision, dryReason = d.Decision.String(), string(d.Reason)
	}
	retry := ""
	if d.Retry {
		retry = "true"
	}
	add(HeaderArgsDigest, d.ArgsDigest)
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
	ok.Headers = hb.ptrs[:0:n]
	for i, h := range ours {
		hb.vals[i] = corev3.HeaderValue{Key: h.k, Value: headerValue(h.v)}
		hb.opts[i] = corev3.HeaderValueOption{Header: &hb.vals[i], AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
		ok.Headers = append(ok.Headers, &hb.opts[i])
	}
	for k := range reqHeaders {
		if !setsHeader(ours, k) && foldsOntoOurs(k, rs.DecidedHeaders) {
			ok.HeadersToRemove = append(ok.HeadersToRemove, k)
		}
	}
	sort.Strings(ok.HeadersToRemove)
	return ok
}

// headerKV is one header the service sets on an allowed request.
type headerKV struct{ k, v string }

// setsHeader reports whether name is one of set's names.
func setsHeader(set []headerKV, name string) bool {
	for _, h := range set {
		if h.k == name {
			return true
		}
	}
	return false
}

// headerBlock holds an OkHttpResponse and its header options, allocated
// together.
type headerBlock struct {
	ok   authv3.OkHttpResponse
	ptrs [9]*corev3.HeaderValueOption
	opts [9]corev3.HeaderValueOption
	vals [9]corev3.HeaderValue
}

// decidedHeaders are the request headers the service decides on (besides
// the mcp-* family): a client spelling that an upstream folds onto one of
// them could make it read a value the service never saw.
var decidedHeaders = []string{"authorization", "dpop", "content-type", "content-length", "content-encoding", "transfer-encoding",
	DefaultIdempotencyHeader}

// foldsOntoOurs reports whether a client header name (lower-cased, as Envoy
// sends it) may reach an upstream as a header the service sets or decides
// on. Names are compared folded: any character other than a letter or digit
// reads as '-', in any case, as CGI, WSGI, PHP and Rack fold '_' and '-' into
// one variable (HTTP_X_MCP_PRINCIPAL). Every spelling in the x-mcp-* family
// the service sets folds onto it (x_mcp_principal, X.MCP.Tool,
// x-mcp-approved; the names the service sets exactly are overwritten
// instead); for the mcp-* family and decidedHeaders only spellings other
// than the canonical one do (mcp_method, authori_zation is not one).
// extra are further decided headers (lower-case): Responder.DecidedHeaders.
func foldsOntoOurs(name string, extra []string) bool {
	if foldedHasPrefix(name, "x-mcp-") {
		return true
	}
	if canonicalName(name) {
		return false
	}
	if foldedHasPrefix(name, "mcp-") {
		return true
	}
	for _, hs := range [2][]string{decidedHeaders, extra} {
		for _, h := range hs {
			if len(name) == len(h) && foldedHasPrefix(name, h) {
				return true
			}
		}
	}
	return false
}

// foldedHasPrefix reports whether name, folded as foldsOntoOurs folds it,
// begins with prefix (lower-case letters, digits and '-').
func foldedHasPrefix(name, prefix string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			c = '-'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// canonicalName reports whether name is already in folded form: lower-case
// letters, digits and '-' only.
func canonicalName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// wwwAuthenticate builds the challenge of a 401 with the RFC 9728
// section 5.1 resource_metadata parameter (omitted when resourceMetadata is
// empty): RFC 6750 section 3's Bearer challenge, or
// RFC 9449 section 7.1's DPoP challenge (with the accepted algs) when the
// request used the DPoP scheme or the reason is about a DPoP proof. The
// error is invalid_dpop_proof for a proof that failed, invalid_token for
// any other token fault, and absent when no token was sent.
func wwwAuthenticate(r Reason, reqHeaders Headers, resourceMetadata string) string {
	auth, _ := reqHeaders.Get("authorization")
	scheme, _, _ := strings.Cut(auth, " ")
	dpop := strings.EqualFold(scheme, "DPoP") || strings.HasPrefix(string(r), "dpop_")
	var b strings.Builder
	var params []string
	switch {
	case r == ReasonTokenMissing:
	case dpop && r != ReasonDPoPProofMissing && strings.HasPrefix(string(r), "dpop_"):
		params = append(params, `error="invalid_dpop_proof"`)
	default:
		params = append(params, `error="invalid_token"`)
	}
	if dpop {
		b.WriteString("DPoP")
		params = append(params, `algs="`+strings.Join(bearer.SigningAlgorithms, " ")+`"`)
	} else {
		b.WriteString("Bearer")
	}
	if resourceMetadata != "" {
		params = append(params, `resource_metadata="`+resourceMetadata+`"`)
	}
	if len(params) > 0 {
		b.WriteString(" " + strings.Join(params, ", "))
	}
	return b.String()
}

// headerValue returns v when it is plain header-safe ASCII (visible
// characters and inner spaces, RFC 9110 section 5.5), else v in MCP
// 2026-07-28's header encoding "=?base64?<standard base64 of the UTF-8>?=".
// A token's sub or a tool name can thus never inject CR/LF or reach the
// upstream as different bytes.
func headerValue(v string) string {
	safe := !strings.HasPrefix(v, "=?base64?") && v != "" && v[0] != ' ' && v[len(v)-1] != ' '
	for i := 0; safe && i < len(v); i++ {
		safe = v[i] >= 0x20 && v[i] < 0x7f
	}
	if safe {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// errorBody is the JSON-RPC 2.0 error response of a denial:
//
//	{"jsonrpc":"2.0","id":<id byte for byte, or null>,"error":{"code":<int>,
//	 "message":<text>,"data":{"decision":"deny"|"ask","reason":<Reason>,
//	 "rule_id":<id or "">,"request_digest":<sha256:… or "">,
//	 "decision_id":<hex>,"policy_version":<sha256:… or "">}}}
//
// data also carries "batch_index" when a batch element decided,
// "approval_url" on asks when --approval-url is set, and "scope" (the
// scopes needed, space-separated) on insufficient_scope.
func errorBody(d *Decision) []byte {
	o := d.Reason.outcome()
	b := make([]byte, 0, 384+len(d.RPCID)+len(o.message)+len(d.RuleID)+len(d.ApprovalURL))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if len(d.RPCID) > 0 {
		b = append(b, d.RPCID...) // validated by mcpparse: a JSON string or integer literal
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(o.code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, o.message)
	// data's members in name order, as encoding/json writes a map.
	b = append(b, `,"data":{`...)
	if d.ApprovalURL != "" {
		b = append(b, `"approval_url":`...)
		b = appendJSONString(b, d.ApprovalURL)
		b = append(b, ',')
	}
	if d.BatchIndex >= 0 {
		b = append(b, `"batch_index":`...)
		b = strconv.AppendInt(b, int64(d.BatchIndex), 10)
		b = append(b, ',')
	}
	b = append(b, `"decision":`...)
	b = appendJSONString(b, d.Decision.String())
	b = append(b, `,"decision_id":`...)
	b = appendJSONString(b, d.ID)
	b = append(b, `,"policy_version":`...)
	b = appendJSONString(b, d.PolicyVersion)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, string(d.Reason))
	b = append(b, `,"request_digest":`...)
	b = appendJSONString(b, d.RequestDigest)
	b = append(b, `,"rule_id":`...)
	b = appendJSONString(b, d.RuleID)
	if d.Reason == ReasonInsufficientScope {
		b = append(b, `,"scope":`...)
		b = appendJSONString(b, strings.Join(d.RequiredScopes, " "))
	}
	return append(b, "}}}"...)
}

// appendJSONString appends s as encoding/json.Marshal writes a string:
// '"', '\\' and controls escaped (\b, \f, \n, \r, \t, else \u00xx), '<', '>' and '&'
// as \u003c, \u003e, \u0026, U+2028 and U+2029 as \u2028 and \u2029, and
// each byte that is not UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decisionMetadata is d as a flat struct of strings, for Envoy's dynamic
// metadata. Its Values are allocated together (metadataBlock): one
// allocation for the Struct and its values, one for the map.
func decisionMetadata(d *Decision) *structpb.Struct {
	return new(metadataBlock).fill(d)
}

// fill sets mb to d's metadata (decisionMetadata) and returns its Struct.
func (mb *metadataBlock) fill(d *Decision) *structpb.Struct {
	f := make(map[string]*structpb.Value, len(mb.vals))
	mb.s.Fields = f
	mb.set("decision_id", d.ID)
	mb.set("decision", d.Decision.String())
	mb.set("reason", string(d.Reason))
	mb.set("rule_id", d.RuleID)
	mb.set("method", d.Method)
	mb.set("server", d.Server)
	mb.set("target", d.Target)
	mb.set("args_digest", d.ArgsDigest)
	mb.set("request_digest", d.RequestDigest)
	mb.set("policy_version", d.PolicyVersion)
	if d.Principal != nil {
		mb.set("principal", d.Principal.Subject)
	}
	if d.Retry {
		mb.set("retry", "true")
	}
	return &mb.s
}

// metadataBlock holds the dynamic metadata Struct of one response and room
// for every string Value decisionMetadata and DryRunResponse set.
type metadataBlock struct {
	s    structpb.Struct
	vals [13]structpb.Value
	strs [13]structpb.Value_StringValue
	n    int
}

// set adds the string member k = v; past the block's room it allocates.
func (mb *metadataBlock) set(k, v string) {
	if mb.n == len(mb.vals) {
		mb.s.Fields[k] = structpb.NewStringValue(v)
		return
	}
	sv, val := &mb.strs[mb.n], &mb.vals[mb.n]
	mb.n++
	sv.StringValue = v
	val.Kind = sv
	mb.s.Fields[k] = val
}
