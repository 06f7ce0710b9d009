package policy

import (
	"reflect"
	"strings"
	"testing"
)

// Explain's Result is Evaluate's, on every kind of input, and the rule it
// names is the first matched rule of the deciding step.
func TestExplainAgreesWithEvaluate(t *testing.T) {
	p := loadReference(t)
	p2 := mustCompile(t, lines(
		"default: ask",
		"deny: [{id: shadow-deny, match: '*', shadow: true}]",
		"allow: [{id: fails, match: s/t, when: args.missing > 1}]",
	))
	inputs := []*Input{
		refund("EUR", int64(2000)), refund("EUR", int64(3000)), refund("CHF", int64(100)), refund("EUR", "x"),
		toolCall("payments", "delete_repo", nil), toolCall("payments", "read_file", map[string]any{"path": "/data/x"}),
		resRead("payments", "file:///reports/q3.pdf"), resRead("payments", "file:///reports/../x"),
		promptGet("payments", "summarize"), method("ping"), method("acme/x"), method(""),
		{Op: OpHTTPGet}, {Op: OpHTTPDelete}, {Op: OpResponse}, {Op: Op(99)}, nil,
		toolCall("s", "t", nil),
	}
	for _, pol := range []*Policy{p, p2} {
		for _, in := range inputs {
			want := pol.Evaluate(in)
			tr := pol.Explain(in)
			if !reflect.DeepEqual(tr.Result, want) {
				t.Errorf("Explain(%+v).Result = %+v, want %+v", in, tr.Result, want)
			}
			if want.Cause != CauseRule {
				continue
			}
			for _, rt := range tr.Rules {
				if rt.Matched && !rt.Shadow {
					if rt.RuleID != want.RuleID || rt.Decision != want.Decision {
						t.Errorf("Explain(%+v): first match %s %v, want %s %v", in, rt.RuleID, rt.Decision, want.RuleID, want.Decision)
					}
					break
				}
			}
		}
	}
}

func TestExplainTrace(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"deny:",
		"  - id: no-deletes",
		"    match: '*/delete_*'",
		"ask:",
		"  - id: big",
		"    match: s/refund",
		"    when: args.amount > 2500",
		"allow:",
		"  - id: small",
		"    match: s/refund",
		"    when: args.amount <= 5000",
		"  - id: typo",
		"    match: s/refund",
		"    when: args.amount",
		"  - id: trial",
		"    match: s/*",
		"    shadow: True",
		"methods:",
		"  allow: [ping]",
	))
	tests := []struct {
		name string
		give *Input
		want Trace
	}{
		{
			name: "ask wins over allow",
			give: toolCall("s", "refund", map[string]any{"amount": int64(3000)}),
			want: Trace{
				Result: Result{Decision: Ask, Cause: CauseRule, RuleID: "big", Shadow: []ShadowMatch{{RuleID: "trial", Decision: Allow}}},
				Step:   "ask", Name: "refund",
				Rules: []RuleTrace{
					{RuleID: "no-deletes", Decision: Deny, Line: 3, Column: 5, Pattern: "*/delete_*"},
					{RuleID: "big", Decision: Ask, Line: 6, Column: 5, Pattern: "s/refund", PatternHeld: true, When: "args.amount > 2500", WhenValue: "true", Matched: true},
					{RuleID: "small", Decision: Allow, Line: 10, Column: 5, Pattern: "s/refund", PatternHeld: true, When: "args.amount <= 5000", WhenValue: "true", Matched: true},
					{RuleID: "typo", Decision: Allow, Line: 13, Column: 5, Pattern: "s/refund", PatternHeld: true, When: "args.amount", WhenValue: "3000", WhenError: "not a bool"},
					{RuleID: "trial", Decision: Allow, Shadow: true, Line: 16, Column: 5, Pattern: "s/*", PatternHeld: true, Matched: true},
				},
			},
		},
		{
			name: "a failing when matches in ask, not in allow",
			give: toolCall("s", "refund", nil),
			want: Trace{
				Result: Result{Decision: Ask, Cause: CauseRule, RuleID: "big", Shadow: []ShadowMatch{{RuleID: "trial", Decision: Allow}}},
				Step:   "ask", Name: "refund",
				Rules: []RuleTrace{
					{RuleID: "no-deletes", Decision: Deny, Line: 3, Column: 5, Pattern: "*/delete_*"},
					{RuleID: "big", Decision: Ask, Line: 6, Column: 5, Pattern: "s/refund", PatternHeld: true, When: "args.amount > 2500", WhenError: "no such key: amount", Matched: true},
					{RuleID: "small", Decision: Allow, Line: 10, Column: 5, Pattern: "s/refund", PatternHeld: true, When: "args.amount <= 5000", WhenError: "no such key: amount"},
					{RuleID: "typo", Decision: Allow, Line: 13, Column: 5, Pattern: "s/refund", PatternHeld: true, When: "args.amount", WhenError: "no such key: amount"},
					{RuleID: "trial", Decision: Allow, Shadow: true, Line: 16, Column: 5, Pattern: "s/*", PatternHeld: true, Matched: true},
				},
			},
		},
		{
			name: "method default",
			give: method("tools/list"),
			want: Trace{
				Result: Result{Decision: Deny, Cause: CauseDefault},
				Step:   "default", Name: "tools/list",
				Rules: []RuleTrace{{RuleID: "methods.allow[0]", Decision: Allow, Line: 20, Column: 11, Pattern: "ping"}},
			},
		},
		{
			name: "unsafe URI stops before the rules",
			give: resRead("s", "file:///a/../b"),
			want: Trace{Result: Result{Decision: Deny, Cause: CauseUnsafeURI}, Step: "unsafe_uri"},
		},
	}
	for _, tt := range tests {
		got := p.Explain(tt.give)
		got.Result.WhenErrors = nil // TestWhenErrors; the rules' WhenError says it
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

// Explain says when a '**' segment's reading decided a resource rule: a
// deny or ask rule held only through zero segments, an allow rule missed
// only because it needs one or more.
func TestExplainGlobstarNote(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"deny:",
		"  - id: no-keys",
		"    match: \"resource:s/file:///data/**/keys/**\"",
		"ask:",
		"  - id: ask-hr",
		"    match: \"resource:s/file:///hr/**\"",
		"  - id: other-server",
		"    match: \"resource:t/file:///data/**\"",
		"allow:",
		"  - id: any-data",
		"    match: \"resource:s/file:///data/**\"",
		"  - id: everything",
		"    match: \"resource:s/**\"",
	))
	const (
		zero      = "through a '**' of zero segments: in deny and ask rules a '**' segment is zero or more segments"
		oneOrMore = "an allow rule's '**' segment is one or more segments, never none; allow this URI with a rule of its own"
	)
	tests := []struct {
		give string
		want map[string]string // rule id -> note; rules not listed have none
	}{
		{"file:///data/keys/id_rsa", map[string]string{"no-keys": zero}},
		{"file:///data/keys", map[string]string{"no-keys": zero}},
		{"file:///data/a/keys/id_rsa", nil},
		{"file:///hr", map[string]string{"ask-hr": zero}},
		{"file:///hr/x", nil},
		{"file:///data", map[string]string{"any-data": oneOrMore}},
		{"file:///data/x", nil},
		{"file:///elsewhere", nil},
	}
	for _, tt := range tests {
		tr := p.Explain(resRead("s", tt.give))
		for _, rt := range tr.Rules {
			if rt.PatternNote != tt.want[rt.RuleID] {
				t.Errorf("%s: rule %s note %q, want %q", tt.give, rt.RuleID, rt.PatternNote, tt.want[rt.RuleID])
			}
		}
	}
}

// Explain says when a deny or ask rule held only on the path as Windows
// resolves it, and why a Windows spelling was refused (E04).
func TestExplainWindowsNote(t *testing.T) {
	p := mustCompile(t, winPolicy)
	tests := []struct {
		give        string
		wantRule    string
		wantNote    string
		wantProblem string
	}{
		{give: "file:///data/secret.txt.", wantRule: "no-secret-file", wantNote: `as Windows resolves the path: "/data/secret.txt"`},
		{give: "file:///data/private%20/x", wantRule: "no-private", wantNote: `as Windows resolves the path: "/data/private/x"`},
		{give: "https://files.test/data/secret.txt::$DATA", wantRule: "no-web-secret", wantNote: `as Windows resolves the path: "/data/secret.txt"`},
		{give: "https://files.test/data/secret.txt:s", wantRule: "no-web-secret", wantNote: `as Windows resolves the path, the file of its stream: "/data/secret.txt"`},
		{give: "file:///data/secret.txt", wantRule: "no-secret-file"},
		{give: "file:///data/secret.txt::$DATA", wantProblem: "names an NTFS stream"},
		{give: "file:///data/CON", wantProblem: "opens the device"},
		{give: "file:///data/SECRET~1.TXT", wantProblem: "8.3 short name"},
		{give: "file:///data/../x"},
	}
	for _, tt := range tests {
		tr := p.Explain(resRead("s", tt.give))
		if !strings.Contains(tr.URIProblem, tt.wantProblem) || (tt.wantProblem == "") != (tr.URIProblem == "") {
			t.Errorf("%s: URIProblem %q, want one with %q", tt.give, tr.URIProblem, tt.wantProblem)
		}
		if tt.wantRule == "" {
			continue
		}
		found := false
		for _, rt := range tr.Rules {
			if rt.RuleID == tt.wantRule {
				found = true
				if !rt.Matched || rt.PatternNote != tt.wantNote {
					t.Errorf("%s: rule %s matched %v note %q, want %q", tt.give, rt.RuleID, rt.Matched, rt.PatternNote, tt.wantNote)
				}
			}
		}
		if !found {
			t.Errorf("%s: rule %s not traced", tt.give, tt.wantRule)
		}
	}
}
