package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if want, same := testkit.Golden(t, path, []byte(got)); !same {
		t.Errorf("%s differs (run go test -update and review the diff):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// Every bad policy under testdata/compile gives a *CompileError; all their
// messages together are the golden file testdata/compile_errors.golden.
func TestCompileErrorsGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "compile", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test policies: %v", err)
	}
	var sb strings.Builder
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		p, err := Compile(name, src)
		if err == nil {
			t.Errorf("%s: Compile succeeded, want an error", name)
			continue
		}
		if p != nil {
			t.Errorf("%s: Compile returned a policy with an error", name)
		}
		var ce *CompileError
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Errorf("%s: error %T %v, want a *CompileError with problems", name, err, err)
			continue
		}
		for _, pr := range ce.Problems {
			// yaml.v3 syntax errors carry a line only when the parser
			// reports one; every other problem has a position.
			if pr.File != name || (pr.Line <= 0 && !strings.HasPrefix(pr.Msg, "invalid YAML")) {
				t.Errorf("%s: problem without a position: %+v", name, pr)
			}
		}
		sb.WriteString("== " + name + "\n" + err.Error() + "\n")
	}
	golden(t, "compile_errors.golden", sb.String())
}

// The positions and rule ids the golden file holds, spelled out for the
// cases that matter most.
func TestCompileErrorPositions(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "compile", "bad_cel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile("policy.yaml", src)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want *CompileError", err)
	}
	tests := []struct {
		give int // index in ce.Problems
		want string
	}{
		{give: 0, want: `policy.yaml:11:11: rule "ask[0]": undeclared reference to 'argz'`},
		{give: 1, want: `policy.yaml:14:27: rule "quoted": undeclared reference to 'nope'`},
		{give: 2, want: `policy.yaml:19:9: rule "block": undeclared reference to 'missing'`},
	}
	for _, tt := range tests {
		if tt.give >= len(ce.Problems) {
			t.Fatalf("only %d problems:\n%v", len(ce.Problems), err)
		}
		if got := ce.Problems[tt.give].String(); got != tt.want {
			t.Errorf("problem %d = %s, want %s", tt.give, got, tt.want)
		}
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		give Problem
		want string
	}{
		{give: Problem{File: "p.yaml", Line: 12, Column: 11, RuleID: "ask[0]", Msg: "m"}, want: `p.yaml:12:11: rule "ask[0]": m`},
		{give: Problem{File: "p.yaml", Line: 3, Msg: "m"}, want: `p.yaml:3: m`},
		{give: Problem{File: "p.yaml", Msg: "m"}, want: `p.yaml: m`},
	}
	for _, tt := range tests {
		if got := tt.give.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	e := &CompileError{Problems: []Problem{tests[0].give, tests[1].give}}
	if got, want := e.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestCompileAccepts(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{name: "explicit deny all", give: "default: deny\n"},
		{name: "null lists", give: "deny:\nask:\nallow:\nmethods:\n"},
		{name: "empty methods lists", give: "methods: {deny: [], ask: [], allow: []}\n"},
		{name: "shadow false", give: "deny: [{match: x, shadow: false}]\n"},
		{name: "explicit string tag", give: "deny: [!!str x]\n"},
		{name: "crlf", give: "default: ask\r\ndeny:\r\n  - x\r\n"},
		{name: "method globs", give: "methods: {allow: [\"tools/*\", \"*\"]}\n"},
	}
	for _, tt := range tests {
		if _, err := Compile(tt.name, []byte(tt.give)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// D09: YAML 1.2 booleans in every spelling decide what they say; the raw
// text is never compared.
func TestShadowSpellings(t *testing.T) {
	tests := []struct {
		give       string
		wantShadow bool
	}{
		{give: "true", wantShadow: true},
		{give: "True", wantShadow: true},
		{give: "TRUE", wantShadow: true},
		{give: "!!bool true", wantShadow: true},
		{give: "false", wantShadow: false},
		{give: "False", wantShadow: false},
		{give: "FALSE", wantShadow: false},
	}
	for _, tt := range tests {
		p := mustCompile(t, lines(
			"default: deny",
			"allow:",
			"  - id: trial-export",
			"    match: payments/export_all",
			"    shadow: "+tt.give,
		))
		res := p.Evaluate(toolCall("payments", "export_all", nil))
		if tt.wantShadow {
			if outcomeOf(res) != byDefault || len(res.Shadow) != 1 || res.Shadow[0].RuleID != "trial-export" {
				t.Errorf("shadow: %s: %+v, want default deny with shadow trial-export", tt.give, res)
			}
			continue
		}
		if outcomeOf(res) != byRule(Allow, "trial-export") || res.Shadow != nil {
			t.Errorf("shadow: %s: %+v, want allow by trial-export", tt.give, res)
		}
	}
}

// The Norway problem: in YAML 1.2 no, off, y and on are strings, so as
// patterns they are the tool names they spell; as booleans they are refused.
func TestPatternsStayStrings(t *testing.T) {
	p := mustCompile(t, lines(
		"allow: [no, off, y, on, NO, '404', !!str 12]",
		"methods:",
		"  allow: [{method: 'yes', custom: true}]",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		{give: toolCall("s", "no", nil), want: byRule(Allow, "allow[0]")},
		{give: toolCall("s", "off", nil), want: byRule(Allow, "allow[1]")},
		{give: toolCall("s", "y", nil), want: byRule(Allow, "allow[2]")},
		{give: toolCall("s", "on", nil), want: byRule(Allow, "allow[3]")},
		{give: toolCall("s", "NO", nil), want: byRule(Allow, "allow[4]")},
		{give: toolCall("s", "404", nil), want: byRule(Allow, "allow[5]")},
		{give: toolCall("s", "12", nil), want: byRule(Allow, "allow[6]")},
		{give: toolCall("s", "false", nil), want: byDefault},
		{give: method("yes"), want: byRule(Allow, "methods.allow[0]")},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", *tt.give, got, tt.want)
		}
	}
}

// A method rule must name a method some MCP revision defines, unless it is
// marked custom.
func TestMethodNamesKnown(t *testing.T) {
	accept := []string{"ping", "notifications/*", "tasks/*", "'*'", "sampling/createMessage", "GET", "response",
		"{method: acme/reindex, custom: true}", "{method: 'acme/*', custom: true}", "{method: ping, custom: false}"}
	for _, give := range accept {
		if _, err := Compile("p.yaml", []byte("methods: {allow: ["+give+"]}\n")); err != nil {
			t.Errorf("%s: %v", give, err)
		}
	}
	refuse := []string{"tool/list", "Ping", "notification/*", "acme/*", "{method: acme/reindex, custom: false}", "initialise"}
	for _, give := range refuse {
		_, err := Compile("p.yaml", []byte("methods: {allow: ["+give+"]}\n"))
		if err == nil || !strings.Contains(err.Error(), "no MCP version defines") {
			t.Errorf("%s: error %v, want no MCP version defines", give, err)
		}
	}
}
