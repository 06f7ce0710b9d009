// Package decision is the Envoy-free core of mcp-extauthz: it decides one
// HTTP request of an MCP session (Streamable HTTP, MCP 2025-03-26 through
// 2026-07-28; legacy HTTP+SSE POSTs too) and says why, in a Reason from a
// closed set. It imports no protobuf, no gRPC and no Envoy type; the Envoy
// adapters (package extauthz for ext_authz Check, and the ext_proc
// processor) turn a Decision into their wire's answer through their own
// outcome tables.
//
// A Decider (NewDecider validates its Config) runs the stages of Decide from
// the cheapest: the live policy (PolicyStore, an immutable LoadedPolicy
// behind an atomic pointer), the MCP server of the route, the HTTP framing
// (method, Content-Length, a truncated body), the bearer token (RFC 6750;
// audience = the MCP server's RFC 8707 resource URI; a token bound with
// cnf.jkt only with its RFC 9449 DPoP proof; the verifier is
// internal/bearer), the media type, the strict JSON-RPC 2.0 parse (package
// mcpparse) and the agreement of MCP 2026-07-28's Mcp-Method and Mcp-Name
// headers with the body (Mcp-Name: the tool, prompt or URI; the taskId of
// the tasks extension's tasks/get, tasks/update, tasks/cancel, SEP-2663), the policy for each message (package policy; the
// rule's OAuth scopes as an RFC 6750 insufficient_scope step-up), and last
// Binding: an approval (a JWS of type mcp-approval+jwt naming the request
// digest) lifts one ask once, and an idempotency key (RFC 8941 sf-string)
// admits a retry of the same digest and nothing else, with used ids in an
// internal/state store. The first stage that does not allow decides; the
// Reason is the only verdict (Reason.Verdict gives allow, deny or ask).
//
// It fails closed: every error path is a denial, and a recovered panic is
// internal_error. Every Decision carries digests (the RFC 8785 arguments'
// and the request's, see requestDigest), never the token or raw arguments.
// Not done here: answering (HTTP status, JSON-RPC error body, challenges,
// concealment), logging and metrics, which belong to the adapters.
package decision
