package extauthz

import (
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
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
	ReasonReservedKey        Reason = "reserved_key"         // a member named __proto__ anywhere in params (JavaScript decoders drop it)

	// Authority bound to the exact request: scope step-up, approvals,
	// idempotency keys (binding.go).
	ReasonInsufficientScope         Reason = "insufficient_scope"          // the deciding rule's scopes are not all in the token (RFC 6750 section 3.1)
	ReasonApprovalUntrusted         Reason = "approval_untrusted"          // an approval that is malformed, not typ mcp-approval+jwt, not signed by an approver key, or lacks a claim
	ReasonApprovalExpired           Reason = "approval_expired"            // the approval's exp passed
	ReasonApprovalAudienceMismatch  Reason = "approval_audience_mismatch"  // the approval's aud is not the audience of this request
	ReasonApprovalPrincipalMismatch Reason = "approval_principal_mismatch" // the approval's sub is not the token's sub
	ReasonApprovalDigestMismatch    Reason = "approval_digest_mismatch"    // the approval's digest is not this request's digest
	ReasonApprovalReplayed          Reason = "approval_replayed"           // the approval's jti was used before (approvals are single use)
	ReasonReplaySubstitution        Reason = "replay_substitution"         // an idempotency key already bound to a different request digest
	ReasonStateStoreUnavailable     Reason = "state_store_unavailable"     // the approval / idempotency store cannot be reached

	// Faults of the service itself: still denials.
	ReasonDeadlineExceeded  Reason = "deadline_exceeded"  // the Check's gRPC deadline passed
	ReasonPolicyUnavailable Reason = "policy_unavailable" // no compiled policy loaded
	ReasonInternalError     Reason = "internal_error"     // a recovered panic or an unexpected fault
)

// JSON-RPC error codes of denials (JSON-RPC 2.0 section 5.1).
//
// The standard codes (-32700, -32600..-32603) keep their JSON-RPC meaning and
// -32020 its MCP 2026-07-28 one. The service's own codes sit in
// -32010..-32015, inside the sub-range MCP 2026-07-28 (basic/index,
// "Error codes") leaves to implementations (-32000..-32019), and avoid every
// code an MCP revision or an official SDK gives a meaning: MCP -32002
// (resource not found) and -32042 (URL elicitation required); TypeScript,
// Python, Kotlin and Swift -32000/-32001 (connection closed, request
// timeout); Go internal/jsonrpc2 -32001 (unknown), -32003 (client closing:
// the caller sees "connection closed"), -32004 (server closing), -32005
// (rejected by transport); MCP -32020..-32022 (header mismatch, missing
// client capability, unsupported protocol version); -32800 (request
// cancelled). TestJSONRPCCodesUnclaimed lists every constant checked and its
// source. -32016..-32018 are free for new denial kinds.
const (
	CodeParseError     = -32700 // JSON-RPC 2.0: invalid JSON
	CodeInvalidRequest = -32600 // JSON-RPC 2.0: not a valid request object
	CodeMethodNotFound = -32601 // JSON-RPC 2.0: unknown method
	CodeInvalidParams  = -32602 // JSON-RPC 2.0: invalid method parameters
	CodeHeaderMismatch = -32020 // MCP 2026-07-28: header disagrees with body

	CodeForbidden             = -32010 // ours: the policy denies the request
	CodeAuthorizationRequired = -32011 // ours: the policy asks for approval; data.request_digest names what to approve
	CodeUnauthenticated       = -32012 // ours: no valid bearer token (HTTP 401)
	CodeRequestRejected       = -32013 // ours: the HTTP request cannot be decided as sent
	CodeUnavailable           = -32014 // ours: a dependency (identity provider, policy, time) is unavailable; retry
	CodeInternal              = -32015 // ours: the service failed; the request is denied
)

// class groups reasons by how their denial is answered over HTTP; the HTTP
// status of a denial depends on its class, the transport and DenialStatus
// (see Responder.Status). A new kind of denial (say, a scope step-up 403)
// adds a class here and a case in Responder.Status.
type class int

const (
	classAllowed     class = iota
	classPolicy            // deny or ask by the policy: HTTP 200 + JSON-RPC error on Streamable HTTP (auto)
	classToken             // no valid token: 401 + WWW-Authenticate, always (MCP authorization)
	classScope             // the token lacks a scope a rule requires: 403 + insufficient_scope challenge, always (step-up)
	classRequest           // the HTTP request is malformed or too large: 400, 405, 413, 415
	classUnavailable       // a dependency is down or too slow: 503 + Retry-After
	classInternal          // the service failed: 500
)

// outcome is how one reason is answered: the gRPC status code of the
// CheckResponse (never an RPC error), its class, the HTTP status of
// DeniedHttpResponse as an HTTP error, the JSON-RPC error code and message of
// its body, and the Retry-After seconds (0: none).
type outcome struct {
	grpc       codes.Code
	class      class
	http       int
	code       int
	message    string
	retryAfter int
}

// outcomes maps every Reason to its answer; TestReasonTable proves it total.
var outcomes = map[Reason]outcome{
	ReasonAllowed: {codes.OK, classAllowed, http.StatusOK, 0, "", 0},

	ReasonPolicyDenied:          {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeForbidden, "Forbidden by policy", 0},
	ReasonDefaultDeny:           {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeForbidden, "Forbidden by policy", 0},
	ReasonAuthorizationRequired: {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Authorization required", 0},
	ReasonUnknownMethod:         {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeMethodNotFound, "Method not found", 0},
	ReasonUnsafeURI:             {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeForbidden, "Resource URI not in normal form", 0},
	ReasonUnknownServer:         {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeForbidden, "Unknown MCP server", 0},

	ReasonTokenMissing:       {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized", 0},
	ReasonTokenMalformed:     {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized", 0},
	ReasonTokenInvalid:       {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized", 0},
	ReasonTokenExpired:       {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized", 0},
	ReasonTokenWrongIssuer:   {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized", 0},
	ReasonTokenWrongAudience: {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized", 0},
	ReasonIdPUnavailable:     {codes.Unavailable, classUnavailable, http.StatusServiceUnavailable, CodeUnavailable, "Identity provider unavailable", 5},

	ReasonTokenBindingUnsupported: {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: token binding cannot be verified", 0},
	ReasonDPoPProofMissing:        {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: DPoP proof required", 0},
	ReasonDPoPProofInvalid:        {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof", 0},
	ReasonDPoPProofMismatch:       {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof", 0},
	ReasonDPoPProofStale:          {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof", 0},
	ReasonDPoPProofReplayed:       {codes.Unauthenticated, classToken, http.StatusUnauthorized, CodeUnauthenticated, "Unauthorized: invalid DPoP proof", 0},

	ReasonBodyTruncated:        {codes.InvalidArgument, classRequest, http.StatusRequestEntityTooLarge, CodeRequestRejected, "Request body truncated", 0},
	ReasonBodyMissing:          {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidRequest, "Request body missing", 0},
	ReasonBodyTooLarge:         {codes.InvalidArgument, classRequest, http.StatusRequestEntityTooLarge, CodeRequestRejected, "Request body too large", 0},
	ReasonUnsupportedMediaType: {codes.InvalidArgument, classRequest, http.StatusUnsupportedMediaType, CodeInvalidRequest, "Unsupported media type: the body must be application/json, UTF-8, not content-encoded", 0},
	ReasonMethodNotAllowed:     {codes.InvalidArgument, classRequest, http.StatusMethodNotAllowed, CodeRequestRejected, "HTTP method not allowed", 0},
	ReasonHeaderMismatch:       {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeHeaderMismatch, "Header mismatch", 0},

	ReasonInsufficientScope:         {codes.PermissionDenied, classScope, http.StatusForbidden, CodeForbidden, "Insufficient scope", 0},
	ReasonApprovalUntrusted:         {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Approval not trusted", 0},
	ReasonApprovalExpired:           {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Approval expired", 0},
	ReasonApprovalAudienceMismatch:  {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Approval is for another MCP server", 0},
	ReasonApprovalPrincipalMismatch: {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Approval is for another principal", 0},
	ReasonApprovalDigestMismatch:    {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Approval is for another request", 0},
	ReasonApprovalReplayed:          {codes.PermissionDenied, classPolicy, http.StatusForbidden, CodeAuthorizationRequired, "Approval already used", 0},
	ReasonReplaySubstitution:        {codes.PermissionDenied, classPolicy, http.StatusUnprocessableEntity, CodeRequestRejected, "Idempotency key reused for a different request", 0},
	ReasonStateStoreUnavailable:     {codes.Unavailable, classUnavailable, http.StatusServiceUnavailable, CodeUnavailable, "State store unavailable", 1},

	ReasonParseError:         {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeParseError, "Parse error", 0},
	ReasonInvalidUTF8:        {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeParseError, "Parse error: invalid UTF-8", 0},
	ReasonDuplicateKey:       {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: duplicate member", 0},
	ReasonCaseVariantKey:     {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: case-variant member", 0},
	ReasonTrailingData:       {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeParseError, "Parse error: trailing data", 0},
	ReasonLimitExceeded:      {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeParseError, "Parse error: limit exceeded", 0},
	ReasonInvalidRequest:     {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request", 0},
	ReasonInvalidParams:      {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidParams, "Invalid params", 0},
	ReasonNonCanonicalNumber: {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidParams, "Invalid params: number loses precision", 0},
	ReasonBatchNotSupported:  {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidRequest, "Invalid Request: batches are not supported", 0},
	ReasonReservedKey:        {codes.InvalidArgument, classRequest, http.StatusBadRequest, CodeInvalidParams, "Invalid params: reserved member name", 0},

	ReasonDeadlineExceeded:  {codes.Unavailable, classUnavailable, http.StatusServiceUnavailable, CodeUnavailable, "Authorization timed out", 1},
	ReasonPolicyUnavailable: {codes.Unavailable, classUnavailable, http.StatusServiceUnavailable, CodeUnavailable, "Policy unavailable", 0},
	ReasonInternalError:     {codes.Internal, classInternal, http.StatusInternalServerError, CodeInternal, "Internal error", 0},
}

// bearerReasons maps each failure kind of the token and DPoP verifier
// (internal/bearer) to the reason a denial answers with.
var bearerReasons = map[bearer.Kind]Reason{
	bearer.KindMalformed:     ReasonTokenMalformed,
	bearer.KindInvalid:       ReasonTokenInvalid,
	bearer.KindExpired:       ReasonTokenExpired,
	bearer.KindWrongIssuer:   ReasonTokenWrongIssuer,
	bearer.KindWrongAudience: ReasonTokenWrongAudience,
	bearer.KindUnavailable:   ReasonIdPUnavailable,
	bearer.KindDeadline:      ReasonDeadlineExceeded,
	bearer.KindProofInvalid:  ReasonDPoPProofInvalid,
	bearer.KindProofMismatch: ReasonDPoPProofMismatch,
	bearer.KindProofStale:    ReasonDPoPProofStale,
	bearer.KindProofReplayed: ReasonDPoPProofReplayed,
	bearer.KindInternal:      ReasonInternalError,
}

// bearerReason is the reason for a verifier failure of kind k; a kind
// outside the table is internal_error.
func bearerReason(k bearer.Kind) Reason {
	if r, ok := bearerReasons[k]; ok {
		return r
	}
	return ReasonInternalError
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
func (r Reason) isTokenReason() bool { return r.outcome().class == classToken }
