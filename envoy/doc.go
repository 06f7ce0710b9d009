// Package envoy holds the Envoy v3 bootstrap configs that put mcp-extauthz in
// front of MCP servers (sidecar.yaml: one server in one Pod; gateway.yaml: one
// Envoy routing to several servers), and the checks that keep them honest:
// ValidateBootstrapYAML loads a config into go-control-plane's Bootstrap the
// way Envoy reads it (every field known, every typed_config resolvable, every
// protoc-gen-validate rule met, nested Any included), and CheckInvariants
// asserts the properties this project relies on (ext_authz before the router
// on every forwarding listener, failing closed, exact request bodies, ext_authz
// off only on the RFC 9728 metadata route: MetadataRoute; the response seam's
// ext_proc filter after ext_authz and before the router, failing closed, with
// a side stream that sees the response headers on every route to an MCP
// server).
//
// The configs need Envoy MinEnvoyVersion (1.36.0) or later: ext_proc's
// status_on_error is new in 1.36.0, and since 1.34.0 local replies no longer
// reach the processor. The images the repository pins are v1.38.3.
//
// The package is also used by the k8s tests, which validate the Envoy config
// the Helm chart renders in the same way.
//
// References:
//   - https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/bootstrap/v3/bootstrap.proto
//   - https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/ext_authz_filter
//   - https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/cors_filter
//   - https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/ext_proc_filter
//   - RFC 9728 (OAuth 2.0 Protected Resource Metadata), MCP authorization 2025-06-18
package envoy
