package decision

import (
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Reason is why a request was decided as it was: a closed set of snake_case words,
// written into error.data.reason of every denial, the decision log line and
// the metric label. docs/reasons.md, "Reasons (closed set)" lists them all;
// adding one is an API change.
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
	ReasonArgumentsInvalid   Reason = "arguments_invalid"    // tools/call or prompts/get arguments the declared schema refuses, or none known under arguments: require (issue 30)

	// Authority bound to the exact request: scope step-up, approvals,
	// idempotency keys (binding.go).
	ReasonInsufficientScope         Reason = "insufficient_scope"          // the deciding rule's scopes are not all in the token (RFC 6750 section 3.1)
	ReasonApprovalUntrusted         Reason = "approval_untrusted"          // an approval that is malformed, not typ mcp-approval+jwt, not signed by an approver key, or lacks a claim
	ReasonApprovalExpired           Reason = "approval_expired"            // the approval's exp passed
	ReasonApprovalAudienceMismatch  Reason = "approval_audience_mismatch"  // the approval's aud is not the audience of this request
	ReasonApprovalPrincipalMismatch Reason = "approval_principal_mismatch" // the approval's sub is not the token's sub
	ReasonApprovalDigestMismatch    Reason = "approval_digest_mismatch"    // the approval's digest is not this request's digest
	ReasonApprovalReplayed          Reason = "approval_replayed"           // the approval's jti was used before (approvals are single use)
	ReasonResultRecovered           Reason = "result_recovered"            // a retry (same idempotency key, same request digest) of a call whose rule says recover_results, answered from the result recorded for the first instead of running again
	ReasonReplaySubstitution        Reason = "replay_substitution"         // an idempotency key already bound to a different request digest
	ReasonStateStoreUnavailable     Reason = "state_store_unavailable"     // the approval / idempotency store cannot be reached
	ReasonTaskNotOwned              Reason = "task_not_owned"              // tasks/get|result|cancel|update naming a task id not bound to this principal and server (MCP 2025-11-25 "Tasks", "Security")

	// Quotas (policy `quotas`, quota.go).
	ReasonRateLimited Reason = "rate_limited" // a quota's bucket is empty for this principal, client or everyone on this server

	// Tool definitions pinned (pin_mode tofu or strict; issue 18).
	ReasonDefinitionChanged Reason = "definition_changed" // the tool's listed definition is not its approved baseline, or two were listed; an approval of this request under this definition lifts it
	ReasonToolNotListed     Reason = "tool_not_listed"    // no tools/list showed the tool, and no allow rule names its server and tool literally

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

// reasons is the closed set in declaration order (Reasons).
var reasons = []Reason{
	ReasonAllowed,
	ReasonPolicyDenied,
	ReasonDefaultDeny,
	ReasonAuthorizationRequired,
	ReasonUnknownMethod,
	ReasonUnsafeURI,
	ReasonUnknownServer,
	ReasonTokenMissing,
	ReasonTokenMalformed,
	ReasonTokenInvalid,
	ReasonTokenExpired,
	ReasonTokenWrongIssuer,
	ReasonTokenWrongAudience,
	ReasonIdPUnavailable,
	ReasonTokenBindingUnsupported,
	ReasonDPoPProofMissing,
	ReasonDPoPProofInvalid,
	ReasonDPoPProofMismatch,
	ReasonDPoPProofStale,
	ReasonDPoPProofReplayed,
	ReasonBodyTruncated,
	ReasonBodyMissing,
	ReasonBodyTooLarge,
	ReasonUnsupportedMediaType,
	ReasonMethodNotAllowed,
	ReasonHeaderMismatch,
	ReasonParseError,
	ReasonInvalidUTF8,
	ReasonDuplicateKey,
	ReasonCaseVariantKey,
	ReasonTrailingData,
	ReasonLimitExceeded,
	ReasonInvalidRequest,
	ReasonInvalidParams,
	ReasonNonCanonicalNumber,
	ReasonBatchNotSupported,
	ReasonReservedKey,
	ReasonArgumentsInvalid,
	ReasonInsufficientScope,
	ReasonApprovalUntrusted,
	ReasonApprovalExpired,
	ReasonApprovalAudienceMismatch,
	ReasonApprovalPrincipalMismatch,
	ReasonApprovalDigestMismatch,
	ReasonApprovalReplayed,
	ReasonResultRecovered,
	ReasonReplaySubstitution,
	ReasonStateStoreUnavailable,
	ReasonDefinitionChanged,
	ReasonToolNotListed,
	ReasonTaskNotOwned,
	ReasonRateLimited,
	ReasonDeadlineExceeded,
	ReasonPolicyUnavailable,
	ReasonInternalError,
}

// Reasons returns every reason of the closed set, in declaration order: a
// fresh slice, for documentation, metrics and tests.
func Reasons() []Reason { return append([]Reason(nil), reasons...) }

// Verdict is the policy decision a reason reports in the decision log, the
// metrics' decision label and `extauthz test`'s want.decision: allow for
// ReasonAllowed and ReasonResultRecovered (allowed, answered without the
// upstream); ask for ReasonAuthorizationRequired, ReasonDefinitionChanged
// (an approval of that definition lifts it) and the approval_* reasons (the
// policy asked, and no valid approval answered); deny for every
// other reason, including faults. It is derived from the reason alone: the
// reason is the only verdict.
func (r Reason) Verdict() policy.Decision {
	switch r {
	case ReasonAllowed, ReasonResultRecovered:
		return policy.Allow
	case ReasonAuthorizationRequired, ReasonDefinitionChanged, ReasonApprovalUntrusted, ReasonApprovalExpired,
		ReasonApprovalAudienceMismatch, ReasonApprovalPrincipalMismatch,
		ReasonApprovalDigestMismatch, ReasonApprovalReplayed:
		return policy.Ask
	}
	return policy.Deny
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

// parseReason is the reason for a parse failure of kind k.
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
