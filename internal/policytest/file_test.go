package policytest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `server: payments
principal: {sub: alice, claims: {groups: [a], level: 3}}
tests:
  - name: mapping body
    body: {jsonrpc: "2.0", id: 1, method: ping}
    headers: {MCP-Protocol-Version: "2025-11-25"}
    want: {decision: allow}
  - name: string body, own principal and server
    server: github
    principal: {sub: bob}
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    want: {decision: deny, reason: default_deny, rule: null, shadow: [s1]}
  - name: bodiless
    http_method: GET
    want: {decision: allow, rule: sse}
`
	f, err := Parse("dir/policy_test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.PolicyPath != filepath.Join("dir", "policy.yaml") || len(f.Tests) != 3 {
		t.Fatalf("policy %q, %d tests", f.PolicyPath, len(f.Tests))
	}
	t0, t1, t2 := f.Tests[0], f.Tests[1], f.Tests[2]
	if string(t0.Request.Body) != `{"id":1,"jsonrpc":"2.0","method":"ping"}` || t0.Request.Headers["mcp-protocol-version"] != "2025-11-25" || t0.Line != 4 {
		t.Errorf("test 0: %+v body %s", t0, t0.Request.Body)
	}
	if want := map[string]any{"groups": []any{"a"}, "level": 3.0}; !reflect.DeepEqual(t0.Principal.Claims, want) || t0.Principal.Subject != "alice" {
		t.Errorf("test 0 principal %+v, want the file's, claims as a JWT carries them", t0.Principal)
	}
	if string(t1.Request.Body) != `{"jsonrpc":"2.0","id":1,"method":"ping"}` || t1.Request.Server != "github" ||
		t1.Principal.Subject != "bob" || t1.Principal.Claims["level"] != 3.0 {
		t.Errorf("test 1: %+v", t1)
	}
	if t1.Want.Rule == nil || *t1.Want.Rule != "" || t1.Want.Shadow == nil || (*t1.Want.Shadow)[0] != "s1" || *t1.Want.Reason != "default_deny" {
		t.Errorf("test 1 want: %+v", t1.Want)
	}
	if t2.Request.HTTPMethod != "GET" || t2.Request.Body != nil || t2.Request.Server != "payments" {
		t.Errorf("test 2: %+v", t2)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{give: "", want: []string{"t.yaml: empty test file"}},
		{give: "tests: []\n", want: []string{"t.yaml:1:8: tests must be a non-empty list"}},
		{give: "tests:\n  - name: a\n    body: x\n    want: {decision: allow}\n", want: []string{`t.yaml:2:5: test "a": no server`}},
		{give: "server: s\ntests:\n  - {name: a, want: {decision: allow}}\n", want: []string{`t.yaml:3:5: test "a": no body`}},
		{give: "server: s\ntests:\n  - {name: a, body: x, want: {decision: allow}}\n  - {name: a, body: x, want: {decision: allow}}\n",
			want: []string{`t.yaml:4:5: test "a": duplicate name (first at line 3)`}},
		{give: "server: s\ntests:\n  - {name: a, body: x, want: {reason: allowed}}\n", want: []string{`t.yaml:3:30: test "a": want.decision is required`}},
		{give: "server: s\nserver: t\ntests:\n  - {name: a, body: x, want: {decision: allow, rule: 5}}\n",
			want: []string{`t.yaml:2:1: duplicate key "server"`, `t.yaml:4:54: want.rule must be a string`}},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.give))
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("%q: error %v, want a *LoadError", tt.give, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(le.Error(), w) {
				t.Errorf("%q: %v\nlacks %q", tt.give, le, w)
			}
		}
	}
}

// Run decides through the whole Decider: a test that the policy contradicts
// fails with what differed.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p.yaml", "default: deny\nallow:\n  - {id: admins, match: s/t, when: '\"admin\" in claims.groups'}\n")
	write("p_test.yaml", `server: s
tests:
  - name: admin
    principal: {claims: {groups: [admin]}}
    body: {jsonrpc: "2.0", id: 1, method: tools/call, params: {name: t}}
    want: {decision: allow, rule: admins}
  - name: wrong expectation
    body: {jsonrpc: "2.0", id: 1, method: tools/call, params: {name: t}}
    want: {decision: allow, rule: admins}
`)
	files, err := Find([]string{dir, filepath.Join(dir, "p_test.yaml")})
	if err != nil || len(files) != 1 {
		t.Fatalf("Find = %v, %v; want one file once", files, err)
	}
	f, err := LoadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	_, results, err := Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !results[0].Passed() || results[1].Passed() {
		t.Fatalf("results: %+v / %+v", results[0].Failures, results[1].Failures)
	}
	if got := strings.Join(results[1].Failures, "; "); got != `decision deny, want allow; rule "", want "admins"` {
		t.Errorf("failures = %q", got)
	}
	if results[1].Pos() != files[0]+":7" {
		t.Errorf("Pos = %s", results[1].Pos())
	}
}
