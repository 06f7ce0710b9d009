package envoy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// mcpVirtualHosts returns the virtual hosts of name's forwarding listeners.
func mcpVirtualHosts(t *testing.T, name string) ([]*routev3.VirtualHost, *hcmv3.HttpConnectionManager) {
	t.Helper()
	hcms, err := HTTPConnectionManagers(load(t, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hcms {
		if Forwards(h.HCM) {
			return h.HCM.GetRouteConfig().GetVirtualHosts(), h.HCM
		}
	}
	t.Fatalf("%s: no forwarding listener", name)
	return nil, nil
}

// TestHostRewrite: an official SDK server bound to 127.0.0.1 refuses a Host
// that is not a loopback name (DNS-rebinding protection), so the sidecar
// rewrites Host to the upstream's loopback address; the gateway to the
// upstream Service's DNS name. Both keep the client's in X-Forwarded-Host.
func TestHostRewrite(t *testing.T) {
	t.Run("sidecar.yaml", func(t *testing.T) {
		b := load(t, "sidecar.yaml")
		vhs, _ := mcpVirtualHosts(t, "sidecar.yaml")
		upstream := Endpoints(Cluster(b, "mcp_server"))
		n := 0
		for _, vh := range vhs {
			for _, r := range vh.GetRoutes() {
				ra := r.GetRoute()
				if ra == nil || MetadataRoute(r) {
					continue
				}
				n++
				host := ra.GetHostRewriteLiteral()
				ap, err := netip.ParseAddrPort(host)
				if err != nil || !ap.Addr().IsLoopback() {
					t.Errorf("route %v: host_rewrite_literal %q, want the loopback upstream", r.GetMatch(), host)
				}
				if len(upstream) != 1 || host != upstream[0] {
					t.Errorf("route %v: host_rewrite_literal %q, want the mcp_server endpoint %v", r.GetMatch(), host, upstream)
				}
				if !ra.GetAppendXForwardedHost() {
					t.Errorf("route %v: append_x_forwarded_host off", r.GetMatch())
				}
			}
		}
		if n == 0 {
			t.Fatal("no MCP route")
		}
	})
	t.Run("gateway.yaml", func(t *testing.T) {
		vhs, _ := mcpVirtualHosts(t, "gateway.yaml")
		for _, vh := range vhs {
			for _, r := range vh.GetRoutes() {
				ra := r.GetRoute()
				if ra == nil || MetadataRoute(r) {
					continue
				}
				if !ra.GetAutoHostRewrite().GetValue() || !ra.GetAppendXForwardedHost() {
					t.Errorf("route %v: auto_host_rewrite %v, append_x_forwarded_host %v; want both", r.GetMatch(), ra.GetAutoHostRewrite(), ra.GetAppendXForwardedHost())
				}
			}
		}
	})
}

// TestMetadataRoute: the RFC 9728 metadata paths go to extauthz's HTTP
// port with ext_authz off, ahead of every MCP route, and that is the only
// route with ext_authz off.
func TestMetadataRoute(t *testing.T) {
	wantEndpoint := map[string]string{
		"sidecar.yaml": "127.0.0.1:9192",                                            // extauthz --http-addr in the sidecar
		"gateway.yaml": "mcp-extauthz-headless.mcp-extauthz.svc.cluster.local:9192", // one endpoint per replica
	}
	for name, ep := range wantEndpoint {
		t.Run(name, func(t *testing.T) {
			b := load(t, name)
			if got := Endpoints(Cluster(b, MetadataCluster)); len(got) != 1 || got[0] != ep {
				t.Errorf("%s endpoints %v, want [%s]", MetadataCluster, got, ep)
			}
			vhs, _ := mcpVirtualHosts(t, name)
			for _, vh := range vhs {
				routes := vh.GetRoutes()
				if len(routes) == 0 || !MetadataRoute(routes[0]) {
					t.Fatalf("virtual host %s: first route %v is not the metadata route", vh.GetName(), routes[0].GetMatch())
				}
				for i, r := range routes {
					off, err := ExtAuthzDisabled(r.GetTypedPerFilterConfig())
					if err != nil {
						t.Fatal(err)
					}
					if off != (i == 0) {
						t.Errorf("route %d %v: ext_authz off = %v", i, r.GetMatch(), off)
					}
				}
			}
		})
	}
}

// TestMetadataRouteMatch: what MetadataRoute accepts, on routes built in
// Go through go-control-plane's types.
func TestMetadataRouteMatch(t *testing.T) {
	route := func(m *routev3.RouteMatch, cluster string) *routev3.Route {
		return &routev3.Route{Match: m, Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}}}
	}
	sep := func(p string) *routev3.RouteMatch {
		return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: p}}
	}
	tests := []struct {
		name string
		give *routev3.Route
		want bool
	}{
		{"separated prefix", route(sep(WellKnownProtectedResource), MetadataCluster), true},
		{"exact path below", route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: WellKnownProtectedResource + "/payments/mcp"}}, MetadataCluster), true},
		{"plain prefix", route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: WellKnownProtectedResource}}, MetadataCluster), false},
		{"other path", route(sep("/.well-known"), MetadataCluster), false},
		{"other cluster", route(sep(WellKnownProtectedResource), "mcp_server"), false},
		{"case-insensitive", route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: WellKnownProtectedResource}, CaseSensitive: wrapperFalse()}, MetadataCluster), false},
	}
	for _, tt := range tests {
		if got := MetadataRoute(tt.give); got != tt.want {
			t.Errorf("%s: MetadataRoute = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCORS: Envoy's CORS filter runs before ext_authz and answers every
// preflight itself (no token needed), allowing the MCP headers and exposing
// Mcp-Session-Id and WWW-Authenticate; no origin is allowed by default.
func TestCORS(t *testing.T) {
	for _, name := range []string{"sidecar.yaml", "gateway.yaml"} {
		t.Run(name, func(t *testing.T) {
			vhs, h := mcpVirtualHosts(t, name)
			names := make([]string, 0, len(h.GetHttpFilters()))
			for _, f := range h.GetHttpFilters() {
				names = append(names, f.GetName())
			}
			cors, authz := slices.Index(names, CorsFilter), slices.Index(names, ExtAuthzFilter)
			if cors < 0 || cors > authz {
				t.Fatalf("filters %v: want %s before %s", names, CorsFilter, ExtAuthzFilter)
			}
			for _, vh := range vhs {
				a, ok := vh.GetTypedPerFilterConfig()[CorsFilter]
				if !ok {
					t.Fatalf("virtual host %s: no CORS policy", vh.GetName())
				}
				p := &corsv3.CorsPolicy{}
				if err := a.UnmarshalTo(p); err != nil {
					t.Fatal(err)
				}
				if len(p.GetAllowOriginStringMatch()) != 0 {
					t.Errorf("origins %v allowed by default", p.GetAllowOriginStringMatch())
				}
				if p.GetForwardNotMatchingPreflights() == nil || p.GetForwardNotMatchingPreflights().GetValue() {
					t.Error("preflights of other origins are forwarded to ext_authz and the server")
				}
				allow := strings.Split(strings.ReplaceAll(strings.ToLower(p.GetAllowHeaders()), " ", ""), ",")
				for _, want := range []string{"mcp-session-id", "mcp-protocol-version", "authorization", "mcp-method", "mcp-name", "content-type"} {
					if !slices.Contains(allow, want) {
						t.Errorf("allow_headers %q lacks %s", p.GetAllowHeaders(), want)
					}
				}
				expose := strings.Split(strings.ReplaceAll(strings.ToLower(p.GetExposeHeaders()), " ", ""), ",")
				for _, want := range []string{"mcp-session-id", "www-authenticate"} {
					if !slices.Contains(expose, want) {
						t.Errorf("expose_headers %q lacks %s", p.GetExposeHeaders(), want)
					}
				}
				for _, m := range []string{"GET", "POST", "DELETE"} {
					if !strings.Contains(p.GetAllowMethods(), m) {
						t.Errorf("allow_methods %q lacks %s", p.GetAllowMethods(), m)
					}
				}
			}
		})
	}
}

func wrapperFalse() *wrapperspb.BoolValue { return wrapperspb.Bool(false) }
