package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

func TestTokenModeFlags(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp", "--state-store-memory-per-replica-ok"}
	tests := []struct {
		name    string
		give    []string
		wantErr string
	}{
		{"jwt by default", nil, ""},
		{"introspection with a secret", []string{"--token-mode", "introspection", "--introspection-client-id", "c", "--introspection-client-secret-file", secret}, ""},
		{"both with a key", []string{"--token-mode", "both", "--introspection-client-id", "c", "--introspection-client-key-file", "k.jwk"}, ""},
		{"unknown mode", []string{"--token-mode", "opaque"}, "want jwt, introspection or both"},
		{"no client id", []string{"--token-mode", "introspection", "--introspection-client-secret-file", secret}, "needs --introspection-client-id"},
		{"no credentials", []string{"--token-mode", "introspection", "--introspection-client-id", "c"}, "one of them"},
		{"both credentials", []string{"--token-mode", "introspection", "--introspection-client-id", "c", "--introspection-client-secret-file", secret, "--introspection-client-key-file", "k"}, "one of them"},
		{"introspection flags in jwt mode", []string{"--introspection-client-id", "c"}, "need --token-mode introspection or both"},
		{"zero timeout", []string{"--token-mode", "introspection", "--introspection-client-id", "c", "--introspection-client-secret-file", secret, "--introspection-timeout", "0s"}, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseServeConfig(append(append([]string{}, base...), tt.give...), func(string) string { return "" }, io.Discard)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// startAS is a loopback authorization server until the test ends: RFC
// 8414 metadata and RFC 7662 introspection (client mcp-extauthz, secret
// s3cret, client_secret_basic) where opaque-alice is alice's active token
// for https://mcp.example.com/mcp and every other token is inactive. It
// returns its issuer.
func startAS(t *testing.T) string {
	t.Helper()
	var issuer string
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "introspection_endpoint": issuer + "/introspect"})
		case "/introspect":
			if id, secret, ok := r.BasicAuth(); !ok || id != "mcp-extauthz" || secret != "s3cret" || r.ParseForm() != nil {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if r.PostForm.Get("token") != "opaque-alice" {
				_, _ = w.Write([]byte(`{"active":false}`))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "iss": issuer, "sub": "alice", "aud": "https://mcp.example.com/mcp",
				"exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:tools"})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(as.Close)
	issuer = as.URL
	return issuer
}

// TestServeOpaqueTokensAndQuotas: serve with --token-mode introspection
// against a loopback authorization server (RFC 8414 metadata, RFC 7662
// introspection with client_secret_basic) and a policy with a quota:
// ready once the endpoint is discovered, an active opaque token allowed,
// a revoked one refused, the second search of the hour rate_limited, each
// counted in /metrics.
func TestServeOpaqueTokensAndQuotas(t *testing.T) {
	issuer := startAS(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	pol, err := os.ReadFile("examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol = append(pol, []byte("\nquotas:\n  - {id: one-search-an-hour, match: payments/search, limit: 1, window: 1h}\n")...)
	policy := filepath.Join(dir, "policy.yaml")
	if os.WriteFile(secret, []byte("s3cret\n"), 0o600) != nil || os.WriteFile(policy, pol, 0o600) != nil {
		t.Fatal("cannot write the test files")
	}
	grpcAddr, httpAddr, stderr := startServe(t, "--policy", policy, "--issuer", issuer,
		"--audience", "https://mcp.example.com/mcp", "--server-id", "payments", "--token-mode", "introspection",
		"--introspection-client-id", "mcp-extauthz", "--introspection-client-secret-file", secret,
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--state-store-memory-per-replica-ok")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got, _ := testkit.Get(t, "http://"+httpAddr+"/readyz"); got == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %s", stderr.String())
		}
	}
	b, _ := os.ReadFile("examples/requests/search-allowed.json")
	c, err := capture.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	reason := func(tok string) string {
		c.Headers["authorization"] = "Bearer " + tok
		resp, err := client.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatalf("Check: RPC error %v", err)
		}
		return resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue()
	}
	for i, want := range []struct{ tok, reason string }{
		{"opaque-alice", "allowed"}, {"opaque-revoked", "token_invalid"}, {"opaque-alice", "rate_limited"},
	} {
		if got := reason(want.tok); got != want.reason {
			t.Errorf("Check %d (%s): %s, want %s", i, want.tok, got, want.reason)
		}
	}
	metrics := scrape(t, httpAddr)
	for _, want := range []string{
		`mcp_extauthz_introspection_total{result="active"} 1`,
		`mcp_extauthz_introspection_total{result="refused"} 1`,
		`mcp_extauthz_introspection_total{result="hit"} 1`,
		`mcp_extauthz_quota_decisions_total{outcome="admitted",rule_id="one-search-an-hour"} 1`,
		`mcp_extauthz_quota_decisions_total{outcome="limited",rule_id="one-search-an-hour"} 1`,
		`mcp_extauthz_state_store_requests_total{op="quota",result="ok"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	_, statusz := testkit.Get(t, "http://"+httpAddr+"/statusz")
	if want := `"introspection": {
    "token_mode": "introspection",
    "endpoint": "` + issuer + `/introspect",
    "circuit_breaker": "closed"
  }`; !strings.Contains(statusz, want) {
		t.Errorf("/statusz lacks %s:\n%s", want, statusz)
	}
	if strings.Contains(stderr.String(), "opaque-alice") {
		t.Error("serve's log holds a token")
	}
}

// TestServeTokenModeBoth: serve with --token-mode both: a JWT (the quick
// start's test key, --jwks-file) and an opaque token of one issuer are each
// verified their way; a JWT that fails is refused as a JWT, never asked of
// the introspection endpoint.
func TestServeTokenModeBoth(t *testing.T) {
	issuer := startAS(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr, stderr := startServe(t, "--policy", "examples/policy.yaml", "--issuer", issuer,
		"--audience", "https://mcp.example.com/mcp", "--server-id", "payments", "--token-mode", "both",
		"--jwks-file", "examples/jwks.json", "--allow-test-keys",
		"--introspection-client-id", "mcp-extauthz", "--introspection-client-secret-file", secret,
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--state-store-memory-per-replica-ok")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got, _ := testkit.Get(t, "http://"+httpAddr+"/readyz"); got == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %s", stderr.String())
		}
	}
	var jwt, expired strings.Builder
	if err := run(t.Context(), []string{"token", "--issuer", issuer, "--audience", "https://mcp.example.com/mcp"}, &jwt, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"token", "--issuer", issuer, "--audience", "https://mcp.example.com/mcp", "--ttl", "-1h"}, &expired, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("examples/requests/search-allowed.json")
	c, err := capture.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	for _, tt := range []struct{ name, tok, want string }{
		{"JWT", strings.TrimSpace(jwt.String()), "allowed"},
		{"opaque", "opaque-alice", "allowed"},
		{"expired JWT", strings.TrimSpace(expired.String()), "token_expired"},
		{"unknown opaque", "opaque-bob", "token_invalid"},
	} {
		c.Headers["authorization"] = "Bearer " + tt.tok
		resp, err := client.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatalf("%s: RPC error %v", tt.name, err)
		}
		if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if m := scrape(t, httpAddr); !strings.Contains(m, `mcp_extauthz_introspection_total{result="active"} 1`) ||
		!strings.Contains(m, `mcp_extauthz_introspection_total{result="refused"} 1`) {
		t.Error("introspection_total: want one active and one refused (the JWTs never asked)")
	}
}
