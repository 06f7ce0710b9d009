package extauthz

import (
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
)

// cancelled). TestJSONRPCCodesUnclaimed lists every constant checked and its
// source. -32016 is mcpdecision.CodeRefused (the MCP server's decision
// verifier sends it); -32018 is free for new denial kinds.
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
	CodeRateLimited           = -32017 // ours: a policy quota is used up; data.retry_after (and Retry-After) says when to retry
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
	classRecovered         // a retry answered from its recorded result: 200 + the JSON-RPC response, by Envoy
	classRateLimited       // a quota is used up: 429 + Retry-After (200 + JSON-RPC error on Streamable HTTP under auto, as classPolicy)
)

// outcome is everything a reason implies for its answer: the gRPC status
// code of the CheckResponse (never an RPC error), its class, the HTTP status
// of DeniedHttpResponse as an HTTP error, the JSON-RPC error code and message
// of its body, the Retry-After seconds (0: none), the WWW-Authenticate
// challenge (the one source of it: wwwAuthenticate, insufficientScopeChallenge), whether `refusal: conceal` may hide it (concealable) and whether
// it counts as a token verification failure (the metric
// token_verification_failures_total). The decision label (allow, deny, ask)
// is decision.Reason.Verdict.
type outcome struct {
	grpc         codes.Code
	class        class
	http         int
	code         int
	message      string
	retryAfter   int
	challenge    challenge
	concealable  bool
	tokenFailure bool
}

// challenge is the WWW-Authenticate a denial carries (wwwAuthenticate).
type challenge uint8

const (
	challengeNone         challenge = iota
	challengeNoToken                // RFC 6750 section 3: no error attribute (no token was sent)
	challengeInvalidToken           // error="invalid_token"; DPoP scheme when the request used it
	challengeDPoPRequired           // RFC 9449 section 7.1 DPoP challenge, error="invalid_token"
	challengeDPoPProof              // DPoP challenge, error="invalid_dpop_proof"
	challengeScope                  // RFC 6750 section 3.1 insufficient_scope with the scopes needed
)

// outcomes maps every Reason to its answer; TestReasonTable proves it total.
var outcomes = map[decision.Reason]outcome{
	decision.ReasonAllowed: {grpc: codes.OK, class: classAllowed, http: http.StatusOK},

	decision.ReasonPolicyDenied:          {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeForbidden, message: "Forbidden by policy", concealable: true},
	decision.ReasonDefaultDeny:           {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeForbidden, message: "Forbidden by policy", concealable: true},
	decision.ReasonAuthorizationRequired: {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Authorization required", concealable: true},
	decision.ReasonUnknownMethod:         {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeMethodNotFound, message: "Method not found"},
	decision.ReasonUnsafeURI:             {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeForbidden, message: "Resource URI not in normal form"},
	decision.ReasonUnknownServer:         {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeForbidden, message: "Unknown MCP server"},

	decision.ReasonTokenMissing:       {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized", challenge: challengeNoToken, tokenFailure: true},
	decision.ReasonTokenMalformed:     {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized", challenge: challengeInvalidToken, tokenFailure: true},
	decision.ReasonTokenInvalid:       {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized", challenge: challengeInvalidToken, tokenFailure: true},
	decision.ReasonTokenExpired:       {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized", challenge: challengeInvalidToken, tokenFailure: true},
	decision.ReasonTokenWrongIssuer:   {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized", challenge: challengeInvalidToken, tokenFailure: true},
	decision.ReasonTokenWrongAudience: {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized", challenge: challengeInvalidToken, tokenFailure: true},
	decision.ReasonIdPUnavailable:     {grpc: codes.Unavailable, class: classUnavailable, http: http.StatusServiceUnavailable, code: CodeUnavailable, message: "Identity provider unavailable", retryAfter: 5, tokenFailure: true},

	decision.ReasonTokenBindingUnsupported: {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized: token binding cannot be verified", challenge: challengeInvalidToken, tokenFailure: true},
	decision.ReasonDPoPProofMissing:        {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized: DPoP proof required", challenge: challengeDPoPRequired, tokenFailure: true},
	decision.ReasonDPoPProofInvalid:        {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized: invalid DPoP proof", challenge: challengeDPoPProof, tokenFailure: true},
	decision.ReasonDPoPProofMismatch:       {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized: invalid DPoP proof", challenge: challengeDPoPProof, tokenFailure: true},
	decision.ReasonDPoPProofStale:          {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized: invalid DPoP proof", challenge: challengeDPoPProof, tokenFailure: true},
	decision.ReasonDPoPProofReplayed:       {grpc: codes.Unauthenticated, class: classToken, http: http.StatusUnauthorized, code: CodeUnauthenticated, message: "Unauthorized: invalid DPoP proof", challenge: challengeDPoPProof, tokenFailure: true},

	decision.ReasonBodyTruncated:        {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusRequestEntityTooLarge, code: CodeRequestRejected, message: "Request body truncated"},
	decision.ReasonBodyMissing:          {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidRequest, message: "Request body missing"},
	decision.ReasonBodyTooLarge:         {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusRequestEntityTooLarge, code: CodeRequestRejected, message: "Request body too large"},
	decision.ReasonUnsupportedMediaType: {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusUnsupportedMediaType, code: CodeInvalidRequest, message: "Unsupported media type: the body must be application/json, UTF-8, not content-encoded"},
	decision.ReasonMethodNotAllowed:     {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusMethodNotAllowed, code: CodeRequestRejected, message: "HTTP method not allowed"},
	decision.ReasonHeaderMismatch:       {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeHeaderMismatch, message: "Header mismatch"},

	decision.ReasonInsufficientScope:         {grpc: codes.PermissionDenied, class: classScope, http: http.StatusForbidden, code: CodeForbidden, message: "Insufficient scope", challenge: challengeScope, concealable: true},
	decision.ReasonApprovalUntrusted:         {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Approval not trusted", concealable: true},
	decision.ReasonApprovalExpired:           {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Approval expired", concealable: true},
	decision.ReasonApprovalAudienceMismatch:  {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Approval is for another MCP server", concealable: true},
	decision.ReasonApprovalPrincipalMismatch: {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Approval is for another principal", concealable: true},
	decision.ReasonApprovalDigestMismatch:    {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Approval is for another request", concealable: true},
	decision.ReasonApprovalReplayed:          {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Approval already used", concealable: true},
	decision.ReasonResultRecovered:           {grpc: codes.AlreadyExists, class: classRecovered, http: http.StatusOK},
	decision.ReasonReplaySubstitution:        {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusUnprocessableEntity, code: CodeRequestRejected, message: "Idempotency key reused for a different request", concealable: true},
	decision.ReasonDefinitionChanged:         {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeAuthorizationRequired, message: "Tool definition changed: approval required"},
	decision.ReasonToolNotListed:             {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeForbidden, message: "Tool not listed", concealable: true},
	decision.ReasonTaskNotOwned:              {grpc: codes.PermissionDenied, class: classPolicy, http: http.StatusForbidden, code: CodeForbidden, message: "Task not found for this principal", concealable: true},
	decision.ReasonRateLimited:               {grpc: codes.ResourceExhausted, class: classRateLimited, http: http.StatusTooManyRequests, code: CodeRateLimited, message: "Rate limited"},
	decision.ReasonStateStoreUnavailable:     {grpc: codes.Unavailable, class: classUnavailable, http: http.StatusServiceUnavailable, code: CodeUnavailable, message: "State store unavailable", retryAfter: 1},

	decision.ReasonParseError:         {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeParseError, message: "Parse error"},
	decision.ReasonInvalidUTF8:        {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeParseError, message: "Parse error: invalid UTF-8"},
	decision.ReasonDuplicateKey:       {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidRequest, message: "Invalid Request: duplicate member"},
	decision.ReasonCaseVariantKey:     {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidRequest, message: "Invalid Request: case-variant member"},
	decision.ReasonTrailingData:       {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeParseError, message: "Parse error: trailing data"},
	decision.ReasonLimitExceeded:      {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeParseError, message: "Parse error: limit exceeded"},
	decision.ReasonInvalidRequest:     {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidRequest, message: "Invalid Request"},
	decision.ReasonInvalidParams:      {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidParams, message: "Invalid params"},
	decision.ReasonNonCanonicalNumber: {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidParams, message: "Invalid params: number loses precision"},
	decision.ReasonBatchNotSupported:  {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidRequest, message: "Invalid Request: batches are not supported"},
	decision.ReasonReservedKey:        {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidParams, message: "Invalid params: reserved member name"},
	decision.ReasonArgumentsInvalid:   {grpc: codes.InvalidArgument, class: classRequest, http: http.StatusBadRequest, code: CodeInvalidParams, message: "Invalid params: arguments do not match the declared schema"},

	decision.ReasonDeadlineExceeded:  {grpc: codes.Unavailable, class: classUnavailable, http: http.StatusServiceUnavailable, code: CodeUnavailable, message: "Authorization timed out", retryAfter: 1},
	decision.ReasonPolicyUnavailable: {grpc: codes.Unavailable, class: classUnavailable, http: http.StatusServiceUnavailable, code: CodeUnavailable, message: "Policy unavailable"},
	decision.ReasonInternalError:     {grpc: codes.Internal, class: classInternal, http: http.StatusInternalServerError, code: CodeInternal, message: "Internal error"},
}

// outcomeOf returns r's outcome; a reason outside the table (none, by
// TestReasonTable) answers as internal_error.
func outcomeOf(r decision.Reason) outcome {
	if o, ok := outcomes[r]; ok {
		return o
	}
	return outcomes[decision.ReasonInternalError]
}
