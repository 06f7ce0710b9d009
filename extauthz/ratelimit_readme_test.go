package extauthz

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// extAuthzNamespace is where Envoy files a CheckResponse's dynamic
// metadata: the ext_authz filter's name.
const extAuthzNamespace = "envoy.filters.http.ext_authz"

// TestReadmeEnvoyRateLimits: README's Envoy rate_limits snippet (section
// Quotas) is a valid envoy.config.route.v3.RateLimit list whose metadata
// actions read, from ext_authz's namespace, only members a Check sets in
// its dynamic metadata, allowed or denied.
func TestReadmeEnvoyRateLimits(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "\n## Quotas\n")
	if i < 0 {
		t.Fatal("README has no Quotas section")
	}
	block := regexp.MustCompile("(?s)```yaml\n(http_filters:.*?)```").FindStringSubmatch(readme[i:])
	if block == nil {
		t.Fatal("no Envoy snippet in README's Quotas section")
	}
	j := strings.Index(block[1], "      rate_limits:\n")
	if j < 0 {
		t.Fatal("the snippet has no route rate_limits")
	}
	var lines []string
	for _, l := range strings.Split(block[1][j:], "\n")[1:] {
		if strings.TrimSpace(l) == "" || len(l)-len(strings.TrimLeft(l, " ")) <= 6 {
			break
		}
		lines = append(lines, l)
	}
	js, err := yaml.YAMLToJSON([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("rate_limits: %v", err)
	}
	var route routev3.RouteAction
	if err := protojson.Unmarshal([]byte(`{"cluster":"mcp_server","rate_limits":`+string(js)+`}`), &route); err != nil {
		t.Fatalf("rate_limits is not Envoy's RateLimit: %v", err)
	}
	if err := route.ValidateAll(); err != nil {
		t.Fatalf("rate_limits: %v", err)
	}
	srv := quotaServer(t, nil, nil)
	allowed, _ := srv.Check(t.Context(), quotaCall("alice", toolCallBody("other")).CheckRequest(true))
	denied, _ := srv.Check(t.Context(), quotaCall("alice", toolCallBody("delete_x")).CheckRequest(true))
	var keys []string
	for _, rl := range route.GetRateLimits() {
		for _, a := range rl.GetActions() {
			md := a.GetMetadata()
			if md == nil {
				continue
			}
			mk := md.GetMetadataKey()
			if mk.GetKey() != extAuthzNamespace || len(mk.GetPath()) != 1 {
				t.Errorf("action %s reads %s %v, want one member of %s", md.GetDescriptorKey(), mk.GetKey(), mk.GetPath(), extAuthzNamespace)
				continue
			}
			k := mk.GetPath()[0].GetKey()
			keys = append(keys, k)
			if _, ok := allowed.GetDynamicMetadata().GetFields()[k]; !ok {
				t.Errorf("an allowed Check sets no %q", k)
			}
			if _, ok := denied.GetDynamicMetadata().GetFields()[k]; !ok {
				t.Errorf("a denied Check sets no %q", k)
			}
		}
	}
	if strings.Join(keys, ",") != "principal,server,method,target" {
		t.Errorf("the snippet reads %q, want principal, server, method, target", keys)
	}
}
