package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/otlptest"
)

// The client's trace, and the span Envoy would start for its ext_authz
// call, in the tests below.
const (
	clientTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan    = "00f067aa0ba902b7"
	envoyCallSpan = "b7ad6b7169203331"
)

// serveRun runs serve on the quick-start config plus args on loopback
// ports; stop ends it (drain, flush) and waits.
func serveRun(t *testing.T, args ...string) (grpcAddr, httpAddr string, stderr *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stderr = &syncBuffer{}
	done := make(chan error, 1)
	base := []string{"serve", "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s"}
	go func() { done <- run(ctx, append(base, args...), io.Discard, stderr) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, stderr.String())
		}
	}
	t.Cleanup(stop)
	g := stderr.waitFor(regexp.MustCompile(`"grpc_addr":"([^"]+)"`), 10*time.Second)
	h := stderr.waitFor(regexp.MustCompile(`"http_addr":"([^"]+)"`), 10*time.Second)
	if g == nil || h == nil {
		stop()
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	return g[1], h[1], stderr, stop
}

// quickStartToken mints the quick-start's token for alice.
func quickStartToken(t *testing.T) string {
	t.Helper()
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(tok.String())
}

func authzClient(t *testing.T, addr string) authv3.AuthorizationClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return authv3.NewAuthorizationClient(conn)
}

// searchRequest is the quick-start's allowed tools/call with token and the
// extra request headers.
func searchRequest(t *testing.T, token string, headers map[string]string) *authv3.CheckRequest {
	t.Helper()
	c := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"card-4111"}}}`),
		Headers: map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream",
			"authorization": "Bearer " + token, "mcp-protocol-version": "2025-11-25", "x-request-id": "req-1"}}
	for k, v := range headers {
		c.Headers[k] = v
	}
	return c.CheckRequest(true)
}

func hexID(b []byte) string { return hex.EncodeToString(b) }

// decisionLines reads a decision log file.
func decisionLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return jsonLines(t, string(b))
}

// TestServeTraceFlowsThroughCheck: a trace started by the client (its
// traceparent in the request Envoy checks) continues in the Check span,
// exported over OTLP/gRPC to a receiver on loopback, and on into the
// upstream, whose traceparent names the Check span; the decision line
// names both. When Envoy traced its ext_authz call (trace context in the
// gRPC metadata), otelgrpc's server span sits between Envoy's span and
// the Check span. A Check without trace context at ratio 0 starts none.
func TestServeTraceFlowsThroughCheck(t *testing.T) {
	r := otlptest.Start(t, otlptest.Options{})
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	grpcAddr, _, _, stop := serveRun(t, "--otlp-endpoint", "grpc://"+r.GRPCAddr, "--trace-sample-ratio", "0",
		"--decision-log", "file", "--decision-log-file", logFile)
	client, tok := authzClient(t, grpcAddr), quickStartToken(t)
	traceparent := "00-" + clientTrace + "-" + clientSpan + "-01"

	// 1. The client's trace, Envoy not tracing.
	resp, err := client.Check(t.Context(), searchRequest(t, tok, map[string]string{"traceparent": traceparent, "tracestate": "vendor=x"}))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("check: %v %v", resp.GetStatus(), err)
	}
	upstream := map[string]string{}
	for _, h := range resp.GetOkResponse().GetHeaders() {
		upstream[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	// 2. Envoy traced its call: the trace context is in the gRPC metadata.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", "00-"+clientTrace+"-"+envoyCallSpan+"-01")
	if _, err := client.Check(ctx, searchRequest(t, tok, map[string]string{"traceparent": traceparent})); err != nil {
		t.Fatal(err)
	}
	// 3. No trace context, ratio 0.
	if _, err := client.Check(t.Context(), searchRequest(t, tok, nil)); err != nil {
		t.Fatal(err)
	}
	stop() // flushes the spans and the decision log

	spans := r.Spans()
	var checks, grpcSpans []otlptest.Span
	for _, s := range spans {
		switch s.GetName() {
		case "tools/call search":
			checks = append(checks, s)
		case "envoy.service.auth.v3.Authorization/Check":
			grpcSpans = append(grpcSpans, s)
		}
	}
	if len(checks) != 2 || len(grpcSpans) != 1 {
		t.Fatalf("%d Check spans and %d gRPC spans (of %d), want 2 and 1", len(checks), len(grpcSpans), len(spans))
	}
	first := checks[0]
	if hexID(first.GetParentSpanId()) != clientSpan {
		first = checks[1]
	}
	if hexID(first.GetTraceId()) != clientTrace || hexID(first.GetParentSpanId()) != clientSpan {
		t.Errorf("Check span in trace %x under %x, want %s under %s", first.GetTraceId(), first.GetParentSpanId(), clientTrace, clientSpan)
	}
	if want := "00-" + clientTrace + "-" + hexID(first.GetSpanId()) + "-01"; upstream["traceparent"] != want || upstream["tracestate"] != "vendor=x" {
		t.Errorf("upstream traceparent %q tracestate %q, want %s (the Check span) and vendor=x", upstream["traceparent"], upstream["tracestate"], want)
	}
	a := otlptest.Attributes(first.GetAttributes())
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "search", "jsonrpc.request.id": "7",
		"mcp_extauthz.decision": "allow", "mcp_extauthz.reason": "allowed", "mcp_extauthz.rule_id": "search", "mcp_extauthz.decision_id": upstream["x-mcp-decision-id"]} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	for k, v := range a {
		if strings.Contains(v, tok) || strings.Contains(v, "card-4111") {
			t.Errorf("span attribute %s leaks the token or an argument", k)
		}
	}
	if first.Resource["service.name"] != "mcp-extauthz" {
		t.Errorf("resource %v", first.Resource)
	}
	g := grpcSpans[0]
	second := checks[0]
	if second.GetSpanId() == nil || hexID(second.GetSpanId()) == hexID(first.GetSpanId()) {
		second = checks[1]
	}
	if hexID(g.GetParentSpanId()) != envoyCallSpan || hexID(second.GetParentSpanId()) != hexID(g.GetSpanId()) {
		t.Errorf("Envoy-traced call: gRPC span under %x, Check span under %x; want %s and the gRPC span %x",
			g.GetParentSpanId(), second.GetParentSpanId(), envoyCallSpan, g.GetSpanId())
	}

	lines := decisionLines(t, logFile)
	if len(lines) != 3 {
		t.Fatalf("%d decision lines, want 3", len(lines))
	}
	if lines[0]["trace_id"] != clientTrace || lines[0]["span_id"] != hexID(first.GetSpanId()) {
		t.Errorf("decision line trace_id %v span_id %v, want %s %x", lines[0]["trace_id"], lines[0]["span_id"], clientTrace, first.GetSpanId())
	}
}

// TestServeTracingFromOTELEnv: with no tracing flag, the standard
// variables turn tracing on: endpoint and protocol (OTLP/HTTP), sampler,
// service name and resource attributes.
func TestServeTracingFromOTELEnv(t *testing.T) {
	r := otlptest.Start(t, otlptest.Options{})
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.HTTPURL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_SERVICE_NAME", "authz-under-test")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci")
	grpcAddr, httpAddr, _, stop := serveRun(t)
	st := getStatus(t, httpAddr)
	if !st.Tracing.Enabled || st.Tracing.Protocol != "http/protobuf" || st.Tracing.Sampler != "OTEL_TRACES_SAMPLER" {
		t.Errorf("/statusz tracing %+v", st.Tracing)
	}
	if _, err := authzClient(t, grpcAddr).Check(t.Context(), searchRequest(t, quickStartToken(t), nil)); err != nil {
		t.Fatal(err)
	}
	stop()
	spans := r.Spans()
	if len(spans) != 1 || spans[0].GetName() != "tools/call search" || len(spans[0].GetParentSpanId()) != 0 {
		t.Fatalf("spans %v, want one root Check span", spans)
	}
	if res := spans[0].Resource; res["service.name"] != "authz-under-test" || res["deployment.environment.name"] != "ci" {
		t.Errorf("resource %v", res)
	}
}

// TestServeDecisionLogToOTLP: decision lines go to the collector as OTLP
// logs over TLS (OTLP/gRPC, the receiver's CA) and to stdout's sibling,
// the file, at once; allowed lines are sampled away (ratio 0), denials
// never; the drop counters stay at zero.
func TestServeDecisionLogToOTLP(t *testing.T) {
	r := otlptest.Start(t, otlptest.Options{TLS: true})
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	grpcAddr, httpAddr, _, stop := serveRun(t, "--otlp-endpoint", "grpcs://"+r.GRPCAddr, "--otlp-ca-file", r.CAFile,
		"--decision-log", "otlp,file", "--decision-log-file", logFile, "--decision-log-sample-allowed", "0")
	client, tok := authzClient(t, grpcAddr), quickStartToken(t)
	if _, err := client.Check(t.Context(), searchRequest(t, tok, nil)); err != nil {
		t.Fatal(err)
	}
	deny := searchRequest(t, tok, nil)
	deny.GetAttributes().GetRequest().GetHttp().RawBody = []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`)
	if _, err := client.Check(t.Context(), deny); err != nil {
		t.Fatal(err)
	}
	metrics := scrape(t, httpAddr)
	for _, want := range []string{`mcp_extauthz_decision_log_sampled_out_total 1`, `mcp_extauthz_decision_log_dropped_total{sink="otlp"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	stop()
	logs := r.Logs()
	if len(logs) != 1 {
		t.Fatalf("%d OTLP records, want 1 (the denial)", len(logs))
	}
	if a := otlptest.Attributes(logs[0].GetAttributes()); a["reason"] != "policy_denied" || a["rule_id"] != "no-deletes" || logs[0].GetEventName() != "mcp_extauthz.decision" {
		t.Errorf("record %v", a)
	}
	if lines := decisionLines(t, logFile); len(lines) != 1 || lines[0]["reason"] != "policy_denied" {
		t.Errorf("file lines %v", lines)
	}
}

func getStatus(t *testing.T, httpAddr string) *Status {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/statusz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
		t.Fatalf("/statusz: %d %s", resp.StatusCode, ct)
	}
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// TestStatusz: /statusz names the build, the policy and its load, the key
// set's kids, the state store, the audiences and servers, and the
// telemetry; it names no secret.
func TestStatusz(t *testing.T) {
	_, httpAddr, _, _ := serveRun(t, "--metrics-server", "billing")
	st := getStatus(t, httpAddr)
	switch {
	case st.Version == "" || st.Commit == "" || !strings.HasPrefix(st.GoVersion, "go"):
		t.Errorf("build %q %q %q", st.Version, st.Commit, st.GoVersion)
	case !st.Ready || st.DryRun:
		t.Errorf("ready %v (%s) dry_run %v", st.Ready, st.NotReady, st.DryRun)
	case st.Policy.File != filepath.Join("examples", "policy.yaml") || !strings.HasPrefix(st.Policy.Version, "sha256:") || st.Policy.LoadedAt.IsZero() || st.Policy.ErrorStanding:
		t.Errorf("policy %+v", st.Policy)
	case st.IdentityProvider.Issuer != "https://idp.example.com" || !st.IdentityProvider.Ready || st.IdentityProvider.KeySet == nil ||
		strings.Join(st.IdentityProvider.KeySet.Kids, ",") != "example-test-key-1" || st.IdentityProvider.KeySet.LastSuccess.IsZero():
		t.Errorf("identity provider %+v key set %+v", st.IdentityProvider, st.IdentityProvider.KeySet)
	case st.Approvals == nil || st.Approvals.Issuer != "https://approvals.example.com":
		t.Errorf("approvals %+v", st.Approvals)
	case st.StateStore.Kind != "memory" || !st.StateStore.Reachable:
		t.Errorf("state store %+v", st.StateStore)
	case strings.Join(st.Audiences, ",") != "https://mcp.example.com/mcp" || st.ServerID != "payments" || strings.Join(st.MetricServers, ",") != "billing,payments":
		t.Errorf("audiences %v server %q metric servers %v", st.Audiences, st.ServerID, st.MetricServers)
	case st.Tracing.Enabled || strings.Join(st.DecisionLog.Sinks, ",") != "stdout" || st.DecisionLog.Overflow != "drop" || st.DecisionLog.SampleAllowed != 1:
		t.Errorf("tracing %+v decision log %+v", st.Tracing, st.DecisionLog)
	}
}

// TestTelemetryFlagErrors: bad observability flags stop the start with
// one error naming the flag.
func TestTelemetryFlagErrors(t *testing.T) {
	tests := []struct {
		give []string
		want string
	}{
		{[]string{"--otlp-endpoint", "ftp://x:1"}, "--otlp-endpoint"},
		{[]string{"--otlp-endpoint", "grpc://x:1/v1/traces"}, "has no path"},
		{[]string{"--trace-sample-ratio", "2"}, "--trace-sample-ratio"},
		{[]string{"--decision-log", "syslog"}, "--decision-log"},
		{[]string{"--decision-log", "file"}, "--decision-log-file"},
		{[]string{"--decision-log", "otlp"}, "needs --otlp-endpoint"},
		{[]string{"--decision-log-overflow", "wait"}, "--decision-log-overflow"},
		{[]string{"--decision-log-sample-allowed", "-1"}, "--decision-log-sample-allowed"},
		{[]string{"--otlp-endpoint", "grpcs://x:1", "--otlp-cert-file", "examples/jwks.json"}, "go together"},
	}
	for _, tt := range tests {
		_, err := parseServeConfig(append([]string{"--config", "examples/config.yaml"}, tt.give...), func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want an error with %q", tt.give, err, tt.want)
		}
	}
	c, err := parseServeConfig([]string{"--config", "examples/config.yaml"}, func(k string) string {
		return map[string]string{"EXTAUTHZ_DECISION_LOG": "stdout,otlp", "EXTAUTHZ_OTLP_ENDPOINT": "https://collector:4318", "EXTAUTHZ_TRACE_SAMPLE_RATIO": "0.5"}[k]
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if tc := c.Telemetry; strings.Join(tc.DecisionLog.v, ",") != "stdout,otlp" || !tc.Tracing.SampleRatioSet || tc.Tracing.SampleRatio != 0.5 || tc.Tracing.Endpoint != "https://collector:4318" {
		t.Errorf("from the environment: %+v", tc)
	}
}
