package decision

// Request is one HTTP request of an MCP session as the proxy forwards it,
// independent of the wire form: an adapter builds it from Envoy's
// CheckRequest (extauthz.RequestFromCheck), `extauthz check` and `extauthz
// test` from a captured request. The Decider reads it and never changes it.
type Request struct {
	ID      string  // the proxy's request id (x-request-id), for the log only
	Method  string  // HTTP method
	Scheme  string  // URI scheme as the proxy reports it ("http", "https"); only for DPoP's htu
	Host    string  // the :authority; only for DPoP's htu
	Path    string  // path and query; only for DPoP's htu, never to decide the policy
	Headers Headers // lower-cased names
	Body    []byte  // exact bytes

	// RouteServer is the MCP server id the proxy's route names (Envoy: the
	// mcp_server context extension); "" when the route names none.
	RouteServer string
	// RouteAudience is the RFC 8707 resource URI of the route's MCP server
	// (Envoy: the mcp_audience context extension). When set, the token must
	// carry it and it must be a configured audience, and the request digest
	// names it.
	RouteAudience string
	// DestinationPrincipal is, under Istio, the SPIFFE id of the workload
	// the request is for (Envoy's attributes.destination.principal, from the
	// proxy's own certificate, not from the client).
	DestinationPrincipal string
}

// Headers maps lower-cased header names to every value received for them.
type Headers map[string][]string

// Get returns the value of name (lower-case) and how many times it occurred.
func (h Headers) Get(name string) (string, int) {
	v := h[name]
	if len(v) == 0 {
		return "", 0
	}
	return v[0], len(v)
}
