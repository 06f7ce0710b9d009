package policy

import "testing"

// TestClientVariable: CEL's client is the token's client_id, else azp,
// else "".
func TestClientVariable(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"allow:",
		"  - {id: agent-a, match: payments/search, when: 'client == \"https://a.example.com/client.json\"'}",
		"  - {id: none, match: payments/search, when: 'client == \"\"'}",
	))
	tests := []struct {
		claims map[string]any
		want   string
	}{
		{map[string]any{"client_id": "https://a.example.com/client.json"}, "agent-a"},
		{map[string]any{"azp": "https://a.example.com/client.json"}, "agent-a"},
		{map[string]any{"client_id": "other", "azp": "https://a.example.com/client.json"}, ""},
		{map[string]any{"client_id": "", "azp": "https://a.example.com/client.json"}, "agent-a"},
		{map[string]any{"client_id": 7}, "none"},
		{nil, "none"},
	}
	for _, tt := range tests {
		in := toolCall("payments", "search", nil)
		in.Claims = tt.claims
		if got := p.Evaluate(in).RuleID; got != tt.want {
			t.Errorf("claims %v: rule %q, want %q", tt.claims, got, tt.want)
		}
	}
}
