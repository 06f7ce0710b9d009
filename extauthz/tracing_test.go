package extauthz

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/tracing"
)

// Trace and span ids of the client's trace in the tests below.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// tracedRig is staticRig with tracing to an in-memory recorder that samples
// by parent (root: always), and an observed decision log.
func tracedRig(t *testing.T) (*Server, *tracetest.SpanRecorder, *observer.ObservedLogs) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	core, logs := observer.New(zap.InfoLevel)
	srv := staticRig(t, zap.New(core))
	srv.Tracing = &Tracing{Tracer: tp.Tracer("test")}
	return srv, rec, logs
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// TestCheckSpanContinuesTheClientTrace: the Check span is the child of the
// request's trace context in each format Envoy forwards, named and
// attributed per the MCP conventions, and the upstream is told to continue
// from the Check span in the same formats.
func TestCheckSpanContinuesTheClientTrace(t *testing.T) {
	tests := []struct {
		name        string
		give        map[string]string
		wantSampled bool
		wantSet     []string // headers the OK response sets for the upstream
		wantRemoved []string
	}{
		{"traceparent", map[string]string{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01", "tracestate": "vendor=x"},
			true, []string{"traceparent", "tracestate"}, nil},
		{"b3 single", map[string]string{"b3": clientTraceID + "-" + clientSpanID + "-1"},
			true, []string{"b3"}, nil},
		{"b3 multi", map[string]string{"x-b3-traceid": clientTraceID, "x-b3-spanid": clientSpanID, "x-b3-sampled": "1", "x-b3-parentspanid": "1111111111111111"},
			true, []string{"x-b3-traceid", "x-b3-spanid", "x-b3-sampled"}, []string{"x-b3-parentspanid"}},
		{"not sampled", map[string]string{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-00"},
			false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, rec, logs := tracedRig(t)
			c := postReq(`{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{"name":"search","arguments":{"query":"card-4111"}}}`)
			c.Headers["mcp-session-id"] = "session-secret-1"
			for k, v := range tt.give {
				c.Headers[k] = v
			}
			resp, _ := srv.Check(t.Context(), c.CheckRequest(true))
			h := okHeaders(t, resp)
			spans := rec.Ended()
			if !tt.wantSampled {
				if len(spans) != 0 {
					t.Fatalf("%d spans recorded under an unsampled parent", len(spans))
				}
				if h["traceparent"] != "" {
					t.Errorf("traceparent %q set for an unsampled span", h["traceparent"])
				}
				// The log still names the client's trace.
				if m := logs.All()[0].ContextMap(); m["trace_id"] != clientTraceID {
					t.Errorf("log trace_id = %v, want %s", m["trace_id"], clientTraceID)
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if got := s.Parent(); got.TraceID().String() != clientTraceID || got.SpanID().String() != clientSpanID || !got.IsRemote() {
				t.Errorf("parent %v, want the client's span %s", got, clientSpanID)
			}
			if s.Name() != "tools/call search" || s.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want \"tools/call search\" server", s.Name(), s.SpanKind())
			}
			a := attrs(s)
			want := map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "search", "gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id": "req-7", "mcp.protocol.version": "2025-11-25",
				"mcp_extauthz.decision": "allow", "mcp_extauthz.reason": "allowed", "mcp_extauthz.rule_id": "search",
				"mcp_extauthz.decision_id": h[HeaderDecisionID], "mcp_extauthz.server": testServerID,
			}
			for k, v := range want {
				if a[k] != v {
					t.Errorf("%s = %q, want %q", k, a[k], v)
				}
			}
			if sid := a["mcp.session.id"]; len(sid) != 16 || strings.Contains(sid, "session-secret") {
				t.Errorf("mcp.session.id = %q, want 16 hex digits of its digest", sid)
			}
			for k, v := range a {
				if strings.Contains(v, "secret-token-value") || strings.Contains(v, "card-4111") {
					t.Errorf("attribute %s leaks the token or an argument: %q", k, v)
				}
			}
			sc := s.SpanContext()
			var got []string
			for _, k := range []string{"traceparent", "tracestate", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-sampled"} {
				if h[k] != "" {
					got = append(got, k)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.wantSet, ",") {
				t.Errorf("upstream trace headers %v, want %v", got, tt.wantSet)
			}
			switch {
			case h["traceparent"] != "" && h["traceparent"] != "00-"+clientTraceID+"-"+sc.SpanID().String()+"-01":
				t.Errorf("upstream traceparent %q, want the Check span %s", h["traceparent"], sc.SpanID())
			case h["tracestate"] != "" && h["tracestate"] != "vendor=x":
				t.Errorf("tracestate %q, want vendor=x passed on", h["tracestate"])
			case h["b3"] != "" && h["b3"] != clientTraceID+"-"+sc.SpanID().String()+"-1":
				t.Errorf("upstream b3 %q", h["b3"])
			case h["x-b3-spanid"] != "" && h["x-b3-spanid"] != sc.SpanID().String():
				t.Errorf("upstream x-b3-spanid %q", h["x-b3-spanid"])
			}
			if rm := resp.GetOkResponse().GetHeadersToRemove(); strings.Join(rm, ",") != strings.Join(tt.wantRemoved, ",") {
				t.Errorf("headers removed %v, want %v", rm, tt.wantRemoved)
			}
			m := logs.All()[0].ContextMap()
			if m["trace_id"] != clientTraceID || m["span_id"] != sc.SpanID().String() {
				t.Errorf("log trace_id %v span_id %v, want %s %s", m["trace_id"], m["span_id"], clientTraceID, sc.SpanID())
			}
		})
	}
}

// TestCheckSpanOfADenial: a refusal is an error span with error.type (the
// reason) and the JSON-RPC code; the OK-only headers are not set.
func TestCheckSpanOfADenial(t *testing.T) {
	srv, rec, _ := tracedRig(t)
	resp, _ := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`).CheckRequest(true))
	if resp.GetDeniedResponse() == nil {
		t.Fatal("not denied")
	}
	s := rec.Ended()[0]
	a := attrs(s)
	if a["error.type"] != string(decision.ReasonPolicyDenied) || a["rpc.response.status_code"] != "-32010" || a["mcp_extauthz.rule_id"] != "no-deletes" {
		t.Errorf("attributes %v", a)
	}
	if s.Status().Code != otelcodes.Error || s.Status().Description != string(decision.ReasonPolicyDenied) {
		t.Errorf("status %v", s.Status())
	}
	if s.Parent().IsValid() {
		t.Errorf("a request without trace context has parent %v", s.Parent())
	}
}

// TestCheckSpanUnderTheGRPCSpan: when Envoy traced the call (the gRPC
// server span is in the context), the Check span is its child, and the
// request's own trace context, of another trace, is a link.
func TestCheckSpanUnderTheGRPCSpan(t *testing.T) {
	srv, rec, _ := tracedRig(t)
	ctx, grpcSpan := srv.Tracing.Tracer.Start(t.Context(), "envoy.service.auth.v3.Authorization/Check", trace.WithSpanKind(trace.SpanKindServer))
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	c.Headers["traceparent"] = "00-" + clientTraceID + "-" + clientSpanID + "-01"
	if _, err := srv.Check(ctx, c.CheckRequest(true)); err != nil {
		t.Fatal(err)
	}
	grpcSpan.End()
	var check sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "ping" {
			check = s
		}
	}
	if check == nil {
		t.Fatalf("no span named ping among %d", len(rec.Ended()))
	}
	if check.Parent().SpanID() != grpcSpan.SpanContext().SpanID() || check.SpanKind() != trace.SpanKindInternal {
		t.Errorf("parent %v kind %v, want the gRPC span, internal", check.Parent().SpanID(), check.SpanKind())
	}
	if l := check.Links(); len(l) != 1 || l[0].SpanContext.SpanID().String() != clientSpanID {
		t.Errorf("links %v, want the client's span", l)
	}
}

// TestSpanNames: the span name is bounded: MCP's methods and their tool or
// prompt, else the metric's method label.
func TestSpanNames(t *testing.T) {
	tests := []struct {
		give *decision.Decision
		want string
	}{
		{&decision.Decision{Method: "tools/call", Tool: "search"}, "tools/call search"},
		{&decision.Decision{Method: "prompts/get", Target: "summarize"}, "prompts/get summarize"},
		{&decision.Decision{Method: "resources/read", Target: "file:///a"}, "resources/read"},
		{&decision.Decision{Method: "x/unknown-" + strings.Repeat("a", 100)}, "other"},
		{&decision.Decision{Method: "GET"}, "GET"},
		{&decision.Decision{}, "Check"},
		{&decision.Decision{Method: "tools/call", Tool: strings.Repeat("t", 1000)}, "tools/call " + strings.Repeat("t", maxSpanString)},
	}
	for _, tt := range tests {
		if got := spanName(tt.give); got != tt.want {
			t.Errorf("spanName(%+v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestRPCIDString: JSON-RPC ids as the convention records them.
func TestRPCIDString(t *testing.T) {
	for give, want := range map[string]string{`"a\"b"`: `a"b`, `7`: "7", `null`: "", ``: "", `-1.5`: "-1.5"} {
		if got := rpcIDString([]byte(give)); got != want {
			t.Errorf("rpcIDString(%s) = %q, want %q", give, got, want)
		}
	}
}

// TestLogSampling: sampling keeps about the given fraction of allowed
// lines, never drops a denial or an ask, and keeps an allowed decision
// whose trace is sampled; the rest is counted.
func TestLogSampling(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	srv := staticRig(t, zap.New(core))
	srv.Metrics = newMetrics(prometheus.NewRegistry())
	srv.LogSampling = SampleAllowed(0)
	allow := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}`
	deny := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`
	ask := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"issue_refund","arguments":{"amountMinor":9000,"currency":"EUR"}}}`
	for _, b := range []string{allow, deny, ask, allow} {
		if _, err := srv.Check(t.Context(), postReq(b).CheckRequest(true)); err != nil {
			t.Fatal(err)
		}
	}
	var reasons []string
	for _, e := range logs.TakeAll() {
		reasons = append(reasons, e.ContextMap()["reason"].(string))
	}
	if strings.Join(reasons, ",") != "policy_denied,authorization_required" {
		t.Errorf("logged %v, want the denial and the ask only", reasons)
	}
	if got := testutil.ToFloat64(srv.Metrics.DecisionLogSampled); got != 2 {
		t.Errorf("decision_log_sampled_out_total = %v, want 2", got)
	}

	// A sampled trace keeps its allowed line.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	srv.Tracing = &Tracing{Tracer: tp.Tracer("test")}
	c := postReq(allow)
	c.Headers["traceparent"] = "00-" + clientTraceID + "-" + clientSpanID + "-01"
	if _, err := srv.Check(t.Context(), c.CheckRequest(true)); err != nil {
		t.Fatal(err)
	}
	if n := logs.Len(); n != 1 {
		t.Errorf("%d lines for an allowed decision of a sampled trace, want 1", n)
	}

	// The fraction kept follows the ratio (ids are random: a wide margin).
	ls := SampleAllowed(0.25)
	kept := 0
	for range 4000 {
		if ls.keep(newDecisionID()) {
			kept++
		}
	}
	if kept < 700 || kept > 1300 {
		t.Errorf("SampleAllowed(0.25) kept %d of 4000", kept)
	}
	for _, id := range []string{newDecisionID(), ""} {
		if !(LogSampling{}).keep(id) || !SampleAllowed(1).keep(id) {
			t.Errorf("the zero LogSampling and SampleAllowed(1) must keep %q", id)
		}
	}
}

// TestWhenErrorsCountedAndLogged: a `when` that fails at run time (here a
// missing args member in a deny rule, which then matches) is counted by
// rule id and named in the line's detail.
func TestWhenErrorsCountedAndLogged(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	srv := staticRig(t, zap.New(core))
	srv.Metrics = newMetrics(prometheus.NewRegistry())
	resp, _ := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{"currency":"EUR"}}}`).CheckRequest(true))
	if resp.GetDeniedResponse() == nil {
		t.Fatal("not denied")
	}
	if got := testutil.ToFloat64(srv.Metrics.CELEvaluationErrors.WithLabelValues("bad-refund-amounts")); got != 1 {
		t.Errorf("cel_evaluation_errors_total{rule_id=bad-refund-amounts} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(srv.Metrics.RuleDecisions.WithLabelValues("bad-refund-amounts", "deny")); got != 1 {
		t.Errorf("rule_decisions_total{rule_id=bad-refund-amounts,decision=deny} = %v, want 1", got)
	}
	m := logs.All()[0].ContextMap()
	if d, _ := m["detail"].(string); !strings.Contains(d, `rule "bad-refund-amounts": when:`) || !strings.Contains(d, "amountMinor") {
		t.Errorf("detail %q, want the rule and its error", d)
	}
}

// TestServerLabel: the server label holds configured ids only.
func TestServerLabel(t *testing.T) {
	srv := staticRig(t, nil)
	srv.Metrics = newMetrics(prometheus.NewRegistry())
	srv.ServerLabels = map[string]bool{testServerID: true}
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, server := range []string{"", "evil-" + strings.Repeat("x", 50)} {
		c := postReq(body)
		req := c.CheckRequest(true)
		if server != "" {
			req.GetAttributes().ContextExtensions = map[string]string{ContextExtensionServer: server}
		}
		if _, err := srv.Check(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	for label, want := range map[string]float64{testServerID: 1, "other": 1} {
		if got := testutil.ToFloat64(srv.Metrics.Decisions.WithLabelValues("allow", "allowed", "ping", label, "false")); got != want {
			t.Errorf("decisions_total{server=%q} = %v, want %v", label, got, want)
		}
	}
}

// discardExporter drops spans: the cost measured is the SDK's, not an
// exporter's.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkCheckTracing is BenchmarkCheck's small allowed call (warm token
// cache) with tracing off, on with an unsampled parent (the sparse
// default's usual case), and on with a sampled parent: the span recorded,
// attributed, passed to the upstream and batched to a discarding exporter.
func BenchmarkCheckTracing(b *testing.B) {
	for _, tt := range []struct {
		name        string
		tracing     bool
		traceparent string
	}{
		{"off", false, ""},
		{"unsampled", true, "00-" + clientTraceID + "-" + clientSpanID + "-00"},
		{"sampled", true, "00-" + clientTraceID + "-" + clientSpanID + "-01"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			srv, req := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
			if tt.traceparent != "" {
				h := req.GetAttributes().GetRequest().GetHttp().GetHeaders()
				h["traceparent"] = tt.traceparent
			}
			if tt.tracing {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}),
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(tracing.DefaultSampleRatio))))
				defer func() { _ = tp.Shutdown(context.Background()) }()
				srv.Tracing = &Tracing{Tracer: tp.Tracer("bench")}
			}
			resp, _ := srv.Check(context.Background(), req)
			if resp.GetOkResponse() == nil {
				b.Fatal("not allowed")
			}
			b.ReportAllocs()
			b.ResetTimer()
			measureCPU(b, func() {
				for b.Loop() {
					_, _ = srv.Check(context.Background(), req)
				}
			})
		})
	}
}
