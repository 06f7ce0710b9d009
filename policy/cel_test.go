package policy

import (
	"strings"
	"testing"
)

func TestInside(t *testing.T) {
	tests := []struct {
		path, dir string
		want      bool
		wantErr   bool
	}{
		{path: "/data/x", dir: "/data", want: true},
		{path: "/data", dir: "/data", want: true},
		{path: "/data/", dir: "/data", want: true},
		{path: "/data/x", dir: "/data/", want: true},
		{path: "/data//x/./y", dir: "/data", want: true},
		{path: "/data/../etc", dir: "/data"},
		{path: "/data/x/../../etc", dir: "/data"},
		{path: "/data/..", dir: "/data"},
		{path: "../../etc/passwd", dir: "/data"},
		{path: "data/x", dir: "data"},
		{path: "", dir: "/data"},
		{path: "/database", dir: "/data"},
		{path: "/dat", dir: "/data"},
		{path: "/etc/passwd", dir: "/", want: true}, // everything absolute is inside "/"
		{path: "/x", dir: "data"},
		{path: "/data/x\x00", dir: "/data", wantErr: true},
		{path: "/data/x", dir: "/data\x00", wantErr: true},
		// Windows separators and prefixes: where the server resolves them is
		// unknown, so inside() refuses.
		{path: `/data/x\..\..\Windows\win.ini`, dir: "/data", wantErr: true},
		{path: `/data\x`, dir: "/data", wantErr: true},
		{path: `/data/x\`, dir: "/data", wantErr: true},
		{path: "/data/x", dir: `\data`, wantErr: true},
		{path: `C:\data\x`, dir: "/data", wantErr: true},
		{path: "C:/data/x", dir: "/data", wantErr: true},
		{path: "c:", dir: "/", wantErr: true},
		{path: "/C:/Windows/win.ini", dir: "/", wantErr: true},
		{path: "/data/x", dir: "D:/data", wantErr: true},
		{path: "//server/share/x", dir: "/server", wantErr: true},
		{path: "/data/C:x", dir: "/data", want: true},        // a colon past the prefix is a name
		{path: "/1:/x", dir: "/", want: true},                // not a drive letter
		{path: "/data/%2e%2e/etc", dir: "/data", want: true}, // percent signs are literal
		{path: "/data/x%00", dir: "/data", want: true},
	}
	for _, tt := range tests {
		got, err := inside(tt.path, tt.dir)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("inside(%q, %q) = %v, %v; want %v, error %v", tt.path, tt.dir, got, err, tt.want, tt.wantErr)
		}
	}
}

// whenPolicy puts one `when` into a deny, an ask and an allow rule, each on
// its own server, so one expression can be checked in all three lists.
func whenPolicy(t *testing.T, when string) *Policy {
	t.Helper()
	q := "'" + strings.ReplaceAll(when, "'", "''") + "'"
	return mustCompile(t, lines(
		"deny: [{id: d, match: deny/t, when: "+q+"}]",
		"ask: [{id: a, match: ask/t, when: "+q+"}]",
		"allow: [{id: l, match: allow/t, when: "+q+"}]",
	))
}

func TestWhenFailsClosed(t *testing.T) {
	tests := []struct {
		name string
		when string
		args map[string]any
		// want: 1 the expression is true, 0 false, -1 it fails (error or
		// non-bool).
		want int
	}{
		{name: "true", when: "args.n > 1", args: map[string]any{"n": int64(2)}, want: 1},
		{name: "false", when: "args.n > 1", args: map[string]any{"n": int64(1)}, want: 0},
		{name: "missing key", when: "args.n > 1", args: map[string]any{}, want: -1},
		{name: "nil args", when: "args.n > 1", args: nil, want: -1},
		{name: "wrong type", when: "args.n > 1", args: map[string]any{"n": "2"}, want: -1},
		{name: "null value", when: "args.n > 1", args: map[string]any{"n": nil}, want: -1},
		{name: "non-bool dyn", when: "args.n", args: map[string]any{"n": "yes"}, want: -1},
		{name: "bool dyn", when: "args.n", args: map[string]any{"n": true}, want: 1},
		{name: "inside NUL", when: `inside(args.p, "/data")`, args: map[string]any{"p": "/data/\x00"}, want: -1},
		{name: "inside backslash", when: `inside(args.p, "/data")`, args: map[string]any{"p": `/data/x\..\..\Windows\win.ini`}, want: -1},
		{name: "not inside backslash", when: `!inside(args.p, "/data")`, args: map[string]any{"p": `/data/x\..\..\Windows\win.ini`}, want: -1},
		{name: "inside drive letter", when: `inside(args.p, "/")`, args: map[string]any{"p": "C:/Windows"}, want: -1},
		{name: "inside non-string", when: `inside(args.p, "/data")`, args: map[string]any{"p": int64(1)}, want: -1},
		{name: "has() guards", when: "has(args.n) && args.n > 1", args: map[string]any{}, want: 0},
		{name: "cost limit", when: "args.l.all(x, args.l.all(y, args.l.all(z, true)))",
			args: map[string]any{"l": make([]any, 100)}, want: -1},
	}
	for _, tt := range tests {
		p := whenPolicy(t, tt.when)
		wantDeny, wantAsk, wantAllow := tt.want != 0, tt.want != 0, tt.want == 1
		for _, c := range []struct {
			server string
			d      Decision
			want   bool
		}{{"deny", Deny, wantDeny}, {"ask", Ask, wantAsk}, {"allow", Allow, wantAllow}} {
			r := p.Evaluate(toolCall(c.server, "t", tt.args))
			if got := r.Cause == CauseRule && r.Decision == c.d; got != c.want {
				t.Errorf("%s: %s rule matched = %v (%+v), want %v", tt.name, c.server, got, r, c.want)
			}
		}
	}
}

func TestWhenValues(t *testing.T) {
	tests := []struct {
		when string
		give *Input
		want bool
	}{
		// Numbers compare across int64 and float64.
		{when: "args.n > 2500", give: toolCall("allow", "t", map[string]any{"n": int64(3000)}), want: true},
		{when: "args.n > 2500", give: toolCall("allow", "t", map[string]any{"n": float64(3000)}), want: true},
		{when: "args.n > 2500", give: toolCall("allow", "t", map[string]any{"n": 2500.5}), want: true},
		{when: "args.n > 2500", give: toolCall("allow", "t", map[string]any{"n": float64(2500)}), want: false},
		{when: "args.n <= 5000", give: toolCall("allow", "t", map[string]any{"n": int64(9007199254740992)}), want: false},
		{when: "args.n == 2", give: toolCall("allow", "t", map[string]any{"n": 2.0}), want: true},
		{when: "args.n > 2.5", give: toolCall("allow", "t", map[string]any{"n": int64(3)}), want: true},
		// Nested values.
		{when: `args.o.k[1] == "b"`, give: toolCall("allow", "t", map[string]any{"o": map[string]any{"k": []any{"a", "b"}}}), want: true},
		// Claims.
		{when: `claims.role == "admin"`, give: &Input{Op: OpRequest, Method: "tools/call", Server: "allow", Tool: "t", Claims: map[string]any{"role": "admin"}}, want: true},
		{when: `claims.role == "admin"`, give: &Input{Op: OpRequest, Method: "tools/call", Server: "allow", Tool: "t", Claims: map[string]any{"role": "user"}}, want: false},
		{when: `"write" in claims.scope`, give: &Input{Op: OpRequest, Method: "tools/call", Server: "allow", Tool: "t", Claims: map[string]any{"scope": []any{"read", "write"}}}, want: true},
		{when: `claims.role == "admin"`, give: toolCall("allow", "t", nil), want: false}, // missing: no allow
		// The string variables.
		{when: `server == "allow" && tool == "t" && method == "tools/call" && uri == "" && prompt == ""`, give: toolCall("allow", "t", nil), want: true},
	}
	for _, tt := range tests {
		p := whenPolicy(t, tt.when)
		r := p.Evaluate(tt.give)
		if got := r.Decision == Allow; got != tt.want {
			t.Errorf("%s on %+v = %+v, want allow %v", tt.when, *tt.give, r, tt.want)
		}
	}
}

func TestWhenVariables(t *testing.T) {
	p := mustCompile(t, lines(
		"allow:",
		"  - match: \"resource:s/file:///a/*\"",
		"    when: uri == \"file:///a/~\" && server == \"s\"",
		"  - match: \"prompt:s/p\"",
		"    when: prompt == \"p\" && args.lang == \"de\"",
		"methods:",
		"  allow:",
		"    - method: logging/setLevel",
		"      when: claims.role == \"admin\" && method == \"logging/setLevel\"",
	))
	tests := []struct {
		give *Input
		want Decision
	}{
		{give: resRead("s", "FILE:///a/%7E"), want: Allow}, // uri is the normal form
		{give: resRead("s", "file:///a/b"), want: Deny},
		{give: &Input{Op: OpRequest, Method: "prompts/get", Server: "s", Prompt: "p", Args: map[string]any{"lang": "de"}}, want: Allow},
		{give: &Input{Op: OpRequest, Method: "prompts/get", Server: "s", Prompt: "p"}, want: Deny},
		{give: &Input{Op: OpRequest, Method: "logging/setLevel", Claims: map[string]any{"role": "admin"}}, want: Allow},
		{give: &Input{Op: OpRequest, Method: "logging/setLevel"}, want: Deny},
	}
	for _, tt := range tests {
		if got := p.Evaluate(tt.give).Decision; got != tt.want {
			t.Errorf("Evaluate(%+v) = %v, want %v", *tt.give, got, tt.want)
		}
	}
}

// The extension libraries the package doc lists, each with an expression a
// policy author would write; every one must evaluate to true.
func TestCELExtensions(t *testing.T) {
	args := map[string]any{
		"path": "/data/Reports/Q1.csv", "tags": []any{"a", "b", "b"}, "amount": int64(-1200),
		"name": "Zürich", "token": "aGVsbG8=", "email": "alice@example.com",
	}
	claims := map[string]any{"groups": []any{"payments-admins", "staff"}, "scope": "mcp:read mcp:refund"}
	tests := []struct {
		lib  string
		give string
	}{
		{lib: "standard", give: `args.path.startsWith("/data/") && args.email.matches("^[^@]+@example\\.com$")`},
		{lib: "standard", give: `"staff" in claims.groups && size(args.tags) == 3`},
		{lib: "strings", give: `args.path.lowerAscii().endsWith(".csv") && args.email.split("@")[1] == "example.com"`},
		{lib: "strings", give: `claims.scope.split(" ").exists(s, s == "mcp:refund") && args.path.indexOf("Reports") == 6`},
		{lib: "strings", give: `"%s-%d".format(["x", 3]) == "x-3" && ["a", "b"].join(",") == "a,b"`},
		{lib: "lists", give: `args.tags.distinct() == ["a", "b"] && lists.range(3) == [0, 1, 2] && args.tags.slice(0, 1) == ["a"]`},
		{lib: "sets", give: `sets.contains(claims.groups, ["staff"]) && sets.intersects(claims.groups, ["staff", "x"]) && sets.equivalent(["a", "b"], ["b", "a"])`},
		{lib: "math", give: `math.abs(args.amount) == 1200 && math.greatest([1, 5, 3]) == 5 && math.least([2, 1]) == 1 && math.ceil(1.2) == 2.0 && !math.isNaN(1.0)`},
		{lib: "lists", give: `[3, 1, 2].sort() == [1, 2, 3] && [[1], [2]].flatten() == [1, 2]`},
		{lib: "strings", give: `"  x ".trim() == "x" && "a-b".replace("-", "_") == "a_b"`},
		{lib: "regex", give: `regex.extractAll("a1b22", "[0-9]+") == ["1", "22"]`},
		{lib: "encoders", give: `string(base64.decode(args.token)) == "hello" && base64.encode(b"hi") == "aGk="`},
		{lib: "regex", give: `regex.extract(args.email, "@(.*)$") == optional.of("example.com") && regex.replace(args.path, "[0-9]", "#") == "/data/Reports/Q#.csv"`},
		{lib: "optional", give: `args.?limit.orValue(10) == 10 && claims.?scope.hasValue()`},
		{lib: "bindings", give: `cel.bind(d, args.email.split("@")[1], d == "example.com" || d == "example.org")`},
		{lib: "two-variable comprehensions", give: `args.tags.all(i, v, i >= 0 && v != "")`},
	}
	for _, tt := range tests {
		p := whenPolicy(t, tt.give)
		in := toolCall("allow", "t", args)
		in.Claims = claims
		if got := outcomeOf(p.Evaluate(in)); got != byRule(Allow, "l") {
			tr := p.Explain(in)
			t.Errorf("%s: %s = %v (when: %+v), want allow", tt.lib, tt.give, got, tr.Rules)
		}
	}
}

// lists.range and the cost limit bound what an expression may build.
func TestCELBounded(t *testing.T) {
	tests := []string{
		`lists.range(100000).size() > 0`,
		`lists.range(1000).map(i, lists.range(1000).size()).size() > 0`,
	}
	for _, give := range tests {
		p := whenPolicy(t, give)
		// Failing, it matches in deny and does not in allow (fails closed).
		if got := p.Evaluate(toolCall("deny", "t", nil)).Decision; got != Deny {
			t.Errorf("%s: deny rule gave %v, want it to fail and match", give, got)
		}
		if got := p.Evaluate(toolCall("allow", "t", nil)).Decision; got != Deny {
			t.Errorf("%s: allow rule gave %v, want it to fail and not match", give, got)
		}
	}
}

// fakeArgs is a LazyArgs that counts how it is read.
type fakeArgs struct {
	m          map[string]any
	arg, whole int
}

func (f *fakeArgs) Arg(name string) (any, bool) { f.arg++; v, ok := f.m[name]; return v, ok }
func (f *fakeArgs) Args() map[string]any        { f.whole++; return f.m }

// TestLazyArgs: a `when` expression reads only the members it names
// through LazyArgs, the whole arguments only where it needs them all, and
// decides as Input.Args would.
func TestLazyArgs(t *testing.T) {
	p := mustCompile(t, lines(
		"deny:",
		"  - match: s/refund",
		"    when: args.amount > 100",
		"  - match: s/bulk",
		"    when: size(args) > 2",
		"  - match: s/opt",
		"    when: has(args.force) || \"dry\" in args",
		"allow:",
		"  - match: \"s/*\"",
	))
	tests := []struct {
		name      string
		tool      string
		args      map[string]any
		want      Decision
		wantArg   int // calls of Arg
		wantWhole int // calls of Args
	}{
		{name: "member read", tool: "refund", args: map[string]any{"amount": int64(500), "lines": []any{"x"}}, want: Deny, wantArg: 1},
		{name: "member read, within", tool: "refund", args: map[string]any{"amount": int64(5)}, want: Allow, wantArg: 1},
		{name: "missing member fails closed", tool: "refund", args: map[string]any{}, want: Deny, wantArg: 1},
		{name: "no evaluated rule reads args", tool: "search", args: map[string]any{"amount": int64(500)}, want: Allow},
		{name: "size needs them all", tool: "bulk", args: map[string]any{"a": 1, "b": 2, "c": 3}, want: Deny, wantWhole: 1},
		{name: "size needs them all, within", tool: "bulk", args: map[string]any{"a": 1}, want: Allow, wantWhole: 1},
		{name: "has and in", tool: "opt", args: map[string]any{"dry": true}, want: Deny, wantArg: 2},
		{name: "has and in, neither", tool: "opt", args: map[string]any{"x": true}, want: Allow, wantArg: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeArgs{m: tt.args}
			in := &Input{Op: OpRequest, Method: "tools/call", Server: "s", Tool: tt.tool, LazyArgs: f}
			if got := p.Evaluate(in).Decision; got != tt.want {
				t.Errorf("Decision = %v, want %v", got, tt.want)
			}
			if f.arg != tt.wantArg || f.whole != tt.wantWhole {
				t.Errorf("Arg called %d times, Args %d; want %d and %d", f.arg, f.whole, tt.wantArg, tt.wantWhole)
			}
			// The same decision with the arguments given whole.
			whole := &Input{Op: OpRequest, Method: "tools/call", Server: "s", Tool: tt.tool, Args: tt.args}
			if got := p.Evaluate(whole).Decision; got != tt.want {
				t.Errorf("with Args: Decision = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWhenErrors: a `when` that fails at run time is reported in
// Result.WhenErrors with its rule id, whatever its decision, shadow rules
// included; one that yields a bool is not.
func TestWhenErrors(t *testing.T) {
	p := mustCompile(t, `
default: deny
deny:
  - {id: typo, match: "s/pay", when: "args.amuont > 10"}
  - {id: fine, match: "s/pay", when: "args.amount > 100"}
  - {id: shadowed, match: "s/pay", when: "args.nope == 1", shadow: true}
allow:
  - {id: not-bool, match: "s/pay", when: "args.amount"}
  - {id: pay, match: "s/pay", when: "args.amount <= 100"}
`)
	tests := []struct {
		give     map[string]any
		want     []string // rule ids
		wantRule string
	}{
		// typo fails (matches: deny), shadowed fails; allow rules not reached.
		{map[string]any{"amount": 5}, []string{"typo", "shadowed"}, "typo"},
	}
	for _, tt := range tests {
		res := p.Evaluate(toolCall("s", "pay", tt.give))
		var got []string
		for _, we := range res.WhenErrors {
			got = append(got, we.RuleID)
			if !strings.Contains(we.Error(), `rule "`+we.RuleID+`": when: `) || we.Err == nil {
				t.Errorf("WhenError %q", we.Error())
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") || res.RuleID != tt.wantRule {
			t.Errorf("WhenErrors %v rule %q, want %v %q", got, res.RuleID, tt.want, tt.wantRule)
		}
	}
	q := mustCompile(t, `
default: deny
allow:
  - {id: not-bool, match: "s/pay", when: "args.amount"}
  - {id: pay, match: "s/pay", when: "args.amount <= 100"}
`)
	res := q.Evaluate(toolCall("s", "pay", map[string]any{"amount": 5}))
	if len(res.WhenErrors) != 1 || res.WhenErrors[0].RuleID != "not-bool" || !strings.Contains(res.WhenErrors[0].Error(), "not a bool") || res.RuleID != "pay" {
		t.Errorf("non-bool when: %+v", res)
	}
	if res := q.Evaluate(toolCall("s", "pay", map[string]any{"amount": 500})); len(res.WhenErrors) != 1 {
		t.Errorf("WhenErrors %v, want only not-bool's", res.WhenErrors)
	}
}

// TestCostLimitOnlyWhereUnbounded: an expression whose worst case cel-go
// bounds statically runs without a cost tracker; one that depends on the
// size of args, claims or a string, or that builds big lists, keeps it.
func TestCostLimitOnlyWhereUnbounded(t *testing.T) {
	env, err := celEnv()
	if err != nil {
		t.Fatal(err)
	}
	for give, want := range map[string]bool{
		`method == "tools/call" && server == "payments"`:                false,
		`args.amount < 100 && args.currency == "EUR"`:                   false,
		`annotations.readOnlyHint`:                                      false,
		`args.l.all(x, args.l.all(y, true))`:                            true,
		`claims.scope.split(" ").exists(s, s == "admin")`:               true,
		`args.q.matches("^[a-z]+$")`:                                    true,
		`lists.range(1000).map(i, lists.range(1000).size()).size() > 0`: true,
		`size(args) < 3`: false,
	} {
		ast, iss := env.Compile(give)
		if iss != nil && iss.Err() != nil {
			t.Fatalf("%s: %v", give, iss.Err())
		}
		if got := needsCostLimit(env, ast); got != want {
			t.Errorf("%s: needs a cost limit = %v, want %v", give, got, want)
		}
	}
}
