package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestServeRefusesPublishedTestKeys: a --jwks-file or --approver-jwks-file
// that holds a key of examples/TEST-ONLY-*.jwk.json (under any kid) stops
// serve at start-up with an error naming the key and the setting, unless
// --allow-test-keys (or EXTAUTHZ_ALLOW_TEST_KEYS) is on.
func TestServeRefusesPublishedTestKeys(t *testing.T) {
	dir := t.TempDir()
	// The published signing key under a production-looking kid, next to a
	// fresh key: found by thumbprint, not by kid.
	var set jose.JSONWebKeySet
	readJSON(t, "examples/jwks.json", &set)
	set.Keys[0].KeyID = "prod-2026-01"
	set.Keys = append(set.Keys, freshKey(t, "fresh"))
	disguised := filepath.Join(dir, "disguised.json")
	writeJSON(t, disguised, set)
	fresh := filepath.Join(dir, "fresh.json")
	writeJSON(t, fresh, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{freshKey(t, "fresh")}})

	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp",
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--state-store-memory-per-replica-ok"}
	approver := []string{"--approver-issuer", "https://approvals.example.com", "--approver-jwks-file"}
	refused := []struct {
		name string
		give []string
		want string
	}{
		{"the quick-start key set", []string{"--jwks-file", "examples/jwks.json"}, "--jwks-file: examples/jwks.json: the key set holds a published test key, thumbprint hG5zNLAs2UcLnEYAdO26l3q5HCTAznnTHw1L7XCFgv4 (private half published as examples/TEST-ONLY-signing-key.jwk.json)"},
		{"the test key under another kid", []string{"--jwks-file", disguised}, "examples/TEST-ONLY-signing-key.jwk.json"},
		{"the quick-start approver keys", append([]string{"--jwks-file", fresh}, append(approver, "examples/approver-jwks.json")...), "--approver-jwks-file: examples/approver-jwks.json: the key set holds a published test key, thumbprint XQMFGXJ4zKsWcsB-FD__rqlxP25H5aVfct0aTYZs2-w"},
		{"the setting off in the config file's spite", []string{"--config", "examples/config.yaml", "--allow-test-keys=false"}, "unless --allow-test-keys (EXTAUTHZ_ALLOW_TEST_KEYS=true; Helm testOnly.allowPublishedTestKeys)"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			// Bounded, so a serve that starts fails the test, not hangs it.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			err := run(ctx, append(append([]string{"serve"}, base...), tt.give...), io.Discard, &stderr)
			if exitCode(err) != 1 || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("exit %d, err %v; want one line containing %q", exitCode(err), err, tt.want)
			}
			if strings.Contains(stderr.String(), "serving ext_authz") {
				t.Error("serve started")
			}
		})
	}

	allowed := []struct {
		name string
		give []string
		env  string
	}{
		{"a fresh key set", []string{"--jwks-file", fresh}, ""},
		{"--allow-test-keys", append([]string{"--allow-test-keys", "--jwks-file", disguised}, append(approver, "examples/approver-jwks.json")...), ""},
		{"EXTAUTHZ_ALLOW_TEST_KEYS", []string{"--jwks-file", "examples/jwks.json"}, "true"},
		{"the quick-start config", []string{"--config", "examples/config.yaml"}, ""},
	}
	for _, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("EXTAUTHZ_ALLOW_TEST_KEYS", tt.env)
			_, _, stderr := startServe(t, append(append([]string{}, base...), tt.give...)...)
			warned := strings.Contains(stderr.String(), "trusts published test keys (--allow-test-keys)")
			if want := tt.name != "a fresh key set"; warned != want {
				t.Errorf("warning logged = %v, want %v:\n%s", warned, want, stderr.String())
			}
		})
	}
}

// TestServeRefusesPublishedTestKeysOnReload: a --jwks-file rotated to hold
// a published test key is refused like a broken one; the last good keys
// stay, and a token signed with the published key is still refused.
func TestServeRefusesPublishedTestKeysOnReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jwks.json")
	writeJSON(t, file, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{freshKey(t, "fresh")}})
	addr, _, stderr := startServe(t, "--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp",
		"--server-id", "payments", "--jwks-file", file, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s",
		"--state-store-memory-per-replica-ok")
	b, err := os.ReadFile("examples/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".new", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	if stderr.waitFor(regexp.MustCompile(regexp.QuoteMeta("--jwks-file reload refused; keeping the last good keys")), 10*time.Second) == nil {
		t.Fatalf("no refused reload logged:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "published test key") {
		t.Errorf("the refusal does not say why:\n%s", stderr.String())
	}
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "mallory"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	err = run(ctx, []string{"check", "--addr", addr, "--token", tok.String(), "examples/requests/search-allowed.json"}, &out, io.Discard)
	if exitCode(err) != 1 || !strings.Contains(out.String(), "token_") {
		t.Errorf("a token of the published key after the refused reload: exit %d\n%s", exitCode(err), out.String())
	}
}

func freshKey(t *testing.T, kid string) jose.JSONWebKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: k.Public(), KeyID: kid, Algorithm: "ES256", Use: "sig"}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
