package k8s

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
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

// istioSeam is a response-seam EnvoyFilter as Istio applies it to an MCP
// workload's inbound sidecar.
type istioSeam struct {
	filter   *extprocv3.ExternalProcessor // inserted before the router
	vhost    *routev3.VirtualHost         // merged into the inbound virtual hosts
	inserted []*routev3.Route             // inserted before Istio's inbound route "default"
	merged   []*routev3.Route             // merged into "default"
	// clearRouteCache: a patch MERGEs clear_route_cache true into Istio's
	// ext_authz filter.
	clearRouteCache bool
}

// readIstioSeam decodes the EnvoyFilter file, its patches held to the
// shapes Istio applies as this test models them: the filter INSERT_BEFORE
// the router, the virtual host MERGEd, routes INSERT_BEFORE (to the inbound
// cluster of port) or MERGEd into Istio's inbound route "default" of port.
func readIstioSeam(t *testing.T, file string, port int) (istioSeam, EnvoyFilter) {
	t.Helper()
	var ef EnvoyFilter
	decodeStrict(t, file, &ef)
	var s istioSeam
	for i, p := range ef.Spec.ConfigPatches {
		if p.Match.Context != "SIDECAR_INBOUND" {
			t.Errorf("patch %d: context %s, want SIDECAR_INBOUND", i, p.Match.Context)
		}
		switch p.ApplyTo {
		case "HTTP_FILTER":
			if p.Patch.Operation == "MERGE" && p.Match.Listener.FilterChain.Filter.SubFilter.Name == envoy.ExtAuthzFilter {
				// Istio drops the provider's clearRouteCache
				// (istio/istio#61558): the patch writes it and nothing else
				// into Istio's ext_authz (k8s/istiogen shows the result).
				hf := &hcmv3.HttpFilter{}
				patchValue(t, p.Patch.Value, hf)
				ea := &extauthzv3.ExtAuthz{}
				if err := hf.GetTypedConfig().UnmarshalTo(ea); err != nil {
					t.Fatalf("patch %d: %v", i, err)
				}
				if hf.GetName() != "" || !proto.Equal(ea, &extauthzv3.ExtAuthz{ClearRouteCache: true}) {
					t.Errorf("patch %d merges %v into ext_authz, want clear_route_cache true alone", i, hf)
				}
				s.clearRouteCache = true
				continue
			}
			if p.Patch.Operation != "INSERT_BEFORE" || p.Match.Listener.FilterChain.Filter.SubFilter.Name != envoy.RouterFilter {
				t.Errorf("patch %d: %s before %q, want INSERT_BEFORE %s", i, p.Patch.Operation, p.Match.Listener.FilterChain.Filter.SubFilter.Name, envoy.RouterFilter)
			}
			hf := &hcmv3.HttpFilter{}
			patchValue(t, p.Patch.Value, hf)
			if hf.GetName() != envoy.ExtProcFilter {
				t.Fatalf("patch %d inserts %s", i, hf.GetName())
			}
			s.filter = &extprocv3.ExternalProcessor{}
			if err := hf.GetTypedConfig().UnmarshalTo(s.filter); err != nil {
				t.Fatal(err)
			}
		case "VIRTUAL_HOST":
			if p.Patch.Operation != "MERGE" {
				t.Errorf("patch %d: %s", i, p.Patch.Operation)
			}
			s.vhost = &routev3.VirtualHost{}
			patchValue(t, p.Patch.Value, s.vhost)
		case "HTTP_ROUTE":
			rc := p.Match.RouteConfiguration
			if rc.Vhost.Route.Name != "default" || rc.PortNumber != port {
				t.Errorf("patch %d: route %q port %d, want Istio's inbound route default of port %d", i, rc.Vhost.Route.Name, rc.PortNumber, port)
			}
			r := &routev3.Route{}
			patchValue(t, p.Patch.Value, r)
			switch p.Patch.Operation {
			case "INSERT_BEFORE":
				if want := fmt.Sprintf("inbound|%d||", port); r.GetRoute().GetCluster() != want {
					t.Errorf("route %s: cluster %q, want %q", r.GetName(), r.GetRoute().GetCluster(), want)
				}
				s.inserted = append(s.inserted, r)
			case "MERGE":
				if r.GetMatch() != nil || r.GetAction() != nil || r.GetName() != "" {
					t.Errorf("patch %d merges a match, name or action into Istio's route default: %v", i, r)
				}
				s.merged = append(s.merged, r)
			default:
				t.Errorf("patch %d: %s of a route", i, p.Patch.Operation)
			}
		default:
			t.Errorf("patch %d: unexpected applyTo %s", i, p.ApplyTo)
		}
	}
	if s.filter == nil || s.vhost == nil || len(s.inserted) == 0 || !s.clearRouteCache {
		t.Fatalf("%s: filter %v, virtual host %v, %d routes inserted, clear_route_cache merged %v: want all patched", file, s.filter, s.vhost, len(s.inserted), s.clearRouteCache)
	}
	return s, ef
}

// bootstrap is envoy/sidecar.yaml with the MCP virtual host as Istio's
// inbound one becomes under s: the filter (on the sidecar's side-stream
// cluster) in place of the sidecar's, the virtual host merged, the inserted
// routes (to mcp_server) and Istio's inbound route "default" (prefix "/" to
// the same upstream, no per-filter config of its own) with s.merged merged
// into it, after the sidecar's metadata route. The ext_authz filter is the
// sidecar's, as the CUSTOM provider's is, but for clear_route_cache: false
// (as Istio generates it) unless s merges it in.
func (s istioSeam) bootstrap(t *testing.T) *bootstrapv3.Bootstrap {
	t.Helper()
	b := loadSidecarBootstrap(t)
	h := sidecarHCM(t, b)
	ea, ai, err := envoy.ExtAuthz(h)
	if err != nil || ea == nil {
		t.Fatalf("sidecar.yaml ext_authz: %v %v", ea, err)
	}
	ea.ClearRouteCache = s.clearRouteCache
	eaAny, err := anypb.New(ea)
	if err != nil {
		t.Fatal(err)
	}
	h.GetHttpFilters()[ai].ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: eaAny}
	f := proto.Clone(s.filter).(*extprocv3.ExternalProcessor)
	f.GetGrpcService().GetEnvoyGrpc().ClusterName = envoy.ExtProcCluster
	a, err := anypb.New(f)
	if err != nil {
		t.Fatal(err)
	}
	_, pi, _ := envoy.ExtProc(h)
	h.GetHttpFilters()[pi].ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}
	vh := h.GetRouteConfig().GetVirtualHosts()[0]
	proto.Merge(vh, s.vhost)
	toServer := func(r *routev3.Route) *routev3.Route {
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
	for _, r := range s.inserted {
		rs = append(rs, toServer(r))
	}
	def := toServer(s.inserted[0])
	def.Name, def.Match, def.TypedPerFilterConfig, def.RequestHeadersToRemove = "default", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, nil, nil
	for _, m := range s.merged {
		proto.Merge(def, m)
	}
	vh.Routes = append(rs, def)
	setSidecarHCM(t, b, h)
	return b
}

// TestIstioResponseSeam: the EnvoyFilters put the same ext_proc filter and
// the same seam routes into the MCP workloads' inbound sidecars as
// envoy/sidecar.yaml has, before the router and at the inbound route of the
// MCP port (the header-matched routes inserted before it, the last route's
// side stream merged into it), on the workloads the CUSTOM policy selects;
// and the routes, with the filter, keep envoy.CheckInvariants.
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
			s, ef := readIstioSeam(t, tt.file, tt.port)
			var ap AuthorizationPolicy
			decodeStrict(t, tt.policy, &ap)
			if ef.Namespace != ap.Namespace || ef.Spec.WorkloadSelector == nil || ap.Spec.Selector == nil ||
				!maps.Equal(ef.Spec.WorkloadSelector.Labels, ap.Spec.Selector.MatchLabels) {
				t.Errorf("EnvoyFilter selects %s %+v, AuthorizationPolicy %s %+v", ef.Namespace, ef.Spec.WorkloadSelector, ap.Namespace, ap.Spec.Selector)
			}

			// The filter is sidecar.yaml's, but for the provider's cluster.
			want, _, err := envoy.ExtProc(sidecar)
			if err != nil {
				t.Fatal(err)
			}
			want = proto.Clone(want).(*extprocv3.ExternalProcessor)
			want.GetGrpcService().GetEnvoyGrpc().ClusterName = tt.cluster
			if !proto.Equal(s.filter, want) {
				t.Errorf("ext_proc differs from envoy/sidecar.yaml's:\n got %v\nwant %v", s.filter, want)
			}
			// The inserted routes are sidecar.yaml's header-matched routes,
			// and what is merged into "default" is its header-less MCP
			// route's side stream: same match, same header removal, same
			// per-route ext_proc.
			var seam []*routev3.Route
			var last *routev3.Route
			for _, r := range sidecar.GetRouteConfig().GetVirtualHosts()[0].GetRoutes() {
				switch {
				case envoy.MetadataRoute(r):
				case len(r.GetMatch().GetHeaders()) > 0:
					seam = append(seam, r)
				default:
					last = r
				}
			}
			same := func(r, s *routev3.Route) bool {
				return proto.Equal(r.GetTypedPerFilterConfig()[envoy.ExtProcFilter], s.GetTypedPerFilterConfig()[envoy.ExtProcFilter]) &&
					fmt.Sprint(r.GetRequestHeadersToRemove()) == fmt.Sprint(s.GetRequestHeadersToRemove())
			}
			if len(s.inserted) != len(seam) {
				t.Fatalf("%d routes inserted, sidecar.yaml has %d header-matched seam routes", len(s.inserted), len(seam))
			}
			for i, r := range s.inserted {
				if !proto.Equal(r.GetMatch(), seam[i].GetMatch()) || !same(r, seam[i]) {
					t.Errorf("route %s differs from sidecar.yaml's route %v", r.GetName(), seam[i].GetMatch())
				}
			}
			if len(s.merged) != 1 || last == nil || !same(s.merged[0], last) {
				t.Errorf("merged into route default: %v; want sidecar.yaml's last route's side stream %v", s.merged, last)
			}

			// Assembled as Istio does, the result keeps the invariants.
			if err := envoy.CheckInvariants(s.bootstrap(t)); err != nil {
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
