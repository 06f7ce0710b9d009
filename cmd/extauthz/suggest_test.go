package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOSADistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"policy", "policy", 0},
		{"polcy", "policy", 1},       // deletion
		{"poliicy", "policy", 1},     // insertion
		{"polixy", "policy", 1},      // substitution
		{"polciy", "policy", 1},      // transposition
		{"audiences", "audience", 1}, // a plural
		{"serverid", "server-id", 1},
		{"ca", "abc", 3}, // optimal string alignment, not unrestricted Damerau-Levenshtein (2)
		{"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := osaDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("osaDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := osaDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("osaDistance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearestNames(t *testing.T) {
	names := []string{"policy", "issuer", "audience", "server-id", "server-id-by-principal", "approver-issuer", "approver-jwks-file",
		"max-json-depth", "max-json-keys", "max-json-elements", "dry-run", "jwks-file"}
	tests := []struct {
		give string
		want []string
	}{
		{"polcy", []string{"policy"}},
		{"POLICY", []string{"policy"}}, // flags are case-sensitive
		{"policy", nil},                // the name itself is not unknown
		{"Polcy", []string{"policy"}},
		{"audiences", []string{"audience"}},
		{"serverid", []string{"server-id"}},
		{"server_id", []string{"server-id"}},
		{"dryrun", []string{"dry-run"}},
		{"isuer", []string{"issuer"}},
		{"approver", []string{"approver-issuer", "approver-jwks-file"}},                // a prefix of two
		{"max-json", []string{"max-json-depth", "max-json-elements", "max-json-keys"}}, // at most 3
		{"policy-file", []string{"policy"}},                                            // the flag, then more
		{"jwks", []string{"jwks-file"}},
		{"jwk", nil},                        // short: only an edit away counts (none is), no prefix
		{"bogus", nil},                      // nothing close
		{"xyzzyplugh", nil},                 // nothing close
		{"ploicyy", nil},                    // 2 edits on a short name: too far
		{"audeinces", []string{"audience"}}, // 2 edits on a long name
	}
	for _, tt := range tests {
		if got := nearestNames(tt.give, names); !slices.Equal(got, tt.want) {
			t.Errorf("nearestNames(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestServeReportsEveryProblem: serve's configuration errors name every
// problem in one line ("; " between), typos of flags and config keys with
// the nearest name; bad flags exit 2, the rest 1.
func TestServeReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	conf := func(body string) string {
		f, err := os.CreateTemp(dir, "config-*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(body); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return f.Name()
	}
	typos := conf("policy: " + must(filepath.Abs("examples/policy.yaml")) + "\naudiences: [https://mcp.example.com/mcp]\nisuer: https://idp.example.com\nstate-store-memory-per-replica-ok: true\nzzzzzz: 1\n")
	tests := []struct {
		name     string
		give     []string
		wantCode int
		want     []string // each in the error
		notWant  []string
	}{
		{name: "a flag typo and what it leaves missing", give: []string{"-polcy", "examples/policy.yaml", "--issuer", "https://idp.example.com"},
			wantCode: 2, want: []string{"serve: flag provided but not defined: -polcy (did you mean --policy?)", "--policy is required", "--audience is required"},
			notWant: []string{"unexpected argument"}}, // examples/policy.yaml is taken for -polcy's value
		{name: "two flag typos, both named", give: []string{"--polcy=examples/policy.yaml", "--isuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp"},
			wantCode: 2, want: []string{"-polcy (did you mean --policy?)", "-isuer (did you mean --issuer?)", "--policy is required", "--issuer is required"}},
		{name: "a boolean flag's typo takes no value", give: []string{"--dryrun", "x"},
			wantCode: 2, want: []string{"-dryrun (did you mean --dry-run?)", `unexpected argument "x"`}},
		{name: "an unknown flag with nothing close", give: []string{"--bogus"},
			wantCode: 2, want: []string{"serve: flag provided but not defined: -bogus (extauthz serve -h lists the flags)", "--policy is required"}, notWant: []string{"did you mean"}},
		{name: "a bad value and a typo", give: []string{"--max-body-bytes", "lots", "--audiense", "https://mcp.example.com/mcp"},
			wantCode: 2, want: []string{`invalid value "lots" for flag -max-body-bytes`, "-audiense (did you mean --audience?)"}},
		{name: "config keys: typos suggested, nothing close not", give: []string{"--config", typos},
			wantCode: 1, want: []string{`unknown key "audiences" (did you mean "audience"?)`, `unknown key "isuer" (did you mean "issuer"?)`, `unknown key "zzzzzz"; `,
				"--issuer is required", "--audience is required"}},
		{name: "every missing setting", give: nil,
			wantCode: 1, want: []string{"--policy is required", "--issuer is required", "--audience is required"}},
		{name: "invalid values, all of them", give: []string{"--policy", "p", "--issuer", "idp.example.com", "--audience", "payments", "--denial-status", "sometimes",
			"--log-level", "loud", "--max-body-bytes", "0", "--seam-deadline", "0s", "--drain-period", "-1s", "--decision-jwks-out", "j", "--tls-cert-file", "c", "--state-store-memory-per-replica-ok"},
			wantCode: 1, want: []string{`--issuer "idp.example.com": want an absolute https URL`, `--audience "payments"`, "--denial-status", "--log-level", "--max-body-bytes must be positive",
				"--seam-deadline must be positive", "--drain-period and --shutdown-timeout must not be negative", "--decision-jwks-out needs --decision-key-file", "--tls-cert-file, --tls-key-file and --client-ca-file go together"}},
		{name: "every bad audience", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "payments", "--audience", "https://ok.example/mcp", "--audience", "orders",
			"--state-store-memory-per-replica-ok"},
			wantCode: 1, want: []string{`--audience "payments"`, `--audience "orders"`}, notWant: []string{"ok.example"}},
		{name: "every bad approval and idempotency setting", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp",
			"--approval-url", "/relative", "--idempotency-header", "Bad Header", "--conceal-as", "cobol-sdk", "--idempotency-ttl", "0s", "--approver-jwks-file", "k", "--state-store-memory-per-replica-ok"},
			wantCode: 1, want: []string{`--approval-url "/relative"`, `--idempotency-header "Bad Header"`, "--conceal-as", "--approval-max-lifetime and --idempotency-ttl must be positive",
				"--approver-jwks-file needs --approver-issuer"}},
		{name: "every bad decision log setting", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok",
			"--decision-log", "syslog,stdout,stdout,file,otlp", "--decision-log-buffer-bytes", "0", "--decision-log-sample-allowed", "2", "--decision-log-overflow", "wait"},
			wantCode: 1, want: []string{`--decision-log "syslog": want stdout, file or otlp`, "--decision-log names stdout twice", "--decision-log file and --decision-log-file go together",
				"--decision-log-buffer-bytes must be positive", "--decision-log-sample-allowed 2: want a number in [0, 1]", "--decision-log-overflow: ", "--decision-log otlp needs --otlp-endpoint"}},
		{name: "every bad OTLP setting", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok",
			"--otlp-endpoint", "ftp://collector:4317", "--trace-sample-ratio", "1.5", "--otlp-ca-file", filepath.Join(dir, "absent-ca.pem"), "--otlp-cert-file", "c.pem",
			"--decision-log", "otlp", "--decision-log-file", "d.log"},
			wantCode: 1, want: []string{"--trace-sample-ratio 1.5: want a number in [0, 1]", `--otlp-endpoint "ftp://collector:4317": scheme "ftp"`, "--otlp-ca-file: open ",
				"--otlp-cert-file and --otlp-key-file go together", "--decision-log file and --decision-log-file go together"},
			notWant: []string{"needs --otlp-endpoint"}}, // the endpoint is there, malformed
		{name: "every bad introspection setting", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok",
			"--token-mode", "both", "--introspection-endpoint", "http://idp.example.com/introspect", "--introspection-client-secret-file", "s", "--introspection-client-key-file", "k",
			"--introspection-timeout", "0s"},
			wantCode: 1, want: []string{"--token-mode both needs --introspection-client-id", "--token-mode both needs --introspection-client-secret-file or --introspection-client-key-file, one of them",
				`--introspection-endpoint: introspection endpoint "http://idp.example.com/introspect": want https`, "--introspection-timeout must be positive"}},
		{name: "an unknown token mode and its flags' problems", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok",
			"--token-mode", "opaque", "--introspection-client-id", "c", "--introspection-endpoint", "idp.example.com/introspect"},
			wantCode: 1, want: []string{`--token-mode "opaque": want jwt, introspection or both`, "introspection needs --introspection-client-secret-file or --introspection-client-key-file",
				`introspection endpoint "idp.example.com/introspect": want an absolute https URL`}, notWant: []string{"needs --introspection-client-id"}},
		{name: "introspection flags in jwt mode, named, with the rest", give: []string{"--policy", "p", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok",
			"--introspection-client-id", "c", "--introspection-client-key-file", "k", "--decision-log", "syslog", "--otlp-endpoint", "ftp://collector:4317"},
			wantCode: 1, want: []string{"--introspection-client-id, --introspection-client-key-file need --token-mode introspection or both", `--decision-log "syslog"`, `--otlp-endpoint "ftp://collector:4317"`}},
		{name: "config keys: telemetry and introspection, all of them", give: []string{"--config", conf("policy: p\nissuer: idp.example.com\naudience: https://mcp.example.com/mcp\nstate-store-memory-per-replica-ok: true\n" +
			"decision-log: [syslog, file]\ndecision-log-sample-alowed: 0.5\ndecision-log-buffer-bytes: -1\notlp-endpoint: grpc://collector:4317/v1/traces\notlp-key-file: k.pem\n" +
			"token-mode: introspection\nintrospection-timeout: 0s\nintrospection-endpoint: https://idp.example.com/introspect#x\n")},
			wantCode: 1, want: []string{`unknown key "decision-log-sample-alowed" (did you mean "decision-log-sample-allowed"?)`, `--issuer "idp.example.com"`,
				`--decision-log "syslog"`, "--decision-log file and --decision-log-file go together", "--decision-log-buffer-bytes must be positive",
				"an OTLP/gRPC endpoint has no path", "--otlp-cert-file and --otlp-key-file go together",
				"--token-mode introspection needs --introspection-client-id", "--token-mode introspection needs --introspection-client-secret-file",
				`introspection endpoint "https://idp.example.com/introspect#x"`, "--introspection-timeout must be positive"}},
		{name: "flags, environment and file together", give: []string{"--config", typos, "--max-json-depth", "0", "--state-store-memory-per-replica-ok", "--server-id-by-principal", "a=b"},
			wantCode: 2, want: []string{"want spiffe://", `unknown key "audiences"`, "--max-json-* and --max-string-bytes must be positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseServeConfig(tt.give, func(string) string { return "" }, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			code := 1
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
			msg := err.Error()
			if code != tt.wantCode || strings.Contains(msg, "\n") {
				t.Errorf("exit %d, want %d, in one line: %s", code, tt.wantCode, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q missing from: %s", w, msg)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("%q in: %s", w, msg)
				}
			}
		})
	}
}

// TestServeConfigProblemsAreErrors: each problem stays an error of its
// own for errors.Is and errors.As.
func TestServeConfigProblemsAreErrors(t *testing.T) {
	_, err := parseServeConfig([]string{"--config", filepath.Join(t.TempDir(), "absent.yaml")}, func(string) string { return "" }, io.Discard)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing config file: %v, not os.ErrNotExist", err)
	}
	_, err = parseServeConfig([]string{"--polcy", "p", "--config", filepath.Join(t.TempDir(), "absent.yaml")}, func(string) string { return "" }, io.Discard)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "did you mean --policy?") {
		t.Errorf("a flag typo and a missing config file: %v", err)
	}
}

// TestServeValidConfigsUnchanged: what parsed before still parses, to
// the same settings, without a warning.
func TestServeValidConfigsUnchanged(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want func(*Config) bool
	}{
		{"flags", []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok"},
			func(c *Config) bool {
				return c.PolicyFile == "examples/policy.yaml" && c.MaxBodyBytes == 1<<20 && c.LogLevel == "info"
			}},
		{"the quick-start config", []string{"--config", "examples/config.yaml"},
			func(c *Config) bool { return c.ServerID == "payments" && c.JWKSFile == "examples/jwks.json" }},
		{"flags after a positional-looking value", []string{"--config", "examples/config.yaml", "--log-level", "debug", "--dry-run"},
			func(c *Config) bool { return c.LogLevel == "debug" && c.DryRun }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c, err := parseServeConfig(tt.give, func(string) string { return "" }, &stderr)
			if err != nil || !tt.want(c) {
				t.Fatalf("err %v, config %+v", err, c)
			}
			if strings.Contains(stderr.String(), "did you mean") {
				t.Errorf("a suggestion for a valid config: %s", stderr.String())
			}
		})
	}
}

// TestUnknownEnvSuggests: an EXTAUTHZ_* variable that matches no flag is
// warned about with the nearest variable that does, flag or secret.
func TestUnknownEnvSuggests(t *testing.T) {
	tests := []struct {
		give string
		want string // the warning's tail
	}{
		{"EXTAUTHZ_SERVERID", "matches no flag; ignored (did you mean EXTAUTHZ_SERVER_ID?)"},
		{"EXTAUTHZ_POLCY", "matches no flag; ignored (did you mean EXTAUTHZ_POLICY?)"},
		{"EXTAUTHZ_AUDIENCES", "matches no flag; ignored (did you mean EXTAUTHZ_AUDIENCE?)"},
		{"EXTAUTHZ_STATE_STORE_PASWORD", "matches no flag; ignored (did you mean EXTAUTHZ_STATE_STORE_PASSWORD?)"},
		{"EXTAUTHZ_ZZZZZZ", "matches no flag; ignored\""},
	}
	fs := commandFlags("serve")
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			var stderr bytes.Buffer
			warnUnknownEnv(fs, []string{tt.give + "=x", "EXTAUTHZ_SERVER_ID=ok", envStateStorePassword + "=s"}, &stderr)
			if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, tt.give+" "+tt.want) {
				t.Errorf("got %s, want one warning ending %q", got, tt.want)
			}
		})
	}
}

// TestFlagTypoSuggestedEverywhere: every command's bad flags are named
// together, an unknown one with the nearest flag.
func TestFlagTypoSuggestedEverywhere(t *testing.T) {
	tests := []struct {
		give []string
		want string
	}{
		{[]string{"check", "--explan", "--confg", "examples/config.yaml", "examples/requests/search-allowed.json"},
			"check: flag provided but not defined: -explan (did you mean --explain?); flag provided but not defined: -confg (did you mean --config?) (extauthz check -h lists the flags)"},
		{[]string{"validate", "--nope", "examples/policy.yaml"}, "validate: flag provided but not defined: -nope (extauthz validate -h lists the flags)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.give, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(t.Context(), tt.give, io.Discard, &stderr)
			if exitCode(err) != 2 || !strings.Contains(err.Error()+stderr.String(), tt.want) {
				t.Errorf("exit %d, err %v, stderr %s; want %q", exitCode(err), err, stderr.String(), tt.want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
