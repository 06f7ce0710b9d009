package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const fpA = "tooldef-v2:sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// precedencePolicy has a rule of each decision for payments' tools, a
// literal allow rule among them.
const precedencePolicy = `
default: deny
pin_mode: tofu
deny:
  - {id: no-wipe, match: "payments/wipe*"}
ask:
  - {id: ask-refund, match: payments/refund}
allow:
  - {id: search-glob, match: "payments/sea*"}
  - {id: lookup-exact, match: payments/lookup}
`

// TestPinPrecedence: deny > pin > ask > allow > default, for a tool whose
// definition changed, one never listed, and one unchanged.
func TestPinPrecedence(t *testing.T) {
	p := mustCompile(t, precedencePolicy+"pins:\n  payments:\n    search: ["+fpA+"]\n")
	listed := &ToolDefinition{Listed: true, Fingerprint: fpA}
	changed := &ToolDefinition{Listed: true, Changed: true}
	unseen := &ToolDefinition{}
	tests := []struct {
		name  string
		tool  string
		def   *ToolDefinition
		want  Decision
		cause Cause
		rule  string
	}{
		{"unchanged, allow rule", "search", listed, Allow, CauseRule, "search-glob"},
		{"changed beats allow", "search", changed, Ask, CauseDefinitionChanged, ""},
		{"changed beats ask", "refund", changed, Ask, CauseDefinitionChanged, ""},
		{"deny beats changed", "wipe_all", changed, Deny, CauseRule, "no-wipe"},
		{"deny beats not listed", "wipe_all", unseen, Deny, CauseRule, "no-wipe"},
		{"not listed, glob allow", "search", unseen, Deny, CauseToolNotListed, ""},
		{"not listed, ask rule", "refund", unseen, Deny, CauseToolNotListed, ""},
		{"not listed, literal allow", "lookup", unseen, Allow, CauseRule, "lookup-exact"},
		{"unchanged, ask rule", "refund", listed, Ask, CauseRule, "ask-refund"},
		{"unchanged, default", "other", listed, Deny, CauseDefault, ""},
		{"no definition (pinning off at the decider)", "search", nil, Allow, CauseRule, "search-glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Input{Op: OpRequest, Method: "tools/call", Server: "payments", Tool: tt.tool, Definition: tt.def}
			res := p.Evaluate(in)
			if res.Decision != tt.want || res.Cause != tt.cause || res.RuleID != tt.rule {
				t.Errorf("got %v/%v/%q, want %v/%v/%q", res.Decision, res.Cause, res.RuleID, tt.want, tt.cause, tt.rule)
			}
			if tr := p.Explain(in); tr.Result.Decision != res.Decision || tr.Result.Cause != res.Cause ||
				(res.Cause == CauseDefinitionChanged || res.Cause == CauseToolNotListed) != (tr.Step == "pin") {
				t.Errorf("Explain: %+v step %s", tr.Result, tr.Step)
			}
		})
	}
	if got := p.Pins("payments", "search"); len(got) != 1 || got[0] != fpA {
		t.Errorf("Pins = %v", got)
	}
	if p.PinMode() != PinTOFU {
		t.Errorf("PinMode = %v", p.PinMode())
	}
}

// TestVisiblePin: a tools/list item is decided by the pin step as a call
// of it is (its Definition what the call's pin step would read): a tool
// whose call is definition_changed or tool_not_listed is not listed; a
// literal allow rule, or allow_new_tools, lists a tool not listed as it
// allows its call; deny rules still come first. List and call agree on
// every row.
func TestVisiblePin(t *testing.T) {
	src := precedencePolicy
	p := mustCompile(t, src)
	newTools := mustCompile(t, src+"allow_new_tools: true\n")
	conceal := mustCompile(t, src+"refusal: conceal\n")
	listed := &ToolDefinition{Listed: true, Fingerprint: fpA}
	changed := &ToolDefinition{Listed: true, Changed: true, Fingerprint: fpA}
	unseen := &ToolDefinition{}
	tests := []struct {
		name  string
		give  *Policy
		tool  string
		def   *ToolDefinition
		want  bool
		cause Cause
		rule  string
	}{
		{"unchanged, allow rule", p, "search", listed, true, CauseRule, "search-glob"},
		{"changed: hidden though an allow rule matches", p, "search", changed, false, CauseDefinitionChanged, ""},
		{"changed: hidden though an ask rule matches", p, "refund", changed, false, CauseDefinitionChanged, ""},
		{"changed, refusal conceal", conceal, "search", changed, false, CauseDefinitionChanged, ""},
		{"deny beats changed", p, "wipe_all", changed, false, CauseRule, "no-wipe"},
		{"not listed, glob allow", p, "search", unseen, false, CauseToolNotListed, ""},
		{"not listed, literal allow", p, "lookup", unseen, true, CauseRule, "lookup-exact"},
		{"not listed, allow_new_tools", newTools, "search", unseen, true, CauseRule, "search-glob"},
		{"unchanged, ask rule", p, "refund", listed, true, CauseRule, "ask-refund"},
		{"unchanged, default", p, "other", listed, false, CauseDefault, ""},
		{"no definition (pinning off at the seam)", p, "search", nil, true, CauseRule, "search-glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 2 { // the second may come from the Visible cache
				in := &Input{Op: OpRequest, Method: "tools/call", Server: "payments", Tool: tt.tool, Definition: tt.def}
				v := tt.give.Visible(in)
				if v.Visible != tt.want || v.Cause != tt.cause || v.RuleID != tt.rule {
					t.Errorf("round %d: %+v, want visible %v %v %q", round, v, tt.want, tt.cause, tt.rule)
				}
				res := tt.give.Evaluate(in)
				if called := res.Decision != Deny && res.Cause != CauseDefinitionChanged; called != v.Visible {
					t.Errorf("round %d: listed %v, yet a call is %v/%v", round, v.Visible, res.Decision, res.Cause)
				}
			}
		})
	}
}

// TestPinOffAndNewTools: with pinning off a definition never decides; with
// allow_new_tools a never-listed tool is decided by the rules.
func TestPinOffAndNewTools(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want Decision
	}{
		{"default: deny\nallow: [payments/sea*]\n", Allow},
		{"default: deny\npin_mode: off\nallow: [payments/sea*]\n", Allow},
		{"default: deny\npin_mode: strict\nallow_new_tools: true\nallow: [payments/sea*]\n", Allow},
		{"default: deny\npin_mode: strict\nallow: [payments/sea*]\n", Deny},
	} {
		p := mustCompile(t, tt.src)
		res := p.Evaluate(&Input{Op: OpRequest, Method: "tools/call", Server: "payments", Tool: "search", Definition: &ToolDefinition{}})
		if res.Decision != tt.want {
			t.Errorf("%q: %v (%v), want %v", tt.src, res.Decision, res.Cause, tt.want)
		}
	}
}

// TestAnnotationRules: annotations come from the observed definition of a
// trusted server only; anything else reads as the worst case, so an allow
// on readOnlyHint never opens an untrusted or unseen tool and a deny on
// destructiveHint always closes it.
func TestAnnotationRules(t *testing.T) {
	p := mustCompile(t, `
default: deny
pin_mode: tofu
trusted_servers: [docs]
deny:
  - {id: no-destructive, match: "*/*", annotations: {destructiveHint: true}, when: 'server != "docs" || tool != "search"'}
allow:
  - {id: read-only, match: "*/*", annotations: {readOnlyHint: true}}
  - {id: cel-idempotent, match: "*/retry*", when: "annotations.idempotentHint && !annotations.openWorldHint"}
`)
	ro := &ToolDefinition{Listed: true, Hints: Hints{ReadOnly: HintTrue}}
	idem := &ToolDefinition{Listed: true, Hints: Hints{Destructive: HintFalse, Idempotent: HintTrue, OpenWorld: HintFalse}}
	absent := &ToolDefinition{Listed: true}
	tests := []struct {
		name, server, tool string
		def                *ToolDefinition
		want               Decision
		rule               string
	}{
		{"trusted read-only", "docs", "read", ro, Allow, "read-only"},
		{"trusted read-only is not destructive", "docs", "read2", ro, Allow, "read-only"},
		{"untrusted claims read-only", "evil", "read", ro, Deny, "no-destructive"},
		{"trusted, never seen", "docs", "read", nil, Deny, "no-destructive"},
		{"trusted, hints absent: defaults (destructive)", "docs", "x", absent, Deny, "no-destructive"},
		{"trusted idempotent via CEL", "docs", "retry_job", idem, Allow, "cel-idempotent"},
		{"untrusted idempotent via CEL", "evil", "retry_job", idem, Deny, "no-destructive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := p.Evaluate(&Input{Op: OpRequest, Method: "tools/call", Server: tt.server, Tool: tt.tool, Definition: tt.def})
			if res.Decision != tt.want || res.RuleID != tt.rule {
				t.Errorf("got %v %q (%v), want %v %q", res.Decision, res.RuleID, res.WhenErrors, tt.want, tt.rule)
			}
		})
	}
	if !p.Trusted("docs") || p.Trusted("evil") {
		t.Error("Trusted")
	}
}

func TestPinCompileErrors(t *testing.T) {
	for src, want := range map[string]string{
		"default: deny\npin_mode: sometimes\n":                                                                   "pin_mode must be off, tofu or strict",
		"default: deny\npins: {payments: {search: [sha256:abc]}}\n":                                              "is not a tooldef-v2:sha256",
		"default: deny\npin_mode: strict\npins: {p: {s: [tooldef-v3:sha256:" + strings.Repeat("0", 64) + "]}}\n": "is not a tooldef-v2:sha256",
		"default: deny\npins: {payments: {search: []}}\n":                                                        "must be a non-empty list",
		"default: deny\npins: [x]\n":                                                                             "pins must be a mapping",
		"default: deny\ntrusted_servers: [a, a]\n":                                                               "listed twice",
		"default: deny\nallow: [{match: x, annotations: {ro: true}}]\n":                                          `unknown key "ro"`,
		"default: deny\nallow: [{match: x, annotations: {readOnlyHint: yes}}]\n":                                 "must be true or false",
		"default: deny\nallow: [{match: \"resource:s/file:///x\", annotations: {readOnlyHint: true}}]\n":         "annotations apply to tool rules only",
	} {
		_, err := Compile("p.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestPinningNeedsPinMode: pins, trusted_servers and annotations (a rule's
// or CEL's) mean nothing with pin_mode off, so Compile refuses them there,
// at their place, instead of ignoring them; with tofu or strict they
// compile, wherever pin_mode stands in the file.
func TestPinningNeedsPinMode(t *testing.T) {
	const fp = "tooldef-v2:sha256:0000000000000000000000000000000000000000000000000000000000000000"
	const fpV1 = "tooldef-v1:sha256:0000000000000000000000000000000000000000000000000000000000000000"
	const (
		pinsMsg        = "pins need pin_mode: tofu or strict (with pinning off no tool definition is checked against them)"
		trustedMsg     = "trusted_servers need pin_mode: tofu or strict: with pinning off every annotation is its conservative value"
		annotationsMsg = "annotations need pin_mode: tofu or strict: with pinning off every annotation is its conservative value"
	)
	tests := []struct {
		name string
		give string
		want []string // every problem; nil: compiles
	}{
		{name: "pins, no pin_mode", give: "default: deny\npins: {payments: {search: [" + fp + "]}}\n",
			want: []string{"p.yaml:2:7: " + pinsMsg}},
		{name: "pins, pin_mode off", give: "default: deny\npin_mode: off\npins:\n  payments:\n    search: [" + fp + "]\n",
			want: []string{"p.yaml:4:3: " + pinsMsg}},
		{name: "trusted_servers, no pin_mode", give: "default: deny\ntrusted_servers: [docs]\n",
			want: []string{"p.yaml:2:18: " + trustedMsg}},
		{name: "rule annotations, no pin_mode", give: "default: deny\nallow:\n  - {id: ro, match: \"*/*\", annotations: {readOnlyHint: true}}\n",
			want: []string{`p.yaml:3:41: rule "ro": ` + annotationsMsg}},
		{name: "CEL annotations, no pin_mode", give: "default: deny\ndeny:\n  - id: d\n    match: \"*/*\"\n    when: \"!annotations.readOnlyHint\"\n",
			want: []string{`p.yaml:5:13: rule "d": ` + annotationsMsg}},
		{name: "CEL annotations in a method rule", give: "default: deny\nmethods:\n  allow:\n    - {id: m, method: tools/list, when: \"annotations.readOnlyHint\"}\n",
			want: []string{`p.yaml:4:42: rule "m": ` + annotationsMsg}},
		{name: "all together, every one reported", give: "default: deny\ntrusted_servers: [docs]\npins: {docs: {search: [" + fp + "]}}\nallow:\n  - {id: ro, match: \"*/*\", annotations: {readOnlyHint: true}}\n",
			want: []string{"p.yaml:2:18: " + trustedMsg, "p.yaml:3:7: " + pinsMsg, `p.yaml:5:41: rule "ro": ` + annotationsMsg}},
		{name: "empty pins and trusted_servers", give: "default: deny\npins: {}\ntrusted_servers: []\n"},
		{name: "null pins", give: "default: deny\npins:\n"},
		{name: "CEL without annotations", give: "default: deny\nallow:\n  - {id: a, match: \"*/*\", when: \"args.x == 1\"}\n"},
		{name: "tooldef-v1 pins compile (they never match: the tool reads as changed)", give: "default: deny\npin_mode: strict\npins: {payments: {search: [" + fpV1 + ", " + fp + "]}}\n"},
		{name: "pins, tofu after them", give: "default: deny\npins: {payments: {search: [" + fp + "]}}\npin_mode: tofu\n"},
		{name: "everything, strict", give: "default: deny\npin_mode: strict\ntrusted_servers: [docs]\npins: {docs: {search: [" + fp + "]}}\nallow:\n  - {id: ro, match: \"*/*\", annotations: {readOnlyHint: true}, when: \"annotations.idempotentHint\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile("p.yaml", []byte(tt.give))
			var got []string
			var ce *CompileError
			if errors.As(err, &ce) {
				for _, pr := range ce.Problems {
					got = append(got, pr.String())
				}
			} else if err != nil {
				t.Fatalf("%T %v", err, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
