package bearer_test

// Tests of JWK Set parsing and of key sets loaded from a file
// (--jwks-file), through bearer's exported API only.

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestParseJWKS: each kind of member that cannot verify a signature is
// ignored with its reason (RFC 7517 section 5), beside a usable RSA key;
// usable kinds are kept.
func TestParseJWKS(t *testing.T) {
	rsaKey := testkit.NewKey(t, "k1").Public()
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	privRSA := jose.JSONWebKey{Key: testkit.NewKey(t, "k1").Priv, KeyID: "priv", Algorithm: "RS256"}
	tests := []struct {
		name string
		give json.RawMessage
		want string // substring of the ignored reason; "" means kept
	}{
		{"RSA use sig", testkit.RawJWK(t, jose.JSONWebKey{Key: rsaKey.Key, KeyID: "rsa", Use: "sig", Algorithm: "PS256"}), ""},
		{"RSA without use or alg", testkit.RawJWK(t, jose.JSONWebKey{Key: rsaKey.Key, KeyID: "rsa"}), ""},
		{"EC P-256", testkit.RawJWK(t, jose.JSONWebKey{Key: &ecPriv.PublicKey, KeyID: "ec", Algorithm: "ES256"}), ""},
		{"Ed25519", testkit.RawJWK(t, jose.JSONWebKey{Key: edPub, KeyID: "ed", Algorithm: "EdDSA"}), ""},
		{"key_ops verify", json.RawMessage(strings.Replace(string(testkit.RawJWK(t, jose.JSONWebKey{Key: rsaKey.Key, KeyID: "ops"})), `{`, `{"key_ops":["verify"],`, 1)), ""},
		{"RSA use enc (Keycloak)", testkit.RawJWK(t, jose.JSONWebKey{Key: rsaKey.Key, KeyID: "enc", Use: "enc", Algorithm: "RSA-OAEP"}), `use "enc"`},
		{"RSA alg RSA-OAEP without use", testkit.RawJWK(t, jose.JSONWebKey{Key: rsaKey.Key, KeyID: "oaep", Algorithm: "RSA-OAEP"}), `alg "RSA-OAEP"`},
		{"EC ECDH-ES", testkit.RawJWK(t, jose.JSONWebKey{Key: &ecPriv.PublicKey, KeyID: "ecdh", Algorithm: "ECDH-ES"}), `alg "ECDH-ES"`},
		{"HS256 alg", json.RawMessage(`{"kty":"oct","kid":"h","alg":"HS256","k":"c2VjcmV0"}`), `alg "HS256"`},
		{"symmetric", json.RawMessage(`{"kty":"oct","kid":"h","k":"c2VjcmV0"}`), "symmetric"},
		{"key_ops encrypt", json.RawMessage(strings.Replace(string(testkit.RawJWK(t, jose.JSONWebKey{Key: rsaKey.Key, KeyID: "ops"})), `{`, `{"key_ops":["encrypt","wrapKey"],`, 1)), "key_ops"},
		{"X25519", json.RawMessage(`{"crv":"X25519","kid":"ecdh-1","kty":"OKP","use":"enc","x":"a36fQ9TzC4qSS3UhQGbQ2t_kqDO1q6T_EDfY4LOZH0w"}`), `use "enc"`},
		{"X25519 without use", json.RawMessage(`{"crv":"X25519","kid":"ecdh-2","kty":"OKP","x":"a36fQ9TzC4qSS3UhQGbQ2t_kqDO1q6T_EDfY4LOZH0w"}`), `crv "X25519"`},
		{"Ed448", json.RawMessage(`{"crv":"Ed448","kid":"ed448","kty":"OKP","x":"a36fQ9TzC4qSS3UhQGbQ2t_kqDO1q6T_EDfY4LOZH0w"}`), `crv "Ed448"`},
		{"secp256k1", json.RawMessage(`{"kty":"EC","crv":"secp256k1","kid":"k1c","x":"a36fQ9TzC4qSS3UhQGbQ2t_kqDO1q6T_EDfY4LOZH0w","y":"a36fQ9TzC4qSS3UhQGbQ2t_kqDO1q6T_EDfY4LOZH0w"}`), "does not decode"},
		{"unknown kty", json.RawMessage(`{"kty":"PQC","kid":"future","pub":"AAAA"}`), `unsupported key type "PQC"`},
		{"missing kty", json.RawMessage(`{"kid":"nokty","n":"AQAB","e":"AQAB"}`), `unsupported key type ""`},
		{"private RSA", testkit.RawJWK(t, privRSA), "private key"},
		{"private Ed25519", testkit.RawJWK(t, jose.JSONWebKey{Key: edPriv, KeyID: "edpriv"}), "private key"},
		{"truncated RSA", json.RawMessage(`{"kty":"RSA","kid":"short","e":"AQAB"}`), "does not decode"},
		{"not an object", json.RawMessage(`"just a string"`), "not a JSON object"},
		{"use is a number", json.RawMessage(`{"kty":"RSA","kid":"n","use":1}`), "not a JSON object"},
	}
	usable := testkit.RawJWK(t, rsaKey)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, _ := json.Marshal(map[string]any{"keys": []json.RawMessage{usable, tt.give}})
			keys, ignored, err := bearer.ParseJWKS(set)
			if err != nil {
				t.Fatalf("a set with a usable key failed: %v", err)
			}
			if tt.want == "" {
				if len(keys) != 2 || len(ignored) != 0 {
					t.Fatalf("kept %d keys, ignored %v; want both kept", len(keys), ignored)
				}
				return
			}
			if len(keys) != 1 || keys[0].KeyID != "k1" {
				t.Fatalf("kept %d keys; want only k1", len(keys))
			}
			if len(ignored) != 1 || ignored[0].Index != 1 || !strings.Contains(ignored[0].Reason, tt.want) {
				t.Fatalf("ignored %v; want key 1 ignored for %q", ignored, tt.want)
			}
			// Alone in its set, the member leaves no usable key: an error
			// that says why.
			set, _ = json.Marshal(map[string]any{"keys": []json.RawMessage{tt.give}})
			if _, _, err := bearer.ParseJWKS(set); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("set of only this member: %v; want an error naming %q", err, tt.want)
			}
		})
	}
	for _, give := range []string{`{"keys":[]}`, `{}`, `not json`, `{"keys":{}}`} {
		if _, _, err := bearer.ParseJWKS([]byte(give)); err == nil {
			t.Errorf("bearer.ParseJWKS(%s) succeeded", give)
		}
	}
}

// TestD10JWKSFile: a --jwks-file holding the case's encryption and X25519
// keys beside the signing key verifies tokens and names what it ignored; a
// file with only such keys is refused with the reasons.
func TestD10JWKSFile(t *testing.T) {
	var c struct {
		Setup struct {
			JWKSExtraKeys []json.RawMessage `json:"jwks_extra_keys"`
		} `json:"setup"`
	}
	if err := json.Unmarshal(testkit.CaseLine(t, filepath.Join("..", "..", "testdata", "shared", "cases", "cases-2.jsonl"), "D10"), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Setup.JWKSExtraKeys) != 2 {
		t.Fatalf("case D10 sets up %d extra keys, want 2", len(c.Setup.JWKSExtraKeys))
	}
	key := testkit.NewKey(t, "k1")
	dir := t.TempDir()
	write := func(name string, members ...json.RawMessage) string {
		b, _ := json.Marshal(map[string]any{"keys": members})
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ks, err := bearer.LoadJWKS(write("mixed.json", append([]json.RawMessage{testkit.RawJWK(t, key.Public())}, c.Setup.JWKSExtraKeys...)...))
	if err != nil {
		t.Fatalf("D10 --jwks-file: %v", err)
	}
	if got := ks.Ignored(); len(got) != len(c.Setup.JWKSExtraKeys) || got[0].KeyID != "kc-enc-1" || got[1].KeyID != "ecdh-1" {
		t.Fatalf("ignored = %v", got)
	}
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: "https://idp.example.com", Audiences: []string{testkit.Audience}, KeySet: ks})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": "https://idp.example.com", "sub": testkit.Subject, "aud": testkit.Audience, "exp": time.Now().Add(time.Hour).Unix()}
	if _, err := v.Verify(t.Context(), key.Sign(t, claims)); err != nil {
		t.Fatalf("token signed by the usable key: %v", err)
	}
	_, err = bearer.LoadJWKS(write("enc-only.json", c.Setup.JWKSExtraKeys...))
	if err == nil || !strings.Contains(err.Error(), `kid "kc-enc-1"`) || !strings.Contains(err.Error(), `kid "ecdh-1"`) {
		t.Fatalf("a set of encryption keys only: %v; want an error naming both", err)
	}
}

// FuzzParseJWKS: any document gives keys or an error, never a panic; every
// key kept is a public signature key, and a set without error keeps one.
func FuzzParseJWKS(f *testing.F) {
	b, _ := json.Marshal(map[string]any{"keys": []jose.JSONWebKey{testkit.NewKey(f, "k1").Public()}})
	f.Add(b)
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"X25519","x":"a36fQ9TzC4qSS3UhQGbQ2t_kqDO1q6T_EDfY4LOZH0w"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AA"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		keys, _, err := bearer.ParseJWKS(doc)
		if err != nil {
			return
		}
		if len(keys) == 0 {
			t.Fatal("no error and no key")
		}
		for _, k := range keys {
			if !k.Valid() || !k.IsPublic() || k.Use != "" && k.Use != "sig" {
				t.Fatalf("kept %+v", k)
			}
		}
	})
}

// TestJWKSFileReload: a rotated --jwks-file is picked up without a
// restart; a broken one keeps the last good keys and is reported.
func TestJWKSFileReload(t *testing.T) {
	k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
	idp := testkit.NewIdP(t, k1) // issuer and claims only; keys come from the file
	path := filepath.Join(t.TempDir(), "jwks.json")
	testkit.WriteAtomic(t, path, testkit.JWKS(t, k1))
	ks, err := bearer.LoadJWKS(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var results []error
	ks.OnRefresh = func(err error) { mu.Lock(); results = append(results, err); mu.Unlock() }
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testkit.Audience}, KeySet: ks})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	go func() {
		_ = filewatch.WatchAll(ctx, []string{path}, filewatch.Options{Debounce: 10 * time.Millisecond}, func() { _ = ks.LoadFile(path) })
	}()

	verifies := func(k *testkit.Key) bool {
		_, err := v.Verify(ctx, k.Sign(t, idp.Claims()))
		return err == nil
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	if !verifies(k1) || verifies(k2) {
		t.Fatal("before rotation: want k1 only")
	}
	gen := ks.Generation()
	testkit.WriteAtomic(t, path, testkit.JWKS(t, k2))
	eventually("k2 to verify after rotation", func() bool { return verifies(k2) })
	if verifies(k1) {
		t.Error("k1 still verifies after it left the file")
	}
	if ks.Generation() == gen {
		t.Error("key generation unchanged: cached verifications would survive the rotation")
	}

	testkit.WriteAtomic(t, path, []byte(`{"keys":[]}`))
	eventually("the refused reload to be reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) > 0 && results[len(results)-1] != nil
	})
	if !verifies(k2) {
		t.Error("a broken file dropped the last good keys")
	}
	if err := ks.LoadFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	if !verifies(k2) {
		t.Error("a missing file dropped the last good keys")
	}
}

// TestJWKSFileReloadUnchanged: the watcher's first load of the file serve
// started with changes nothing: same generation (so no "keys changed" log
// line and no token-cache flush at every start).
func TestJWKSFileReloadUnchanged(t *testing.T) {
	ks, err := bearer.LoadJWKS("../../examples/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	gen := ks.Generation()
	if err := ks.LoadFile("../../examples/jwks.json"); err != nil {
		t.Fatal(err)
	}
	if g := ks.Generation(); g != gen {
		t.Errorf("generation %d after reloading the same file, want %d", g, gen)
	}
}
