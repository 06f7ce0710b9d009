package istiogen

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	rbacfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

var update = flag.Bool("update", false, "write "+rigBootstrap+" from Istio's generated config")

// rbacFilter is the HTTP RBAC filter: for a CUSTOM policy Istio puts one
// before ext_authz whose shadow rules decide, per request, whether
// ext_authz runs (ext_authz's filter_enabled_metadata).
const rbacFilter = "envoy.filters.http.rbac"

// extAuthzShadowPrefix is the RBAC shadow_rules_stat_prefix of Istio's
// CUSTOM shadow filter (authz/model RBACExtAuthzShadowRulesStatPrefix).
const extAuthzShadowPrefix = "istio_ext_authz_"

// seamRoute is what one inbound route of the MCP port must be after
// Istio applied the seam's EnvoyFilter: its name (the patch's, or Istio's
// "default"), whether it matches on envoy.MethodHeader, and the side
// stream's request header and body modes (response headers are always
// sent).
type seamRoute struct {
	name             string
	onMethodHeader   bool
	requestHeaders   extprocv3.ProcessingMode_HeaderSendMode
	requestBody      extprocv3.ProcessingMode_BodySendMode
	responseBodyMode extprocv3.ProcessingMode_BodySendMode
}

// wantRoutes: the route of lists with a sealed cursor, the GET route, then
// Istio's route "default" merged with the catch-all side stream
// (envoy/sidecar.yaml's order). No route sends the request headers (issue
// 31: Check's metadata carries what the processor reads).
var wantRoutes = []seamRoute{
	{"mcp-seam-lists", true, extprocv3.ProcessingMode_SKIP, extprocv3.ProcessingMode_BUFFERED, extprocv3.ProcessingMode_NONE},
	{"mcp-seam-get", false, extprocv3.ProcessingMode_SKIP, extprocv3.ProcessingMode_NONE, extprocv3.ProcessingMode_STREAMED},
	{"default", false, extprocv3.ProcessingMode_SKIP, extprocv3.ProcessingMode_NONE, extprocv3.ProcessingMode_NONE},
}

// TestIstioGeneratesTheSeam: for each layout, every filter chain Istio
// generates for the MCP port of the workload's inbound sidecar (plaintext
// and mTLS) has, in Istio's own output:
//   - the CUSTOM provider's ext_authz with the body as bytes, never
//     partial, failing closed (503), a 1s timeout, transport V3, and
//     clear_route_cache (restored by our EnvoyFilter: Istio drops it);
//   - Istio's RBAC shadow filter before it, whose rules (the policy's one
//     empty rule) match every request, so ext_authz runs on every request;
//   - ext_proc after ext_authz and before the router (the last filter),
//     failing closed, on a cluster Istio generates (a cluster that does
//     not exist makes ext_proc fail open on Envoys without
//     envoyproxy/envoy#45189) that speaks HTTP/2, as ext_authz's does;
//   - header names with underscores rejected (REJECT_REQUEST);
//   - on the MCP port's virtual host, exactly the seam's routes, in
//     order, to the inbound cluster, each with a side stream that sends
//     the response headers and fails closed, with the modes of wantRoutes.
func TestIstioGeneratesTheSeam(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			g := generate(t, l, nil)
			for _, c := range inboundChains(t, g, l.mcpPort) {
				t.Run(c.name, func(t *testing.T) { checkChain(t, l, g, c) })
			}
		})
	}
}

func checkChain(t *testing.T, l layout, g generated, c inboundChain) {
	names := make([]string, len(c.hcm.GetHttpFilters()))
	for i, f := range c.hcm.GetHttpFilters() {
		names[i] = f.GetName()
	}
	rbac, authz, proc := slices.Index(names, rbacFilter), slices.Index(names, envoy.ExtAuthzFilter), slices.Index(names, envoy.ExtProcFilter)
	if rbac < 0 || authz < 0 || proc < 0 || !(rbac < authz && authz < proc) || names[len(names)-1] != envoy.RouterFilter {
		t.Fatalf("filters %v: want %s, %s, %s in that order and %s last", names, rbacFilter, envoy.ExtAuthzFilter, envoy.ExtProcFilter, envoy.RouterFilter)
	}
	ea, _, err := envoy.ExtAuthz(c.hcm)
	if err != nil {
		t.Fatal(err)
	}
	ep, _, err := envoy.ExtProc(c.hcm)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		give      string
		got, want any
	}{
		{"ext_authz with_request_body.pack_as_bytes", ea.GetWithRequestBody().GetPackAsBytes(), true},
		{"ext_authz with_request_body.allow_partial_message", ea.GetWithRequestBody().GetAllowPartialMessage(), false},
		{"ext_authz with_request_body.max_request_bytes", ea.GetWithRequestBody().GetMaxRequestBytes(), uint32(1 << 20)},
		{"ext_authz failure_mode_allow", ea.GetFailureModeAllow(), false},
		{"ext_authz status_on_error", ea.GetStatusOnError().GetCode().String(), "ServiceUnavailable"},
		{"ext_authz clear_route_cache", ea.GetClearRouteCache(), true},
		{"ext_authz transport_api_version", ea.GetTransportApiVersion(), corev3.ApiVersion_V3},
		{"ext_authz grpc_service cluster", ea.GetGrpcService().GetEnvoyGrpc().GetClusterName(), l.authzCluster},
		{"ext_authz grpc_service timeout", ea.GetGrpcService().GetTimeout().AsDuration().String(), "1s"},
		{"ext_authz filter_enabled_metadata filter", ea.GetFilterEnabledMetadata().GetFilter(), rbacFilter},
		{"ext_proc failure_mode_allow", ep.GetFailureModeAllow(), false},
		{"ext_proc observability_mode", ep.GetObservabilityMode(), false},
		{"ext_proc grpc_service cluster", ep.GetGrpcService().GetEnvoyGrpc().GetClusterName(), l.authzCluster},
		{"ext_proc cluster generated and HTTP/2", envoy.HTTP2(cluster(g, ep.GetGrpcService().GetEnvoyGrpc().GetClusterName())), true},
		{"ext_authz cluster generated and HTTP/2", envoy.HTTP2(cluster(g, ea.GetGrpcService().GetEnvoyGrpc().GetClusterName())), true},
		{"headers_with_underscores_action", c.hcm.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(), corev3.HttpProtocolOptions_REJECT_REQUEST},
		{"RBAC shadow rules turn ext_authz on for every request", shadowMatchesAll(t, c.hcm, ea), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.give, tt.got, tt.want)
		}
	}
	checkRoutes(t, l, ep, c)
}

// shadowMatchesAll reports whether h's RBAC filter with Istio's ext_authz
// shadow prefix gives every request a shadow effective policy that turns
// ea on: ea's filter_enabled_metadata reads that filter's
// istio_ext_authz_shadow_effective_policy_id and wants a prefix, and some
// shadow policy whose name has that prefix has permissions and principals
// that match anything (as the AuthorizationPolicy's one empty rule
// becomes). The shadow engine's action (Istio uses DENY) does not matter:
// a matched policy is the effective one either way.
func shadowMatchesAll(t *testing.T, h *hcmv3.HttpConnectionManager, ea *extauthzv3.ExtAuthz) bool {
	t.Helper()
	fem := ea.GetFilterEnabledMetadata()
	prefix := fem.GetValue().GetStringMatch().GetPrefix()
	if fem.GetFilter() != rbacFilter || len(fem.GetPath()) != 1 || fem.GetPath()[0].GetKey() != extAuthzShadowPrefix+"shadow_effective_policy_id" || prefix == "" || fem.GetInvert() {
		return false
	}
	for _, f := range h.GetHttpFilters() {
		if f.GetName() != rbacFilter {
			continue
		}
		r := &rbacfv3.RBAC{}
		if err := f.GetTypedConfig().UnmarshalTo(r); err != nil {
			t.Fatal(err)
		}
		if r.GetShadowRulesStatPrefix() != extAuthzShadowPrefix {
			continue
		}
		for name, p := range r.GetShadowRules().GetPolicies() {
			if strings.HasPrefix(name, prefix) && slices.ContainsFunc(p.GetPermissions(), anyPermission) && slices.ContainsFunc(p.GetPrincipals(), anyPrincipal) {
				return true
			}
		}
	}
	return false
}

// anyPermission reports whether p matches every request: any, or an
// and_rules of which every rule does, or an or_rules of which one does.
func anyPermission(p *rbacv3.Permission) bool {
	switch r := p.GetRule().(type) {
	case *rbacv3.Permission_Any:
		return r.Any
	case *rbacv3.Permission_AndRules:
		return len(r.AndRules.GetRules()) > 0 && !slices.ContainsFunc(r.AndRules.GetRules(), func(q *rbacv3.Permission) bool { return !anyPermission(q) })
	case *rbacv3.Permission_OrRules:
		return slices.ContainsFunc(r.OrRules.GetRules(), anyPermission)
	}
	return false
}

// anyPrincipal is anyPermission for principals.
func anyPrincipal(p *rbacv3.Principal) bool {
	switch r := p.GetIdentifier().(type) {
	case *rbacv3.Principal_Any:
		return r.Any
	case *rbacv3.Principal_AndIds:
		return len(r.AndIds.GetIds()) > 0 && !slices.ContainsFunc(r.AndIds.GetIds(), func(q *rbacv3.Principal) bool { return !anyPrincipal(q) })
	case *rbacv3.Principal_OrIds:
		return slices.ContainsFunc(r.OrIds.GetIds(), anyPrincipal)
	}
	return false
}

// checkRoutes holds the MCP port's inbound virtual hosts to wantRoutes,
// each route's side stream merged from the filter, the route
// configuration, the virtual host and the route (envoy.ExtProcFor).
func checkRoutes(t *testing.T, l layout, ep *extprocv3.ExternalProcessor, c inboundChain) {
	t.Helper()
	inbound := "inbound|" + itoa(l.mcpPort) + "||"
	vhs := c.rc.GetVirtualHosts()
	if len(vhs) == 0 {
		t.Fatalf("route configuration %s: no virtual host", c.rc.GetName())
	}
	for _, vh := range vhs {
		rs := vh.GetRoutes()
		if len(rs) != len(wantRoutes) {
			t.Errorf("virtual host %s: %d routes, want %d (%v)", vh.GetName(), len(rs), len(wantRoutes), routeNames(vh.GetRoutes()))
			continue
		}
		for i, r := range rs {
			w := wantRoutes[i]
			eff, err := envoy.ExtProcFor(ep, c.rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig())
			if err != nil {
				t.Fatal(err)
			}
			onHeader := slices.ContainsFunc(r.GetMatch().GetHeaders(), func(h *routev3.HeaderMatcher) bool { return h.GetName() == envoy.MethodHeader })
			m := eff.Mode
			switch {
			case r.GetName() != w.name:
				t.Errorf("virtual host %s route %d: %q, want %q", vh.GetName(), i, r.GetName(), w.name)
			case r.GetRoute().GetCluster() != inbound:
				t.Errorf("route %s: cluster %q, want %q", r.GetName(), r.GetRoute().GetCluster(), inbound)
			case onHeader != w.onMethodHeader:
				t.Errorf("route %s: matches on %s %v, want %v", r.GetName(), envoy.MethodHeader, onHeader, w.onMethodHeader)
			case eff.Disabled || eff.FailureModeAllow || len(eff.FailOpenLevels) > 0:
				t.Errorf("route %s: side stream disabled %v, fails open %v (levels %v)", r.GetName(), eff.Disabled, eff.FailureModeAllow, eff.FailOpenLevels)
			case m.GetResponseHeaderMode() != extprocv3.ProcessingMode_SEND || m.GetRequestHeaderMode() != w.requestHeaders ||
				m.GetRequestBodyMode() != w.requestBody || m.GetResponseBodyMode() != w.responseBodyMode:
				t.Errorf("route %s: processing mode %v, want response headers SEND, %+v", r.GetName(), m, w)
			case !slices.Contains(r.GetRequestHeadersToRemove(), envoy.AcceptEncoding):
				t.Errorf("route %s: does not remove %s upstream", r.GetName(), envoy.AcceptEncoding)
			}
		}
	}
}

func routeNames[R interface{ GetName() string }](rs []R) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.GetName()
	}
	return out
}

// withoutClearRouteCachePatch removes, from an EnvoyFilter file, the patch
// that MERGEs clear_route_cache into Istio's ext_authz filter.
func withoutClearRouteCachePatch(t *testing.T) func(string, []byte) []byte {
	return func(path string, y []byte) []byte {
		if !strings.Contains(path, "envoyfilter-extproc") {
			return y
		}
		var ef map[string]any
		if err := yaml.Unmarshal(y, &ef); err != nil {
			t.Fatal(err)
		}
		spec := ef["spec"].(map[string]any)
		var kept []any
		removed := 0
		for _, p := range spec["configPatches"].([]any) {
			b, _ := yaml.Marshal(p)
			if bytes.Contains(b, []byte("clear_route_cache")) && bytes.Contains(b, []byte("name: "+envoy.ExtAuthzFilter)) {
				removed++
				continue
			}
			kept = append(kept, p)
		}
		if removed != 1 {
			t.Fatalf("%s: %d patches merge clear_route_cache into %s, want 1", path, removed, envoy.ExtAuthzFilter)
		}
		spec["configPatches"] = kept
		out, err := yaml.Marshal(ef)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// TestIstioDropsClearRouteCache: the mesh config's providers set
// clearRouteCache true, and yet without the EnvoyFilter's MERGE patch
// Istio's ext_authz has clear_route_cache false (its builder,
// pilot/pkg/security/authz/builder/extauthz.go generateGRPCConfig, never
// writes it: istio/istio#61558, fix #61564 open at this pin), and the rig
// bootstrap then breaks envoy.CheckInvariants. When Istio starts writing
// the field this test fails: keep the patch (older istiods) and say from
// which release it is no longer needed.
func TestIstioDropsClearRouteCache(t *testing.T) {
	mc := meshConfig(t)
	if strings.Count(mc, "clearRouteCache: true") != 2 {
		t.Fatalf("mesh-config.yaml's providers must set clearRouteCache: true:\n%s", mc)
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			g := generate(t, l, withoutClearRouteCachePatch(t))
			for _, c := range inboundChains(t, g, l.mcpPort) {
				ea, _, err := envoy.ExtAuthz(c.hcm)
				if err != nil {
					t.Fatal(err)
				}
				if ea.GetClearRouteCache() {
					t.Errorf("chain %s: Istio now writes clear_route_cache (istio/istio#61564 merged?)", c.name)
				}
			}
			if l.name != rigLayout {
				return
			}
			b, _ := rigBootstrapFrom(t, l, g)
			if err := envoy.CheckInvariants(b); err == nil || !strings.Contains(err.Error(), "clear") {
				t.Errorf("CheckInvariants without clear_route_cache: %v, want a clear_route_cache error", err)
			}
		})
	}
}
