package decision

import "time"

// Where approvals and idempotency keys travel, and Binding's defaults.
const (
	// HeaderApproval carries an approval (compact JWS). Like every
	// client-sent x-mcp-* header it is removed before the upstream.
	HeaderApproval = "x-mcp-approval"
	// MetaApproval is the params._meta member that carries an approval for
	// clients that cannot set headers. It is outside params.arguments, so it
	// is not part of the request digest; ext_authz cannot change the body,
	// so the upstream sees it.
	MetaApproval = "io.mcp-extauthz/approval"
	// ApprovalType is the JWS typ an approval must carry (RFC 8725 section
	// 3.11 explicit typing), so no other JWT can pass for one.
	ApprovalType = "mcp-approval+jwt"
	// DefaultIdempotencyHeader is the idempotency key header
	// (draft-ietf-httpapi-idempotency-key-header).
	DefaultIdempotencyHeader = "idempotency-key"

	// Defaults of Binding's zero fields (and of serve's flags).

	DefaultIdempotencyTTL      = 24 * time.Hour
	DefaultApprovalMaxLifetime = time.Hour
)
