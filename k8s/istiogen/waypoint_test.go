package istiogen

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"istio.io/api/label"
	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/test"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// waypointIP is the waypoint Pod's address in testdata/ambient-workload.yaml.
const waypointIP = "10.8.0.20"

// mcpHost is the MCP server's Service in the ambient layout.
const mcpHost = "payments-mcp.payments.svc.cluster.local"

// TestIstioWaypointChecks: in ambient mode, Istio's waypoint for the MCP
// server's Service (k8s/istio/ambient/authorizationpolicy-waypoint.yaml,
// the shared provider mcp-extauthz) runs the CUSTOM ext_authz on the HTTP
// connection manager of that Service's VIP: the body as bytes, never
// partial, failing closed (503), a 1s timeout, before the router. The
// waypoint gets no response seam (docs/deploy.md under "Istio": "Ambient
// waypoints get no seam"): nothing patches clear_route_cache or ext_proc in, and header
// names with '_' are not rejected there (envoyfilter-underscores.yaml
// selects sidecars); the service strips the folded spellings itself, as
// envoy.CheckInvariants allows when ext_authz sees every header (Istio sets
// no allowed_headers).
func TestIstioWaypointChecks(t *testing.T) {
	hcms := waypointHCMs(t, string(read(t, "../istio/ambient/authorizationpolicy-waypoint.yaml")))
	if len(hcms) == 0 {
		t.Fatalf("no HTTP filter chain of the waypoint serves %s", mcpHost)
	}
	for chain, h := range hcms {
		checkWaypoint(t, chain, h)
	}
	// The check is the policy's: without it the same chains run no ext_authz.
	without := waypointHCMs(t, "")
	if len(without) != len(hcms) {
		t.Fatalf("without the policy: %d chains serve %s, with it %d", len(without), mcpHost, len(hcms))
	}
	for chain, h := range without {
		if ea, _, _ := envoy.ExtAuthz(h); ea != nil {
			t.Errorf("%s: ext_authz without the CUSTOM policy", chain)
		}
	}
}

// waypointHCMs runs Istio's config generation for the ambient layout
// (testdata/ambient-workload.yaml, the provider's Service of
// k8s/kustomize/base) with the Istio objects in policy, and returns the
// HTTP connection managers of the waypoint's filter chains that serve
// mcpHost, by listener/chain name.
func waypointHCMs(t *testing.T, policy string) map[string]*hcmv3.HttpConnectionManager {
	t.Helper()
	test.SetForTest(t, &features.EnableAmbient, true)
	test.SetForTest(t, &features.EnableAmbientWaypoints, true)
	test.SetForTest(t, &features.EnableHBONESend, true)
	mc, err := mesh.ApplyMeshConfigDefaults(meshConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	objs := string(read(t, "testdata/ambient-workload.yaml"))
	if policy != "" {
		objs += "\n---\n" + policy
	}
	base := kubeFile{path: "../kustomize/base/service.yaml", namespace: "mcp-extauthz"}
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
		MeshConfig:             mc,
		ConfigString:           objs,
		KubernetesObjectString: objs,
		KubernetesObjects:      []runtime.Object{service(t, base, read(t, base.path))},
	})
	p := s.SetupProxy(&model.Proxy{
		Type:            model.Waypoint,
		ID:              "waypoint-0.payments",
		ConfigNamespace: "payments",
		IPAddresses:     []string{waypointIP},
		Labels: map[string]string{
			label.IoK8sNetworkingGatewayGatewayName.Name: "waypoint",
			label.GatewayManaged.Name:                    constants.ManagedGatewayMeshControllerLabel,
		},
		Metadata: &model.NodeMetadata{Namespace: "payments", ClusterID: constants.DefaultClusterName, IstioVersion: proxyVersion},
	})
	out := map[string]*hcmv3.HttpConnectionManager{}
	for _, l := range s.Listeners(p) {
		for _, fc := range l.GetFilterChains() {
			if !strings.Contains(fc.GetName(), mcpHost) {
				continue
			}
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if !f.GetTypedConfig().MessageIs(h) {
					continue
				}
				if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
					t.Fatal(err)
				}
				out[l.GetName()+"/"+fc.GetName()] = h
			}
		}
	}
	return out
}

func checkWaypoint(t *testing.T, chain string, h *hcmv3.HttpConnectionManager) {
	t.Helper()
	ea, at, err := envoy.ExtAuthz(h)
	if err != nil {
		t.Fatal(err)
	}
	if ea == nil {
		t.Fatalf("%s: no %s: the MCP server's requests pass the waypoint unchecked", chain, envoy.ExtAuthzFilter)
	}
	_, proc, _ := envoy.ExtProc(h)
	last := h.GetHttpFilters()[len(h.GetHttpFilters())-1].GetName()
	tests := []struct {
		give      string
		got, want any
	}{
		{"ext_authz before the router, the router last", at < len(h.GetHttpFilters())-1 && last == envoy.RouterFilter, true},
		{"ext_authz with_request_body.pack_as_bytes", ea.GetWithRequestBody().GetPackAsBytes(), true},
		{"ext_authz with_request_body.allow_partial_message", ea.GetWithRequestBody().GetAllowPartialMessage(), false},
		{"ext_authz with_request_body.max_request_bytes", ea.GetWithRequestBody().GetMaxRequestBytes(), uint32(1 << 20)},
		{"ext_authz failure_mode_allow", ea.GetFailureModeAllow(), false},
		{"ext_authz status_on_error", ea.GetStatusOnError().GetCode().String(), "ServiceUnavailable"},
		{"ext_authz grpc_service cluster", ea.GetGrpcService().GetEnvoyGrpc().GetClusterName(), "outbound|9191||mcp-extauthz.mcp-extauthz.svc.cluster.local"},
		{"ext_authz grpc_service timeout", ea.GetGrpcService().GetTimeout().AsDuration().String(), "1s"},
		{"RBAC shadow rules turn ext_authz on for every request", shadowMatchesAll(t, h, ea), true},
		{"ext_authz allowed_headers (unset: every header reaches Check)", ea.GetAllowedHeaders() == nil, true},
		// No seam on waypoints: Istio drops clearRouteCache here too, and
		// nothing needs it.
		{"ext_authz clear_route_cache", ea.GetClearRouteCache(), false},
		{"ext_proc filter", proc, -1},
		{"headers_with_underscores_action", h.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(), corev3.HttpProtocolOptions_ALLOW},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %s: got %v, want %v", chain, tt.give, tt.got, tt.want)
		}
	}
}
