package extauthz

import (
	"net/http"

	"google.golang.org/grpc/codes"
)

// Reason is why Check decided as it did: a closed set of snake_case words,
// written into error.data.reason of every denial, the decision log line and
// the metric label. README lists them all; adding one is an API change.
type Reason string

// The closed set of reasons. ReasonAllowed is the only one that admits a
// request; every other reason is a denial.
const (
	ReasonAllowed Reason = "allowed" // an allow rule matched

	// Policy outcomes.
	ReasonPolicyDenied          Reason = "policy_denied"          // a deny rule matched
	ReasonDefaultDeny           Reason = "default_deny"           // no rule matched; policy default is deny
	ReasonAuthorizationRequired Reason = "authorization_required" // an ask rule (or default ask) matched; no human can approve from a sidecar
	ReasonUnknownMethod         Reason = "unknown_method"         // a method MCP does not define, with no rule for it
	ReasonUnsafeURI             Reason = "unsafe_uri"             // a resource URI policy.ParseURI cannot normalize safely (dot segments, encoded '/', '\', '.', '%', userinfo, NFKC delimiters, ...)
	ReasonUnknownServer         Reason = "unknown_server"         // neither the route's mcp_server context extension nor --server-id names the MCP server

	// Token (RFC 6750, MCP authorization).
	ReasonTokenMissing       Reason = "token_missing"        // no Authorization header
	ReasonTokenMalformed     Reason = "token_malformed"      // not Bearer/DPoP 1*SP one token, not a compact JWS, or several Authorization headers
	ReasonTokenInvalid       Reason = "token_invalid"        // bad signature, unknown key, algorithm not allowed, nbf in the future
	ReasonTokenExpired       Reason = "token_expired"        // exp in the past
	ReasonTokenWrongIssuer   Reason = "token_wrong_issuer"   // iss is not the configured issuer
	ReasonTokenWrongAudience Reason = "token_wrong_audience" // aud holds none of the configured audiences (RFC 8707 resource)
	ReasonIdPUnavailable     Reason = "idp_unavailable"      // the issuer's discovery document or key set cannot be fetched

	// Sender-constrained tokens (RFC 7800 cnf, RFC 9449 DPoP).
	ReasonTokenBindingUnsupported Reason = "token_binding_unsupported" // cnf other than {"jkt"}: x5t#S256 (mTLS), jwk, jku, kid… cannot be checked here
	ReasonDPoPProofMissing        Reason = "dpop_proof_missing"        // a cnf.jkt token as Bearer, or the DPoP scheme without a DPoP header
	ReasonDPoPProofInvalid        Reason = "dpop_proof_invalid"        // several DPoP headers; proof not a dpop+jwt signed by its public jwk with jti, htm, htu, iat, ath
	ReasonDPoPProofMismatch       Reason = "dpop_proof_mismatch"       // htm, htu, ath or the jwk thumbprint disagree with the request, token or cnf.jkt; or an unbound token under DPoP
	ReasonDPoPProofStale          Reason = "dpop_proof_stale"          // iat outside the accepted window
	ReasonDPoPProofReplayed       Reason = "dpop_proof_replayed"       // jti already seen within the window

	// The HTTP request as Envoy forwarded it.
	ReasonBodyTruncated        Reason = "body_truncated"         // x-envoy-auth-partial-body: true, or fewer bytes than content-length
	ReasonBodyMissing          Reason = "body_missing"           // a POST with no body delivered
	ReasonBodyTooLarge         Reason = "body_too_large"         // the body exceeds the configured limit
	ReasonUnsupportedMediaType Reason = "unsupported_media_type" // a POST body outside the decided set: not application/json, a charset other than utf-8, another parameter, a content-encoding
	ReasonMethodNotAllowed     Reason = "method_not_allowed"     // an HTTP method other than POST, GET, DELETE
	ReasonHeaderMismatch       Reason = "header_mismatch"        // Mcp-Method / Mcp-Name disagree with the body (MCP 2026-07-28)

	// Strict JSON-RPC parsing (mcpparse.ErrorKind).
	ReasonParseError         Reason = "parse_error"          // not JSON (RFC 8259), or a BOM
	ReasonInvalidUTF8        Reason = "invalid_utf8"         // invalid UTF-8 or a lone surrogate escape
	ReasonDuplicateKey       Reason = "duplicate_key"        // an object key appears twice
	ReasonCaseVariantKey     Reason = "case_variant_key"     // keys that differ only by case, or a case variant of a protocol member
	ReasonTrailingData       Reason = "trailing_data"        // bytes after the JSON value
	ReasonLimitExceeded      Reason = "limit_exceeded"       // depth, key, element or string length limit
	ReasonInvalidRequest     Reason = "invalid_request"      // not a valid JSON-RPC 2.0 / MCP message
	ReasonInvalidParams      Reason = "invalid_params"       // params lack or mistype the method's target
	ReasonNonCanonicalNumber Reason = "non_canonical_number" // a number that changes value in RFC 8785 form
	ReasonBatchNotSupported  Reason = "batch_not_supported"  // a JSON array body on MCP 2025-06-18 or later

	// Faults of the service itself: still denials.
	ReasonDeadlineExceeded  Reason = "deadline_exceeded"  // the Check's gRPC deadline passed
	ReasonPolicyUnavailable Reason = "policy_unavailable" // no compiled policy loaded
	ReasonInternalError     Reason = "internal_error"     // a recovered panic or an unexpected fault
)

// JSON-RPC error codes for denials. JSON-RPC 2.0 reserves -32700..-32600 for
// its own errors; MCP 2026-07-28 leaves -32000..-32019 to implementations and
// keeps -32020..-32099 for the protocol (-32020 HeaderMismatch).
const (
	CodeParseError     = -32700 // JSON-RPC 2.0: invalid JSON
	CodeInvalidRequest = -32600 // JSON-RPC 2.0: not a valid request object
	CodeMethodNotFound = -32601 // JSON-RPC 2.0: unknown method
	CodeInvalidParams  = -32602 // JSON-RPC 2.0: invalid method parameters
	CodeHeaderMismatch = -32020 // MCP 2026-07-28: header disagrees with body

	CodeInternal              = -32000 // ours: the service failed; the request is denied
	CodeUnauthenticated       = -32001 // ours: no valid bearer token (HTTP 401)
	CodeForbidden             = -32002 // ours: the policy denies the request (HTTP 403)
	CodeAuthorizationRequired = -32003 // ours: the policy asks for approval (HTTP 403)
	CodeRequestRejected       = -32004 // ours: the HTTP request cannot be decided as sent
	CodeUnavailable           = -32005 // ours: a dependency (identity provider, policy) is unavailable
)

// outcome is how one reason is answered: the gRPC status code of the
// CheckResponse (never an RPC error), the HTTP status of DeniedHttpResponse and
// the JSON-RPC error code and message of its body.
type outcome struct {
	grpc    codes.Code
	http    int
	code    int
	message string
}

// outcomes maps every Reason to its answer; TestReasonTable proves it total.
var outcomes = map[Reason]outcome{
	ReasonAllowed: {codes.OK, http.StatusOK, 0, ""},

	ReasonPolicyDenied:          {codes.PermissionDenied, http.StatusForbidden, CodeForbidden, "Forbidden by policy"},
	ReasonDefaultDeny:           {codes.PermissionDenied, http.StatusForbidden, CodeForbidden, "Forbidden by policy"},
	ReasonAuthorizationRequired: {codes.PermissionDenied, http.StatusForbidden, CodeAuthorizationRequired, "Authorization required"},
	ReasonUnknownMethod:         {codes.PermissionDenied, http.StatusForbidden, CodeMethodNotFound, "Method not found"},
	ReasonUnsafeURI:             {codes.PermissionDenied, http.StatusForbidden, CodeForbidden, "Resource URI not in normal form"},
	ReasonUnknownServer:         {codes.PermissionDenied, http.StatusForbidden, CodeForbidden, "Unknown MCP server"},

	ReasonTokenMissing:       {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized"},
	ReasonTokenMalformed:     {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized"},
	ReasonTokenInvalid:       {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized"},
	ReasonTokenExpired:       {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized"},
	ReasonTokenWrongIssuer:   {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized"},
	ReasonTokenWrongAudience: {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized"},
	ReasonIdPUnavailable:     {codes.Unavailable, http.StatusServiceUnavailable, CodeUnavailable, "Identity provider unavailable"},

	ReasonTokenBindingUnsupported: {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: token binding cannot be verified"},
	ReasonDPoPProofMissing:        {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: DPoP proof required"},
	ReasonDPoPProofInvalid:        {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof"},
	ReasonDPoPProofMismatch:       {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof"},
	ReasonDPoPProofStale:          {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof"},
	ReasonDPoPProofReplayed:       {codes.Unauthenticated, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof"},

	ReasonBodyTruncated:        {codes.InvalidArgument, http.StatusRequestEntityTooLarge, CodeRequestRejected, "Request body truncated"},
	ReasonBodyMissing:          {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidRequest, "Request body missing"},
	ReasonBodyTooLarge:         {codes.InvalidArgument, http.StatusRequestEntityTooLarge, CodeRequestRejected, "Request body too large"},
	ReasonUnsupportedMediaType: {codes.InvalidArgument, http.StatusUnsupportedMediaType, CodeInvalidRequest, "Content-Type must be application/json"},
	ReasonMethodNotAllowed:     {codes.InvalidArgument, http.StatusMethodNotAllowed, CodeRequestRejected, "HTTP method not allowed"},
	ReasonHeaderMismatch:       {codes.InvalidArgument, http.StatusBadRequest, CodeHeaderMismatch, "Header mismatch"},

	ReasonParseError:         {codes.InvalidArgument, http.StatusBadRequest, CodeParseError, "Parse error"},
	ReasonInvalidUTF8:        {codes.InvalidArgument, http.StatusBadRequest, CodeParseError, "Parse error: invalid UTF-8"},
	ReasonDuplicateKey:       {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: duplicate member"},
	ReasonCaseVariantKey:     {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: case-variant member"},
	ReasonTrailingData:       {codes.InvalidArgument, http.StatusBadRequest, CodeParseError, "Parse error: trailing data"},
	ReasonLimitExceeded:      {codes.InvalidArgument, http.StatusBadRequest, CodeParseError, "Parse error: limit exceeded"},
	ReasonInvalidRequest:     {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request"},
	ReasonInvalidParams:      {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidParams, "Invalid params"},
	ReasonNonCanonicalNumber: {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidParams, "Invalid params: number loses precision"},
	ReasonBatchNotSupported:  {codes.InvalidArgument, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: batches are not supported"},

	ReasonDeadlineExceeded:  {codes.Unavailable, http.StatusServiceUnavailable, CodeUnavailable, "Authorization timed out"},
	ReasonPolicyUnavailable: {codes.Unavailable, http.StatusServiceUnavailable, CodeUnavailable, "Policy unavailable"},
	ReasonInternalError:     {codes.Internal, http.StatusInternalServerError, CodeInternal, "Internal error"},
}

// Reasons returns every reason in the closed set, for documentation and tests.
func Reasons() []Reason {
	out := make([]Reason, 0, len(outcomes))
	for r := range outcomes {
		out = append(out, r)
	}
	return out
}

func (r Reason) outcome() outcome {
	if o, ok := outcomes[r]; ok {
		return o
	}
	return outcomes[ReasonInternalError]
}

// isTokenReason reports whether r answers with 401 and WWW-Authenticate.
func (r Reason) isTokenReason() bool { return r.outcome().http == http.StatusUnauthorized }
