package extauthz

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// tokenCase2 is one line of ../shared/cases/cases-2.jsonl, as far as the
// token cases (D10-D12) use it.
type tokenCase2 struct {
	ID      string          `json:"id"`
	Request json.RawMessage `json:"request"`
	Setup   struct {
		JWKSExtraKeys []json.RawMessage `json:"jwks_extra_keys"`
	} `json:"setup"`
	Want struct {
		Allow  *bool `json:"allow"`
		Status int   `json:"status"`
	} `json:"want"`
}

// loadTokenCase2 returns case id of cases-2.jsonl; a missing case fails.
func loadTokenCase2(t *testing.T, id string) tokenCase2 {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedDir, "cases", "cases-2.jsonl"))
	if err != nil {
		t.Fatalf("cases-2: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var c tokenCase2
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID == id {
			if c.Want.Allow == nil {
				t.Fatalf("case %s has no want.allow", id)
			}
			return c
		}
	}
	t.Fatalf("case %s not in cases-2.jsonl", id)
	return tokenCase2{}
}

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
	c := loadTokenCase2(t, "D10")
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
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: "https://idp.example.com", Audiences: []string{testAudience}, KeySet: ks})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": "https://idp.example.com", "sub": testSubject, "aud": testAudience, "exp": time.Now().Add(time.Hour).Unix()}
	if _, err := v.Verify(t.Context(), key.Sign(t, claims)); err != nil {
		t.Fatalf("token signed by the usable key: %v", err)
	}
	_, err = bearer.LoadJWKS(write("enc-only.json", c.Setup.JWKSExtraKeys...))
	if err == nil || !strings.Contains(err.Error(), `kid "kc-enc-1"`) || !strings.Contains(err.Error(), `kid "ecdh-1"`) {
		t.Fatalf("a set of encryption keys only: %v; want an error naming both", err)
	}
}

// TestD10Discovery replays case D10 over gRPC against a loopback provider
// whose JWKS carries the case's extra keys; then a rotation that adds
// another encryption key with a new signing key is picked up, not frozen.
func TestD10Discovery(t *testing.T) {
	c := loadTokenCase2(t, "D10")
	k1, k2, k3 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2"), testkit.NewKey(t, "k3")
	idp := testkit.NewIdP(t, k1)
	idp.SetExtraKeys(c.Setup.JWKSExtraKeys...)
	clock := testkit.NewClock()
	var mu sync.Mutex
	var reports [][]bearer.IgnoredKey
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}, Now: clock.Now,
		OnIgnoredKeys: func(k []bearer.IgnoredKey) {
			mu.Lock()
			reports = append(reports, k)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Warm(t.Context()); err != nil || !v.Ready() {
		t.Fatalf("Warm with D10's key set: %v, ready %v", err, v.Ready())
	}
	client := startGRPC(t, newTestServer(referencePolicy(t), v, nil))
	capt, err := capture.Parse(c.Request)
	if err != nil {
		t.Fatal(err)
	}
	send := func(tok string) *capture.Request {
		d := cloneCapture(capt)
		d.Headers["authorization"] = strings.ReplaceAll(d.Headers["authorization"], "{{TOKEN_OK}}", tok)
		return d
	}
	okHeaders(t, check(t, client, send(k1.Sign(t, idp.Claims())).CheckRequest(true)))
	mu.Lock()
	if len(reports) != 1 || len(reports[0]) != 2 || !strings.Contains(reports[0][0].Reason, `use "enc"`) {
		t.Errorf("ignored-key reports = %v; want one naming both extra keys", reports)
	}
	mu.Unlock()

	// Rotation: k2 joins with one more encryption key; k2's first token
	// triggers the refetch, which must succeed.
	enc2 := testkit.RawJWK(t, jose.JSONWebKey{Key: &k3.Priv.PublicKey, KeyID: "kc-enc-2", Use: "enc", Algorithm: "RSA-OAEP-256"})
	idp.SetKeys(k1, k2)
	idp.SetExtraKeys(append(c.Setup.JWKSExtraKeys, enc2)...)
	clock.Advance(time.Minute)
	okHeaders(t, check(t, client, send(k2.Sign(t, idp.Claims())).CheckRequest(true)))
	// And the next rotation through the periodic refresh.
	idp.SetKeys(k3)
	if err := v.RefreshKeys(t.Context()); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	okHeaders(t, check(t, client, send(k3.Sign(t, idp.Claims())).CheckRequest(true)))
	if _, err := v.Verify(t.Context(), k1.Sign(t, idp.Claims())); err == nil {
		t.Fatal("k1 still verifies after it left the set")
	}
	// An unchanged set is not reported again.
	if err := v.RefreshKeys(t.Context()); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 3 || len(reports[1]) != 3 || len(reports[2]) != 3 {
		t.Errorf("ignored-key reports = %v; want one per changed set (three), each rotation naming three keys", reports)
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
