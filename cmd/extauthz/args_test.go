package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsAfterArguments: every command takes its flags before or after
// its positional arguments (the flag package alone stops at the first
// one, and `check FILE --explain` printed a bare usage); after "--" all is
// positional; a wrong argument count says what was wanted.
func TestFlagsAfterArguments(t *testing.T) {
	t.Setenv("EXTAUTHZ_CONFIG", "")
	req := "examples/requests/search-allowed.json"
	list := filepath.Join(t.TempDir(), "list.json")
	if err := os.WriteFile(list, []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		give     []string
		wantCode int
		wantOut  string // a substring of stdout
		wantErr  string // a substring of stderr
	}{
		{name: "check FILE --json", give: []string{"check", req, "--config", "examples/config.yaml", "--json"}, wantOut: `"reason":"allowed"`},
		{name: "check --list-response FILE --explain", give: []string{"check", "--config", "examples/config.yaml", "--list-response", list, "--explain"},
			wantOut: "keep   tools              search  (allow rule"},
		{name: "test DIR -v", give: []string{"test", "examples/", "-v"}, wantOut: "PASS examples/policy_test.yaml:12: search is allowed"},
		{name: "pin FILE --server-id", give: []string{"pin", list, "--server-id", "2026"}, wantOut: "  \"2026\":\n    search: ["},
		{name: "approve FILE --sub", give: []string{"approve", req, "--config", "examples/config.yaml", "--sub", "alice"}, wantOut: "eyJ"},
		{name: "a bad flag after FILE is named", give: []string{"check", req, "--nope"}, wantCode: 2, wantErr: "check: flag provided but not defined: -nope"},
		{name: "after -- a flag is an argument", give: []string{"check", "--config", "examples/config.yaml", "--", req, "--json"}, wantCode: 2,
			wantErr: "check: want one FILE (- for stdin), got 2 arguments: " + req + " --json"},
		{name: "check without FILE", give: []string{"check", "--config", "examples/config.yaml"}, wantCode: 2, wantErr: "usage: extauthz check"},
		{name: "check without FILE says so", give: []string{"check", "--config", "examples/config.yaml"}, wantCode: 2, wantErr: "\ncheck: want one FILE (- for stdin), got none"},
		{name: "approve with two inputs", give: []string{"approve", "--config", "examples/config.yaml", "--sub", "alice", req, req}, wantCode: 2,
			wantErr: "approve: want one input (- for stdin) or --digest, got 2 arguments"},
		{name: "validate without POLICY", give: []string{"validate"}, wantCode: 2, wantErr: "validate: want a POLICY.yaml at least, got none"},
		{name: "pin without RESPONSE", give: []string{"pin", "--server-id", "s"}, wantCode: 2, wantErr: "pin: want a RESPONSE file at least"},
		{name: "token takes no argument, before or after flags", give: []string{"token", "x", "--sub", "bob"}, wantCode: 2, wantErr: `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, tt.give...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, want %d with stdout %q and stderr %q\nstdout %s\nstderr %s", code, tt.wantCode, tt.wantOut, tt.wantErr, out, errs)
			}
		})
	}
	// A lone - is stdin, an argument, wherever it stands.
	b, err := os.ReadFile(req)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runStdin(t, string(b), "check", "-", "--config", "examples/config.yaml", "--json"); code != 0 || !strings.Contains(out, `"reason":"allowed"`) {
		t.Errorf("check - --json: exit %d %s %s", code, out, errs)
	}
}

// TestHelpOfEveryCommand: -h of every command prints its usage line in
// one form, "usage: extauthz COMMAND", then its flags (validate has
// none); exit 0.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, cmd := range []string{"serve", "check", "test", "validate", "pin", "token", "approve", "healthcheck", "envoy-drain"} {
		t.Run(cmd, func(t *testing.T) {
			code, out, errs := runOut(t, cmd, "-h")
			if code != 0 || out != "" || !strings.HasPrefix(errs, "usage: extauthz "+cmd+" ") || strings.Contains(errs, "Usage of") || (cmd != "validate" && !strings.Contains(errs, "\n  -")) {
				t.Errorf("exit %d, stdout %q, stderr\n%s", code, out, errs)
			}
		})
	}
}
