package policy

import (
	"reflect"
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
