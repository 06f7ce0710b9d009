package k8s

import (
	"encoding/json"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// Istio's types are not in go-control-plane and istio.io/api is too heavy
// for three files, so these structs hold the fields our files use, written
// from the Istio references below, and the files are decoded into them
// strictly: a misspelled or unknown field fails.

// AuthorizationPolicy is security.istio.io/v1 AuthorizationPolicy.
// https://istio.io/latest/docs/reference/config/security/authorization-policy/
type AuthorizationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector *struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector,omitempty"`
		TargetRefs []struct {
			Kind  string `json:"kind"`
			Group string `json:"group"`
			Name  string `json:"name"`
		} `json:"targetRefs,omitempty"`
		Action   string `json:"action"`
		Provider *struct {
			Name string `json:"name"`
		} `json:"provider,omitempty"`
		Rules []struct {
			From []map[string]any `json:"from,omitempty"`
			To   []map[string]any `json:"to,omitempty"`
			When []map[string]any `json:"when,omitempty"`
		} `json:"rules"`
	} `json:"spec"`
}

// ServiceEntry is networking.istio.io/v1 ServiceEntry.
// https://istio.io/latest/docs/reference/config/networking/service-entry/
type ServiceEntry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Hosts     []string `json:"hosts"`
		Endpoints []struct {
			Address string `json:"address"`
		} `json:"endpoints"`
		Ports []struct {
			Name     string `json:"name"`
			Number   int    `json:"number"`
			Protocol string `json:"protocol"`
		} `json:"ports"`
		Resolution string `json:"resolution"`
	} `json:"spec"`
}

// istioOperator is the part of install.istio.io/v1alpha1 IstioOperator that
// mesh-config.yaml sets: MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationGrpcProvider.
// https://istio.io/latest/docs/reference/config/istio.mesh.v1alpha1/#MeshConfig-ExtensionProvider-EnvoyExternalAuthorizationGrpcProvider
type istioOperator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		MeshConfig struct {
			ExtensionProviders []struct {
				Name              string `json:"name"`
				EnvoyExtAuthzGrpc *struct {
					Service                   string `json:"service"`
					Port                      int    `json:"port"`
					Timeout                   string `json:"timeout"`
					FailOpen                  *bool  `json:"failOpen"`
					StatusOnError             string `json:"statusOnError"`
					ClearRouteCache           *bool  `json:"clearRouteCache"`
					IncludeRequestBodyInCheck *struct {
						MaxRequestBytes     int   `json:"maxRequestBytes"`
						AllowPartialMessage *bool `json:"allowPartialMessage"`
						PackAsBytes         *bool `json:"packAsBytes"`
					} `json:"includeRequestBodyInCheck"`
				} `json:"envoyExtAuthzGrpc"`
			} `json:"extensionProviders"`
		} `json:"meshConfig"`
	} `json:"spec"`
}

func decodeStrict(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// meshProviders returns the gRPC ext_authz providers of mesh-config.yaml by
// name, failing the test for any that does not fail closed on exact bodies.
func meshProviders(t *testing.T) map[string]string {
	t.Helper()
	var op istioOperator
	decodeStrict(t, "istio/mesh-config.yaml", &op)
	out := map[string]string{} // name -> service:port
	for _, p := range op.Spec.MeshConfig.ExtensionProviders {
		g := p.EnvoyExtAuthzGrpc
		if g == nil {
			t.Errorf("provider %s: not envoyExtAuthzGrpc", p.Name)
			continue
		}
		body := g.IncludeRequestBodyInCheck
		switch {
		case g.FailOpen == nil || *g.FailOpen:
			t.Errorf("provider %s: failOpen is not explicitly false", p.Name)
		case g.Timeout == "":
			t.Errorf("provider %s: no timeout (Istio's default is 10m)", p.Name)
		case body == nil || body.MaxRequestBytes <= 0:
			t.Errorf("provider %s: includeRequestBodyInCheck.maxRequestBytes unset", p.Name)
		case body.AllowPartialMessage == nil || *body.AllowPartialMessage:
			t.Errorf("provider %s: allowPartialMessage is not explicitly false", p.Name)
		case body.PackAsBytes == nil || !*body.PackAsBytes:
			t.Errorf("provider %s: packAsBytes is not true", p.Name)
		case g.Port != 9191:
			t.Errorf("provider %s: port %d, want 9191", p.Name, g.Port)
		}
		if body != nil && body.MaxRequestBytes > 1<<20 {
			t.Errorf("provider %s: maxRequestBytes %d above the service's default --max-body-bytes", p.Name, body.MaxRequestBytes)
		}
		out[p.Name] = g.Service + ":" + strconv.Itoa(g.Port)
	}
	return out
}

func TestIstioMeshConfig(t *testing.T) {
	got := meshProviders(t)
	want := map[string]string{
		// Shared layout: the standalone Service (Helm release or kustomize
		// base, both "mcp-extauthz" in namespace mcp-extauthz).
		"mcp-extauthz": "mcp-extauthz.mcp-extauthz.svc.cluster.local:9191",
		// In-pod layout: the ServiceEntry's name for 127.0.0.1.
		"mcp-extauthz-local": "mcp-extauthz.local:9191",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("provider %s = %q, want %q", name, got[name], w)
		}
	}
}

func TestIstioAuthorizationPolicy(t *testing.T) {
	providers := meshProviders(t)
	var ap AuthorizationPolicy
	decodeStrict(t, "istio/authorizationpolicy.yaml", &ap)
	checkAuthorizationPolicy(t, &ap, providers)
}

// checkAuthorizationPolicy asserts a CUSTOM policy that sends every request
// of the selected workloads to a provider the mesh config defines.
func checkAuthorizationPolicy(t *testing.T, ap *AuthorizationPolicy, providers map[string]string) {
	t.Helper()
	s := ap.Spec
	if ap.APIVersion != "security.istio.io/v1" || ap.Kind != "AuthorizationPolicy" {
		t.Errorf("%s/%s", ap.APIVersion, ap.Kind)
	}
	if s.Action != "CUSTOM" {
		t.Errorf("action %q, want CUSTOM", s.Action)
	}
	if s.Provider == nil || providers[s.Provider.Name] == "" {
		t.Errorf("provider %+v is not in mesh-config.yaml", s.Provider)
	}
	if s.Selector == nil || len(s.Selector.MatchLabels) == 0 {
		t.Error("no workload selector: the policy would apply to the whole namespace")
	}
	// Exactly one empty rule: match every request, whatever path or method.
	if len(s.Rules) != 1 || len(s.Rules[0].From)+len(s.Rules[0].To)+len(s.Rules[0].When) != 0 {
		t.Errorf("rules %+v, want [{}] (check every request)", s.Rules)
	}
}

func TestIstioServiceEntryForInPodLayout(t *testing.T) {
	providers := meshProviders(t)
	var se ServiceEntry
	decodeStrict(t, "istio/serviceentry-local.yaml", &se)
	if len(se.Spec.Hosts) != 1 || len(se.Spec.Ports) != 1 || len(se.Spec.Endpoints) != 1 {
		t.Fatalf("want one host, port and endpoint: %+v", se.Spec)
	}
	if got := se.Spec.Hosts[0] + ":" + strconv.Itoa(se.Spec.Ports[0].Number); got != providers["mcp-extauthz-local"] {
		t.Errorf("ServiceEntry %s, provider mcp-extauthz-local %s", got, providers["mcp-extauthz-local"])
	}
	if a, err := netip.ParseAddr(se.Spec.Endpoints[0].Address); err != nil || !a.IsLoopback() {
		t.Errorf("endpoint %q is not loopback", se.Spec.Endpoints[0].Address)
	}
	if se.Spec.Ports[0].Protocol != "GRPC" || se.Spec.Resolution != "STATIC" {
		t.Errorf("protocol %s resolution %s, want GRPC STATIC", se.Spec.Ports[0].Protocol, se.Spec.Resolution)
	}
}

// TestIstioAmbientWaypoint: in ambient mode the CUSTOM policy targets the
// Service (enforced by its waypoint; ztunnel ignores CUSTOM), and an L4
// ALLOW on the same workloads admits only the waypoint's identity.
func TestIstioAmbientWaypoint(t *testing.T) {
	providers := meshProviders(t)
	b, err := os.ReadFile("istio/ambient/authorizationpolicy-waypoint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.AuthzPolicies) != 2 {
		t.Fatalf("%d AuthorizationPolicies, want CUSTOM and ALLOW", len(o.AuthzPolicies))
	}
	custom, allow := o.AuthzPolicies[0], o.AuthzPolicies[1]
	if s := custom.Spec; s.Action != "CUSTOM" || s.Selector != nil || len(s.TargetRefs) != 1 || s.TargetRefs[0].Kind != "Service" || s.Provider == nil || providers[s.Provider.Name] == "" {
		t.Errorf("CUSTOM policy %+v: want targetRefs to the Service (no selector: ztunnel would not enforce it) and a mesh provider", s)
	}
	if len(custom.Spec.Rules) != 1 || len(custom.Spec.Rules[0].From)+len(custom.Spec.Rules[0].To)+len(custom.Spec.Rules[0].When) != 0 {
		t.Errorf("CUSTOM rules %+v, want [{}]", custom.Spec.Rules)
	}
	s := allow.Spec
	if s.Action != "ALLOW" || s.Selector == nil || len(s.Rules) != 1 || len(s.Rules[0].To)+len(s.Rules[0].When) != 0 || len(s.Rules[0].From) != 1 {
		t.Fatalf("ALLOW policy %+v: want one L4 rule (source principals only) on the MCP workloads", s)
	}
	src, _ := s.Rules[0].From[0]["source"].(map[string]any)
	principals, _ := src["principals"].([]any)
	if len(src) != 1 || len(principals) != 1 || principals[0] != "cluster.local/ns/"+allow.Namespace+"/sa/waypoint" {
		t.Errorf("ALLOW source %v, want only the waypoint's principal", src)
	}
	if custom.Namespace != allow.Namespace {
		t.Errorf("policies in %s and %s", custom.Namespace, allow.Namespace)
	}
}

// TestGatewayLayoutIsolatesMCPServers: in the gateway layout each MCP
// server namespace admits only the gateway's Envoy Pods, on the port the
// gateway's cluster dials; and the gateway reaches extauthz through the
// headless Service the chart and kustomize render.
func TestGatewayLayoutIsolatesMCPServers(t *testing.T) {
	b, err := os.ReadFile("gateway/networkpolicy-mcp-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.NetworkPolicies) != 1 {
		t.Fatalf("%d NetworkPolicies", len(o.NetworkPolicies))
	}
	np := o.NetworkPolicies[0]
	if len(np.Spec.PodSelector.MatchLabels) == 0 || len(np.Spec.Ingress) != 1 {
		t.Fatalf("want a selected workload and one ingress rule: %+v", np.Spec)
	}
	r := np.Spec.Ingress[0]
	if len(r.From) != 1 || r.From[0].NamespaceSelector == nil || r.From[0].PodSelector == nil || len(r.From[0].PodSelector.MatchLabels) == 0 {
		t.Errorf("from %+v, want the gateway's Pods in the gateway namespace only", r.From)
	}
	gw, err := envoy.ValidateBootstrapYAML(mustRead(t, "../envoy/gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := envoy.Endpoints(envoy.Cluster(gw, "payments")); len(got) != 1 || len(r.Ports) != 1 || !strings.HasSuffix(got[0], ":"+r.Ports[0].Port.String()) || !strings.HasPrefix(got[0], "payments-mcp-headless."+np.Namespace+".") {
		t.Errorf("gateway cluster payments %v vs NetworkPolicy %s/%v", got, np.Namespace, r.Ports)
	}
	ext := envoy.Endpoints(envoy.Cluster(gw, "ext_authz"))
	base := build(t, "kustomize/base")
	h := base.service("mcp-extauthz-headless")
	if h == nil || h.Spec.ClusterIP != "None" || len(ext) != 1 || ext[0] != h.Name+"."+h.Namespace+".svc.cluster.local:"+strconv.Itoa(int(h.Spec.Ports[0].Port)) {
		t.Errorf("gateway ext_authz %v does not dial the headless Service %+v", ext, h)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// EnvoyFilter is the part of networking.istio.io/v1alpha3 EnvoyFilter that
// envoyfilter-underscores.yaml and envoyfilter-extproc*.yaml set.
// https://istio.io/latest/docs/reference/config/networking/envoy-filter/
type EnvoyFilter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		WorkloadSelector *struct {
			Labels map[string]string `json:"labels"`
		} `json:"workloadSelector"`
		ConfigPatches []struct {
			ApplyTo string `json:"applyTo"`
			Match   struct {
				Context  string `json:"context"`
				Listener struct {
					FilterChain struct {
						Filter struct {
							Name      string `json:"name"`
							SubFilter struct {
								Name string `json:"name"`
							} `json:"subFilter"`
						} `json:"filter"`
					} `json:"filterChain"`
				} `json:"listener"`
				RouteConfiguration struct {
					PortNumber int `json:"portNumber"`
					Vhost      struct {
						Route struct {
							Name string `json:"name"`
						} `json:"route"`
					} `json:"vhost"`
				} `json:"routeConfiguration"`
			} `json:"match"`
			Patch struct {
				Operation string `json:"operation"`
				// Value is an Envoy message (HttpFilter, VirtualHost, Route,
				// ...) as JSON, decoded by the tests with protojson.
				Value map[string]any `json:"value"`
			} `json:"patch"`
		} `json:"configPatches"`
	} `json:"spec"`
}

// TestIstioRejectsUnderscoreHeaders: under Istio the MCP workloads' inbound
// sidecars get headers_with_underscores_action REJECT_REQUEST, on the same
// workloads the AuthorizationPolicy selects.
func TestIstioRejectsUnderscoreHeaders(t *testing.T) {
	var ef EnvoyFilter
	decodeStrict(t, "istio/envoyfilter-underscores.yaml", &ef)
	var ap AuthorizationPolicy
	decodeStrict(t, "istio/authorizationpolicy.yaml", &ap)
	if ef.APIVersion != "networking.istio.io/v1alpha3" || ef.Kind != "EnvoyFilter" {
		t.Errorf("%s/%s", ef.APIVersion, ef.Kind)
	}
	if ef.Namespace != ap.Namespace || ef.Spec.WorkloadSelector == nil || ap.Spec.Selector == nil ||
		!maps.Equal(ef.Spec.WorkloadSelector.Labels, ap.Spec.Selector.MatchLabels) {
		t.Errorf("EnvoyFilter selects %s %+v, AuthorizationPolicy %s %+v", ef.Namespace, ef.Spec.WorkloadSelector, ap.Namespace, ap.Spec.Selector)
	}
	if len(ef.Spec.ConfigPatches) != 1 {
		t.Fatalf("want one patch, got %d", len(ef.Spec.ConfigPatches))
	}
	p := ef.Spec.ConfigPatches[0]
	if p.ApplyTo != "NETWORK_FILTER" || p.Match.Context != "SIDECAR_INBOUND" || p.Patch.Operation != "MERGE" ||
		p.Match.Listener.FilterChain.Filter.Name != "envoy.filters.network.http_connection_manager" {
		t.Errorf("patch %+v", p)
	}
	raw, err := json.Marshal(p.Patch.Value["typed_config"])
	if err != nil {
		t.Fatal(err)
	}
	var a anypb.Any
	if err := protojson.Unmarshal(raw, &a); err != nil {
		t.Fatalf("typed_config: %v", err)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := a.UnmarshalTo(&hcm); err != nil {
		t.Fatalf("typed_config is not an HttpConnectionManager: %v", err)
	}
	if got := hcm.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(); got != corev3.HttpProtocolOptions_REJECT_REQUEST {
		t.Errorf("headers_with_underscores_action %v, want REJECT_REQUEST", got)
	}
}

// VirtualService is networking.istio.io/v1 VirtualService, the fields our
// file uses. https://istio.io/latest/docs/reference/config/networking/virtual-service/
type VirtualService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Hosts    []string `json:"hosts"`
		Gateways []string `json:"gateways"`
		HTTP     []struct {
			Name  string `json:"name"`
			Match []struct {
				URI map[string]string `json:"uri"`
			} `json:"match,omitempty"`
			Route []struct {
				Destination struct {
					Host string `json:"host"`
					Port struct {
						Number int `json:"number"`
					} `json:"port"`
				} `json:"destination"`
			} `json:"route"`
			CorsPolicy *struct {
				AllowOrigins  []map[string]string `json:"allowOrigins"`
				AllowMethods  []string            `json:"allowMethods"`
				AllowHeaders  []string            `json:"allowHeaders,omitempty"`
				ExposeHeaders []string            `json:"exposeHeaders,omitempty"`
				MaxAge        string              `json:"maxAge,omitempty"`
			} `json:"corsPolicy,omitempty"`
		} `json:"http"`
	} `json:"spec"`
}

// TestIstioMetadataRoute: behind an Istio gateway the RFC 9728 metadata
// paths, and only they, go to mcp-extauthz's HTTP port, ahead of the MCP
// route; the MCP route exposes Mcp-Session-Id and WWW-Authenticate to
// browsers.
func TestIstioMetadataRoute(t *testing.T) {
	var vs VirtualService
	decodeStrict(t, "istio/virtualservice-metadata.yaml", &vs)
	if vs.APIVersion != "networking.istio.io/v1" || vs.Kind != "VirtualService" || len(vs.Spec.HTTP) != 2 {
		t.Fatalf("%s/%s with %d routes", vs.APIVersion, vs.Kind, len(vs.Spec.HTTP))
	}
	md, mcp := vs.Spec.HTTP[0], vs.Spec.HTTP[1]
	want := map[string]string{"exact": "/.well-known/oauth-protected-resource", "prefix": "/.well-known/oauth-protected-resource/"}
	if len(md.Match) != len(want) {
		t.Errorf("metadata matches %+v", md.Match)
	}
	for _, m := range md.Match {
		for k, v := range m.URI {
			if want[k] != v {
				t.Errorf("metadata match %s: %q", k, v)
			}
		}
	}
	if len(md.Route) != 1 || md.Route[0].Destination.Host != "mcp-extauthz.mcp-extauthz.svc.cluster.local" || md.Route[0].Destination.Port.Number != 9192 {
		t.Errorf("metadata route %+v, want mcp-extauthz's HTTP port 9192", md.Route)
	}
	if len(mcp.Match) != 0 || mcp.CorsPolicy == nil {
		t.Fatalf("MCP route %+v: want the catch-all with a CORS policy", mcp)
	}
	exposed := map[string]bool{}
	for _, h := range mcp.CorsPolicy.ExposeHeaders {
		exposed[h] = true
	}
	if !exposed["mcp-session-id"] || !exposed["www-authenticate"] || len(mcp.CorsPolicy.AllowOrigins) != 0 {
		t.Errorf("MCP CORS %+v", mcp.CorsPolicy)
	}
}

// docsText returns the repository's documentation: ../README.md, then
// ../docs/*.md in name order, joined. Tests that check what the
// documentation says (a command, a chart value, a quoted refusal) read
// this, so a section may sit in README or in docs/.
func docsText(t *testing.T) []byte {
	t.Helper()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, f := range append([]string{"../README.md"}, files...) {
		out = append(out, mustRead(t, f)...)
		out = append(out, '\n')
	}
	return out
}
