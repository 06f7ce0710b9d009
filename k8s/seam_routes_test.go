package k8s

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// unseenAnswers walks every route of every HTTP connection manager of b
// that reaches an MCP server (any route to an upstream but the RFC 9728
// metadata route and the admin API's stats route) and returns one line for
// each whose answer can reach the client without the processor seeing its
// response headers, or that fails open (issue 26: a server may answer a
// pending tools/list on any stream, so every answer must pass the seam).
// It is written apart from envoy.CheckInvariants, from Envoy's rules:
//   - the ext_proc filter is in the chain after ext_authz (whose
//     clear_route_cache re-picks the route the filter merges its per-route
//     config on) and before the router, not disabled there, with
//     failure_mode_allow and observability_mode false;
//   - a generic FilterConfig is the filter manager's switch, decided on the
//     route picked before Check (from the client's own headers): one with
//     disabled true at any level counts as off;
//   - the ExtProcPerRoute of the route configuration, the virtual host and
//     the route merge from the least specific to the most, each level that
//     has one deciding disabled anew (overrides beat a less specific
//     disabled), processing_mode taken from the most specific level that
//     sets it, else the filter's (ext_proc.cc FilterConfigPerRoute);
//   - the effective response_header_mode is SEND (DEFAULT is SEND for
//     headers), and no level sets failure_mode_allow true.
func unseenAnswers(b *bootstrapv3.Bootstrap) ([]string, error) {
	hcms, err := envoy.HTTPConnectionManagers(b)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hcms {
		rc := h.HCM.GetRouteConfig()
		var toServer []*routev3.Route
		for _, vh := range rc.GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				if ra := r.GetRoute(); ra != nil && !envoy.MetadataRoute(r) && ra.GetCluster() != envoy.AdminCluster {
					toServer = append(toServer, r)
				}
			}
		}
		if len(toServer) == 0 {
			continue // a health or admin listener
		}
		l := "listener " + h.Listener
		names := make([]string, len(h.HCM.GetHttpFilters()))
		for i, f := range h.HCM.GetHttpFilters() {
			names[i] = f.GetName()
		}
		authz, proc, router := slices.Index(names, envoy.ExtAuthzFilter), slices.Index(names, envoy.ExtProcFilter), slices.Index(names, envoy.RouterFilter)
		switch {
		case proc < 0:
			out = append(out, l+": no ext_proc filter: no answer is seen")
			continue
		case authz < 0 || proc < authz:
			out = append(out, l+": ext_proc not after ext_authz: its per-route config is merged on the route picked before Check")
		case router < 0 || proc > router:
			out = append(out, l+": ext_proc not before the router")
		}
		ep := &extprocv3.ExternalProcessor{}
		if err := h.HCM.GetHttpFilters()[proc].GetTypedConfig().UnmarshalTo(ep); err != nil {
			return nil, fmt.Errorf("%s: %w", l, err)
		}
		chainOff := h.HCM.GetHttpFilters()[proc].GetDisabled()
		if ep.GetFailureModeAllow() || ep.GetObservabilityMode() {
			out = append(out, l+": ext_proc failure_mode_allow or observability_mode: answers pass unread when the processor fails")
		}
		for _, vh := range rc.GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				if !slices.Contains(toServer, r) {
					continue
				}
				why, err := routeUnseen(ep, chainOff, rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig())
				if err != nil {
					return nil, fmt.Errorf("%s: route %s: %w", l, matchText(r.GetMatch()), err)
				}
				if why != "" {
					out = append(out, fmt.Sprintf("%s: route %s: %s", l, matchText(r.GetMatch()), why))
				}
			}
		}
	}
	return out, nil
}

// matchText renders a route match the same way on every run: the
// protobuf String and prototext forms insert random spaces by design.
func matchText(m *routev3.RouteMatch) string {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	out, _ := json.Marshal(v) // encoding/json sorts keys and adds no spaces
	return string(out)
}

// routeUnseen says why a route whose per-filter configs are levels (the
// route configuration's, the virtual host's, the route's) lets an answer
// pass unread or fails open, or "" if it does neither.
func routeUnseen(ep *extprocv3.ExternalProcessor, chainOff bool, levels ...map[string]*anypb.Any) (string, error) {
	switchedOff, disabled := chainOff, false
	mode := ep.GetProcessingMode()
	var failOpen []string
	for i, m := range levels {
		a, ok := m[envoy.ExtProcFilter]
		if !ok {
			continue
		}
		if a.MessageIs(&routev3.FilterConfig{}) {
			fc := &routev3.FilterConfig{}
			if err := a.UnmarshalTo(fc); err != nil {
				return "", err
			}
			switchedOff = switchedOff || fc.GetDisabled()
			if a = fc.GetConfig(); a == nil {
				continue
			}
		}
		pr := &extprocv3.ExtProcPerRoute{}
		if err := a.UnmarshalTo(pr); err != nil {
			return "", err
		}
		if pr.GetDisabled() {
			disabled = true
			continue
		}
		disabled = false
		o := pr.GetOverrides()
		if o.GetProcessingMode() != nil {
			mode = o.GetProcessingMode()
		}
		if o.GetFailureModeAllow().GetValue() {
			failOpen = append(failOpen, []string{"route configuration", "virtual host", "route"}[i])
		}
	}
	switch hm := mode.GetResponseHeaderMode(); {
	case switchedOff:
		return "ext_proc switched off (FilterConfig or the filter chain): answers pass unread", nil
	case disabled:
		return "ext_proc disabled: answers pass unread", nil
	case hm != extprocv3.ProcessingMode_SEND && hm != extprocv3.ProcessingMode_DEFAULT:
		return fmt.Sprintf("response_header_mode %v: answers pass unread", hm), nil
	case len(failOpen) > 0:
		return fmt.Sprintf("failure_mode_allow true in the %s config: answers pass unread when the processor fails", strings.Join(failOpen, ", ")), nil
	}
	return "", nil
}

// TestEveryAnswerPassesTheSeam: in every Envoy config the repository ships
// (the files, the chart's rendering of each ci values set that runs Envoy,
// the kustomize overlays, the Istio EnvoyFilters applied to the sidecar's
// routes as Istio applies them), every route to an MCP server shows the
// processor the answer's headers and fails closed (unseenAnswers). The
// sidecar of before issue 26 (testdata: the catch-all route without a side
// stream, tools/call failing open) and the Istio filter without its merge
// into the inbound default route must fail.
func TestEveryAnswerPassesTheSeam(t *testing.T) {
	file := func(path string) func(*testing.T) *bootstrapv3.Bootstrap {
		return func(t *testing.T) *bootstrapv3.Bootstrap {
			b, err := envoy.ValidateBootstrapYAML(mustRead(t, path))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	configMap := func(dir, part string) func(*testing.T) *bootstrapv3.Bootstrap {
		return func(t *testing.T) *bootstrapv3.Bootstrap {
			cm := build(t, dir).configMap(part)
			if cm == nil {
				t.Fatalf("kustomize build %s: no ConfigMap %s", dir, part)
			}
			b, err := envoy.ValidateBootstrapYAML([]byte(cm.Data["envoy.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	istio := func(path string, port int, merged bool) func(*testing.T) *bootstrapv3.Bootstrap {
		return func(t *testing.T) *bootstrapv3.Bootstrap {
			s, _ := readIstioSeam(t, path, port)
			if !merged {
				s.merged = nil
			}
			return s.bootstrap(t)
		}
	}
	type row struct {
		give string
		load func(*testing.T) *bootstrapv3.Bootstrap
		want []string // every line unseenAnswers must give, in order; none: the config passes
	}
	tests := []row{
		{give: "envoy/sidecar.yaml", load: file("../envoy/sidecar.yaml")},
		{give: "envoy/gateway.yaml", load: file("../envoy/gateway.yaml")},
		{give: "k8s/kustomize/overlays/sidecar", load: configMap("kustomize/overlays/sidecar", "mcp-extauthz-envoy")},
		{give: "k8s/gateway", load: configMap("gateway", "mcp-gateway-envoy")},
		{give: "k8s/istio/envoyfilter-extproc.yaml", load: istio("istio/envoyfilter-extproc.yaml", 8080, true)},
		{give: "k8s/istio/envoyfilter-extproc-local.yaml", load: istio("istio/envoyfilter-extproc-local.yaml", 3000, true)},
		{give: "sidecar.yaml before issue 26", load: file("testdata/sidecar-before-issue26.yaml"), want: []string{
			`listener mcp: route {"headers":[{"name":"x-mcp-method","string_match":{"exact":"tools/call"}}],"prefix":"/"}: failure_mode_allow true in the route config`,
			`listener mcp: route {"prefix":"/"}: ext_proc disabled: answers pass unread`,
		}},
		{give: "envoyfilter-extproc.yaml without the merge into route default", load: istio("istio/envoyfilter-extproc.yaml", 8080, false), want: []string{
			`listener mcp: route {"prefix":"/"}: ext_proc disabled: answers pass unread`,
		}},
	}
	renders := 0
	for name, vals := range valueSets(t) {
		out, _, err := render(loadChart(t), vals)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, err := decodeObjects([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		cm := o.configMap("-envoy")
		if cm == nil {
			continue // a standalone release: no Envoy of its own
		}
		renders++
		tests = append(tests, row{give: "helm ci/" + name, load: func(t *testing.T) *bootstrapv3.Bootstrap {
			b, err := envoy.ValidateBootstrapYAML([]byte(cm.Data["envoy.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}})
	}
	if renders == 0 {
		t.Fatal("no ci values set renders an Envoy config")
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := unseenAnswers(tt.load(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("line %d: %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestUnseenAnswersMerge: unseenAnswers merges the per-route configs as
// Envoy does, on sidecar.yaml edited one way at a time.
func TestUnseenAnswersMerge(t *testing.T) {
	sidecar := string(mustRead(t, "../envoy/sidecar.yaml"))
	const vhostOff = "                envoy.filters.http.ext_proc:\n                  \"@type\": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute\n                  disabled: true\n"
	tests := []struct {
		give     string
		old, new string
		want     string // a line unseenAnswers must give; "": none
	}{
		{"virtual host off, routes' overrides on", "", "", ""},
		{"virtual host FilterConfig off", vhostOff, "                envoy.filters.http.ext_proc:\n                  \"@type\": type.googleapis.com/envoy.config.route.v3.FilterConfig\n                  disabled: true\n", "ext_proc switched off"},
		{"virtual host fails open", vhostOff, "                envoy.filters.http.ext_proc:\n                  \"@type\": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute\n                  overrides: { failure_mode_allow: true }\n", "failure_mode_allow true in the virtual host config"},
		{"filter fails open", "failure_mode_allow: false\n              status_on_error: { code: ServiceUnavailable }\n              processing_mode:", "failure_mode_allow: true\n              status_on_error: { code: ServiceUnavailable }\n              processing_mode:", "ext_proc failure_mode_allow or observability_mode"},
		{"filter off in the chain", "          - name: envoy.filters.http.ext_proc\n", "          - name: envoy.filters.http.ext_proc\n            disabled: true\n", "ext_proc switched off"},
		{"response headers skipped", "                        request_header_mode: SKIP\n                        response_header_mode: SEND\n                        request_body_mode: NONE\n                        response_body_mode: NONE\n",
			"                        request_header_mode: SKIP\n                        response_header_mode: SKIP\n                        request_body_mode: NONE\n                        response_body_mode: NONE\n", "response_header_mode SKIP"},
		{"no ext_proc filter", "          - name: envoy.filters.http.ext_proc\n", "          - name: envoy.filters.http.ext_proc_gone\n", "no ext_proc filter"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			y := sidecar
			if tt.old != "" {
				if strings.Count(y, tt.old) != 1 {
					t.Fatalf("%q: %d times in sidecar.yaml, want once", tt.old, strings.Count(y, tt.old))
				}
				y = strings.Replace(y, tt.old, tt.new, 1)
			}
			b, err := envoy.ValidateBootstrapYAML([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			got, err := unseenAnswers(b)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(got, "\n")
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("got:\n%s", all)
			case tt.want != "" && !strings.Contains(all, tt.want):
				t.Errorf("got:\n%s\nwant a line containing %q", all, tt.want)
			}
		})
	}
}
