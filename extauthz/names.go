package extauthz

// The service's names as Envoy and the upstream MCP server see them.
const (
	// HealthService is the grpc.health.v1 service name of the Authorization
	// API; the server also answers for "" (the whole server).
	HealthService = "envoy.service.auth.v3.Authorization"

	// Per-route ext_authz context extensions
	// (check_settings.context_extensions) the service reads.

	// ContextExtensionServer names the MCP server of a route (the server
	// segment of policy targets); it overrides --server-id.
	ContextExtensionServer = "mcp_server"
	// ContextExtensionAudience is the RFC 8707 resource URI of the route's
	// MCP server. When set, the token must carry exactly this audience (and
	// it must be one of the configured audiences): in a gateway, a token
	// issued for one MCP server is not accepted by another.
	ContextExtensionAudience = "mcp_audience"

	// Headers the service sets on an allowed request for the upstream. Any
	// other client-sent header whose name folds onto the x-mcp-* family is
	// removed (see foldsOntoOurs), so the upstream can trust them.

	HeaderMethod        = "x-mcp-method"
	HeaderTool          = "x-mcp-tool"
	HeaderArgsDigest    = "x-mcp-args-digest"
	HeaderRequestDigest = "x-mcp-request-digest"
	HeaderPrincipal     = "x-mcp-principal"
	HeaderDecisionID    = "x-mcp-decision-id"
	// HeaderDryRunDecision and HeaderDryRunReason carry, in dry-run mode,
	// the decision the service would have enforced (allow, deny or ask).
	HeaderDryRunDecision = "x-mcp-dry-run-decision"
	HeaderDryRunReason   = "x-mcp-dry-run-reason"
	// HeaderRetry is set to "true" on an allowed request whose idempotency
	// key was already bound to this very request digest: an idempotent
	// upstream can answer with the recorded result.
	HeaderRetry = "x-mcp-retry"
	// HeaderCursor is set to "sealed" on an allowed list request (or a
	// batch holding one) whose params.cursor Check opened
	// (Decision.SealedCursor): Envoy picks by it the one route whose
	// side stream receives the request body, where the response seam
	// swaps the sealed cursor for the upstream's own. Every other list
	// opens its side stream at the response headers.
	HeaderCursor = "x-mcp-cursor"
)
