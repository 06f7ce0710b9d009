package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestTokenTypFlag: --token-typ is repeatable, read from EXTAUTHZ_TOKEN_TYP
// (comma-separated) and the config file like every list flag; a value that
// is not a media type, or is the type of another kind of JWT in any
// spelling, is a start-up error.
func TestTokenTypFlag(t *testing.T) {
	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok"}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c, err := parseServeConfig(append(base, "--token-typ", "application/okta-internal-at+jwt", "--token-typ", "vnd.example+jwt"), getenv, io.Discard)
	if err != nil || strings.Join(c.TokenTypes, " ") != "application/okta-internal-at+jwt vnd.example+jwt" {
		t.Fatalf("flags: %v %v", c, err)
	}
	env["EXTAUTHZ_TOKEN_TYP"] = "a+jwt, b+jwt"
	if c, err = parseServeConfig(base, getenv, io.Discard); err != nil || strings.Join(c.TokenTypes, " ") != "a+jwt b+jwt" {
		t.Fatalf("environment: %v %v", c, err)
	}
	delete(env, "EXTAUTHZ_TOKEN_TYP")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("token-typ: [c+jwt, application/d+jwt]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = parseServeConfig(append(base, "--config", cfg), getenv, io.Discard); err != nil || strings.Join(c.TokenTypes, " ") != "c+jwt application/d+jwt" {
		t.Fatalf("config file: %v %v", c, err)
	}
	for _, bad := range []string{"mcp-approval+jwt", "application/MCP-APPROVAL+JWT", "DPoP+JWT", "logout+jwt", "application/secevent+jwt",
		"at jwt", "at+jwt; q=1", "/x", "a/b/c"} {
		_, err := parseServeConfig(append(base, "--token-typ", bad), getenv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--token-typ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--token-typ %q: %v", bad, err)
		}
	}
}

// TestServeTokenTyp runs serve with --token-typ and checks over gRPC that
// the listed typ, no typ, JWT and at+jwt are accepted, and an approval or
// an unlisted typ signed by the very same key is refused with 401.
func TestServeTokenTyp(t *testing.T) {
	addr, _, _ := startServe(t, "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s",
		"--token-typ", "application/okta-internal-at+jwt")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	key := testkit.ReadJWK(t, "examples/TEST-ONLY-signing-key.jwk.json")
	now := time.Now()
	claims := map[string]any{"iss": "https://idp.example.com", "sub": "alice", "aud": "https://mcp.example.com/mcp",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	b, err := os.ReadFile("examples/requests/search-allowed.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		typ  string
		want bool
	}{
		{"JWT", true}, {"at+jwt", true}, {"application/AT+JWT", true}, {"OKTA-INTERNAL-AT+JWT", true}, {"application/okta-internal-at+jwt", true},
		{"mcp-approval+jwt", false}, {"dpop+jwt", false}, {"okta-at+jwt", false}, {"JOSE", false},
	} {
		tok, err := signTyped(&key, tt.typ, claims)
		if err != nil {
			t.Fatal(err)
		}
		c, err := capture.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		c.Headers["authorization"] = "Bearer " + tok
		resp, err := client.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetOkResponse() != nil; got != tt.want {
			t.Errorf("typ %q: allowed %v, want %v", tt.typ, got, tt.want)
		}
		if !tt.want && resp.GetDeniedResponse().GetStatus().GetCode() != 401 {
			t.Errorf("typ %q: status %v, want 401", tt.typ, resp.GetDeniedResponse().GetStatus())
		}
	}
}

// TestApproverIssuerIsTokenIssuer: --approver-issuer equal to --issuer
// (trailing slash or not) is refused at start-up unless both key sets are
// static files with no key in common, and a --jwks-file rotation that
// brings an approver key in is refused, keeping the last good keys.
func TestApproverIssuerIsTokenIssuer(t *testing.T) {
	base := []string{"--policy", "examples/policy.yaml", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok"}
	noEnv := func(string) string { return "" }
	for _, give := range [][]string{
		{"--issuer", "https://idp.example.com", "--approver-issuer", "https://idp.example.com"},
		{"--issuer", "https://idp.example.com", "--approver-issuer", "https://idp.example.com/"},
		{"--issuer", "https://idp.example.com/", "--approver-issuer", "https://idp.example.com", "--jwks-file", "examples/jwks.json"},
		{"--issuer", "https://idp.example.com", "--approver-issuer", "https://idp.example.com", "--approver-jwks-file", "examples/approver-jwks.json"},
	} {
		_, err := parseServeConfig(append(append([]string{}, base...), give...), noEnv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--approver-issuer is --issuer") || !strings.Contains(err.Error(), "no key in common") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", give, err)
		}
	}

	dir := t.TempDir()
	tokenJWKS := filepath.Join(dir, "jwks.json")
	copyFile(t, "examples/jwks.json", tokenJWKS)
	// The published test keys are what this test needs: --allow-test-keys.
	same := append(append([]string{}, base...), "--allow-test-keys", "--issuer", "https://idp.example.com", "--approver-issuer", "https://idp.example.com", "--jwks-file", tokenJWKS)
	build := func(approverJWKS string) (*service, error) {
		cfg, err := parseServeConfig(append(append([]string{}, same...), "--approver-jwks-file", approverJWKS), noEnv, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return newService(cfg, zap.NewNop(), zap.NewNop(), newMetrics(prometheus.NewRegistry()))
	}
	if _, err := build(tokenJWKS); err == nil || !strings.Contains(err.Error(), `key "example-test-key-1" is in both`) {
		t.Fatalf("one key set for both: %v", err)
	}
	// The same public key under another kid is the same key.
	renamed := filepath.Join(dir, "renamed.json")
	b, _ := os.ReadFile("examples/jwks.json")
	if err := os.WriteFile(renamed, []byte(strings.ReplaceAll(string(b), "example-test-key-1", "approver-1")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := build(renamed); err == nil || !strings.Contains(err.Error(), "is in both") {
		t.Fatalf("the token key under another kid: %v", err)
	}
	svc, err := build("examples/approver-jwks.json")
	if err != nil {
		t.Fatalf("disjoint static key sets: %v", err)
	}
	defer svc.store.Close()
	gen := svc.jwks.Generation()
	// A rotation that adds the approver key to the token keys is refused.
	var tok, appr struct {
		Keys []json.RawMessage `json:"keys"`
	}
	rb, _ := os.ReadFile("examples/approver-jwks.json")
	_ = json.Unmarshal(b, &tok)
	_ = json.Unmarshal(rb, &appr)
	both, _ := json.Marshal(map[string]any{"keys": append(tok.Keys, appr.Keys...)})
	if err := os.WriteFile(tokenJWKS, both, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := svc.jwks.LoadFile(tokenJWKS); err == nil || !strings.Contains(err.Error(), `key "example-approver-key-1" is in both`) {
		t.Fatalf("rotation bringing the approver key in: %v", err)
	}
	if svc.jwks.Generation() != gen || len(svc.jwks.Keys()) != 1 {
		t.Fatalf("the refused rotation changed the keys (%d keys)", len(svc.jwks.Keys()))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
