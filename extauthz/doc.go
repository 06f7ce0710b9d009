// Package extauthz is the Envoy external authorization service for MCP:
// envoy.service.auth.v3.Authorization/Check over gRPC (Envoy ext_authz filter,
// transport_api_version V3).
//
// For every HTTP request of an MCP session (Streamable HTTP, MCP 2025-03-26
// through 2026-07-28; legacy HTTP+SSE POSTs too) it verifies the OAuth bearer
// token (RFC 6750; audience = the MCP server's RFC 8707 resource URI; a
// token bound with cnf.jkt only with its RFC 9449 DPoP proof; the verifier
// is internal/bearer, whose failure kinds map to reasons here), parses
// the JSON-RPC 2.0 body strictly (package mcpparse), evaluates the policy
// (package policy) and answers with an OkHttpResponse carrying x-mcp-* headers
// and dynamic metadata, or a DeniedHttpResponse whose body is a JSON-RPC error
// with a Reason from a closed set. It fails closed: every error path is a
// denial, and Check never returns a gRPC error. A policy denial of a
// Streamable HTTP request is answered HTTP 200 with that JSON-RPC error (as an
// MCP server refusing a call itself does) unless DenialStatusHTTPError; the
// gRPC status and metadata still name the denial.
//
// The live policy is a compiled LoadedPolicy behind PolicyStore's atomic
// pointer; internal/reload keeps it in step with the policy file through
// PolicyStore.Publish (compile, then swap; the last good policy stays on
// error).
//
// Every 401's WWW-Authenticate names the RFC 9728 protected resource
// metadata (MCP authorization, 2025-06-18 and later) that internal/resourcemeta
// serves for the configured audiences.
//
// Binding (binding.go) ties authority to the exact request digest: an
// approval (a JWS of type mcp-approval+jwt naming the digest) lifts one ask
// once, and an idempotency key admits a retry of the same digest and
// nothing else, with used ids in an internal/state store. A rule's OAuth
// scopes are enforced with the RFC 6750 insufficient_scope challenge (MCP
// authorization 2025-11-25 step-up), and `refusal: conceal` answers as the
// MCP server's SDK answers an unknown tool, prompt or resource.
package extauthz
