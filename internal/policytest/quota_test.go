package policytest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
)

// TestRunWithQuota: offline, a policy's quota never refuses (each case is
// its bucket's first request, several cases in one file included), and the
// trace names the quota the request is charged to.
func TestRunWithQuota(t *testing.T) {
	dir := t.TempDir()
	pol := "default: deny\nallow: [s/t]\nquotas:\n  - {id: one-a-day, match: s/t, limit: 1, window: 24h}\n"
	cases := `server: s
tests:
  - name: first
    body: {jsonrpc: "2.0", id: 1, method: tools/call, params: {name: t}}
    want: {decision: allow, rule: "allow[0]"}
  - name: second, same principal
    body: {jsonrpc: "2.0", id: 2, method: tools/call, params: {name: t}}
    want: {decision: allow, rule: "allow[0]"}
`
	if os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(pol), 0o644) != nil || os.WriteFile(filepath.Join(dir, "p_test.yaml"), []byte(cases), 0o644) != nil {
		t.Fatal("cannot write")
	}
	f, err := LoadFile(filepath.Join(dir, "p_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, results, err := Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed() {
			t.Errorf("%s: %v", r.Pos(), r.Failures)
		}
	}
	lp, err := decision.CompilePolicy("p.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	d := Decide(context.Background(), lp, "s", Principal{Subject: "alice"}, f.Tests[0].Request.Captured())
	var out bytes.Buffer
	WriteTrace(&out, d, "p.yaml")
	if want := `quota "one-a-day": 1 per 24h0m0s per principal (burst 1): charged after the deny rules`; !strings.Contains(out.String(), want) {
		t.Errorf("trace lacks %q:\n%s", want, out.String())
	}
}
