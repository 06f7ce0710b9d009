package policy

import (
	"os"
	"testing"
)

func loadReference(t testing.TB) *Policy {
	t.Helper()
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile("examples/policy.yaml", src)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

func refund(currency string, amount any) *Input {
	return toolCall("payments", "issue_refund", map[string]any{"currency": currency, "amountMinor": amount})
}

// The reference policy on inputs mirroring the corpus.
func TestReferencePolicy(t *testing.T) {
	p := loadReference(t)
	tests := []struct {
		name string
		give *Input
		want outcome
	}{
		{name: "refund CHF 1250", give: refund("CHF", int64(1250)), want: byDefault},
		{name: "refund EUR 3000", give: refund("EUR", int64(3000)), want: byRule(Ask, "big-refunds")},
		{name: "refund EUR 2000", give: refund("EUR", int64(2000)), want: byRule(Allow, "small-eur-refunds")},
		{name: "refund EUR 2000.0", give: refund("EUR", float64(2000)), want: byRule(Allow, "small-eur-refunds")},
		{name: "refund EUR 2500", give: refund("EUR", int64(2500)), want: byRule(Allow, "small-eur-refunds")},
		{name: "refund USD 2^53", give: refund("USD", int64(9007199254740992)), want: byRule(Ask, "big-refunds")},
		{name: "refund USD 2^53 float", give: refund("USD", float64(9007199254740992)), want: byRule(Ask, "big-refunds")},
		{name: "refund no amount", give: toolCall("payments", "issue_refund", map[string]any{"currency": "EUR"}), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund amount as string", give: refund("EUR", "100"), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund negative", give: refund("EUR", int64(-100)), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund negative float", give: refund("EUR", float64(-0.5)), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund fractional", give: refund("EUR", float64(1000.5)), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund fractional, tiny", give: refund("EUR", float64(0.001)), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund huge float", give: refund("EUR", float64(1e300)), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund bool", give: refund("EUR", true), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund null", give: refund("EUR", nil), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund list", give: refund("EUR", []any{int64(1)}), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund zero", give: refund("EUR", int64(0)), want: byRule(Allow, "small-eur-refunds")},
		{name: "Issue-Refund negative", give: toolCall("payments", "Issue-Refund", map[string]any{"currency": "EUR", "amountMinor": int64(-5)}), want: byRule(Deny, "bad-refund-amounts")},
		{name: "refund on another server", give: toolCall("other", "issue_refund", map[string]any{"currency": "EUR", "amountMinor": int64(100)}), want: byDefault},
		{name: "Issue-Refund asks too", give: toolCall("payments", "Issue-Refund", map[string]any{"currency": "EUR", "amountMinor": int64(9000)}), want: byRule(Ask, "big-refunds")},
		{name: "read_file /reports/x", give: toolCall("payments", "read_file", map[string]any{"path": "/reports/x"}), want: byDefault},
		{name: "read_file /data/x", give: toolCall("payments", "read_file", map[string]any{"path": "/data/x"}), want: byRule(Allow, "read-data-files")},
		{name: "read_file /data/../etc/passwd", give: toolCall("payments", "read_file", map[string]any{"path": "/data/../etc/passwd"}), want: byDefault},
		{name: "read_file no path", give: toolCall("payments", "read_file", nil), want: byDefault},
		{name: "READ_FILE", give: toolCall("payments", "READ_FILE", map[string]any{"path": "/data/x"}), want: byDefault},
		{name: "delete_repo", give: toolCall("payments", "delete_repo", nil), want: byRule(Deny, "no-deletes")},
		{name: "DELETE_Repo", give: toolCall("payments", "DELETE_Repo", nil), want: byRule(Deny, "no-deletes")},
		{name: "Delete.Repo", give: toolCall("payments", "Delete.Repo", nil), want: byRule(Deny, "no-deletes")},
		{name: "search", give: toolCall("payments", "search", map[string]any{"q": "x"}), want: byRule(Allow, "search")},
		{name: "search elsewhere", give: toolCall("github", "search", nil), want: byRule(Allow, "search")},
		{name: "report", give: resRead("payments", "file:///reports/q3.pdf"), want: byRule(Allow, "read-reports")},
		{name: "report, odd case", give: resRead("payments", "File:///reports/%71%33.pdf"), want: byRule(Allow, "read-reports")},
		{name: "report subdirectory", give: resRead("payments", "file:///reports/2025/q3.pdf"), want: byDefault},
		{name: "report escape", give: resRead("payments", "file:///reports/../etc/passwd"), want: unsafeURI},
		{name: "report subscribe", give: &Input{Op: OpRequest, Method: "resources/subscribe", Server: "payments", URI: "file:///reports/q3.pdf"}, want: byRule(Allow, "read-reports")},
		{name: "summarize", give: promptGet("payments", "summarize"), want: byRule(Allow, "summarize-prompt")},
		{name: "other prompt", give: promptGet("payments", "jailbreak"), want: byDefault},
		{name: "GET", give: &Input{Op: OpHTTPGet, Server: "payments"}, want: byRule(Allow, "sse-stream")},
		{name: "DELETE", give: &Input{Op: OpHTTPDelete, Server: "payments"}, want: byRule(Allow, "end-session")},
		{name: "response", give: &Input{Op: OpResponse, Server: "payments"}, want: byRule(Allow, "client-responses")},
		{name: "initialize", give: method("initialize"), want: byRule(Allow, "initialize")},
		{name: "server/discover", give: method("server/discover"), want: byRule(Allow, "discover")},
		{name: "notifications/initialized", give: method("notifications/initialized"), want: byRule(Allow, "initialized")},
		{name: "notifications/cancelled", give: method("notifications/cancelled"), want: byRule(Allow, "cancelled")},
		{name: "ping", give: method("ping"), want: byRule(Allow, "ping")},
		{name: "tools/list", give: method("tools/list"), want: byRule(Allow, "list-tools")},
		{name: "resources/list", give: method("resources/list"), want: byRule(Allow, "list-resources")},
		{name: "resources/templates/list", give: method("resources/templates/list"), want: byRule(Allow, "list-resource-templates")},
		{name: "prompts/list", give: method("prompts/list"), want: byRule(Allow, "list-prompts")},
		{name: "completion/complete", give: method("completion/complete"), want: byRule(Allow, "complete")},
		{name: "logging/setLevel", give: method("logging/setLevel"), want: byRule(Allow, "set-log-level")},
		{name: "subscriptions/listen", give: method("subscriptions/listen"), want: byRule(Allow, "listen")},
		{name: "Tools/Call", give: method("Tools/Call"), want: byDefault},
		{name: "tools/call with space", give: method("tools/call "), want: byDefault},
		{name: "tools//call", give: method("tools//call"), want: byDefault},
		{name: "notifications/progress", give: method("notifications/progress"), want: byRule(Allow, "progress")},
		{name: "notifications/roots/list_changed", give: method("notifications/roots/list_changed"), want: byRule(Allow, "roots-changed")},
		{name: "notifications/cancelled", give: method("notifications/cancelled"), want: byRule(Allow, "cancelled")},
		{name: "tasks/get", give: method("tasks/get"), want: byRule(Allow, "tasks-get")},
		{name: "tasks/list", give: method("tasks/list"), want: byRule(Allow, "tasks-list")},
		{name: "tasks/result", give: method("tasks/result"), want: byRule(Allow, "tasks-result")},
		{name: "tasks/cancel", give: method("tasks/cancel"), want: byRule(Allow, "tasks-cancel")},
		{name: "notifications/tasks/status", give: method("notifications/tasks/status"), want: byRule(Allow, "task-status")},
		{name: "sampling/createMessage from a client", give: method("sampling/createMessage"), want: byDefault},
		{name: "method GET", give: method("GET"), want: byDefault},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if p.Default() != Deny {
		t.Errorf("Default() = %v, want deny", p.Default())
	}
}
