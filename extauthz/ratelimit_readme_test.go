package extauthz

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3" // the snippet's router
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// extAuthzNamespace is where Envoy files a CheckResponse's dynamic
// metadata: the ext_authz filter's name.
const extAuthzNamespace = "envoy.filters.http.ext_authz"

// TestReadmeEnvoyRateLimits: the Envoy snippet of docs/policy.md, "Quotas" is
// valid Envoy configuration (the rate-limit and router filters, a route
// with rate_limits, each checked by Envoy's protos and their validation
// rules), and the route's metadata actions read, from ext_authz's
// namespace, only members a Check sets in its dynamic metadata, allowed or
// denied.
func TestReadmeEnvoyRateLimits(t *testing.T) {
	b := []byte(testkit.Docs(t, ".."))
	readme := string(b)
	i := strings.Index(readme, "\n## Quotas\n")
	if i < 0 {
		t.Fatal("README has no Quotas section")
	}
	block := regexp.MustCompile("(?s)```yaml\n(http_filters:.*?)```").FindStringSubmatch(readme[i:])
	if block == nil {
		t.Fatal("no Envoy snippet in README's Quotas section")
	}
	var snippet struct {
		HTTPFilters []json.RawMessage `json:"http_filters"`
		Routes      []json.RawMessage `json:"routes"`
	}
	js, err := yaml.YAMLToJSON([]byte(block[1]))
	if err != nil {
		t.Fatalf("the snippet is not YAML: %v", err)
	}
	if err := json.Unmarshal(js, &snippet); err != nil || len(snippet.HTTPFilters) != 2 || len(snippet.Routes) != 1 {
		t.Fatalf("snippet: %v; want two http_filters and one route", err)
	}
	// The rate-limit filter, then the router: Envoy's protos, validated.
	for i, raw := range snippet.HTTPFilters {
		var f hcmv3.HttpFilter
		if err := protojson.Unmarshal(raw, &f); err != nil {
			t.Fatalf("http_filters[%d]: %v", i, err)
		}
		if err := f.ValidateAll(); err != nil {
			t.Fatalf("http_filters[%d]: %v", i, err)
		}
		if i == 0 {
			var rl ratelimitv3.RateLimit
			if f.GetName() != "envoy.filters.http.ratelimit" || f.GetTypedConfig().UnmarshalTo(&rl) != nil || rl.ValidateAll() != nil ||
				!rl.GetFailureModeDeny() || rl.GetDomain() != "mcp" {
				t.Errorf("http_filters[0] = %s: want the rate-limit filter, domain mcp, failing closed", f.GetName())
			}
		}
	}
	var r routev3.Route
	if err := protojson.Unmarshal(snippet.Routes[0], &r); err != nil {
		t.Fatalf("routes[0] is not Envoy's Route: %v", err)
	}
	if err := r.ValidateAll(); err != nil {
		t.Fatalf("routes[0]: %v", err)
	}
	route := r.GetRoute()
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
