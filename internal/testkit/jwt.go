package testkit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// Test identities: the audience (an RFC 8707 resource URI) and subject
// the provider's Claims carry.
const (
	Audience = "https://mcp.example.com/mcp"
	Subject  = "alice"
)

// Key is an RSA-2048 signing key with its kid.
type Key struct {
	Kid  string
	Priv *rsa.PrivateKey
}

var (
	keyCacheMu sync.Mutex
	keyCache   = map[string]*Key{}
)

// NewKey returns the RSA-2048 key named kid, generated once per test
// binary (the same kid gives the same key in every test).
func NewKey(t testing.TB, kid string) *Key {
	t.Helper()
	keyCacheMu.Lock()
	defer keyCacheMu.Unlock()
	if k, ok := keyCache[kid]; ok {
		return k
	}
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k := &Key{Kid: kid, Priv: priv}
	keyCache[kid] = k
	return k
}

// Public is k's public JWK: kid, alg RS256, use sig.
func (k *Key) Public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.Priv.PublicKey, KeyID: k.Kid, Algorithm: "RS256", Use: "sig"}
}

// Sign signs claims with k as RS256 under its kid, typ JWT.
func (k *Key) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	return k.SignAs(t, k.Kid, claims)
}

// SignAs signs claims with k as RS256, typ JWT, naming kid in the header.
func (k *Key) SignAs(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	return SignJWS(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.Priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"), claims)
}

// SignTyped signs claims with k as RS256 under its kid with JOSE header
// typ (absent when typ is "-").
func (k *Key) SignTyped(t testing.TB, typ string, claims map[string]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "-" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	return SignJWS(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.Priv, KeyID: k.Kid}}, opts, claims)
}

// SignJWS signs claims (as JSON) with key and opts and returns the compact
// serialization.
func SignJWS(t testing.TB, key jose.SigningKey, opts *jose.SignerOptions, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// JWKS is the JWK Set (RFC 7517 section 5) of the public keys of keys.
func JWKS(t testing.TB, keys ...*Key) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, k.Public())
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RawJWK marshals a go-jose key as a JWK Set member.
func RawJWK(t testing.TB, k jose.JSONWebKey) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// B64 is base64url without padding (RFC 7515 section 2).
func B64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Thumbprint is the RFC 7638 SHA-256 thumbprint of public key pub,
// base64url (a DPoP cnf.jkt, RFC 9449 section 6.1).
func Thumbprint(t testing.TB, pub any) string {
	t.Helper()
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return B64(tp)
}

// ATH is a DPoP proof's ath for token: base64url of its SHA-256 (RFC 9449
// section 4.2).
func ATH(token string) string {
	s := sha256.Sum256([]byte(token))
	return B64(s[:])
}

// SignES256Raw signs the header and payload texts exactly as given (which
// go-jose would not write: duplicate members, case variants, crit, a
// private jwk) as ES256 with priv and returns the compact JWS.
func SignES256Raw(t testing.TB, priv *ecdsa.PrivateKey, header, payload string) string {
	t.Helper()
	input := B64([]byte(header)) + "." + B64([]byte(payload))
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, priv, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + B64(sig)
}

// SignES256 is SignES256Raw of header and claims as JSON.
func SignES256(t testing.TB, priv *ecdsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return SignES256Raw(t, priv, string(h), string(c))
}

// ECJWK is the public JWK of a P-256 key as a map, with the private d as
// well when withD.
func ECJWK(k *ecdsa.PrivateKey, withD bool) map[string]any {
	pad := func(n *big.Int) string { b := make([]byte, 32); n.FillBytes(b); return B64(b) }
	m := map[string]any{"kty": "EC", "crv": "P-256", "x": pad(k.X), "y": pad(k.Y)}
	if withD {
		m["d"] = pad(k.D)
	}
	return m
}

// ClaimsOf returns the claims of a compact JWS (surrounding white space,
// such as a command's final newline, trimmed) without verifying its
// signature; a JWS that go-jose does not parse as compact with alg RS256,
// ES256 or EdDSA, or whose payload is not a JSON object, fails the test.
func ClaimsOf(t testing.TB, jws string) map[string]any {
	t.Helper()
	obj, err := jose.ParseSignedCompact(strings.TrimSpace(jws), []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA})
	if err != nil {
		t.Fatalf("not a compact JWS: %v: %q", err, jws)
	}
	var c map[string]any
	if err := json.Unmarshal(obj.UnsafePayloadWithoutVerification(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// ReadJWK reads one JWK (RFC 7517 section 4) from file.
func ReadJWK(t testing.TB, file string) jose.JSONWebKey {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var k jose.JSONWebKey
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return k
}
