package tracing

import (
	"strings"
	"testing"
)

// TestResolve: the endpoint URL picks protocol, host, path and TLS; the
// OTEL_* variables fill in when no flag is given, and their protocol wins
// over the http(s) scheme.
func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		env      map[string]string
		signal   Signal
		want     Endpoint
		wantOK   bool
		wantErr  string
	}{
		{"grpc", "grpc://collector:4317", nil, Traces, Endpoint{Protocol: GRPC, Host: "collector:4317", Insecure: true}, true, ""},
		{"grpcs", "grpcs://collector:4317", nil, Logs, Endpoint{Protocol: GRPC, Host: "collector:4317"}, true, ""},
		{"http", "http://collector:4318", nil, Traces, Endpoint{Protocol: HTTPProtobuf, Host: "collector:4318", Insecure: true}, true, ""},
		{"https with a path", "https://c:443/otlp/v1/traces", nil, Traces, Endpoint{Protocol: HTTPProtobuf, Host: "c:443", Path: "/otlp/v1/traces"}, true, ""},
		{"https, protocol grpc", "https://c:4317", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, Traces, Endpoint{Protocol: GRPC, Host: "c:4317"}, true, ""},
		{"signal protocol wins", "http://c:4317", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc"}, Logs, Endpoint{Protocol: GRPC, Host: "c:4317", Insecure: true}, true, ""},
		{"from the environment", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c"}, Traces, Endpoint{Protocol: HTTPProtobuf}, true, ""},
		{"signal endpoint", "", map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://c/v1/logs"}, Logs, Endpoint{Protocol: HTTPProtobuf}, true, ""},
		{"signal endpoint of another signal", "", map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://c/v1/logs"}, Traces, Endpoint{}, false, ""},
		{"nothing", "", nil, Traces, Endpoint{}, false, ""},
		{"ftp", "ftp://c:21", nil, Traces, Endpoint{}, false, "scheme"},
		{"no host", "grpc://", nil, Traces, Endpoint{}, false, "--otlp-endpoint"},
		{"grpc path", "grpc://c:4317/x", nil, Traces, Endpoint{}, false, "no path"},
		{"credentials", "https://u:p@c:4318", nil, Traces, Endpoint{}, false, "--otlp-endpoint"},
		{"http/json", "https://c", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, Traces, Endpoint{}, false, "http/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{Endpoint: tt.endpoint, Getenv: func(k string) string { return tt.env[k] }}
			got, ok, err := c.Resolve(tt.signal)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.wantOK || got != tt.want {
				t.Errorf("Resolve = %+v %v %v, want %+v %v", got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
}

// TestTracesEnabledAndSampler: the switches and the sampler's source.
func TestTracesEnabledAndSampler(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	on := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
	tests := []struct {
		give map[string]string
		want bool
		err  bool
	}{
		{on, true, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
		{nil, false, false},
	}
	for _, tt := range tests {
		got, err := (&Config{Getenv: env(tt.give)}).TracesEnabled()
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("TracesEnabled(%v) = %v, %v", tt.give, got, err)
		}
	}
	if s := (&Config{Getenv: env(nil)}).Sampler(); s == nil || !strings.Contains(s.Description(), "TraceIDRatioBased{0.01}") {
		t.Errorf("default sampler %v", s)
	}
	if s := (&Config{Getenv: env(map[string]string{"OTEL_TRACES_SAMPLER": "always_on"})}).Sampler(); s != nil {
		t.Errorf("with OTEL_TRACES_SAMPLER the SDK must choose, got %v", s.Description())
	}
	if s := (&Config{SampleRatio: 0.5, SampleRatioSet: true, Getenv: env(map[string]string{"OTEL_TRACES_SAMPLER": "always_on"})}).Sampler(); s == nil || !strings.Contains(s.Description(), "0.5") {
		t.Errorf("the flag beats OTEL_TRACES_SAMPLER: %v", s)
	}
	if err := (&Config{SampleRatio: 1.5, SampleRatioSet: true, Getenv: env(nil)}).Check(); err == nil {
		t.Error("ratio 1.5 accepted")
	}
}
