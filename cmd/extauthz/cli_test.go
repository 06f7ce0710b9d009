package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// otherConfig writes a serve config unlike examples/config.yaml (another
// issuer, audiences, server id and approver issuer), so a tool that took a
// built-in default instead of it shows.
func otherConfig(t *testing.T, extra string) string {
	t.Helper()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	f := filepath.Join(t.TempDir(), "config.yaml")
	src := "policy: " + abs("examples/policy.yaml") + "\n" +
		"issuer: https://login.other.example\n" +
		"audience: [https://billing.other.example/mcp, https://second.other.example/mcp]\n" +
		"jwks-file: " + abs("examples/jwks.json") + "\nallow-test-keys: true\nstate-store-memory-per-replica-ok: true\n" + extra
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTokenDefaultsFromConfig: token's iss and aud are the flags', else
// --config's (its issuer and first audience), else an error; never the
// quick-start's values unasked.
func TestTokenDefaultsFromConfig(t *testing.T) {
	cfg := otherConfig(t, "server-id: billing\n")
	tests := []struct {
		name            string
		give            []string
		env             string // EXTAUTHZ_CONFIG
		wantIss         string
		wantAud         []any
		wantCode        int
		wantErrContains string
	}{
		{name: "--config", give: []string{"--config", cfg}, wantIss: "https://login.other.example", wantAud: []any{"https://billing.other.example/mcp"}},
		{name: "EXTAUTHZ_CONFIG", env: cfg, wantIss: "https://login.other.example", wantAud: []any{"https://billing.other.example/mcp"}},
		{name: "flags beat the config", give: []string{"--config", cfg, "--issuer", "https://x.example", "--audience", "https://a.example/mcp,https://b.example/mcp"},
			wantIss: "https://x.example", wantAud: []any{"https://a.example/mcp", "https://b.example/mcp"}},
		{name: "flags alone", give: []string{"--issuer", "https://x.example", "--audience", "https://a.example/mcp"}, wantIss: "https://x.example", wantAud: []any{"https://a.example/mcp"}},
		{name: "no issuer", give: []string{"--audience", "https://a.example/mcp"}, wantCode: 2, wantErrContains: "token: --issuer is required (or --config FILE"},
		{name: "nothing: the quick start, said", give: []string{"--sub", "alice"}, wantIss: "https://idp.example.com", wantAud: []any{"https://mcp.example.com/mcp"},
			wantErrContains: "using the quick start's examples/config.yaml"},
		{name: "no audience", give: []string{"--issuer", "https://x.example", "--audience", " , "}, wantCode: 2, wantErrContains: "token: --audience is required"},
		{name: "a config serve refuses", give: []string{"--config", "examples/README.md"}, wantCode: 2, wantErrContains: "token: --config examples/README.md:"},
		{name: "an argument", give: []string{"--config", cfg, "alice"}, wantCode: 2, wantErrContains: `unexpected argument "alice"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("EXTAUTHZ_CONFIG", tt.env)
			code, out, errs := runOut(t, append([]string{"token"}, tt.give...)...)
			if code != tt.wantCode || !strings.Contains(errs, tt.wantErrContains) {
				t.Fatalf("exit %d, stderr %q; want exit %d with %q", code, errs, tt.wantCode, tt.wantErrContains)
			}
			if code != 0 {
				return
			}
			c := testkit.ClaimsOf(t, out)
			if c["iss"] != tt.wantIss || !slices.Equal(c["aud"].([]any), tt.wantAud) {
				t.Errorf("iss %v aud %v; want %s %v", c["iss"], c["aud"], tt.wantIss, tt.wantAud)
			}
		})
	}
}

// TestApproveDefaultsFromConfig: approve's iss, aud and, for a captured
// request, the requester's issuer and the server id come from --config;
// the digest it computes is the one check computes under the same config.
func TestApproveDefaultsFromConfig(t *testing.T) {
	t.Setenv("EXTAUTHZ_CONFIG", "")
	cfg := otherConfig(t, "server-id: billing\napprover-issuer: https://approvals.other.example\n")
	noApprovals := otherConfig(t, "server-id: billing\n")
	digest := "sha256:" + strings.Repeat("ab", 32)
	req := "examples/requests/big-refund-ask.json"

	code, out, errs := runOut(t, "approve", "--config", cfg, "--sub", "alice", "--digest", digest)
	if code != 0 {
		t.Fatalf("approve --config: exit %d %s", code, errs)
	}
	if c := testkit.ClaimsOf(t, out); c["iss"] != "https://approvals.other.example" || c["aud"] != "https://billing.other.example/mcp" || c["digest"] != digest {
		t.Errorf("approval claims %v", c)
	}

	// The digest of a captured request: the config's server id, issuer and
	// first audience, as the offline check decides it.
	code, out, errs = runOut(t, "check", "--config", cfg, "--sub", "alice", "--json", req)
	if code != 1 {
		t.Fatalf("check --config: exit %d %s", code, errs)
	}
	var decided map[string]string
	if err := json.Unmarshal([]byte(out), &decided); err != nil {
		t.Fatal(err)
	}
	if decided["server"] != "billing" || decided["request_digest"] == "" {
		t.Fatalf("check --config decided %v", decided)
	}
	code, out, errs = runOut(t, "approve", "--config", cfg, "--sub", "alice", req)
	if code != 0 {
		t.Fatalf("approve --config of a captured request: exit %d %s", code, errs)
	}
	if got := testkit.ClaimsOf(t, out)["digest"]; got != decided["request_digest"] {
		t.Errorf("approve computed %v, check %s", got, decided["request_digest"])
	}

	refused := []struct {
		name string
		give []string
		want string
	}{
		{"no issuer", []string{"--sub", "alice", "--audience", "https://a.example/mcp", "--digest", digest}, "approve: --issuer is required (serve's --approver-issuer)"},
		{"no audience", []string{"--sub", "alice", "--issuer", "https://approvals.example", "--digest", digest}, "approve: --audience is required"},
		{"a config without approvals", []string{"--config", noApprovals, "--sub", "alice", "--digest", digest}, "has no approver-issuer, so that service takes no approvals"},
		{"a captured request without server id and token issuer", []string{"--sub", "alice", "--issuer", "https://approvals.example", "--audience", "https://a.example/mcp", req},
			"needs --token-issuer and --server-id"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runOut(t, append([]string{"approve"}, tt.give...)...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 with %q", code, errs, tt.want)
			}
		})
	}
}

// TestCheckDefaultsFromConfig: offline, check decides by --config's policy
// and server id or by the flags, and refuses to guess either; an empty
// --token or --approval is refused rather than sent.
func TestCheckDefaultsFromConfig(t *testing.T) {
	t.Setenv("EXTAUTHZ_CONFIG", "")
	cfg := otherConfig(t, "server-id: billing\n")
	gateway := otherConfig(t, "")
	search := "examples/requests/search-allowed.json"
	tests := []struct {
		name     string
		give     []string
		wantCode int
		want     string // in stdout, or stderr when wantCode is 2
	}{
		{"the config's server id", []string{"--config", cfg, search}, 0, "server:         billing"},
		{"--server-id beats the config", []string{"--config", cfg, "--server-id", "payments", search}, 0, "server:         payments"},
		{"flags alone", []string{"--policy", "examples/policy.yaml", "--server-id", "payments", search}, 0, "server:         payments"},
		{"no policy", []string{search}, 2, "check: no policy to decide by: give --policy FILE and --server-id ID, or --config FILE"},
		{"no server id", []string{"--policy", "examples/policy.yaml", search}, 2, "check: no MCP server id: give --server-id ID"},
		{"a config whose routes name the server", []string{"--config", gateway, search}, 2, "the config names none (its routes set mcp_server), so give --server-id"},
		{"an empty --token", []string{"--addr", "127.0.0.1:1", "--token", "", search}, 2, "check: --token is empty (did the command that made it fail?)"},
		{"a blank --token", []string{"--config", cfg, "--token", " \n", search}, 2, "--token is empty"},
		{"an empty --approval", []string{"--addr", "127.0.0.1:1", "--token", "t", "--approval", "", search}, 2, "--approval is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, append([]string{"check"}, tt.give...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.wantCode, out, errs)
			}
			if got := map[bool]string{true: errs, false: out}[code == 2]; !strings.Contains(got, tt.want) {
				t.Errorf("output lacks %q:\nstdout %s\nstderr %s", tt.want, out, errs)
			}
		})
	}
}

// TestCheckRefusesAmbiguousCaptures: a captured request with a duplicate
// or case-variant member is refused with what and where (exit 2), by check
// and by approve, never decided on the member encoding/json kept.
func TestCheckRefusesAmbiguousCaptures(t *testing.T) {
	allowed := `{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"query\":\"q\"}}}`
	denied := `{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"delete_repo\",\"arguments\":{}}}`
	dir := t.TempDir()
	tests := []struct {
		name, give, want string
	}{
		{"two body_text", `{"http":{"method":"POST","path":"/mcp","headers":{"content-type":"application/json"},"body_text":"` + denied + `","body_text":"` + allowed + `"}}`,
			`captured request: not strict JSON: mcpparse: duplicate_key at offset`},
		{"two http", `{"http":{"method":"POST","path":"/mcp","body_text":"` + denied + `"},"http":{"method":"POST","path":"/mcp","body_text":"` + allowed + `"}}`,
			`duplicate member "http"`},
		{"header names in two cases", `{"http":{"method":"POST","path":"/mcp","headers":{"Mcp-Session-Id":"a","mcp-session-id":"b"},"body_text":"` + allowed + `"}}`,
			`case_variant_key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			if err := os.WriteFile(file, []byte(tt.give), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"check", "--config", "examples/config.yaml", file},
				{"approve", "--config", "examples/config.yaml", "--sub", "alice", file},
			} {
				code, out, errs := runOut(t, args...)
				if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", args[0], code, out, errs, tt.want)
				}
			}
		})
	}
}

// TestToolKeyBesideConfig: token and approve run from another directory,
// --config naming the quick start's file, sign with the test keys beside
// it when the default --key (relative to the working directory) is not
// there; a --key given is read as given.
func TestToolKeyBesideConfig(t *testing.T) {
	t.Setenv("EXTAUTHZ_CONFIG", "")
	cfg, err := filepath.Abs(quickStartConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, out, errs := runOut(t, "token", "--config", cfg, "--sub", "alice")
	if code != 0 {
		t.Fatalf("token: exit %d %s", code, errs)
	}
	if c := testkit.ClaimsOf(t, out); c["iss"] != "https://idp.example.com" || c["sub"] != "alice" {
		t.Errorf("token claims %v", c)
	}
	code, out, errs = runOut(t, "approve", "--config", cfg, "--sub", "alice", "--digest", "sha256:"+strings.Repeat("ab", 32))
	if code != 0 {
		t.Fatalf("approve: exit %d %s", code, errs)
	}
	if c := testkit.ClaimsOf(t, out); c["sub"] != "alice" {
		t.Errorf("approval claims %v", c)
	}
	code, _, errs = runOut(t, "token", "--config", cfg, "--key", "examples/TEST-ONLY-signing-key.jwk.json")
	if code != 2 || !strings.Contains(errs, "examples/TEST-ONLY-signing-key.jwk.json") {
		t.Errorf("token --key (absent here): exit %d %q, want 2 naming the file", code, errs)
	}
}
