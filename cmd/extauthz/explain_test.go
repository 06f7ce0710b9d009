package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// decisionIDs are random: golden files hold a placeholder.
var decisionIDs = regexp.MustCompile(`\b[0-9a-f]{32}\b`)

func golden(t *testing.T, path, got string) {
	t.Helper()
	got = decisionIDs.ReplaceAllString(got, "<decision-id>")
	if want, same := testkit.Golden(t, path, []byte(got)); !same {
		t.Errorf("%s differs (run go test -update and review the diff):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// check --explain offline, on the reference policy: every rule considered,
// each when's value or error, the precedence step, and the response as
// Envoy would send it. Each input under testdata/explain has a golden file.
func TestCheckExplainGolden(t *testing.T) {
	inputs, err := filepath.Glob("cmd/extauthz/testdata/explain/*.json") // policy.yaml: a copy of the reference policy
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), []string{"check", "--explain", "--policy", "cmd/extauthz/testdata/explain/policy.yaml", "--server-id", "payments", "--sub", "alice", "--claim", `groups=["payments"]`, in}, &out, io.Discard)
			if c := exitCode(err); c != 0 && c != 1 {
				t.Fatalf("exit %d: %v", c, err)
			}
			golden(t, strings.TrimSuffix(in, ".json")+".golden", out.String())
		})
	}
}

// check --addr --explain: the decision id, HTTP status, upstream headers and
// denial body as the running service returned them; a dry-run service
// admits the request, and check still exits by the decision.
func TestCheckExplainRemote(t *testing.T) {
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	addr, _, _ := startServe(t, "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s")
	dryAddr, _, _ := startServe(t, "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--dry-run")
	tests := []struct {
		name     string
		addr     string
		give     string
		wantCode int
	}{
		{name: "remote-allow", addr: addr, give: "cmd/extauthz/testdata/explain/read-file.json", wantCode: 0},
		{name: "remote-deny", addr: addr, give: "cmd/extauthz/testdata/explain/delete.json", wantCode: 1},
		{name: "remote-dry-run-deny", addr: dryAddr, give: "cmd/extauthz/testdata/explain/delete.json", wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), []string{"check", "--explain", "--addr", tt.addr, "--token", tok.String(), tt.give}, &out, io.Discard)
			if got := exitCode(err); got != tt.wantCode {
				t.Fatalf("exit %d (%v), want %d\n%s", got, err, tt.wantCode, out.String())
			}
			// Digests of the policy file change with it; the rest is fixed.
			got := regexp.MustCompile(`sha256:[0-9a-f]{64}`).ReplaceAllString(out.String(), "sha256:<hex>")
			golden(t, filepath.Join("cmd/extauthz/testdata/explain", tt.name+".golden"), got)
		})
	}
}

// check takes a plain JSON-RPC body with -X, -H, --sub and --claim, and
// needs no token offline.
func TestCheckPlainBody(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("policy.yaml", `default: deny
allow:
  - id: admins
    match: payments/export
    when: '"admins" in claims.groups && claims.level >= 3 && claims.active == true && claims.team == "core"'
  - id: search
    match: payments/search
methods:
  allow: [GET]
`)
	export := write("export.json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"export"}}`)
	search := write("search.json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`)
	empty := write("empty", "")
	notJSON := write("not-json.txt", `{"jsonrpc":"2.0",`)
	badCapture := write("capture.json", `{"http": {"method": 5}}`)
	admin := []string{"--claim", `groups=["admins","staff"]`, "--claim", "level=3", "--claim", "active=true", "--claim", "team=core"}
	tests := []struct {
		name     string
		give     []string
		wantCode int
		wantOut  string
	}{
		{name: "plain body, no token", give: []string{search}, wantCode: 0, wantOut: "reason:         allowed"},
		{name: "claims as JSON values", give: append(admin, export), wantCode: 0, wantOut: "rule_id:        admins"},
		{name: "a claim missing", give: []string{"--claim", `groups=["admins"]`, "--claim", "level=3", export}, wantCode: 1, wantOut: "default_deny"},
		{name: "a number is not a string", give: append([]string{"--claim", "team=3"}, append(admin[:6:6], export)...), wantCode: 1, wantOut: "default_deny"},
		{name: "--sub names the principal", give: []string{"--sub", "bob", search}, wantCode: 0, wantOut: "principal:      bob"},
		{name: "-H sets a header", give: []string{"-H", "Content-Type: text/plain", search}, wantCode: 1, wantOut: "unsupported_media_type"},
		{name: "-H mcp-method must agree", give: []string{"-H", "mcp-method: tools/list", search}, wantCode: 1, wantOut: "header_mismatch"},
		{name: "-X GET with an empty body", give: []string{"-X", "GET", empty}, wantCode: 0, wantOut: "method:         GET"},
		{name: "-X DELETE is not allowed here", give: []string{"-X", "DELETE", empty}, wantCode: 1, wantOut: "default_deny"},
		{name: "a body that is not JSON is decided", give: []string{notJSON}, wantCode: 1, wantOut: "parse_error"},
		{name: "a malformed captured request is exit 2", give: []string{badCapture}, wantCode: 2},
		{name: "a missing file is exit 2", give: []string{filepath.Join(dir, "nope.json")}, wantCode: 2},
		{name: "a bad -H is exit 2", give: []string{"-H", "no-colon", search}, wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), append([]string{"check", "--policy", pol, "--server-id", "payments"}, tt.give...), &out, io.Discard)
			if got := exitCode(err); got != tt.wantCode {
				t.Fatalf("exit %d (%v), want %d\n%s", got, err, tt.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out.String())
			}
		})
	}
}

// token --claim takes JSON values.
func TestTokenClaimJSON(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--claim", `groups=["a","b"]`, "--claim", "n=3", "--claim", "ok=true",
		"--claim", `o={"k":1}`, "--claim", "s=hello", "--claim", "q=\"3\"", "--claim", "t=[1,"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimSpace(out.String()), ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %q", out.String())
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"groups": []any{"a", "b"}, "n": 3.0, "ok": true, "o": map[string]any{"k": 1.0}, "s": "hello", "q": "3", "t": "[1,"}
	for k, v := range want {
		if !reflect.DeepEqual(c[k], v) {
			t.Errorf("claim %s = %#v, want %#v", k, c[k], v)
		}
	}
}

// TestReadmeCheckExplainExample keeps the offline `check --config
// examples/config.yaml --explain -` example of docs/policy.md, "Checking
// one request (`extauthz check`)" true: its output block is what the
// binary prints for the body the example pipes in (decision ids and the
// elided denial body aside), so rule line numbers cannot go stale when
// examples/policy.yaml changes.
func TestReadmeCheckExplainExample(t *testing.T) {
	b := []byte(testkit.Docs(t, "."))
	m := regexp.MustCompile("(?s)echo '([^']*)' \\|\n  go run ./cmd/extauthz check --config examples/config.yaml --explain -(?: +#[^\n]*)?\n```\n.*?```\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README: no `echo '…' | go run ./cmd/extauthz check --config examples/config.yaml --explain -` example followed by its output")
	}
	in := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(in, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"check", "--config", "examples/config.yaml", "--explain", in}, &out, io.Discard); exitCode(err) > 1 {
		t.Fatal(err)
	}
	norm := func(s string) string {
		s = decisionIDs.ReplaceAllString(s, "<decision-id>")
		lines := strings.Split(s, "\n")
		for i := 1; i < len(lines); i++ {
			if lines[i-1] == "body:" {
				lines[i] = "  <body>"
			}
		}
		return strings.Join(lines, "\n")
	}
	if got, want := norm(out.String()), norm(string(m[2])); got != want {
		t.Errorf("README's check --explain example is stale; the binary prints:\n%s\nREADME shows:\n%s", got, want)
	}
}
