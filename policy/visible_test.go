package policy

import (
	"testing"
)

type vis struct {
	Visible   bool
	Decision  Decision
	Cause     Cause
	RuleID    string
	Concealed bool
}

func visOf(v Visibility) vis { return vis{v.Visible, v.Decision, v.Cause, v.RuleID, v.Concealed} }

func shown(d Decision, rule string) vis {
	if rule == "" {
		return vis{true, d, CauseDefault, "", false}
	}
	return vis{true, d, CauseRule, rule, false}
}

func hiddenBy(rule string) vis { return vis{false, Deny, CauseRule, rule, false} }

var hiddenByDefault = vis{false, Deny, CauseDefault, "", false}

// The reference policy's catalog as the e2e servers list it.
func TestVisibleReferencePolicy(t *testing.T) {
	p := loadReference(t)
	tests := []struct {
		name string
		give *Input
		want vis
	}{
		{"search", toolCall("payments", "search", nil), shown(Allow, "search")},
		{"delete_repo", toolCall("payments", "delete_repo", nil), hiddenBy("no-deletes")},
		{"Delete-Repo (loose)", toolCall("payments", "Delete-Repo", nil), hiddenBy("no-deletes")},
		{"issue_refund: some calls ask", toolCall("payments", "issue_refund", nil), shown(Ask, "big-refunds")},
		{"issue_refund elsewhere", toolCall("other", "issue_refund", nil), hiddenByDefault},
		{"read_file: allowed below /data", toolCall("payments", "read_file", nil), shown(Allow, "read-data-files")},
		{"READ_FILE: allow rules are exact", toolCall("payments", "READ_FILE", nil), hiddenByDefault},
		{"unknown tool", toolCall("payments", "wipe", nil), hiddenByDefault},
		{"summarize", promptGet("payments", "summarize"), shown(Allow, "summarize-prompt")},
		{"draft_email", promptGet("payments", "draft_email"), hiddenByDefault},
		{"report", resRead("payments", "file:///reports/q1"), shown(Allow, "read-reports")},
		{"report, encoded", resRead("payments", "FILE:///reports/%71%31"), shown(Allow, "read-reports")},
		{"secret", resRead("payments", "file:///secret/x"), hiddenByDefault},
		{"escape", resRead("payments", "file:///reports/../secret/x"), vis{false, Deny, CauseUnsafeURI, "", false}},
		{"no name", toolCall("payments", "", nil), vis{false, Deny, CauseInvalidInput, "", false}},
		{"tools/list itself", method("tools/list"), vis{false, Deny, CauseInvalidInput, "", false}},
	}
	for _, tt := range tests {
		if got := visOf(p.Visible(tt.give)); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestVisibleRules(t *testing.T) {
	src := lines(
		"default: deny",
		"deny:",
		"  - {id: no-admin-wipe, match: '*/wipe', when: 'claims.role != \"admin\"'}",
		"  - {id: hide-export, match: '*/export', when: 'args.format == \"raw\"', refusal: conceal}",
		"  - {id: bad-copy, match: '*/copy', when: 'args.n > 3'}",
		"allow:",
		"  - {id: wipe, match: '*/wipe'}",
		"  - {id: export, match: '*/export'}",
		"  - {id: copy, match: '*/copy', when: 'args.n <= 3'}",
		"  - {id: admin-only, match: '*/audit', when: 'claims.role == \"admin\"'}",
		"  - {id: never, match: '*/nothing', when: 'false'}",
	)
	p := mustCompile(t, src)
	admin := map[string]any{"role": "admin"}
	user := map[string]any{"role": "user"}
	tool := func(name string, claims map[string]any) *Input {
		in := toolCall("s", name, nil)
		in.Claims = claims
		return in
	}
	tests := []struct {
		name string
		give *Input
		want vis
	}{
		{"deny on claims, not args, hides", tool("wipe", user), hiddenBy("no-admin-wipe")},
		{"deny on claims that do not match", tool("wipe", admin), shown(Allow, "wipe")},
		{"deny on missing claims fails closed", tool("wipe", nil), hiddenBy("no-admin-wipe")},
		{"a conceal deny that could match hides", tool("export", admin), vis{false, Deny, CauseRule, "hide-export", true}},
		{"an explain deny on args never hides", tool("copy", user), shown(Allow, "copy")},
		{"allow on claims", tool("audit", admin), shown(Allow, "admin-only")},
		{"allow on other claims", tool("audit", user), hiddenByDefault},
		{"allow that never matches", tool("nothing", admin), hiddenByDefault},
	}
	for _, tt := range tests {
		if got := visOf(p.Visible(tt.give)); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	ask := mustCompile(t, "default: ask\n")
	if got := visOf(ask.Visible(tool("any", nil))); got != shown(Ask, "") {
		t.Errorf("default ask: %+v", got)
	}
}

// Visible never hides an item some call would be allowed or asked for,
// unless it was concealed; and never lists one every tried call denies only
// when a rule could match. Checked on the reference policy with a spread of
// argument values.
func TestVisibleAgreesWithEvaluate(t *testing.T) {
	p := loadReference(t)
	argSets := []map[string]any{
		nil, {},
		{"currency": "EUR", "amountMinor": int64(100)},
		{"currency": "EUR", "amountMinor": int64(9000)},
		{"currency": "USD", "amountMinor": int64(-1)},
		{"path": "/data/x"}, {"path": "/etc/passwd"}, {"q": "x"},
	}
	for _, name := range []string{"search", "delete_repo", "Delete.Repo", "issue_refund", "read_file", "READ_FILE", "wipe"} {
		v := p.Visible(toolCall("payments", name, nil))
		anyAllowed := false
		for _, args := range argSets {
			if p.Evaluate(toolCall("payments", name, args)).Decision != Deny {
				anyAllowed = true
			}
		}
		if anyAllowed && !v.Visible && !v.Concealed {
			t.Errorf("%s: hidden (%+v) although some call is allowed or asked", name, v)
		}
		if !v.Visible && v.Cause == CauseRule && anyAllowed {
			t.Errorf("%s: hidden by %s although some call passes", name, v.RuleID)
		}
	}
}

// FuzzVisible: Visible is visibleReference's answer, and never hides an
// item some call with the fuzzed arguments is allowed or asked for unless
// it was concealed.
func FuzzVisible(f *testing.F) {
	p := loadReference(f)
	for _, s := range []string{"search", "delete_repo", "issue_refund", "read_file", "x"} {
		f.Add(s, "EUR", int64(100), "/data/x")
	}
	f.Fuzz(func(t *testing.T, name, currency string, amount int64, path string) {
		if name == "" {
			return
		}
		v := p.Visible(toolCall("payments", name, nil))
		if ref := p.visibleReference(toolCall("payments", name, nil)); v != ref {
			t.Fatalf("%q: %+v, reference %+v", name, v, ref)
		}
		args := map[string]any{"currency": currency, "amountMinor": amount, "path": path, "q": path}
		if p.Evaluate(toolCall("payments", name, args)).Decision != Deny && !v.Visible && !v.Concealed {
			t.Fatalf("%q hidden (%+v), but a call with %v is not denied", name, v, args)
		}
	})
}

// BenchmarkVisible decides one list item of the reference policy: a tool
// whose rules need CEL (issue_refund), one an allow rule lists (search), one
// a deny rule hides (delete_7) and one the default hides (tool_7); "ref" is
// visibleReference on the same item, in the same run.
func BenchmarkVisible(b *testing.B) {
	p := loadReference(b)
	for _, name := range []string{"issue_refund", "search", "delete_7", "tool_7"} {
		in := toolCall("payments", name, nil)
		want := p.visibleReference(in)
		for _, impl := range []string{"fast", "ref"} {
			b.Run(name+"/"+impl, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var v Visibility
					if impl == "fast" {
						v = p.Visible(in)
					} else {
						v = p.visibleReference(in)
					}
					if v != want {
						b.Fatalf("%+v, want %+v", v, want)
					}
				}
			})
		}
	}
}

func TestVisibleTemplates(t *testing.T) {
	p := loadReference(t)
	tests := []struct {
		give string
		want bool
	}{
		{"file:///reports/{name}", true},
		{"file:///reports/{+path}", true},
		{"file:///secret/{name}", false},
		{"file:///{dir}/q1", false},
		{"file:///reports/{name", false},
		{"file:///reports/}", false},
		{"file:///reports/{}", false},
	}
	for _, tt := range tests {
		uri, ok := ExpandTemplate(tt.give)
		got := ok && p.Visible(resRead("payments", uri)).Visible
		if got != tt.want {
			t.Errorf("%s: visible %v, want %v", tt.give, got, tt.want)
		}
	}
}
