package decisionlog

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/internal/otlptest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/tracing"
)

// TestOTLPSink: decision lines reach a real OTLP receiver on loopback, over
// OTLP/gRPC and over OTLP/HTTP with TLS, as log records: event name, body,
// severity, time, the trace context from trace_id and span_id, every
// other member an attribute of its JSON type, and the service's resource.
func TestOTLPSink(t *testing.T) {
	tests := []struct {
		name     string
		tls      bool
		endpoint func(r *otlptest.Receiver) string
	}{
		{"grpc", false, func(r *otlptest.Receiver) string { return "grpc://" + r.GRPCAddr }},
		{"https", true, func(r *otlptest.Receiver) string { return r.HTTPURL }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := otlptest.Start(t, otlptest.Options{TLS: tt.tls})
			cfg := &tracing.Config{Endpoint: tt.endpoint(r), CAFile: r.CAFile, ServiceVersion: "v-test", Getenv: func(string) string { return "" }}
			exp, err := tracing.NewLogExporter(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cfg.Resource(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			c := newCounts()
			log, stop := NewLogger([]Sink{OTLPSink(exp, res)}, Options{Counters: c})
			log.Info("decision", zap.String("decision", "deny"), zap.String("reason", "policy_denied"),
				zap.Int64("latency_us", 42), zap.Strings("shadow", []string{"a=deny"}),
				zap.String("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), zap.String("span_id", "00f067aa0ba902b7"))
			log.Info("decision", zap.String("decision", "allow"))
			if err := stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			logs := r.Logs()
			if len(logs) != 2 {
				t.Fatalf("%d records, want 2 (errors %d, dropped %d)", len(logs), c.get(c.errors, "otlp"), c.get(c.dropped, "otlp"))
			}
			l := logs[0]
			a := otlptest.Attributes(l.GetAttributes())
			if l.GetEventName() != "mcp_extauthz.decision" || l.GetBody().GetStringValue() != "decision" ||
				l.GetSeverityText() != "info" || l.GetSeverityNumber() != 9 || l.GetTimeUnixNano() == 0 {
				t.Errorf("record %v", l)
			}
			if a["decision"] != "deny" || a["reason"] != "policy_denied" || a["latency_us"] != "int_value:42" || !strings.Contains(a["shadow"], "a=deny") {
				t.Errorf("attributes %v", a)
			}
			if _, ok := a["trace_id"]; ok {
				t.Errorf("trace_id kept as an attribute: %v", a)
			}
			if got := l.GetTraceId(); len(got) != 16 || got[0] != 0x4b || l.GetSpanId()[7] != 0xb7 {
				t.Errorf("trace %x span %x", got, l.GetSpanId())
			}
			if l.Resource["service.name"] != "mcp-extauthz" || l.Resource["service.version"] != "v-test" {
				t.Errorf("resource %v", l.Resource)
			}
			if len(logs[1].GetTraceId()) != 0 {
				t.Errorf("a line without trace_id has trace %x", logs[1].GetTraceId())
			}
		})
	}
}

// TestOTLPSinkDown: a receiver that refuses costs the batch, counted as a
// write error and dropped lines. (A stalled sink's full buffer:
// TestDropWhenTheSinkStalls.)
func TestOTLPSinkDown(t *testing.T) {
	r := otlptest.Start(t, otlptest.Options{})
	cfg := &tracing.Config{Endpoint: "http://" + strings.TrimPrefix(r.HTTPURL, "http://"), Getenv: func(string) string { return "" }}
	exp, err := tracing.NewLogExporter(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := cfg.Resource(context.Background())
	c := newCounts()
	r.Refuse(true)
	log, stop := NewLogger([]Sink{OTLPSink(exp, res)}, Options{Counters: c})
	log.Info("decision")
	log.Info("decision")
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.get(c.errors, "otlp") != 1 || c.get(c.dropped, "otlp") != 2 || len(r.Logs()) != 0 {
		t.Errorf("errors %d dropped %d received %d; want 1, 2, 0", c.get(c.errors, "otlp"), c.get(c.dropped, "otlp"), len(r.Logs()))
	}
}
