package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestScopesAndRefusal(t *testing.T) {
	p := mustCompile(t, lines(
		"refusal: conceal",
		"deny:",
		"  - {id: no-deletes, match: '*/delete_*', refusal: explain}",
		"ask:",
		"  - {id: big-refunds, match: payments/issue_refund, when: 'args.amountMinor > 2500', scopes: [refunds:write]}",
		"allow:",
		"  - {id: refunds, match: payments/issue_refund, scopes: [refunds:write, payments]}",
		"  - {id: search, match: '*/search', refusal: explain}",
		"  - resource:payments/file:///reports/*",
		"methods:",
		"  allow:",
		"    - {id: list, method: tools/list, scopes: [tools:read]}",
	))
	tests := []struct {
		name        string
		give        *Input
		wantRule    string
		wantScopes  []string
		wantRefusal Refusal
	}{
		{"allow rule's scopes", toolCall("payments", "issue_refund", map[string]any{"amountMinor": int64(10)}), "refunds", []string{"refunds:write", "payments"}, RefusalConceal},
		{"ask rule's scopes", toolCall("payments", "issue_refund", map[string]any{"amountMinor": int64(9000)}), "big-refunds", []string{"refunds:write"}, RefusalConceal},
		{"rule refusal beats the policy's", toolCall("github", "delete_repo", nil), "no-deletes", nil, RefusalExplain},
		{"allow rule without scopes", toolCall("payments", "search", nil), "search", nil, RefusalExplain},
		{"default takes the policy's refusal", toolCall("payments", "secret_tool", nil), "", nil, RefusalConceal},
		{"prompts/get default", promptGet("payments", "p"), "", nil, RefusalConceal},
		{"resources/read rule", resRead("payments", "file:///reports/a"), "allow[2]", nil, RefusalConceal},
		{"resources/subscribe is never concealed", &Input{Op: OpRequest, Method: "resources/subscribe", Server: "payments", URI: "file:///reports/a"}, "allow[2]", nil, RefusalExplain},
		{"method rule scopes, never concealed", method("tools/list"), "list", []string{"tools:read"}, RefusalExplain},
		{"tasks/get takes the policy's refusal", method("tasks/get"), "", nil, RefusalConceal},
		{"tasks/result too", method("tasks/result"), "", nil, RefusalConceal},
		{"tasks/cancel too", method("tasks/cancel"), "", nil, RefusalConceal},
		{"tasks/update too", method("tasks/update"), "", nil, RefusalConceal},
		{"tasks/list is never concealed", method("tasks/list"), "", nil, RefusalExplain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := p.Evaluate(tt.give)
			if res.RuleID != tt.wantRule || !reflect.DeepEqual(res.Scopes, tt.wantScopes) || res.Refusal != tt.wantRefusal {
				t.Errorf("got rule %q scopes %q refusal %v; want %q %q %v", res.RuleID, res.Scopes, res.Refusal, tt.wantRule, tt.wantScopes, tt.wantRefusal)
			}
		})
	}
	if got := mustCompile(t, "deny: [x]").Refusal(); got != RefusalExplain {
		t.Errorf("default policy refusal = %v, want explain", got)
	}
}

func TestScopesAndRefusalCompileErrors(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{"deny: [{match: x, scopes: [a]}]", `test.yaml:1:27: rule "deny[0]": scopes on a deny rule have no effect`},
		{"allow: [{match: x, scopes: []}]", `test.yaml:1:28: rule "allow[0]": scopes must be a non-empty list`},
		{"allow: [{match: x, scopes: a}]", `scopes must be a non-empty list`},
		{"allow: [{match: x, scopes: ['a b']}]", `scope "a b": want printable ASCII`},
		{"allow: [{match: x, scopes: [1]}]", `a scope must be a string`},
		{"allow: [{match: x, refusal: hide}]", `refusal must be explain or conceal`},
		{"refusal: yes", `test.yaml:1:10: refusal must be explain or conceal`},
		{"methods: {allow: [{method: ping, refusal: conceal}]}", `refusal applies to tool, prompt and resource rules`},
		{"allow: [{match: x, scope: [a]}]", `unknown key "scope"`},
	}
	for _, tt := range tests {
		_, err := Compile("test.yaml", []byte(tt.give))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", tt.give, err, tt.want)
		}
	}
}
