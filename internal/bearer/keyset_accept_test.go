package bearer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// signedBy returns a compact JWS of a small payload, signed by a fresh
// ES256 key with kid, and that key's public JWK.
func signedBy(t *testing.T, kid string) (string, jose.JSONWebKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv := jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: "ES256", Use: "sig"}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign([]byte(`{"sub":"alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok, priv.Public()
}

func writeJWKS(t *testing.T, path string, keys ...jose.JSONWebKey) {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestKeySetAccept: LoadFile hands the parsed keys to Accept; a refused
// file never replaces the keys, neither the first time nor on a reload.
func TestKeySetAccept(t *testing.T) {
	errRefused := errors.New("refused: published test key")
	accept := func(keys []jose.JSONWebKey) error {
		for _, k := range keys {
			if k.KeyID == "published" {
				return errRefused
			}
		}
		return nil
	}
	goodTok, good := signedBy(t, "ours")
	badTok, bad := signedBy(t, "published")
	file := filepath.Join(t.TempDir(), "jwks.json")

	first := &KeySet{Accept: accept}
	writeJWKS(t, file, good, bad)
	if err := first.LoadFile(file); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), file) {
		t.Fatalf("first load of a refused set: %v, want %v naming the file", err, errRefused)
	}
	if first.Ready() {
		t.Fatal("a refused first set made the key set ready")
	}

	ks := &KeySet{Accept: accept}
	writeJWKS(t, file, good)
	if err := ks.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.VerifySignature(t.Context(), goodTok); err != nil {
		t.Fatalf("accepted key: %v", err)
	}
	writeJWKS(t, file, bad)
	if err := ks.LoadFile(file); !errors.Is(err, errRefused) {
		t.Fatalf("reload of a refused set: %v, want %v", err, errRefused)
	}
	if _, err := ks.VerifySignature(t.Context(), badTok); err == nil {
		t.Error("a token of the refused key verifies")
	}
	if _, err := ks.VerifySignature(t.Context(), goodTok); err != nil {
		t.Errorf("the last good key stopped verifying: %v", err)
	}
}
