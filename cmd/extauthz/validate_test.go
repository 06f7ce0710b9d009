package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateCommand(t *testing.T) {
	bad := testdataPT + "uncompilable/policy.yaml"
	tests := []struct {
		name     string
		give     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"the reference policy", []string{"examples/policy.yaml"}, 0, "ok examples/policy.yaml policy_version sha256:", ""},
		{"a policy that does not compile", []string{bad}, 1, bad + ":5:13: rule \"search\": shadow must be true or false", ""},
		{"one bad of two", []string{"examples/policy.yaml", bad}, 1, "FAIL " + bad + ": the policy does not compile", ""},
		{"a missing file", []string{"no/such/policy.yaml"}, 2, "", "no such file"},
		{"a compile failure wins over a missing file", []string{"no/such/policy.yaml", bad}, 1, "FAIL " + bad, "no such file"},
		{"a test file", []string{"examples/policy_test.yaml"}, 2, "", "is a policy test file: extauthz test examples/policy_test.yaml runs it"},
		{"no file", nil, 2, "", "usage: extauthz validate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, append([]string{"validate"}, tt.give...)...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s\nwant stdout %q, stderr %q", code, tt.wantCode, out, errs, tt.wantOut, tt.wantErr)
			}
		})
	}
}

// TestTestPolicyFile: `extauthz test POLICY.yaml` runs POLICY_test.yaml
// beside it; a policy without one, or whose neighbour tests another
// policy, is exit 2 with what to do.
func TestTestPolicyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lonely := write("lonely.yaml", "default: deny\n")
	write("other.yaml", "default: deny\n")
	elsewhere := write("elsewhere.yaml", "default: deny\n")
	write("elsewhere_test.yaml", "policy: other.yaml\nserver: s\ntests:\n  - name: x\n    body: {jsonrpc: \"2.0\", id: 1, method: ping}\n    want: {decision: deny}\n")
	tests := []struct {
		name     string
		give     []string
		wantCode int
		want     string
	}{
		{"the reference policy", []string{"examples/policy.yaml"}, 0, "PASS: 25 tests in 1 file\n"},
		{"the policy and its tests, once", []string{"examples/policy.yaml", "examples/policy_test.yaml"}, 0, "PASS: 25 tests in 1 file\n"},
		{"a policy without tests", []string{lonely}, 2, "is not a test file (*_test.yaml), and there is no " + strings.TrimSuffix(lonely, ".yaml") + "_test.yaml beside it; extauthz validate " + lonely + " only compiles the policy"},
		{"a neighbour that tests another policy", []string{elsewhere}, 2, "found for the policy " + elsewhere + ", tests " + filepath.Join(dir, "other.yaml")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, append([]string{"test"}, tt.give...)...)
			if code != tt.wantCode || !strings.Contains(out+errs, tt.want) {
				t.Errorf("exit %d, want %d with %q\nstdout %s\nstderr %s", code, tt.wantCode, tt.want, out, errs)
			}
		})
	}
}

// runOut runs the command line and returns its exit code, stdout, and
// stderr with the error main would print.
func runOut(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(t.Context(), args, &out, &errb)
	if err != nil && err.Error() != "" {
		errb.WriteString(err.Error())
	}
	return exitCode(err), out.String(), errb.String()
}

// TestValidateSchemaFiles: validate reads and compiles the schema files a
// policy's arguments name: a missing or unusable one fails.
func TestValidateSchemaFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("ok.json", `{"type":"object","properties":{"q":{"type":"string"}}}`)
	write("remote.json", `{"type":"object","properties":{"q":{"$ref":"https://example.com/q.json"}}}`)
	pol := func(file string) string {
		return write("p-"+file+".yaml", "default: deny\narguments:\n  servers:\n    s:\n      tools:\n        t: {mode: require, schema_file: "+file+"}\n")
	}
	for _, tt := range []struct {
		file     string
		wantCode int
		want     string
	}{
		{"ok.json", 0, "ok "},
		{"remote.json", 2, "schema unusable"},
		{"missing.json", 2, "no such file"},
	} {
		code, out, errs := runOut(t, "validate", pol(tt.file))
		if code != tt.wantCode || !strings.Contains(out+errs, tt.want) {
			t.Errorf("%s: exit %d (want %d), stdout %s stderr %s; want %q", tt.file, code, tt.wantCode, out, errs, tt.want)
		}
	}
}
