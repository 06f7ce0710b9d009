// Package extauthz is the Envoy external authorization service for MCP:
// envoy.service.auth.v3.Authorization/Check over gRPC (Envoy ext_authz filter,
// transport_api_version V3).
//
// For every HTTP request of an MCP session (Streamable HTTP, MCP 2025-03-26
// through 2026-07-28; legacy HTTP+SSE POSTs too) it verifies the OAuth bearer
// token (RFC 6750; audience = the MCP server's RFC 8707 resource URI; a
// token bound with cnf.jkt only with its RFC 9449 DPoP proof), parses
// the JSON-RPC 2.0 body strictly (package mcpparse), evaluates the policy
// (package policy) and answers with an OkHttpResponse carrying x-mcp-* headers
// and dynamic metadata, or a DeniedHttpResponse whose body is a JSON-RPC error
// with a Reason from a closed set. It fails closed: every error path is a
// denial, and Check never returns a gRPC error.
package extauthz
