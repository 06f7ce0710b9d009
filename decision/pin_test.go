package decision

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// TestSupersededPin: a tool whose baseline is a tooldef-v1 fingerprint (a
// pin of a policy written before tooldef-v2) is definition_changed, never
// matched, and the decision log's detail says how to migrate; pinned again
// by its tooldef-v2 fingerprint, the call is allowed.
func TestSupersededPin(t *testing.T) {
	d, err := toolpin.Parse([]byte(`{"name":"search","description":"Search orders","inputSchema":{"type":"object"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := "tooldef-v1" + d.Fingerprint[len(toolpin.Version):] // what tooldef-v1 printed for it
	tests := []struct {
		name       string
		give       string // the pins of payments/search
		want       Reason
		wantDetail string
	}{
		{"pinned by tooldef-v1", "[" + v1 + "]", ReasonDefinitionChanged, "pin it again"},
		{"pinned by tooldef-v1 and tooldef-v2", "[" + v1 + ", " + d.Fingerprint + "]", ReasonAllowed, ""},
		{"pinned again", "[" + d.Fingerprint + "]", ReasonAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "default: deny\npin_mode: strict\npins: {payments: {search: " + tt.give + "}}\nallow:\n  - {id: search, match: payments/search}\n"
			lp, err := CompilePolicy("p.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			store := new(PolicyStore)
			store.Store(lp)
			obs := toolpin.Observations{Store: state.NewMemory(0, nil)}
			if err := obs.Observe(context.Background(), "payments", d); err != nil {
				t.Fatal(err)
			}
			dec, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: subjectVerifier{}, Definitions: obs})
			if err != nil {
				t.Fatal(err)
			}
			got := dec.Decide(context.Background(), post("alice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}`))
			if got.Reason != tt.want || !strings.Contains(got.Detail, tt.wantDetail) || tt.wantDetail == "" && got.Detail != "" {
				t.Errorf("%s (%q), want %s with detail %q", got.Reason, got.Detail, tt.want, tt.wantDetail)
			}
			if got.ToolFingerprint != d.Fingerprint {
				t.Errorf("tool_fingerprint %q, want %s", got.ToolFingerprint, d.Fingerprint)
			}
		})
	}
}
