package policy

import "testing"

// visibleReference is Visible as it was written first: a fresh request per
// item, every rule matched and evaluated in turn. It is the oracle the
// faster Visible is checked against (TestVisibleMatchesReference,
// FuzzVisibleReference).
func (p *Policy) visibleReference(in *Input) Visibility {
	if in == nil {
		return Visibility{Decision: Deny, Cause: CauseInvalidInput}
	}
	switch in.Method {
	case methodResRead:
		c := *in
		c.Args, c.LazyArgs, c.URIs = nil, nil, nil
		res := p.evaluate(&c)
		return Visibility{Visible: res.Decision != Deny, Decision: res.Decision, Cause: res.Cause, RuleID: res.RuleID}
	case methodToolsCall, methodPromptsGet:
	default:
		return Visibility{Decision: Deny, Cause: CauseInvalidInput}
	}
	c := *in
	unk := new(unknownArgs)
	c.Args, c.LazyArgs, c.URIs = nil, unk, nil
	r, cause := newRequest(&c)
	if cause != 0 {
		return Visibility{Decision: Deny, Cause: cause}
	}
	// eval reports whether ru could match (maybe) and whether it matches
	// whatever the arguments (surely).
	eval := func(ru *rule) (maybe, surely bool) {
		if !ru.patternMatches(r) {
			return false, false
		}
		if ru.when == nil {
			return true, true
		}
		unk.touched = false
		r.args = nil // no member memoized from another rule's evaluation
		ok, _ := evalWhen(ru.when, r, ru.decision != Allow)
		if unk.touched {
			return true, false
		}
		return ok, ok
	}
	for _, ru := range p.rules[Deny][r.kind] {
		maybe, surely := eval(ru)
		if surely {
			return Visibility{Decision: Deny, Cause: CauseRule, RuleID: ru.id}
		}
		refusal := p.refusal
		if ru.refusal != nil {
			refusal = *ru.refusal
		}
		if maybe && refusal == RefusalConceal {
			return Visibility{Decision: Deny, Cause: CauseRule, RuleID: ru.id, Concealed: true}
		}
	}
	for _, d := range [...]Decision{Ask, Allow} {
		for _, ru := range p.rules[d][r.kind] {
			if maybe, _ := eval(ru); maybe {
				return Visibility{Visible: true, Decision: d, Cause: CauseRule, RuleID: ru.id}
			}
		}
	}
	return Visibility{Visible: p.def != Deny, Decision: p.def, Cause: CauseDefault}
}

// visiblePolicies are policies whose rules exercise every branch of
// Visible: conceal and explain deny rules on args and on claims, ask and
// allow rules with and without `when`, `when` on tool/server/method,
// annotations, both defaults.
var visiblePolicies = []string{
	lines(
		"default: deny",
		"pin_mode: tofu", // annotations need it
		"deny:",
		"  - {id: no-admin-wipe, match: '*/wipe', when: 'claims.role != \"admin\"'}",
		"  - {id: hide-export, match: '*/export', when: 'args.format == \"raw\"', refusal: conceal}",
		"  - {id: bad-copy, match: '*/copy', when: 'args.n > 3'}",
		"  - {id: short-circuit, match: '*/sc_*', when: 'claims.role == \"guest\" || args.x == 1'}",
		"  - {id: no-deletes, match: '*/delete_*'}",
		"ask:",
		"  - {id: ask-move, match: 's/move', when: 'args.to != \"\"'}",
		"  - {id: ask-tool, match: '*/ask_*', when: 'tool.startsWith(\"ask_x\")'}",
		"allow:",
		"  - {id: wipe, match: '*/wipe'}",
		"  - {id: export, match: '*/export'}",
		"  - {id: copy, match: '*/copy', when: 'args.n <= 3'}",
		"  - {id: admin-only, match: '*/audit', when: 'claims.role == \"admin\"'}",
		"  - {id: never, match: '*/nothing', when: 'false'}",
		"  - {id: on-server, match: '*/srv_*', when: 'server == \"s\" && method == \"tools/call\"'}",
		"  - {id: ro, match: '*/ro_*', annotations: {readOnlyHint: true}}",
		"  - {id: ann, match: '*/ann_*', when: 'annotations.destructiveHint'}",
		"  - {id: err, match: '*/err_*', when: 'claims.n / 0 == 1'}",
		"  - {id: sc, match: '*/sc_*'}",
		"  - {id: move, match: 's/move'}",
		"  - {id: p, match: 'prompt:s/p_*', when: 'prompt != \"p_no\"'}",
	),
	lines(
		"default: ask",
		"refusal: conceal",
		"deny:",
		"  - {id: d-args, match: '*/x_*', when: 'args.a == 1'}",
		"  - {id: d-claims, match: '*/y_*', when: 'claims.role == \"guest\"', refusal: explain}",
		"  - {id: d-args-explain, match: '*/z_*', when: 'args.a == 1', refusal: explain}",
		"  - {id: d-prompt, match: 'prompt:*/hidden_*'}",
	),
	// No `when` reads claims: tools and prompts are cached.
	lines(
		"default: deny",
		"pin_mode: tofu", // annotations need it
		"deny:",
		"  - {id: hide-x, match: '*/x_*', when: 'args.a == 1', refusal: conceal}",
		"  - {id: on-tool, match: '*/t_*', when: 'tool.endsWith(\"_no\") || server == \"other\"'}",
		"  - {id: uri-read, match: '*/u_*', when: 'uri != \"\"'}",
		"  - {id: prompt-read, match: '*/p_*', when: 'prompt == \"p_a\"'}",
		"ask:",
		"  - {id: ask-ann, match: '*/ann_*', when: 'annotations.readOnlyHint'}",
		"allow:",
		"  - {id: t, match: '*/t_*'}",
		"  - {id: u, match: '*/u_*'}",
		"  - {id: p, match: '*/p_*', when: 'method == \"tools/call\"'}",
		"  - {id: ann, match: '*/ann_*', when: '!annotations.readOnlyHint'}",
		"  - {id: pr, match: 'prompt:s/p_*', when: 'prompt.size() < 4'}",
	),
}

// TestVisibleMatchesReference: Visible gives exactly visibleReference's
// answer for every item of a spread of names, servers and claims, on the
// reference policy and visiblePolicies, twice over: the pooled state of one
// item never leaks into the next, and an answer from the cache is the one
// the reference computes for this input (claims included).
func TestVisibleMatchesReference(t *testing.T) {
	pols := []*Policy{loadReference(t)}
	for _, src := range visiblePolicies {
		pols = append(pols, mustCompile(t, src))
	}
	names := []string{"search", "delete_repo", "Delete.Repo", "issue_refund", "read_file", "READ_FILE", "wipe", "export",
		"copy", "audit", "nothing", "srv_a", "ro_a", "ann_a", "err_a", "sc_a", "move", "ask_x1", "ask_y", "x_1", "y_1",
		"z_1", "p_a", "p_no", "hidden_a", "summarize", ""}
	claimSets := []map[string]any{nil, {}, {"role": "admin"}, {"role": "guest"}, {"role": "user", "n": int64(1)}}
	inputs := []*Input{nil, method("tools/list"), {Op: OpHTTPGet}, resRead("payments", "file:///reports/q1"),
		{Op: OpResponse, Method: "tools/call", Tool: "search", Server: "payments"}}
	for _, server := range []string{"payments", "s", "other"} {
		for _, name := range names {
			for _, c := range claimSets {
				tc := toolCall(server, name, nil)
				tc.Claims = c
				tc.Args = map[string]any{"n": int64(1)} // ignored: items are decided with their arguments unknown
				pg := promptGet(server, name)
				pg.Claims = c
				// The variables a tool item does not set, set.
				odd := toolCall(server, name, nil)
				odd.URI, odd.Prompt, odd.Claims = "file:///x", "p_a", c
				def := toolCall(server, name, nil)
				def.Definition = &ToolDefinition{Listed: true, Hints: Hints{ReadOnly: HintTrue}}
				inputs = append(inputs, tc, pg, odd, def)
			}
		}
	}
	wantOn := []bool{true, false, false, true} // tools cached: no when reads claims; prompts: in all
	for pi, p := range pols {
		if p.visCache.on[kindTool] != wantOn[pi] || !p.visCache.on[kindPrompt] {
			t.Fatalf("policy %d: cached kinds %v", pi, p.visCache.on)
		}
	}
	for round := 0; round < 2; round++ { // the second round answers from the cache where it is on
		for pi, p := range pols {
			for _, in := range inputs {
				got, want := p.Visible(in), p.visibleReference(in)
				if got != want {
					t.Fatalf("round %d, policy %d, %+v: %+v, reference %+v", round, pi, in, got, want)
				}
			}
			if c := p.visCache; c.on[kindTool] && len(c.m) == 0 {
				t.Fatalf("policy %d: nothing cached", pi)
			}
		}
	}
}
