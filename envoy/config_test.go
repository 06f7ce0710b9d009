package envoy

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// configs returns every YAML file under envoy/, keyed by name.
func configs(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		if p == OverloadFile {
			continue // a fragment merged over sidecar.yaml (TestOverloadManager)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	for _, want := range []string{"sidecar.yaml", "gateway.yaml"} {
		if out[want] == nil {
			t.Fatalf("%s missing", want)
		}
	}
	return out
}

func load(t *testing.T, name string) *bootstrapv3.Bootstrap {
	t.Helper()
	y, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

func TestConfigsValidateAndKeepInvariants(t *testing.T) {
	for name, y := range configs(t) {
		t.Run(name, func(t *testing.T) {
			b, err := ValidateBootstrapYAML(y)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckInvariants(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// mutate replaces old with new in y and fails the test unless old occurs.
func mutate(t *testing.T, y []byte, old, new string) []byte {
	t.Helper()
	if !strings.Contains(string(y), old) {
		t.Fatalf("mutation target %q not in config", old)
	}
	return []byte(strings.ReplaceAll(string(y), old, new))
}

func TestValidateBootstrapYAMLRejects(t *testing.T) {
	sidecar, err := os.ReadFile("sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"unknown field", "failure_mode_allow: false", "failure_mode_alow: false", "failure_mode_alow"},
		{"unresolvable typed_config", "router.v3.Router", "router.v3.Routr", "router.v3.Routr"},
		{"pgv rule inside an Any", "stat_prefix: mcp", `stat_prefix: ""`, "StatPrefix"},
		{"pgv rule on the bootstrap", "connect_timeout: 1s", "connect_timeout: -1s", "ConnectTimeout"},
		{"duplicate key", "stat_prefix: mcp\n", "stat_prefix: mcp\n          stat_prefix: mcp2\n", "already set"},
		{"zero body limit inside ext_authz", "max_request_bytes: 1048576", "max_request_bytes: 0", "MaxRequestBytes"},
		{"undefined cluster", "cluster: mcp_server", "cluster: nowhere", "undefined clusters: nowhere"},
		{"undefined grpc cluster", "cluster_name: ext_authz }", "cluster_name: authz }", "undefined clusters: authz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateBootstrapYAML(mutate(t, sidecar, tt.old, tt.new))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckInvariantsRejects(t *testing.T) {
	sidecar, err := os.ReadFile("sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const extAuthzThenRouter = "          - name: envoy.filters.http.ext_authz\n"
	const extAuthzFailClosed = "failure_mode_allow: false\n              status_on_error: { code: ServiceUnavailable }\n              # The JSON-RPC"
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"fail open", extAuthzFailClosed, strings.Replace(extAuthzFailClosed, "false", "true", 1), "listener mcp: failure_mode_allow is true"},
		{"partial bodies", "allow_partial_message: false", "allow_partial_message: true", "allow_partial_message is true"},
		{"body as string", "pack_as_bytes: true", "pack_as_bytes: false", "pack_as_bytes is false"},
		{"no body", "              with_request_body:\n                max_request_bytes: 1048576\n                allow_partial_message: false\n                pack_as_bytes: true\n", "", "no with_request_body"},
		{"no check timeout", "timeout: 1s\n              # A gRPC", "\n              # A gRPC", "grpc_service.timeout unset"},
		{"transport auto", "transport_api_version: V3", "transport_api_version: AUTO", "want V3"},
		{"admin on all interfaces", "address: 127.0.0.1, port_value: 9901", "address: 0.0.0.0, port_value: 9901", "admin address"},
		{"grpc over HTTP/1.1", "http2_protocol_options: {}", "http_protocol_options: {}", "without HTTP/2"},
		{"no ext_authz", "name: envoy.filters.http.ext_authz\n", "name: envoy.filters.http.ext_authz_gone\n", "forwards without"},
		// Without the rejection (see below), every '_' name must reach the check.
		{"underscore names kept from the check", `- { safe_regex: { regex: "[a-z0-9-]*[^a-z0-9-].*" } }`, "- { exact: x-unrelated }", `does not forward "x_mcp_principal"`},
		{"underscore names partly kept from the check", `- { safe_regex: { regex: "[a-z0-9-]*[^a-z0-9-].*" } }`, `- { safe_regex: { regex: "x[^a-z0-9]mcp[^a-z0-9].*" } }`, `does not forward "mcp_method"`},
		{"runtime off switch", extAuthzFailClosed, strings.Replace(extAuthzFailClosed, "status_on_error", "filter_enabled: { default_value: { numerator: 0 } }\n              status_on_error", 1), "filter_enabled"},
		{"ext_authz off on the MCP route", "                  cluster: extauthz_http\n", "                  cluster: mcp_server\n", "not a protected resource metadata route"},
		{"metadata route widened", "path_separated_prefix: /.well-known/oauth-protected-resource }", "prefix: /.well-known/oauth-protected-resource }", "not a protected resource metadata route"},
		{"metadata route rewritten", "                  cluster: extauthz_http\n", "                  cluster: extauthz_http\n                  prefix_rewrite: /\n", "not a protected resource metadata route"},
		// A router inserted ahead of ext_authz.
		{"router first", extAuthzThenRouter, "          - name: envoy.filters.http.router\n            typed_config:\n              \"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\n" + extAuthzThenRouter, "after envoy.filters.http.router"},
	}
	// The underscore rows run on sidecar.yaml without its refusal of '_'
	// header names, which would satisfy the invariant by itself.
	const rejection = "          common_http_protocol_options:\n            headers_with_underscores_action: REJECT_REQUEST\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := sidecar
			if strings.HasPrefix(tt.name, "underscore") {
				base = mutate(t, sidecar, rejection, "")
			}
			b, err := ValidateBootstrapYAML(mutate(t, base, tt.old, tt.new))
			if err != nil {
				t.Fatalf("mutated config no longer loads: %v", err)
			}
			err = CheckInvariants(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSidecarStaysOnLoopback(t *testing.T) {
	b := load(t, "sidecar.yaml")
	for _, name := range []string{"ext_authz", "mcp_server"} {
		c := Cluster(b, name)
		if c == nil {
			t.Fatalf("cluster %s missing", name)
		}
		eps := Endpoints(c)
		if len(eps) == 0 {
			t.Fatalf("cluster %s: no endpoints", name)
		}
		for _, ep := range eps {
			ap, err := netip.ParseAddrPort(ep)
			if err != nil || !ap.Addr().IsLoopback() {
				t.Errorf("cluster %s: endpoint %s is not loopback", name, ep)
			}
		}
	}
	if got := Endpoints(Cluster(b, "ext_authz")); len(got) != 1 || got[0] != "127.0.0.1:9191" {
		t.Errorf("ext_authz endpoints = %v, want [127.0.0.1:9191] (extauthz --grpc-addr in sidecar mode)", got)
	}
}

func TestExtAuthzSettings(t *testing.T) {
	for name := range configs(t) {
		t.Run(name, func(t *testing.T) {
			hcms, err := HTTPConnectionManagers(load(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hcms {
				if !Forwards(h.HCM) {
					continue
				}
				ea, _, err := ExtAuthz(h.HCM)
				if err != nil || ea == nil {
					t.Fatalf("listener %s: ext_authz %v %v", h.Listener, ea, err)
				}
				if got := ea.GetStatusOnError().GetCode(); got != typev3.StatusCode_ServiceUnavailable {
					t.Errorf("status_on_error = %v, want ServiceUnavailable", got)
				}
				if !ea.GetClearRouteCache() {
					t.Error("clear_route_cache is false: the response seam's routes match on the headers Check sets")
				}
				if got := ea.GetWithRequestBody().GetMaxRequestBytes(); got != 1<<20 {
					t.Errorf("max_request_bytes = %d, want 1 MiB (extauthz --max-body-bytes default)", got)
				}
				// The check must see the token, the MCP headers and any
				// client-sent x-mcp-* the service strips.
				// content-encoding and transfer-encoding: only identity and
				// chunked bodies are decided.
				for _, h := range []string{"authorization", "dpop", "mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "x-mcp-principal",
					"content-type", "content-length", "content-encoding", "transfer-encoding", "x-envoy-auth-partial-body",
					"x_mcp_principal", "x-mcp_tool", "x.mcp.approved", "x-mcp-approval", "idempotency-key",
					// The request's trace context, which the Check span continues.
					"traceparent", "tracestate", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-parentspanid", "x-b3-sampled", "x-b3-flags"} {
					if !AllowsHeader(ea, h) {
						t.Errorf("allowed_headers drops %q", h)
					}
				}
				if AllowsHeader(ea, "cookie") {
					t.Error("allowed_headers sends cookie to the check")
				}
			}
		})
	}
}

// allowsHeader evaluates ea.allowed_headers for a lower-case header name.

func TestRoutesKeepSSEOpen(t *testing.T) {
	for name := range configs(t) {
		t.Run(name, func(t *testing.T) {
			hcms, err := HTTPConnectionManagers(load(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hcms {
				for _, vh := range h.HCM.GetRouteConfig().GetVirtualHosts() {
					for _, r := range vh.GetRoutes() {
						ra := r.GetRoute()
						if ra == nil || ra.GetCluster() == AdminCluster || MetadataRoute(r) {
							continue
						}
						if ra.GetTimeout() == nil || ra.GetTimeout().AsDuration() != 0 {
							t.Errorf("route %v: timeout %v, want 0s (SSE streams)", r.GetMatch(), ra.GetTimeout())
						}
					}
				}
			}
		})
	}
}

func TestAccessLogPrintsDecision(t *testing.T) {
	want := []string{"decision_id", "decision", "reason", "args_digest", "request_digest", "policy_version"}
	for name := range configs(t) {
		t.Run(name, func(t *testing.T) {
			hcms, err := HTTPConnectionManagers(load(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hcms {
				if !Forwards(h.HCM) {
					continue
				}
				if len(h.HCM.GetAccessLog()) == 0 {
					t.Fatalf("listener %s: no access log", h.Listener)
				}
				l := &streamv3.StdoutAccessLog{}
				if err := h.HCM.GetAccessLog()[0].GetTypedConfig().UnmarshalTo(l); err != nil {
					t.Fatal(err)
				}
				fields := l.GetLogFormat().GetJsonFormat().GetFields()
				var values []string
				for _, v := range fields {
					values = append(values, v.GetStringValue())
				}
				all := strings.Join(values, " ")
				for _, k := range want {
					ref := "%DYNAMIC_METADATA(envoy.filters.http.ext_authz:" + k + ")%"
					if !strings.Contains(all, ref) {
						t.Errorf("access log lacks %s", ref)
					}
				}
				for _, k := range []string{"outcome", "is_error", "rpc_error_code"} {
					ref := "%DYNAMIC_METADATA(" + ReceiptNamespace + ":" + k + ")%"
					if !strings.Contains(all, ref) {
						t.Errorf("access log lacks the receipt's %s", ref)
					}
				}
				if strings.Contains(strings.ToUpper(all), "AUTHORIZATION") {
					t.Error("access log prints the Authorization header")
				}
			}
		})
	}
}

func TestGatewayRoutesNameTheirServer(t *testing.T) {
	hcms, err := HTTPConnectionManagers(load(t, "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // path -> mcp_server
	for _, h := range hcms {
		for _, vh := range h.HCM.GetRouteConfig().GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				if r.GetRoute() == nil || r.GetRoute().GetCluster() == AdminCluster || MetadataRoute(r) {
					continue
				}
				a, ok := r.GetTypedPerFilterConfig()[ExtAuthzFilter]
				if !ok {
					t.Errorf("route %v: no %s per-route config", r.GetMatch(), ExtAuthzFilter)
					continue
				}
				pr := &extauthzv3.ExtAuthzPerRoute{}
				if err := a.UnmarshalTo(pr); err != nil {
					t.Fatal(err)
				}
				if pr.GetDisabled() {
					t.Errorf("route %v: ext_authz disabled", r.GetMatch())
				}
				ext := pr.GetCheckSettings().GetContextExtensions()
				got[r.GetMatch().GetPath()] = ext[ServerIDContextKey]
				if aud := ext["mcp_audience"]; !strings.HasPrefix(aud, "https://") || !strings.HasSuffix(aud, "/"+ext[ServerIDContextKey]+"/mcp") {
					t.Errorf("route %v: mcp_audience %q does not name its server's resource URI", r.GetMatch(), aud)
				}
			}
		}
	}
	want := map[string]string{"/payments/mcp": "payments", "/github/mcp": "github"}
	if len(got) != len(want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	for path, server := range want {
		if got[path] != server {
			t.Errorf("route %s: %s = %q, want %q", path, ServerIDContextKey, got[path], server)
		}
	}
}

// TestRejectsUnderscoreHeaders: every shipped config refuses header names
// with '_' outright on each listener that forwards to ext_authz (Envoy's
// codec answers 400 before the filters run).
func TestRejectsUnderscoreHeaders(t *testing.T) {
	for _, file := range []string{"gateway.yaml", "sidecar.yaml"} {
		hcms, err := HTTPConnectionManagers(load(t, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hcms {
			if a := h.HCM.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(); Forwards(h.HCM) && a != corev3.HttpProtocolOptions_REJECT_REQUEST {
				t.Errorf("%s: listener %s: headers_with_underscores_action %v, want REJECT_REQUEST", file, h.Listener, a)
			}
		}
	}
}

// The ext_proc filter block of sidecar.yaml (its comment included) and the
// filters around it, for the rows that move or drop it.
const (
	extProcStart = "          # The response seam: Envoy's external processing filter"
	routerStart  = "          - name: envoy.filters.http.router\n"
	authzStart   = "          - name: envoy.filters.http.ext_authz\n"
	// The sealed-cursor list route's overrides, and the same with more
	// fields.
	listOverrides = "                    overrides:\n                      processing_mode:\n                        request_header_mode: SKIP\n                        response_header_mode: SEND\n                        request_body_mode: BUFFERED\n                        response_body_mode: NONE\n"
	callMode      = "                        request_header_mode: SKIP\n                        response_header_mode: SEND\n                        request_body_mode: NONE\n                        response_body_mode: NONE\n"
	getMode       = "                        request_body_mode: NONE\n                        response_body_mode: STREAMED\n"
	getHeaders    = "                        request_header_mode: SKIP\n                        response_header_mode: SEND\n"
	// allowedBuffered is the allowed_override_modes entry for the
	// processor's override on a list route answered in JSON.
	allowedBuffered = "              - request_header_mode: SKIP\n                response_header_mode: SEND\n                request_body_mode: BUFFERED\n                response_body_mode: BUFFERED\n                request_trailer_mode: SKIP\n                response_trailer_mode: SKIP\n"
	allowedNoneSSE  = "              - request_header_mode: SKIP\n                response_header_mode: SEND\n                request_body_mode: NONE\n                response_body_mode: STREAMED\n                request_trailer_mode: SKIP\n                response_trailer_mode: SKIP\n"
	listTrailers    = "                        request_trailer_mode: SKIP\n                        response_trailer_mode: SKIP\n"
	listRegex       = "tools/list|prompts/list|resources/list|resources/templates/list|tasks/list|batch"
)

// cut returns y without [from, to) (to itself kept) and the piece cut.
func cut(t *testing.T, y []byte, from, to string) ([]byte, string) {
	t.Helper()
	s := string(y)
	i := strings.Index(s, from)
	j := strings.Index(s[i+1:], to)
	if i < 0 || j < 0 {
		t.Fatalf("cut: %q .. %q not in config", from, to)
	}
	j += i + 1
	return []byte(s[:i] + s[j:]), s[i:j]
}

// catchAllStart and catchAllSeam are the sidecar's last route (everything
// but lists and GET): its start, and its ext_proc per-route config up to
// the processing mode (mutation rows add fields under overrides).
const (
	catchAllStart = "              # Everything else (lists without a cursor, initialize, ping,"
	catchAllSeam  = `                  append_x_forwarded_host: true
                request_headers_to_remove: [accept-encoding]
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides:
                      processing_mode:
                        request_header_mode: SKIP
`
	// vhostSeamOff is the virtual host's ext_proc per-route config.
	vhostSeamOff = `                envoy.filters.http.ext_proc:
                  "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                  disabled: true
`
	// oldCallRoute is the tools/call route sidecar.yaml had before issue
	// 26: a side stream that fails open.
	oldCallRoute = `              - match:
                  prefix: "/"
                  headers:
                  - name: x-mcp-method
                    string_match: { exact: tools/call }
                route:
                  cluster: mcp_server
                  timeout: 0s
                  host_rewrite_literal: 127.0.0.1:3000
                  append_x_forwarded_host: true
                request_headers_to_remove: [accept-encoding]
                typed_per_filter_config:
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides:
                      failure_mode_allow: true
`
)

// TestCheckInvariantsRejectsResponseSeam: each row breaks one fact of the
// response seam in sidecar.yaml; CheckInvariants must name it.

func TestCheckInvariantsRejectsResponseSeam(t *testing.T) {
	sidecar, err := os.ReadFile("sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(t *testing.T, y []byte) []byte
		want string
	}{
		{"no ext_proc", func(t *testing.T, y []byte) []byte {
			y, _ = cut(t, y, extProcStart, routerStart)
			return y
		}, "no envoy.filters.http.ext_proc"},
		{"ext_proc before ext_authz", func(t *testing.T, y []byte) []byte {
			y, block := cut(t, y, extProcStart, routerStart)
			return mutate(t, y, authzStart, block+authzStart)
		}, "envoy.filters.http.ext_proc before envoy.filters.http.ext_authz"},
		{"ext_proc after the router", func(t *testing.T, y []byte) []byte {
			y, block := cut(t, y, extProcStart, routerStart)
			y, router := cut(t, y, routerStart, "  # Readiness for the kubelet")
			return mutate(t, y, "  # Readiness for the kubelet", router+block+"  # Readiness for the kubelet")
		}, "envoy.filters.http.ext_proc after envoy.filters.http.router"},
		{"ext_proc off in the chain", edit("          - name: envoy.filters.http.ext_proc\n", "          - name: envoy.filters.http.ext_proc\n            disabled: true\n"), "disabled in the filter chain"},
		{"routes picked on the client's headers", edit("clear_route_cache: true", "clear_route_cache: false"), "clear_route_cache is false"},
		{"ext_proc fails open", edit("failure_mode_allow: false\n              status_on_error: { code: ServiceUnavailable }\n              processing_mode:", "failure_mode_allow: true\n              status_on_error: { code: ServiceUnavailable }\n              processing_mode:"), "envoy.filters.http.ext_proc failure_mode_allow is true"},
		{"list route fails open", edit(listOverrides, "                    overrides:\n                      failure_mode_allow: true\n"+listOverrides[len("                    overrides:\n"):]), "failure_mode_allow is true"},
		{"observability mode", edit("              allow_mode_override: true\n", "              allow_mode_override: true\n              observability_mode: true\n"), "observability_mode is true"},
		{"BUFFERED_PARTIAL by override", edit("response_body_mode: BUFFERED\n", "response_body_mode: BUFFERED_PARTIAL\n"), "allowed_override_modes[0]: BUFFERED_PARTIAL"},
		{"BUFFERED_PARTIAL on the GET route", edit("response_body_mode: STREAMED\n                        request_trailer_mode", "response_body_mode: BUFFERED_PARTIAL\n                        request_trailer_mode"), "BUFFERED_PARTIAL"},
		{"FULL_DUPLEX_STREAMED by override", edit("response_body_mode: STREAMED\n                request_trailer_mode: SKIP\n                response_trailer_mode: SKIP", "response_body_mode: FULL_DUPLEX_STREAMED\n                request_trailer_mode: SKIP\n                response_trailer_mode: SEND"), "FULL_DUPLEX_STREAMED by override"},
		{"request body to the processor", edit("                request_body_mode: NONE\n                response_body_mode: NONE\n", "                request_body_mode: BUFFERED\n                response_body_mode: NONE\n"), "request_body_mode BUFFERED, want NONE"},
		{"request body STREAMED on the list route", edit(listOverrides, strings.Replace(listOverrides, "request_body_mode: BUFFERED", "request_body_mode: STREAMED", 1)), "request_body_mode STREAMED, want NONE or BUFFERED"},
		{"request body BUFFERED_PARTIAL on the list route", edit(listOverrides, strings.Replace(listOverrides, "request_body_mode: BUFFERED", "request_body_mode: BUFFERED_PARTIAL", 1)), "request_body_mode BUFFERED_PARTIAL, want NONE or BUFFERED"},
		{"request body FULL_DUPLEX_STREAMED on the list route", edit(listOverrides, strings.Replace(listOverrides, "request_body_mode: BUFFERED", "request_body_mode: FULL_DUPLEX_STREAMED", 1)), "request_body_mode FULL_DUPLEX_STREAMED, want NONE or BUFFERED"},
		{"request body on the catch-all route", edit(callMode, strings.Replace(callMode, "request_body_mode: NONE", "request_body_mode: BUFFERED", 1)), `sends the request body to the processor and serves ["completion/complete" "initialize"`},
		{"request body on the GET route", edit(getMode, strings.Replace(getMode, "request_body_mode: NONE", "request_body_mode: BUFFERED", 1)), `sends the request body to the processor and serves ["GET"]`},
		{"list route without the cursor match", edit("                  - name: x-mcp-cursor\n                    string_match: { exact: sealed }\n", ""), `sends the request body to the processor and serves ["prompts/list" "resources/list" "resources/templates/list" "tasks/list" "tools/list" "batch"] without a sealed cursor`},
		{"request body STREAMED by override", edit(allowedBuffered, strings.Replace(allowedBuffered, "request_body_mode: BUFFERED", "request_body_mode: STREAMED", 1)), "allowed_override_modes[2]: request_body_mode STREAMED, want NONE or BUFFERED"},
		{"list override with the request body not allowed", edit(allowedBuffered, ""), "(request_body_mode BUFFERED, response_body_mode BUFFERED) matches no allowed_override_modes entry"},
		{"SSE override without a request body not allowed", edit(allowedNoneSSE, ""), "(request_body_mode NONE, response_body_mode STREAMED) matches no allowed_override_modes entry"},
		{"allowed entry differs in a trailer mode", edit(allowedBuffered, strings.Replace(allowedBuffered, "response_trailer_mode: SKIP", "response_trailer_mode: SEND", 1)), "(request_body_mode BUFFERED, response_body_mode BUFFERED) matches no allowed_override_modes entry"},
		{"mode overrides off", edit("              allow_mode_override: true\n", "              allow_mode_override: false\n"), "matches no allowed_override_modes entry"},
		{"any mode by override", func(t *testing.T, y []byte) []byte {
			y, _ = cut(t, y, "              allowed_override_modes:\n", "              # Per message awaiting")
			return y
		}, "allow_mode_override without allowed_override_modes"},
		{"no decision for the processor", edit("untyped: [envoy.filters.http.ext_authz]", "untyped: [envoy.filters.http.other]"), "lack envoy.filters.http.ext_authz"},
		{"route replaces the namespaces", edit(listOverrides+listTrailers, listOverrides+listTrailers+"                      metadata_options:\n                        forwarding_namespaces: { untyped: [mcp.other] }\n"), "forwarding_namespaces [mcp.other] lack envoy.filters.http.ext_authz"},
		{"virtual host leaves the seam on", edit(vhostSeamOff, ""), "on the protected resource metadata route"},
		{"a sealed list without the request body", edit(listRegex, strings.TrimPrefix(listRegex, "tools/list|")), `x-mcp-method "tools/list" with x-mcp-cursor picks route`},
		// Issue 26: no route to the MCP server passes its answers unread.
		{"catch-all without a side stream", func(t *testing.T, y []byte) []byte {
			y, route := cut(t, y, catchAllStart, "          http_filters:")
			i := strings.Index(route, "                typed_per_filter_config:\n")
			return mutate(t, y, "          http_filters:\n", route[:i]+"          http_filters:\n")
		}, `route prefix:"/" reaches the MCP server without a side stream`},
		{"virtual host switches the filter off", edit(vhostSeamOff, "                envoy.filters.http.ext_proc:\n                  \"@type\": type.googleapis.com/envoy.config.route.v3.FilterConfig\n                  disabled: true\n"), `route prefix:"/" reaches the MCP server without a side stream`},
		{"catch-all skips the response headers", edit(catchAllSeam+"                        response_header_mode: SEND\n", catchAllSeam+"                        response_header_mode: SKIP\n"), "response_header_mode SKIP"},
		{"catch-all fails open", edit(catchAllSeam, strings.Replace(catchAllSeam, "overrides:\n", "overrides:\n                      failure_mode_allow: true\n", 1)), "failure_mode_allow is true in the route's per-route config"},
		{"virtual host fails open", edit(vhostSeamOff, strings.Replace(vhostSeamOff, "disabled: true", "overrides: { failure_mode_allow: true }", 1)), "failure_mode_allow is true in the virtual host's per-route config"},
		{"tools/call observe only, as before issue 26", edit(catchAllStart, oldCallRoute+"                      processing_mode:\n"+callMode+listTrailers+catchAllStart), `exact:"tools/call"}}: envoy.filters.http.ext_proc failure_mode_allow is true in the route's per-route config`},
		{"initialize without a side stream", edit(catchAllStart, strings.Replace(strings.Replace(oldCallRoute, "exact: tools/call", "exact: initialize", 1), "overrides:\n                      failure_mode_allow: true\n", "disabled: true\n", 1)+catchAllStart), `exact:"initialize"}} reaches the MCP server without a side stream`},
		// Issue 31: no route spends a round trip on the request headers.
		{"a sealed list with request headers", edit(listOverrides, strings.Replace(listOverrides, "request_header_mode: SKIP", "request_header_mode: SEND", 1)), "sends the request headers to the processor"},
		{"GET with request headers", edit(getHeaders+getMode, strings.Replace(getHeaders, "SKIP", "SEND", 1)+getMode), `{exact:"GET"}} sends the request headers to the processor`},
		{"catch-all with request headers", edit(catchAllSeam, strings.Replace(catchAllSeam, "request_header_mode: SKIP", "request_header_mode: SEND", 1)), `route prefix:"/" sends the request headers to the processor`},
		{"compressed responses", edit("                request_headers_to_remove: [accept-encoding]\n", ""), "sends accept-encoding upstream"},
		{"side stream over HTTP/1.1", edit("cluster_name: extauthz_proc }", "cluster_name: extauthz_http }"), "ext_proc gRPC cluster missing or without HTTP/2"},
		{"metadata route processed", edit("                    disabled: true\n              # The response seam (ext_proc).", "                    disabled: true\n                  envoy.filters.http.ext_proc:\n                    \"@type\": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute\n                    overrides: { failure_mode_allow: false }\n              # The response seam (ext_proc)."), "on the protected resource metadata route"},
		{"header routes without a fallback", func(t *testing.T, y []byte) []byte {
			y, _ = cut(t, y, catchAllStart, "          http_filters:")
			return y
		}, "has no header-less route of the same path"},
		{"an unevaluated header matcher", edit("string_match: { exact: GET }", "range_match: { start: 0, end: 1 }"), "header matcher not evaluated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ValidateBootstrapYAML(tt.edit(t, sidecar))
			if err != nil {
				t.Fatalf("mutated config no longer loads: %v", err)
			}
			err = CheckInvariants(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// edit is a row edit that replaces every old with new (mutate).
func edit(old, new string) func(*testing.T, []byte) []byte {
	return func(t *testing.T, y []byte) []byte { return mutate(t, y, old, new) }
}

// TestCheckInvariantsRejectsGatewayRoutes: in the gateway, a route that a
// client-sent x-mcp-method could pick before Check must check and forward as
// its server's header-less route does.
func TestCheckInvariantsRejectsGatewayRoutes(t *testing.T) {
	gw, err := os.ReadFile("gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	once := func(old, new string) []byte {
		if !strings.Contains(string(gw), old) {
			t.Fatalf("%q not in gateway.yaml", old)
		}
		return []byte(strings.Replace(string(gw), old, new, 1))
	}
	tests := []struct {
		name string
		give []byte
		want string
	}{
		{"list route checks for another server", once("mcp_server: payments", "mcp_server: github"), "differs from its header-less route's"},
		{"list route forwards elsewhere", once("cluster: payments\n", "cluster: github\n"), "forwards unlike its header-less route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ValidateBootstrapYAML(tt.give)
			if err != nil {
				t.Fatalf("mutated config no longer loads: %v", err)
			}
			err = CheckInvariants(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
