package testkeys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

const repo = "../.."

// TestPublishedAreTheExamples: published.txt lists exactly the keys of
// examples/TEST-ONLY-*.jwk.json, each with its own thumbprint, so a test
// key added there is refused by serve too.
func TestPublishedAreTheExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repo, "examples", "TEST-ONLY-*.jwk.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/TEST-ONLY-*.jwk.json: %v", err)
	}
	var want []Key
	for _, f := range files {
		k := testkit.ReadJWK(t, f)
		if k.IsPublic() {
			t.Errorf("%s: not a private key", f)
		}
		rel, _ := filepath.Rel(repo, f)
		want = append(want, Key{Thumbprint: Thumbprint(k), File: filepath.ToSlash(rel)})
	}
	cursorFile := filepath.Join(repo, "examples", "TEST-ONLY-cursor-key")
	b, err := os.ReadFile(cursorFile)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := cursor.ReadKeyFile(b)
	if err != nil || len(ck) != 1 {
		t.Fatalf("%s: %d keys, %v; want one", cursorFile, len(ck), err)
	}
	want = append(want, Key{Thumbprint: SecretThumbprint(ck[0]), File: "examples/TEST-ONLY-cursor-key"})
	got := Published()
	sortKeys(got)
	sortKeys(want)
	if !slices.Equal(got, want) {
		t.Errorf("published.txt lists %v, want %v", got, want)
	}
}

func TestFind(t *testing.T) {
	signingKey := testkit.ReadJWK(t, filepath.Join(repo, "examples", "TEST-ONLY-signing-key.jwk.json"))
	approverKey := testkit.ReadJWK(t, filepath.Join(repo, "examples", "TEST-ONLY-approver-key.jwk.json"))
	signing, approver := signingKey.Public(), approverKey.Public()
	renamed := signing
	renamed.KeyID, renamed.Algorithm, renamed.Use = "prod-key-2026", "", ""
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	fresh := []jose.JSONWebKey{{Key: rsaKey.Public(), KeyID: "example-test-key-1", Algorithm: "RS256"}, {Key: ecKey.Public(), KeyID: "example-approver-key-1"}}
	tests := []struct {
		name string
		give []jose.JSONWebKey
		want []string
	}{
		{"examples/jwks.json", readSet(t, "jwks.json"), []string{"examples/TEST-ONLY-signing-key.jwk.json"}},
		{"examples/approver-jwks.json", readSet(t, "approver-jwks.json"), []string{"examples/TEST-ONLY-approver-key.jwk.json"}},
		{"the test key under another kid, without alg and use", []jose.JSONWebKey{renamed}, []string{"examples/TEST-ONLY-signing-key.jwk.json"}},
		{"fresh keys under the test keys' kids", fresh, nil},
		{"fresh keys and both test keys", append(slices.Clone(fresh), approver, signing), []string{"examples/TEST-ONLY-approver-key.jwk.json", "examples/TEST-ONLY-signing-key.jwk.json"}},
		{"the private key itself", []jose.JSONWebKey{signingKey}, []string{"examples/TEST-ONLY-signing-key.jwk.json"}},
		{"no keys", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range Find(tt.give) {
				got = append(got, k.File)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Find = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSecretThumbprint: RFC 7638 section 3 of the JWK {"kty":"oct","k":...}
// (its required members, sorted, no whitespace), computed here through
// encoding/json, which sorts map keys.
func TestSecretThumbprint(t *testing.T) {
	for _, k := range [][]byte{make([]byte, 32), []byte("0123456789abcdef0123456789abcdef"), {0xff, 0xfe}} {
		j, err := json.Marshal(map[string]string{"kty": "oct", "k": base64.RawURLEncoding.EncodeToString(k)})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(j)
		if got, want := SecretThumbprint(k), base64.RawURLEncoding.EncodeToString(sum[:]); got != want {
			t.Errorf("SecretThumbprint(%x) = %s, want %s", k, got, want)
		}
	}
}

func TestFindSecrets(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "examples", "TEST-ONLY-cursor-key"))
	if err != nil {
		t.Fatal(err)
	}
	published, err := cursor.ReadKeyFile(b)
	if err != nil {
		t.Fatal(err)
	}
	fresh := make([]byte, cursor.KeySize)
	if _, err := rand.Read(fresh); err != nil {
		t.Fatal(err)
	}
	signing := testkit.ReadJWK(t, filepath.Join(repo, "examples", "TEST-ONLY-signing-key.jwk.json"))
	tests := []struct {
		name string
		give [][]byte
		want []string
	}{
		{"the published cursor key", published, []string{"examples/TEST-ONLY-cursor-key"}},
		{"a fresh key, then the published one (rotation)", [][]byte{fresh, published[0]}, []string{"examples/TEST-ONLY-cursor-key"}},
		{"a fresh key", [][]byte{fresh}, nil},
		{"the published key with one bit flipped", [][]byte{flip(published[0])}, nil},
		{"the signing key's thumbprint bytes are no cursor key", [][]byte{[]byte(Thumbprint(signing))}, nil},
		{"no keys", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range FindSecrets(tt.give) {
				got = append(got, k.File)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("FindSecrets = %v, want %v", got, tt.want)
			}
		})
	}
}

func flip(k []byte) []byte {
	c := slices.Clone(k)
	c[0] ^= 1
	return c
}

func readSet(t *testing.T, name string) []jose.JSONWebKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var s jose.JSONWebKeySet
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Keys
}

func sortKeys(k []Key) {
	slices.SortFunc(k, func(a, b Key) int { return strings.Compare(a.File, b.File) })
}
