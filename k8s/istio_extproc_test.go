package k8s

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// patchValue decodes an EnvoyFilter patch value into m (protojson, every
// Any resolved, unknown fields refused).
func patchValue(t *testing.T, v map[string]any, m proto.Message) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(raw, m); err != nil {
		t.Fatalf("patch value is not a %T: %v", m, err)
	}
}

// TestIstioResponseSeam: the EnvoyFilters put the same ext_proc filter and
// the same seam routes into the MCP workloads' inbound sidecars as
// envoy/sidecar.yaml has, before the router and the inbound route of the MCP
// port, on the workloads the CUSTOM policy selects; and the routes, with the
// filter, keep envoy.CheckInvariants.
func TestIstioResponseSeam(t *testing.T) {
	sidecar := readSidecar(t)
	tests := []struct {
		file, policy, cluster string
		port                  int
	}{
		{"istio/envoyfilter-extproc.yaml", "istio/authorizationpolicy.yaml", "outbound|9191||mcp-extauthz.mcp-extauthz.svc.cluster.local", 8080},
		{"istio/envoyfilter-extproc-local.yaml", "istio/in-pod/authorizationpolicy.yaml", "outbound|9191||mcp-extauthz.local", 3000},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var ef EnvoyFilter
			decodeStrict(t, tt.file, &ef)
			var ap AuthorizationPolicy
			decodeStrict(t, tt.policy, &ap)
			if ef.Namespace != ap.Namespace || ef.Spec.WorkloadSelector == nil || ap.Spec.Selector == nil ||
				!maps.Equal(ef.Spec.WorkloadSelector.Labels, ap.Spec.Selector.MatchLabels) {
				t.Errorf("EnvoyFilter selects %s %+v, AuthorizationPolicy %s %+v", ef.Namespace, ef.Spec.WorkloadSelector, ap.Namespace, ap.Spec.Selector)
			}
			var filter *extprocv3.ExternalProcessor
			var vhost *routev3.VirtualHost
			var routes []*routev3.Route
			for i, p := range ef.Spec.ConfigPatches {
				if p.Match.Context != "SIDECAR_INBOUND" {
					t.Errorf("patch %d: context %s, want SIDECAR_INBOUND", i, p.Match.Context)
				}
				switch p.ApplyTo {
				case "HTTP_FILTER":
					if p.Patch.Operation != "INSERT_BEFORE" || p.Match.Listener.FilterChain.Filter.SubFilter.Name != envoy.RouterFilter {
						t.Errorf("patch %d: %s before %q, want INSERT_BEFORE %s", i, p.Patch.Operation, p.Match.Listener.FilterChain.Filter.SubFilter.Name, envoy.RouterFilter)
					}
					hf := &hcmv3.HttpFilter{}
					patchValue(t, p.Patch.Value, hf)
					if hf.GetName() != envoy.ExtProcFilter {
						t.Fatalf("patch %d inserts %s", i, hf.GetName())
					}
					filter = &extprocv3.ExternalProcessor{}
					if err := hf.GetTypedConfig().UnmarshalTo(filter); err != nil {
						t.Fatal(err)
					}
				case "VIRTUAL_HOST":
					if p.Patch.Operation != "MERGE" {
						t.Errorf("patch %d: %s", i, p.Patch.Operation)
					}
					vhost = &routev3.VirtualHost{}
					patchValue(t, p.Patch.Value, vhost)
				case "HTTP_ROUTE":
					rc := p.Match.RouteConfiguration
					if p.Patch.Operation != "INSERT_BEFORE" || rc.Vhost.Route.Name != "default" || rc.PortNumber != tt.port {
						t.Errorf("patch %d: %s route %q port %d, want INSERT_BEFORE Istio's inbound route default of port %d", i, p.Patch.Operation, rc.Vhost.Route.Name, rc.PortNumber, tt.port)
					}
					r := &routev3.Route{}
					patchValue(t, p.Patch.Value, r)
					if want := fmt.Sprintf("inbound|%d||", tt.port); r.GetRoute().GetCluster() != want {
						t.Errorf("route %s: cluster %q, want %q", r.GetName(), r.GetRoute().GetCluster(), want)
					}
					routes = append(routes, r)
				default:
					t.Errorf("patch %d: unexpected applyTo %s", i, p.ApplyTo)
				}
			}
			if filter == nil || vhost == nil {
				t.Fatalf("filter %v, virtual host %v: want both patched", filter, vhost)
			}

			// The filter is sidecar.yaml's, but for the provider's cluster.
			want, _, err := envoy.ExtProc(sidecar)
			if err != nil {
				t.Fatal(err)
			}
			want = proto.Clone(want).(*extprocv3.ExternalProcessor)
			want.GetGrpcService().GetEnvoyGrpc().ClusterName = tt.cluster
			if !proto.Equal(filter, want) {
				t.Errorf("ext_proc differs from envoy/sidecar.yaml's:\n got %v\nwant %v", filter, want)
			}
			// The routes are sidecar.yaml's seam routes: same match, same
			// header removal, same per-route ext_proc.
			var seam []*routev3.Route
			for _, r := range sidecar.GetRouteConfig().GetVirtualHosts()[0].GetRoutes() {
				if len(r.GetMatch().GetHeaders()) > 0 {
					seam = append(seam, r)
				}
			}
			if len(routes) != len(seam) {
				t.Fatalf("%d routes patched, sidecar.yaml has %d seam routes", len(routes), len(seam))
			}
			for i, r := range routes {
				s := seam[i]
				if !proto.Equal(r.GetMatch(), s.GetMatch()) || !proto.Equal(r.GetTypedPerFilterConfig()[envoy.ExtProcFilter], s.GetTypedPerFilterConfig()[envoy.ExtProcFilter]) ||
					fmt.Sprint(r.GetRequestHeadersToRemove()) != fmt.Sprint(s.GetRequestHeadersToRemove()) {
					t.Errorf("route %s differs from sidecar.yaml's route %v", r.GetName(), s.GetMatch())
				}
			}

			// Assembled as Istio does (filter before the router, routes
			// before the inbound default route, the virtual host merged)
			// into sidecar.yaml, the result keeps the invariants.
			b := loadSidecarBootstrap(t)
			h := sidecarHCM(t, b)
			f := proto.Clone(filter).(*extprocv3.ExternalProcessor)
			f.GetGrpcService().GetEnvoyGrpc().ClusterName = envoy.ExtProcCluster
			a, err := anypb.New(f)
			if err != nil {
				t.Fatal(err)
			}
			_, pi, _ := envoy.ExtProc(h)
			h.GetHttpFilters()[pi].ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}
			vh := h.GetRouteConfig().GetVirtualHosts()[0]
			proto.Merge(vh, vhost)
			action := func(r *routev3.Route) *routev3.Route {
				r = proto.Clone(r).(*routev3.Route)
				r.GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: "mcp_server"}
				return r
			}
			var rs []*routev3.Route
			for _, r := range vh.GetRoutes() {
				if envoy.MetadataRoute(r) {
					rs = append(rs, r)
				}
			}
			for _, r := range routes {
				rs = append(rs, action(r))
			}
			fallback := action(routes[0])
			fallback.Name, fallback.Match, fallback.TypedPerFilterConfig, fallback.RequestHeadersToRemove = "default", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, nil, nil
			vh.Routes = append(rs, fallback)
			setSidecarHCM(t, b, h)
			if err := envoy.CheckInvariants(b); err != nil {
				t.Error(err)
			}
		})
	}
	for name, p := range meshProviderConfigs(t) {
		if p.ClearRouteCache == nil || !*p.ClearRouteCache {
			t.Errorf("mesh provider %s: clearRouteCache is not true: the seam's routes would be picked on the client's headers", name)
		}
	}
}

// loadSidecarBootstrap loads ../envoy/sidecar.yaml, validated.
func loadSidecarBootstrap(t *testing.T) *bootstrapv3.Bootstrap {
	t.Helper()
	b, err := envoy.ValidateBootstrapYAML(mustRead(t, "../envoy/sidecar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sidecarHCM is the MCP listener's HTTP connection manager of b.
func sidecarHCM(t *testing.T, b *bootstrapv3.Bootstrap) *hcmv3.HttpConnectionManager {
	t.Helper()
	hcms, err := envoy.HTTPConnectionManagers(b)
	if err != nil || len(hcms) == 0 || hcms[0].Listener != "mcp" {
		t.Fatalf("sidecar.yaml: %v %v", hcms, err)
	}
	return hcms[0].HCM
}

// setSidecarHCM writes h back as the MCP listener's connection manager.
func setSidecarHCM(t *testing.T, b *bootstrapv3.Bootstrap, h *hcmv3.HttpConnectionManager) {
	t.Helper()
	a, err := anypb.New(h)
	if err != nil {
		t.Fatal(err)
	}
	b.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
}

func readSidecar(t *testing.T) *hcmv3.HttpConnectionManager {
	t.Helper()
	return sidecarHCM(t, loadSidecarBootstrap(t))
}

// meshProviderConfigs returns mesh-config.yaml's gRPC providers by name.
func meshProviderConfigs(t *testing.T) map[string]struct{ ClearRouteCache *bool } {
	t.Helper()
	var op istioOperator
	decodeStrict(t, "istio/mesh-config.yaml", &op)
	out := map[string]struct{ ClearRouteCache *bool }{}
	for _, p := range op.Spec.MeshConfig.ExtensionProviders {
		if p.EnvoyExtAuthzGrpc != nil {
			out[p.Name] = struct{ ClearRouteCache *bool }{p.EnvoyExtAuthzGrpc.ClearRouteCache}
		}
	}
	if len(out) == 0 {
		t.Fatal("mesh-config.yaml: no gRPC providers")
	}
	return out
}
