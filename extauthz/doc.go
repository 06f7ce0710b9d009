// Package extauthz is the Envoy ext_authz adapter of mcp-extauthz:
// envoy.service.auth.v3.Authorization/Check over gRPC (Envoy ext_authz filter,
// transport_api_version V3), in front of the Envoy-free decision core
// (package decision).
//
// Server.Check reads the CheckRequest with the service's own codec (codec.go:
// raw_body as exact bytes, header_map one entry per occurrence; its field
// numbers are checked against go-control-plane's descriptors), makes a
// decision.Request of it (RequestFromCheck: the route's mcp_server and
// mcp_audience context extensions, the destination principal), lets the
// Decider decide, and answers through one outcome table (outcome.go) from
// Reason to gRPC status, HTTP status, JSON-RPC code and message,
// Retry-After, WWW-Authenticate challenge (RFC 6750 section 3, RFC 9449
// section 7.1, RFC 9728 resource_metadata) and concealability. An allowed
// request gets an OkHttpResponse carrying x-mcp-* headers (client-sent
// spellings that fold onto them removed) and dynamic metadata; a denial a
// DeniedHttpResponse whose body is a JSON-RPC error with the Reason. A policy
// denial of a Streamable HTTP request is answered HTTP 200 with that
// JSON-RPC error (as an MCP server refusing a call itself does) unless
// DenialStatusHTTPError; the gRPC status and metadata still name the denial.
// `refusal: conceal` answers as the MCP server's SDK answers an unknown tool,
// prompt or resource (conceal.go).
//
// Check never returns a gRPC error (that would hand the outcome to Envoy's
// failure_mode_allow, which may be on); a recovered panic is a denial. One
// zap JSON line per decision, never the token or raw arguments; metrics in
// internal/metrics; an OpenTelemetry span per Check when Tracing is set.
package extauthz
