package policy

import (
	"reflect"
	"testing"
)

func TestStrings(t *testing.T) {
	tests := []struct {
		give interface{ String() string }
		want string
	}{
		{Deny, "deny"}, {Ask, "ask"}, {Allow, "allow"}, {Decision(7), "Decision(7)"},
		{CauseRule, "rule"}, {CauseDefault, "default"}, {CauseUnsafeURI, "unsafe_uri"},
		{CauseInvalidInput, "invalid_input"}, {Cause(0), "Cause(0)"},
		{OpRequest, "request"}, {OpResponse, "response"}, {OpHTTPGet, "GET"},
		{OpHTTPDelete, "DELETE"}, {Op(0), "Op(0)"},
	}
	for _, tt := range tests {
		if got := tt.give.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	var zero Result
	if zero.Decision != Deny {
		t.Errorf("zero Decision = %v, want deny", zero.Decision)
	}
}

// The same rules in every order: the decision never depends on list order.
func TestPrecedence(t *testing.T) {
	policies := map[string]string{
		"deny first": lines(
			"deny: [s/t]",
			"ask: [s/t, s/u]",
			"allow: [s/t, s/u, s/v]",
		),
		"allow first": lines(
			"allow: [s/v, s/u, s/t]",
			"ask: [s/u, s/t]",
			"deny: [s/t]",
		),
	}
	tests := []struct {
		give *Input
		want Decision
	}{
		{give: toolCall("s", "t", nil), want: Deny},
		{give: toolCall("s", "u", nil), want: Ask},
		{give: toolCall("s", "v", nil), want: Allow},
		{give: toolCall("s", "w", nil), want: Deny}, // default
	}
	for name, src := range policies {
		p := mustCompile(t, src)
		for _, tt := range tests {
			if got := p.Evaluate(tt.give).Decision; got != tt.want {
				t.Errorf("%s: %s = %v, want %v", name, tt.give.Tool, got, tt.want)
			}
		}
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		give string
		want Decision
	}{
		{give: "deny: []\n", want: Deny},
		{give: "default: deny\n", want: Deny},
		{give: "default: ask\n", want: Ask},
	}
	for _, tt := range tests {
		p := mustCompile(t, tt.give)
		if got := p.Default(); got != tt.want {
			t.Errorf("Default() of %q = %v, want %v", tt.give, got, tt.want)
		}
		got := outcomeOf(p.Evaluate(toolCall("s", "t", nil)))
		if want := (outcome{tt.want, CauseDefault, ""}); got != want {
			t.Errorf("Evaluate under %q = %v, want %v", tt.give, got, want)
		}
	}
}

// Reported ids: the first match in its list; generated ids name the list.
func TestRuleIDs(t *testing.T) {
	p := mustCompile(t, lines(
		"deny:",
		"  - x/nothing",
		"  - s/d*",
		"  - s/dd",
		"ask:",
		"  - s/a",
		"  - id: named-ask",
		"    match: s/aa",
		"allow:",
		"  - s/*",
		"  - s/b",
		"methods:",
		"  deny: [{method: evil, custom: true}]",
		"  ask: [ping]",
		"  allow: [initialize, notifications/*, GET, DELETE, response]",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: toolCall("s", "dd", nil), want: byRule(Deny, "deny[1]")},
		{give: toolCall("s", "a", nil), want: byRule(Ask, "ask[0]")},
		{give: toolCall("s", "aa", nil), want: byRule(Ask, "named-ask")},
		{give: toolCall("s", "b", nil), want: byRule(Allow, "allow[0]")},
		{give: method("evil"), want: byRule(Deny, "methods.deny[0]")},
		{give: method("ping"), want: byRule(Ask, "methods.ask[0]")},
		{give: method("initialize"), want: byRule(Allow, "methods.allow[0]")},
		{give: method("notifications/initialized"), want: byRule(Allow, "methods.allow[1]")},
		{give: &Input{Op: OpHTTPGet}, want: byRule(Allow, "methods.allow[2]")},
		{give: &Input{Op: OpHTTPDelete}, want: byRule(Allow, "methods.allow[3]")},
		{give: &Input{Op: OpResponse}, want: byRule(Allow, "methods.allow[4]")},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", *tt.give, got, tt.want)
		}
	}
}

func TestMethods(t *testing.T) {
	p := mustCompile(t, lines(
		"default: ask",
		"allow: [\"*\"]",
		"methods:",
		"  deny: [{method: Ping, custom: true}]",
		"  allow: [ping, notifications/*, \"tools/*\", \"*\", GET]",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: method("ping"), want: byRule(Allow, "methods.allow[0]")},
		// Methods are exact and case-sensitive, in deny too.
		{give: method("Ping"), want: byRule(Deny, "methods.deny[0]")},
		{give: method("PING"), want: byRule(Allow, "methods.allow[3]")}, // only "*" matches
		{give: method("notifications/cancelled"), want: byRule(Allow, "methods.allow[1]")},
		// '*' stays within a segment.
		{give: method("notifications/a/b"), want: outcome{Ask, CauseDefault, ""}},
		{give: method("tools/list"), want: byRule(Allow, "methods.allow[2]")},
		{give: method("anything"), want: byRule(Allow, "methods.allow[3]")},
		// Method rules never decide the methods tool, resource and prompt
		// rules decide: here only allow "*" (a tool rule) applies.
		{give: toolCall("s", "t", nil), want: byRule(Allow, "allow[0]")},
		{give: resRead("s", "file:///x"), want: outcome{Ask, CauseDefault, ""}},
		{give: promptGet("s", "p"), want: outcome{Ask, CauseDefault, ""}},
		// Reserved words match only their Op; "*" matches none of them.
		{give: method("GET"), want: byRule(Allow, "methods.allow[3]")},
		{give: &Input{Op: OpHTTPGet}, want: byRule(Allow, "methods.allow[4]")},
		{give: &Input{Op: OpHTTPDelete}, want: outcome{Ask, CauseDefault, ""}},
		{give: &Input{Op: OpResponse}, want: outcome{Ask, CauseDefault, ""}},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", *tt.give, got, tt.want)
		}
	}
}

// C10, C11: deny and ask match loosely, allow exactly.
func TestLooseDenyExactAllow(t *testing.T) {
	p := mustCompile(t, lines(
		"default: ask",
		"deny:",
		"  - \"*/delete_*\"",
		"  - id: dash",
		"    match: purge-*",
		"  - id: dot",
		"    match: \"drop.t\"",
		"ask:",
		"  - id: fullwidth",
		"    match: ＴＲＡＮＳＦＥＲ_*",
		"allow:",
		"  - read_*",
		"  - payments/Exact.Name",
		"  - x-y",
	))
	tests := []struct {
		give string
		want outcome
	}{
		{give: "delete_repo", want: byRule(Deny, "deny[0]")},
		{give: "DELETE_Repo", want: byRule(Deny, "deny[0]")}, // C10
		{give: "Delete.Repo", want: byRule(Deny, "deny[0]")}, // C11
		{give: "Delete-Repo", want: byRule(Deny, "deny[0]")},
		{give: "ＤＥＬＥＴＥ.repo", want: byRule(Deny, "deny[0]")},       // fullwidth
		{give: "ｄｅｌｅｔｅ＿repo", want: byRule(Deny, "deny[0]")},       // fullwidth low line
		{give: "DELETE\u00ad_repo", want: byRule(Deny, "deny[0]")}, // soft hyphen removed
		{give: "deleteſ_x", want: outcome{Ask, CauseDefault, ""}},  // no separator: not delete_*
		{give: "delete__repo", want: byRule(Deny, "deny[0]")},      // '*' takes the second '_'
		{give: "delete", want: outcome{Ask, CauseDefault, ""}},
		{give: "undelete_x", want: outcome{Ask, CauseDefault, ""}},
		{give: "delete_x/y", want: byRule(Deny, "deny[0]")}, // '*' in deny spans a '/' in a name
		{give: "purge_all", want: byRule(Deny, "dash")},     // pattern written with '-'
		{give: "PURGE.all", want: byRule(Deny, "dash")},
		{give: "drop_t", want: byRule(Deny, "dot")},
		{give: "drop-T", want: byRule(Deny, "dot")},
		{give: "dropXt", want: outcome{Ask, CauseDefault, ""}}, // '.' is not a regexp
		{give: "transfer_funds", want: byRule(Ask, "fullwidth")},
		{give: "Transfer-Funds", want: byRule(Ask, "fullwidth")},
		// allow is exact and case-sensitive.
		{give: "read_file", want: byRule(Allow, "allow[0]")},
		{give: "READ_FILE", want: outcome{Ask, CauseDefault, ""}},
		{give: "read-file", want: outcome{Ask, CauseDefault, ""}},
		{give: "ｒｅａｄ_file", want: outcome{Ask, CauseDefault, ""}},
		{give: "read_a/b", want: outcome{Ask, CauseDefault, ""}}, // '*' in allow stops at '/'
		{give: "Exact.Name", want: byRule(Allow, "allow[1]")},
		{give: "exact.name", want: outcome{Ask, CauseDefault, ""}},
		{give: "Exact_Name", want: outcome{Ask, CauseDefault, ""}},
		{give: "x-y", want: byRule(Allow, "allow[2]")},
		{give: "x_y", want: outcome{Ask, CauseDefault, ""}},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(toolCall("payments", tt.give, nil))); got != tt.want {
			t.Errorf("tool %q = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// Loose matching equates what other languages' case mappings and dash
// characters equate: a deny rule catches a name a server may resolve to
// the denied tool.
func TestLooseOtherLanguagesAndDashes(t *testing.T) {
	p := mustCompile(t, lines(
		"default: ask",
		"deny:",
		"  - id: wipe",
		"    match: \"*/wipe_disk\"",
		"  - id: admin",
		"    match: \"*/admin_*\"",
		"  - id: dashed",
		"    match: \"*/drop\u2013table\"",
		"allow:",
		"  - \"*/admın_list\"",
	))
	tests := []struct {
		give string
		want outcome
	}{
		{give: "wipe_disk", want: byRule(Deny, "wipe")},
		{give: "wıpe_disk", want: byRule(Deny, "wipe")},
		{give: "WİPE_DISK", want: byRule(Deny, "wipe")},
		{give: "wi\u0307pe_disk", want: byRule(Deny, "wipe")},
		{give: "w\u0130pe-disk", want: byRule(Deny, "wipe")},
		{give: "wipe\u2010disk", want: byRule(Deny, "wipe")},
		{give: "wipe\u2011disk", want: byRule(Deny, "wipe")},
		{give: "wipe\u2212disk", want: byRule(Deny, "wipe")},
		{give: "wipe\u2014disk", want: byRule(Deny, "wipe")},
		{give: "admın_reset", want: byRule(Deny, "admin")},
		{give: "ADMİN_reset", want: byRule(Deny, "admin")},
		{give: "ADMIN\u2010reset", want: byRule(Deny, "admin")},
		{give: "drop_table", want: byRule(Deny, "dashed")}, // pattern written with EN DASH
		{give: "drop-table", want: byRule(Deny, "dashed")},
		{give: "wipe__disk", want: outcome{Ask, CauseDefault, ""}}, // another name: runs are kept
		{give: "wipe_disk_", want: outcome{Ask, CauseDefault, ""}},
		{give: "wipedisk", want: outcome{Ask, CauseDefault, ""}},
		// allow stays exact: "admın_list" (dotless) is allowed, "admin_list" is not.
		{give: "admın_list", want: byRule(Deny, "admin")}, // deny wins over allow
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(toolCall("payments", tt.give, nil))); got != tt.want {
			t.Errorf("tool %q = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// Allow rules stay exact: no folding of ı, İ or dashes.
func TestExactAllowNoFolding(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"allow:",
		"  - \"*/list_files\"",
	))
	tests := []struct {
		give string
		want outcome
	}{
		{give: "list_files", want: byRule(Allow, "allow[0]")},
		{give: "lıst_files", want: outcome{Deny, CauseDefault, ""}},
		{give: "LİST_files", want: outcome{Deny, CauseDefault, ""}},
		{give: "list\u2010files", want: outcome{Deny, CauseDefault, ""}},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(toolCall("payments", tt.give, nil))); got != tt.want {
			t.Errorf("tool %q = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// Server and tool are matched separately, never as one joined string.
func TestServerToolSegments(t *testing.T) {
	p := mustCompile(t, lines(
		"deny:",
		"  - bank/wire",
		"allow:",
		"  - payments/x",
		"  - pay*/y",
		"  - \"*/search\"",
		"  - payments/*",
		"  - lone",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: toolCall("payments", "x", nil), want: byRule(Allow, "allow[0]")},
		{give: toolCall("pay", "ments/x", nil), want: byDefault}, // joined would be payments/x
		{give: toolCall("payments/x", "", nil), want: invalid},
		{give: toolCall("pay", "y", nil), want: byRule(Allow, "allow[1]")},
		{give: toolCall("pay/z", "y", nil), want: byDefault}, // '*' never crosses '/'
		{give: toolCall("a/b", "search", nil), want: byDefault},
		{give: toolCall("a", "b/search", nil), want: byDefault},
		{give: toolCall("a", "search", nil), want: byRule(Allow, "allow[2]")},
		{give: toolCall("payments", "a/b", nil), want: byDefault},
		{give: toolCall("ban", "k/wire", nil), want: byDefault},
		{give: toolCall("bank", "wire", nil), want: byRule(Deny, "deny[0]")},
		{give: toolCall("BANK", "Wire", nil), want: byRule(Deny, "deny[0]")},
		{give: toolCall("any", "lone", nil), want: byRule(Allow, "allow[4]")}, // bare = any server
		{give: toolCall("", "lone", nil), want: byRule(Allow, "allow[4]")},
		{give: toolCall("a/b", "lone", nil), want: byRule(Allow, "allow[4]")},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("server %q tool %q = %v, want %v", tt.give.Server, tt.give.Tool, got, tt.want)
		}
	}
}

// Tool rules never match resources or prompts, and the other way round.
func TestKindsDoNotMix(t *testing.T) {
	p := mustCompile(t, lines(
		"default: ask",
		"deny:",
		"  - \"resource:*/**\"",
		"allow:",
		"  - \"*\"",
		"  - \"prompt:*\"",
		"  - \"prompt:s/only\"",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: toolCall("s", "file:x", nil), want: byRule(Allow, "allow[0]")},
		{give: toolCall("s", "file:///x", nil), want: outcome{Ask, CauseDefault, ""}}, // allow '*' stops at '/'
		{give: resRead("s", "file:///x"), want: byRule(Deny, "deny[0]")},
		{give: promptGet("s", "p"), want: byRule(Allow, "allow[1]")},
		{give: toolCall("s", "prompt:p", nil), want: byRule(Allow, "allow[0]")},
		{give: method("initialize"), want: outcome{Ask, CauseDefault, ""}},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", *tt.give, got, tt.want)
		}
	}

	q := mustCompile(t, lines(
		"allow:",
		"  - \"prompt:s/summarize\"",
		"  - \"resource:s/file:///a\"",
	))
	for _, in := range []*Input{
		toolCall("s", "summarize", nil),
		toolCall("s", "file:///a", nil),
		resRead("s", "prompt:summarize"),
		promptGet("s", "file:///a"),
		{Op: OpRequest, Method: "prompts/get", Server: "s", Tool: "summarize", Prompt: "x"},
	} {
		if got := outcomeOf(q.Evaluate(in)); got != byDefault {
			t.Errorf("Evaluate(%+v) = %v, want %v", *in, got, byDefault)
		}
	}
}

func TestPrompts(t *testing.T) {
	p := mustCompile(t, lines(
		"deny: [\"prompt:*/secret_*\"]",
		"allow: [\"prompt:payments/summarize\", \"prompt:greet\"]",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: promptGet("payments", "summarize"), want: byRule(Allow, "allow[0]")},
		{give: promptGet("other", "summarize"), want: byDefault},
		{give: promptGet("payments", "Summarize"), want: byDefault},
		{give: promptGet("x", "greet"), want: byRule(Allow, "allow[1]")},
		{give: promptGet("x", "Secret-Plan"), want: byRule(Deny, "deny[0]")},
		{give: promptGet("x", ""), want: invalid},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", *tt.give, got, tt.want)
		}
	}
}

func TestInvalidInput(t *testing.T) {
	p := mustCompile(t, lines(
		"default: ask",
		"allow: [\"*\", \"resource:*/**\", \"prompt:*\"]",
		"methods: {allow: [\"*\"]}",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: nil, want: invalid},
		{give: &Input{}, want: invalid},
		{give: &Input{Op: Op(99), Method: "ping"}, want: invalid},
		{give: &Input{Op: OpRequest}, want: invalid},
		{give: toolCall("s", "", nil), want: invalid},
		{give: resRead("s", ""), want: invalid},
		{give: promptGet("s", ""), want: invalid},
		{give: &Input{Op: OpRequest, Method: "resources/subscribe", URI: "file:///x"}, want: byRule(Allow, "allow[1]")},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

func TestShadow(t *testing.T) {
	p := mustCompile(t, lines(
		"deny:",
		"  - id: shadow-deny",
		"    match: s/*",
		"    shadow: true",
		"  - id: shadow-off",
		"    match: s/t",
		"    shadow: false",
		"ask:",
		"  - id: shadow-ask",
		"    match: s/t",
		"    when: args.missing > 1", // errors: matches in ask
		"    shadow: true",
		"allow:",
		"  - id: real",
		"    match: s/u",
		"  - id: shadow-allow",
		"    match: s/u",
		"    when: args.missing > 1", // errors: no match in allow
		"    shadow: true",
		"methods:",
		"  deny:",
		"    - {id: shadow-get, method: GET, shadow: true}",
	))
	tests := []struct {
		give *Input
		want Result
	}{
		{give: toolCall("s", "t", nil), want: Result{Decision: Deny, Cause: CauseRule, RuleID: "shadow-off",
			Shadow: []ShadowMatch{{"shadow-deny", Deny}, {"shadow-ask", Ask}}}},
		{give: toolCall("s", "u", nil), want: Result{Decision: Allow, Cause: CauseRule, RuleID: "real",
			Shadow: []ShadowMatch{{"shadow-deny", Deny}}}},
		{give: toolCall("x", "u", nil), want: Result{Decision: Deny, Cause: CauseDefault}},
		{give: &Input{Op: OpHTTPGet}, want: Result{Decision: Deny, Cause: CauseDefault,
			Shadow: []ShadowMatch{{"shadow-get", Deny}}}},
	}
	for _, tt := range tests {
		got := p.Evaluate(tt.give)
		got.WhenErrors = nil // TestWhenErrors
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Evaluate(%+v) = %+v, want %+v", *tt.give, got, tt.want)
		}
	}
}

// Evaluate does not modify its Input and is safe for concurrent use (run
// with -race).
func TestEvaluateConcurrent(t *testing.T) {
	p := mustCompile(t, lines(
		"ask: [{match: s/t, when: args.n > 1}]",
		"allow: [{match: s/t, when: args.n <= 1}, \"resource:s/file:///a/*\"]",
	))
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				args := map[string]any{"n": int64(i % 3)}
				want := Allow
				if i%3 > 1 {
					want = Ask
				}
				if got := p.Evaluate(toolCall("s", "other", args)); got.Decision != Deny {
					t.Errorf("tool other = %v, want deny (default)", got.Decision)
				}
				if got := p.Evaluate(toolCall("s", "t", args)); got.Decision != want {
					t.Errorf("n=%d: %v, want %v", i%3, got.Decision, want)
				}
				if got := p.Evaluate(resRead("s", "FILE:///a/%7e")); got.Decision != Allow {
					t.Errorf("resource: %v, want allow", got.Decision)
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}
