package envoy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
)

// uncommentTracing returns y with the lines between each "--- Envoy
// tracing: begin ---" and "--- end ---" marker uncommented (the "# " after
// the indentation removed), as docs/operations.md, "Traces" tells an
// operator to do.
func uncommentTracing(t *testing.T, y []byte) []byte {
	t.Helper()
	var out []string
	in, blocks := false, 0
	comment := regexp.MustCompile(`^( *)# ?(.*)$`)
	for _, line := range strings.Split(string(y), "\n") {
		switch {
		case strings.Contains(line, "# --- Envoy tracing: begin ---"):
			in, blocks = true, blocks+1
			continue
		case strings.Contains(line, "# --- Envoy tracing: end ---"):
			in = false
			continue
		case in:
			m := comment.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("line %q inside a tracing block is not a comment", line)
			}
			line = m[1] + m[2]
		}
		out = append(out, line)
	}
	if blocks != 2 {
		t.Fatalf("%d tracing blocks, want 2 (the HCM's tracing and the collector cluster)", blocks)
	}
	return []byte(strings.Join(out, "\n"))
}

// TestEnvoyTracingExample: the commented Envoy tracing of each config,
// uncommented, loads, keeps every invariant, and sends Envoy's spans over
// OTLP/gRPC to the collector cluster it defines.
func TestEnvoyTracingExample(t *testing.T) {
	for _, name := range []string{"sidecar.yaml", "gateway.yaml"} {
		t.Run(name, func(t *testing.T) {
			y, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ValidateBootstrapYAML(uncommentTracing(t, y))
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckInvariants(b); err != nil {
				t.Fatal(err)
			}
			hcms, err := HTTPConnectionManagers(b)
			if err != nil {
				t.Fatal(err)
			}
			traced := 0
			for _, h := range hcms {
				tr := h.HCM.GetTracing()
				if tr == nil {
					continue
				}
				traced++
				var oc tracev3.OpenTelemetryConfig
				if err := tr.GetProvider().GetTypedConfig().UnmarshalTo(&oc); err != nil {
					t.Fatalf("listener %s: tracing provider: %v", h.Listener, err)
				}
				c := Cluster(b, oc.GetGrpcService().GetEnvoyGrpc().GetClusterName())
				if c == nil || !strings.HasPrefix(oc.GetServiceName(), "mcp-envoy") {
					t.Errorf("listener %s: collector cluster %v, service name %q", h.Listener, c, oc.GetServiceName())
				}
			}
			if traced != 1 {
				t.Errorf("%d traced listeners, want 1 (the MCP listener)", traced)
			}
			// As shipped, tracing is off.
			if hcms, _ := HTTPConnectionManagers(load(t, name)); hcms[0].HCM.GetTracing() != nil {
				t.Error("tracing is on as shipped")
			}
		})
	}
}
