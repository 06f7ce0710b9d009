package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// The tests run in cmd/extauthz; the quick-start files are two levels up.
func init() {
	if err := os.Chdir(filepath.Join("..", "..")); err != nil {
		panic(err)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func TestCheckCommand(t *testing.T) {
	tests := []struct {
		give     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"examples/requests/search-allowed.json"}, 0, "reason:         allowed"},
		{[]string{"examples/requests/delete-repo-denied.json"}, 1, "reason:         policy_denied"},
		{[]string{"examples/requests/big-refund-ask.json"}, 1, "decision:       ask"},
		{[]string{"--server-id", "billing", "examples/requests/search-allowed.json"}, 0, "server:         billing"},
		{[]string{"no/such/file.json"}, 2, ""},
		{[]string{"--policy", "README.md", "examples/requests/search-allowed.json"}, 2, ""},
		{[]string{}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.give, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(t.Context(), append([]string{"check", "--config", "examples/config.yaml"}, tt.give...), &out, &errb)
			if got := exitCode(err); got != tt.wantCode {
				t.Fatalf("exit %d, want %d (err %v, stderr %s)", got, tt.wantCode, err, errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out.String())
			}
		})
	}
}

// TestCheckVerifiesWithJWKS: with --jwks-file the captured token is verified;
// the corpus placeholder token is refused, a minted one accepted.
func TestCheckVerifiesWithJWKS(t *testing.T) {
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("examples/requests/search-allowed.json")
	if err != nil {
		t.Fatal(err)
	}
	withTok := strings.Replace(string(src), "PLACEHOLDER_TOKEN", strings.TrimSpace(tok.String()), 1)
	f := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(f, []byte(withTok), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"check", "--config", "examples/config.yaml", "--jwks-file", "examples/jwks.json", f}, &out, io.Discard); err != nil {
		t.Fatalf("minted token: %v\n%s", err, out.String())
	}
	out.Reset()
	err = run(t.Context(), []string{"check", "--config", "examples/config.yaml", "--jwks-file", "examples/jwks.json", "examples/requests/search-allowed.json"}, &out, io.Discard)
	if exitCode(err) != 1 || !strings.Contains(out.String(), "token_malformed") {
		t.Fatalf("placeholder token: exit %d\n%s", exitCode(err), out.String())
	}
}

func TestServeConfig(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok"}

	c, err := parseServeConfig(base, getenv, io.Discard)
	if err != nil || c.GRPCAddr != "127.0.0.1:9191" || len(c.Audiences) != 1 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	env["EXTAUTHZ_AUDIENCE"] = "https://a.example/mcp, https://b.example/mcp"
	env["EXTAUTHZ_SERVER_ID"] = "from-env"
	env["EXTAUTHZ_POLICY"] = "examples/policy.yaml"
	env["EXTAUTHZ_ISSUER"] = "https://idp.example.com"
	env["EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK"] = "true"
	c, err = parseServeConfig([]string{"--server-id", "from-flag"}, getenv, io.Discard)
	if err != nil || c.ServerID != "from-flag" || strings.Join(c.Audiences, " ") != "https://a.example/mcp https://b.example/mcp" {
		t.Fatalf("env: %+v %v", c, err)
	}
	env = map[string]string{}
	c, err = parseServeConfig([]string{"--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:7000"}, getenv, io.Discard)
	if err != nil || c.ServerID != "payments" || c.JWKSFile != "examples/jwks.json" || c.PolicyFile != "examples/policy.yaml" || c.GRPCAddr != "127.0.0.1:7000" {
		t.Fatalf("config file (paths relative to it): %+v %v", c, err)
	}
	abs, _ := filepath.Abs("examples/config.yaml")
	if c, err = parseServeConfig([]string{"--config", abs}, getenv, io.Discard); err != nil || c.PolicyFile != filepath.Join(filepath.Dir(abs), "policy.yaml") {
		t.Fatalf("absolute config path: %+v %v", c, err)
	}
	// The flag table (docs/configuration.md): EXTAUTHZ_CONFIG names the file too; an interval
	// of 0 turns the timed key refresh off.
	env["EXTAUTHZ_CONFIG"] = "examples/config.yaml"
	if c, err = parseServeConfig([]string{"--jwks-refresh-interval", "0"}, getenv, io.Discard); err != nil || c.ServerID != "payments" || c.JWKSRefresh != 0 {
		t.Fatalf("EXTAUTHZ_CONFIG and --jwks-refresh-interval 0: %+v %v", c, err)
	}
	delete(env, "EXTAUTHZ_CONFIG")
	env["EXTAUTHZ_SERVER_ID_BY_PRINCIPAL"] = "spiffe://cluster.local/ns/a/sa/a=alpha, spiffe://cluster.local/ns/b/sa/b=beta"
	if c, err = parseServeConfig(base, getenv, io.Discard); err != nil || len(c.ServersByPrincipal) != 2 || c.ServersByPrincipal["spiffe://cluster.local/ns/b/sa/b"] != "beta" {
		t.Fatalf("--server-id-by-principal from the environment: %+v %v", c.ServersByPrincipal, err)
	}
	delete(env, "EXTAUTHZ_SERVER_ID_BY_PRINCIPAL")
	t.Setenv("EXTAUTHZ_SERVERID", "typo")
	var warn bytes.Buffer
	if _, err := parseServeConfig(base, getenv, &warn); err != nil || !strings.Contains(warn.String(), "EXTAUTHZ_SERVERID matches no flag") {
		t.Fatalf("unknown EXTAUTHZ_ variable: %v, stderr %q", err, warn.String())
	}

	bad := []struct {
		name string
		give []string
		want string
	}{
		{"no policy", []string{"--issuer", "https://i", "--audience", "y"}, "--policy is required"},
		{"no issuer", []string{"--policy", "p", "--audience", "y"}, "--issuer is required"},
		{"no audience", []string{"--policy", "p", "--issuer", "https://i"}, "--audience is required"},
		{"issuer without scheme", []string{"--policy", "p", "--issuer", "idp.example.com", "--audience", "y"}, "want an absolute https URL"},
		{"plain http issuer", []string{"--policy", "p", "--issuer", "http://idp.example.com", "--audience", "y"}, "want https"},
		{"unknown flag", []string{"--bogus"}, "serve: flag provided but not defined: -bogus"},
		{"negative key refresh", append(base, "--jwks-refresh-interval", "-1s"), "must not be negative"},
		{"unknown config key", []string{"--config", "examples/README.md"}, "config examples/README.md"},
		{"principal mapping without an id", append(base, "--server-id-by-principal", "spiffe://cluster.local/ns/a/sa/a"), "want spiffe://"},
		{"principal mapping not a SPIFFE id", append(base, "--server-id-by-principal", "a=b"), "want spiffe://"},
		{"principal mapped twice", append(base, "--server-id-by-principal", "spiffe://x/ns/a/sa/a=1", "--server-id-by-principal", "spiffe://x/ns/a/sa/a=2"), "maps to both"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseServeConfig(tt.give, getenv, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestServeStartFailures: a missing or invalid policy exits non-zero with a
// one-line reason naming file and line.
func TestServeStartFailures(t *testing.T) {
	dir := t.TempDir()
	badPolicy := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badPolicy, []byte("default: deny\nallow:\n  - match: \"*/x\"\n    when: args.x >\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ policy, want string }{
		{filepath.Join(dir, "missing.yaml"), "no such file"},
		{badPolicy, badPolicy + ":4:"},
	} {
		err := run(t.Context(), []string{"serve", "--policy", tt.policy, "--issuer", "https://i", "--audience", "https://mcp.example.com/mcp", "--grpc-addr", "127.0.0.1:0", "--state-store-memory-per-replica-ok"}, io.Discard, io.Discard)
		if err == nil || exitCode(err) == 0 || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("policy %s: err = %v, want one line containing %q", tt.policy, err, tt.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine;
// every write is signalled, so a reader waits for output rather than
// sleeping.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // coalescing: a buffer of one, sent without blocking
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	select {
	case s.written <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) signal() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	return s.written
}

// waitFor waits, on writes, until the output matches re, and returns the
// submatches; nil after timeout.
func (s *syncBuffer) waitFor(re *regexp.Regexp, timeout time.Duration) []string {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if m := re.FindStringSubmatch(s.String()); m != nil {
			return m
		}
		select {
		case <-s.signal():
		case <-deadline.C:
			return nil
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeQuickStart runs README's quick-start: serve on the example config,
// mint a token, decide the example requests over gRPC, probe health, stop.
func TestServeQuickStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "", "--drain-period", "0s"}, io.Discard, &stderr)
	}()
	var addr string
	if m := stderr.waitFor(regexp.MustCompile(`"grpc_addr":"([^"]+)"`), 10*time.Second); m != nil {
		addr = m[1]
	}
	if addr == "" {
		cancel()
		t.Fatalf("serve did not start: %s %v", stderr.String(), <-done)
	}
	if err := run(t.Context(), []string{"healthcheck", "--addr", addr}, io.Discard, io.Discard); err != nil {
		t.Fatalf("healthcheck: %v", err)
	}
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	// README's way: extauthz check --addr sends the request to the service.
	for file, wantCode := range map[string]int{"examples/requests/search-allowed.json": 0, "examples/requests/delete-repo-denied.json": 1} {
		var out bytes.Buffer
		err := run(t.Context(), []string{"check", "--addr", addr, "--token", tok.String(), file}, &out, io.Discard)
		if exitCode(err) != wantCode || !strings.Contains(out.String(), "policy_version: ") {
			t.Errorf("check --addr %s: exit %d (%v), want %d\n%s", file, exitCode(err), err, wantCode, out.String())
		}
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"check", "--addr", addr, "examples/requests/search-allowed.json"}, &out, io.Discard); exitCode(err) != 1 || !strings.Contains(out.String(), "token_malformed") {
		t.Errorf("check --addr with the corpus placeholder token: exit %d\n%s", exitCode(err), out.String())
	}
	for file, wantOK := range map[string]bool{"examples/requests/search-allowed.json": true, "examples/requests/delete-repo-denied.json": false} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := capture.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		c.Headers["authorization"] = "Bearer " + strings.TrimSpace(tok.String())
		resp, err := client.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetOkResponse() != nil; got != wantOK {
			t.Errorf("%s: allowed = %v, want %v (%v)", file, got, wantOK, resp.GetStatus())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after shutdown", err)
	}
}

// startServe runs `extauthz serve args...` until the test ends and returns
// its gRPC and HTTP addresses, read from its stderr.
func startServe(t *testing.T, args ...string) (grpcAddr, httpAddr string, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stderr = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	grpcRE := regexp.MustCompile(`"grpc_addr":"([^"]+)"`)
	httpRE := regexp.MustCompile(`"http_addr":"([^"]+)"`)
	if g, h := stderr.waitFor(grpcRE, 10*time.Second), stderr.waitFor(httpRE, 10*time.Second); g != nil && h != nil {
		return g[1], h[1], stderr
	}
	t.Fatalf("serve did not start: %s", stderr.String())
	return "", "", nil
}

// TestServeIdentityProviderDown: started while the identity provider is
// down, serve is not ready and denies with idp_unavailable; once the
// provider answers it becomes ready and allows, without a restart.
func TestServeIdentityProviderDown(t *testing.T) {
	jwks, err := os.ReadFile("examples/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(jwks, &set); err != nil || len(set.Keys) == 0 {
		t.Fatalf("examples/jwks.json: %v", err)
	}
	// The provider publishes the quick start's key set as it is.
	idp := testkit.NewIdP(t)
	idp.SetExtraKeys(set.Keys...)
	idp.Down.Store(true)

	grpcAddr, httpAddr, stderr := startServe(t, "--policy", "examples/policy.yaml", "--issuer", idp.Issuer(),
		"--audience", "https://mcp.example.com/mcp", "--server-id", "payments",
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--state-store-memory-per-replica-ok")
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--issuer", idp.Issuer(), "--audience", "https://mcp.example.com/mcp"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("examples/requests/search-allowed.json")
	c, err := capture.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	c.Headers["authorization"] = "Bearer " + strings.TrimSpace(tok.String())
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	reason := func() string {
		resp, err := client.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatalf("Check: RPC error %v", err)
		}
		return resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue()
	}

	if got, _ := testkit.Get(t, "http://"+httpAddr+"/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the provider down = %d, want 503", got)
	}
	// Every metric exists from start, at zero, and the first failures of
	// the identity provider are counted before any Check.
	early := scrape(t, httpAddr)
	for _, want := range []string{
		`mcp_extauthz_decisions_total{decision="deny",dry_run="false",method="none",reason="token_expired",server="none"} 0`,
		`mcp_extauthz_decisions_total{decision="ask",dry_run="false",method="none",reason="authorization_required",server="none"} 0`,
		`mcp_extauthz_token_verification_failures_total{reason="token_wrong_audience"} 0`,
		`mcp_extauthz_shadow_matches_total{decision="deny"} 0`,
		`mcp_extauthz_token_cache_total{result="hit"} 0`,
		`mcp_extauthz_keyset_refreshes_total{result="error"} 0`,
		`mcp_extauthz_policy_reload_errors_total 0`,
		`mcp_extauthz_checks_in_flight 0`,
		`mcp_extauthz_check_duration_seconds_count{decision="allow"} 0`,
		`mcp_extauthz_ready 0`,
		`mcp_extauthz_oidc_discovery_total{result="ok"} 0`,
		`mcp_extauthz_dry_run 0`,
		`mcp_extauthz_policy_last_reload_successful 1`,
		`mcp_extauthz_state_store_requests_total{op="claim",result="error"} 0`,
		`mcp_extauthz_decision_log_dropped_total{sink="stdout"} 0`,
		`mcp_extauthz_decision_log_write_errors_total{sink="stdout"} 0`,
		`mcp_extauthz_dpop_replay_cache_entries 0`,
		`mcp_extauthz_build_info{commit=`,
	} {
		if !strings.Contains(early, want) {
			t.Errorf("/metrics at start lacks %s", want)
		}
	}
	discoveryFailed := regexp.MustCompile(`mcp_extauthz_oidc_discovery_total\{result="error"\} [1-9]`)
	for deadline := time.Now().Add(10 * time.Second); !discoveryFailed.MatchString(scrape(t, httpAddr)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failed discovery at start is not counted in oidc_discovery_total")
		}
	}
	if got, _ := testkit.Get(t, "http://"+httpAddr+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", got)
	}
	if got := reason(); got != string(decision.ReasonIdPUnavailable) {
		t.Fatalf("provider down: reason %s, want idp_unavailable", got)
	}
	idp.Down.Store(false)
	// The key refresher retries with backoff and logs when the provider
	// is back; from then on serve is ready.
	if stderr.waitFor(regexp.MustCompile(`identity provider ready`), 15*time.Second) == nil {
		t.Fatalf("not ready 15s after the provider came up: %s", stderr.String())
	}
	if got, _ := testkit.Get(t, "http://"+httpAddr+"/readyz"); got != http.StatusOK {
		t.Errorf("/readyz once the provider is back = %d, want 200", got)
	}
	if got := reason(); got != string(decision.ReasonAllowed) {
		t.Fatalf("provider up: reason %s, want allowed", got)
	}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcp_extauthz_decisions_total{decision="deny",dry_run="false",method="tools/call",reason="idp_unavailable",server="payments"} 1`,
		`mcp_extauthz_decisions_total{decision="allow",dry_run="false",method="tools/call",reason="allowed",server="payments"} 1`,
		`mcp_extauthz_keyset_refreshes_total{result="ok"}`,
		`mcp_extauthz_ready 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// scrape returns the /metrics text of the service at httpAddr.
func scrape(t *testing.T, httpAddr string) string {
	t.Helper()
	_, body := testkit.Get(t, "http://"+httpAddr+"/metrics")
	return body
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"--version"}, {"version"}, {"check", "-h"}, {"serve", "-h"}, {"token", "-h"}, {"approve", "-h"}, {"validate", "-h"}, {"test", "-h"}, {"healthcheck", "-h"}, {"envoy-drain", "-h"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, &out, io.Discard); exitCode(err) != 0 {
			t.Errorf("%v: exit %d (%v)", args, exitCode(err), err)
		}
	}
	if err := run(t.Context(), []string{"bogus"}, io.Discard, io.Discard); exitCode(err) != 2 {
		t.Errorf("unknown command: exit %d", exitCode(err))
	}
}

// TestVersionFromLinker: the Dockerfile's -X main.buildVersion is what
// `extauthz version` prints.
func TestVersionFromLinker(t *testing.T) {
	old := buildVersion
	t.Cleanup(func() { buildVersion = old })
	buildVersion = "1.2.3"
	var out bytes.Buffer
	if err := run(t.Context(), []string{"version"}, &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "extauthz 1.2.3") {
		t.Errorf("version = %q (%v), want extauthz 1.2.3", out.String(), err)
	}
}

// TestApprovalLoop runs README's approval loop on the quick-start config:
// ask denial → extauthz approve → retry allowed → the same approval again
// denied (approval_replayed).
func TestApprovalLoop(t *testing.T) {
	addr, _, _ := startServe(t, "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s")
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(tok.String())
	req := "examples/requests/big-refund-ask.json"
	checkJSON := func(extra ...string) (int, map[string]string) {
		t.Helper()
		var out bytes.Buffer
		err := run(t.Context(), append([]string{"check", "--addr", addr, "--token", token, "--json"}, append(extra, req)...), &out, io.Discard)
		var m map[string]string
		if jerr := json.Unmarshal(out.Bytes(), &m); jerr != nil {
			t.Fatalf("check output %q: %v (%v)", out.String(), jerr, err)
		}
		return exitCode(err), m
	}
	code, ask := checkJSON()
	if code != 1 || ask["reason"] != "authorization_required" {
		t.Fatalf("first check: exit %d %v", code, ask)
	}
	// --json carries the decision id the service logged and put in the body.
	if id := ask["decision_id"]; !decisionIDs.MatchString(id) || len(id) != 32 || !strings.Contains(ask["http_body"], `"decision_id":"`+id+`"`) {
		t.Errorf("decision_id %q: want the 32-hex id of the denial body %s", id, ask["http_body"])
	}
	askFile := filepath.Join(t.TempDir(), "ask.json")
	b, _ := json.Marshal(ask)
	if err := os.WriteFile(askFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var appr bytes.Buffer
	if err := run(t.Context(), []string{"approve", "--config", "examples/config.yaml", "--sub", "alice", "--approver", "bob", askFile}, &appr, io.Discard); err != nil {
		t.Fatalf("approve: %v", err)
	}
	// The same digest computed by approve from the captured request itself.
	var appr2 bytes.Buffer
	if err := run(t.Context(), []string{"approve", "--config", "examples/config.yaml", "--sub", "alice", req}, &appr2, io.Discard); err != nil {
		t.Fatalf("approve from the request: %v", err)
	}
	payload := func(jws string) map[string]any {
		parts := strings.Split(strings.TrimSpace(jws), ".")
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	if d1, d2 := payload(appr.String())["digest"], payload(appr2.String())["digest"]; d1 != ask["request_digest"] || d2 != d1 {
		t.Fatalf("approval digests %v, %v; ask denial names %s", d1, d2, ask["request_digest"])
	}
	if code, m := checkJSON("--approval", appr.String()); code != 0 || m["reason"] != "allowed" {
		t.Fatalf("retry with the approval: exit %d %v", code, m)
	}
	if code, m := checkJSON("--approval", appr.String()); code != 1 || m["reason"] != "approval_replayed" {
		t.Fatalf("second retry with the same approval: exit %d %v", code, m)
	}
	if code, m := checkJSON("--approval", appr2.String()); code != 0 || m["reason"] != "allowed" {
		t.Fatalf("a second, fresh approval: exit %d %v", code, m)
	}
}

func TestApproveCommandErrors(t *testing.T) {
	tests := []struct {
		give []string
	}{
		{[]string{"approve", "examples/requests/big-refund-ask.json"}},                                                                                                       // no --sub
		{[]string{"approve", "--config", "examples/config.yaml", "--sub", "alice"}},                                                                                          // no input
		{[]string{"approve", "--config", "examples/config.yaml", "--sub", "alice", "--digest", "md5:abc"}},                                                                   // bad digest
		{[]string{"approve", "--config", "examples/config.yaml", "--sub", "alice", "--key", "examples/approver-jwks.json", "--digest", "sha256:" + strings.Repeat("0", 64)}}, // public key
		{[]string{"check", "--config", "examples/config.yaml", "--approval", "x", "examples/requests/big-refund-ask.json"}},                                                  // offline approval
	}
	for _, tt := range tests {
		if err := run(t.Context(), tt.give, io.Discard, io.Discard); exitCode(err) != 2 {
			t.Errorf("%v: exit %d (%v), want 2", tt.give, exitCode(err), err)
		}
	}
}

// TestServeBindingFlags: approval, idempotency and concealment flags are
// validated at start-up, one line each.
func TestServeBindingFlags(t *testing.T) {
	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://i", "--audience", "https://mcp.example.com/mcp"}
	tests := []struct {
		give []string
		want string
	}{
		{[]string{"--state-store", "postgres://x"}, "--state-store"},
		{[]string{"--state-store", "redis"}, "--state-store"},
		{[]string{"--approver-jwks-file", "examples/approver-jwks.json"}, "needs --approver-issuer"},
		{[]string{"--approver-issuer", "http://approvals.example.com"}, "--approver-issuer"},
		{[]string{"--approval-url", "/relative?d={digest}"}, "--approval-url"},
		{[]string{"--conceal-as", "python"}, "--conceal-as"},
		{[]string{"--idempotency-ttl", "0s"}, "must be positive"},
		{[]string{"--idempotency-header", "Bad Header"}, "--idempotency-header"},
	}
	for _, tt := range tests {
		_, err := parseServeConfig(append(append([]string{"--state-store-memory-per-replica-ok"}, base...), tt.give...), func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want one line containing %q", tt.give, err, tt.want)
		}
	}
	c, err := parseServeConfig(append(base, "--state-store", "redis://127.0.0.1:6379/0", "--approver-issuer", "https://approvals.example.com",
		"--approver-jwks-file", "examples/approver-jwks.json", "--conceal-as", "typescript-sdk"), func(string) string { return "" }, io.Discard)
	if err != nil || c.StateStore != "redis://127.0.0.1:6379/0" || c.IdempotencyHeader != "Idempotency-Key" || c.ConcealJSONResponse {
		t.Errorf("valid flags: %v %+v", err, c)
	}
	// --conceal-json-response, as a flag and as EXTAUTHZ_CONCEAL_JSON_RESPONSE.
	if c, err = parseServeConfig(append(base, "--state-store-memory-per-replica-ok", "--conceal-json-response"), func(string) string { return "" }, io.Discard); err != nil || !c.ConcealJSONResponse {
		t.Errorf("--conceal-json-response: %v %+v", err, c)
	}
	env := func(k string) string {
		if k == "EXTAUTHZ_CONCEAL_JSON_RESPONSE" {
			return "true"
		}
		return ""
	}
	if c, err = parseServeConfig(append(base, "--state-store-memory-per-replica-ok"), env, io.Discard); err != nil || !c.ConcealJSONResponse {
		t.Errorf("EXTAUTHZ_CONCEAL_JSON_RESPONSE=true: %v %+v", err, c)
	}
}

// TestServeStderrIsJSON: everything serve writes on stderr is a JSON line,
// from a flag or policy error to a clean stop, and no line carries a stack
// trace.
func TestServeStderrIsJSON(t *testing.T) {
	dir := t.TempDir()
	badPolicy := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badPolicy, []byte("default: deny\nallow: [{match: x, shadow: yes}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--grpc-addr", "127.0.0.1:0", "--http-addr", "", "--state-store-memory-per-replica-ok"}
	tests := []struct {
		name string
		give []string
		want string // in the error line
	}{
		{name: "unknown flag", give: []string{"--bogus"}, want: "flag provided but not defined"},
		{name: "missing issuer", give: []string{"--policy", "examples/policy.yaml", "--audience", "https://mcp.example.com/mcp"}, want: "--issuer is required"},
		{name: "bad log level", give: append([]string{"--policy", "examples/policy.yaml", "--log-level", "loud"}, base...), want: "--log-level"},
		{name: "bad policy", give: append([]string{"--policy", badPolicy}, base...), want: badPolicy + ":2:"},
		{name: "port in use", give: []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--grpc-addr", "256.0.0.1:1", "--state-store-memory-per-replica-ok"}, want: "256.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("EXTAUTHZ_SERVERID", "typo") // a warning line too
			var stderr bytes.Buffer
			err := run(t.Context(), append([]string{"serve"}, tt.give...), io.Discard, &stderr)
			if exitCode(err) == 0 {
				t.Fatalf("exit 0, want an error")
			}
			var ee *exitError
			if !errors.As(err, &ee) || !ee.logged {
				t.Errorf("error %v not marked logged: main would print it again as text", err)
			}
			lines := jsonLines(t, stderr.String())
			last := lines[len(lines)-1]
			if last["level"] != "error" || !strings.Contains(fmt.Sprint(last["error"]), tt.want) {
				t.Errorf("last line %v, want an error line with %q", last, tt.want)
			}
		})
	}

	// A clean run: start, serve, stop.
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s"}, io.Discard, &stderr)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), `"grpc_addr"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := jsonLines(t, stderr.String())
	if msg := lines[len(lines)-1]["msg"]; msg != "stopped" {
		t.Errorf("last line %v, want stopped", lines[len(lines)-1])
	}
}

// jsonLines parses every line of s as a JSON object without a stack trace.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q\nall:\n%s", line, s)
		}
		if _, ok := m["stacktrace"]; ok {
			t.Errorf("stderr line has a stack trace: %q", line)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatal("no stderr lines")
	}
	return out
}
