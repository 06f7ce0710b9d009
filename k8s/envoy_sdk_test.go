package k8s

import (
	"maps"
	"testing"

	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// TestChartEnvoyCORSAndHost: sidecar.envoy.cors.allowOrigins becomes the
// CORS policy's exact origins, and a non-default MCP server port moves the
// Host rewrite and the metadata cluster with it.
func TestChartEnvoyCORSAndHost(t *testing.T) {
	vals := maps.Clone(valueSets(t)["sidecar-values.yaml"])
	sc := maps.Clone(vals["sidecar"].(map[string]any))
	ev, _ := sc["envoy"].(map[string]any)
	ev = maps.Clone(ev)
	if ev == nil {
		ev = map[string]any{}
	}
	ev["cors"] = map[string]any{"allowOrigins": []any{"https://app.example.com", "http://localhost:6274"}}
	sc["envoy"] = ev
	mcp := maps.Clone(sc["mcpServer"].(map[string]any))
	mcp["port"] = 3100
	sc["mcpServer"] = mcp
	vals["sidecar"] = sc
	vals["ports"] = map[string]any{"grpc": 9191, "http": 9300}
	out, _, err := render(loadChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoy.ValidateBootstrapYAML([]byte(o.configMap("-envoy").Data["envoy.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := envoy.CheckInvariants(b); err != nil {
		t.Fatal(err)
	}
	if got := envoy.Endpoints(envoy.Cluster(b, envoy.MetadataCluster)); len(got) != 1 || got[0] != "127.0.0.1:9300" {
		t.Errorf("%s endpoints %v, want [127.0.0.1:9300]", envoy.MetadataCluster, got)
	}
	hcms, err := envoy.HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	var origins []string
	hosts := 0
	for _, h := range hcms {
		for _, vh := range h.HCM.GetRouteConfig().GetVirtualHosts() {
			if a, ok := vh.GetTypedPerFilterConfig()[envoy.CorsFilter]; ok {
				p := &corsv3.CorsPolicy{}
				if err := a.UnmarshalTo(p); err != nil {
					t.Fatal(err)
				}
				for _, m := range p.GetAllowOriginStringMatch() {
					origins = append(origins, m.GetExact())
				}
			}
			for _, r := range vh.GetRoutes() {
				if ra := r.GetRoute(); ra != nil && !envoy.MetadataRoute(r) && ra.GetCluster() != envoy.AdminCluster {
					hosts++
					if got := ra.GetHostRewriteLiteral(); got != "127.0.0.1:3100" {
						t.Errorf("host_rewrite_literal %q, want 127.0.0.1:3100", got)
					}
				}
			}
		}
	}
	if len(origins) != 2 || origins[0] != "https://app.example.com" || origins[1] != "http://localhost:6274" {
		t.Errorf("CORS origins %q", origins)
	}
	if hosts == 0 {
		t.Error("no MCP route")
	}
}
