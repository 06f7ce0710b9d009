package bearer_test

// DPoP proof verification (RFC 9449) through bearer's exported API only;
// the in-package tests are in dpop_test.go.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// The request URI the proofs of this file name.
const (
	dpopHost = "mcp.example.com"
	dpopHTU  = "https://mcp.example.com/mcp"
)

// FuzzDPoPVerify: any proof text gives a *bearer.DPoPError or nil, never a panic;
// nil only for a proof that really binds the request (never for fuzz input
// that is not signed by the key whose thumbprint is required).
func FuzzDPoPVerify(f *testing.F) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	valid := testkit.SignES256(f, k, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": testkit.ECJWK(k, false)}, map[string]any{"jti": "j", "htm": "POST", "htu": dpopHTU, "iat": now.Unix(), "ath": testkit.ATH("tok")})
	f.Add(valid)
	f.Add("a.b.c")
	f.Add("")
	f.Add(strings.Repeat(".", 3))
	req := bearer.DPoPRequest{Method: "POST", Scheme: "https", Host: dpopHost, Path: "/mcp", AccessToken: "tok", JKT: "not-the-thumbprint"}
	f.Fuzz(func(t *testing.T, proof string) {
		v := bearer.NewDPoPVerifier(bearer.DPoPConfig{Now: func() time.Time { return now }})
		err := v.Verify(proof, req)
		if err == nil {
			t.Fatalf("proof %q accepted for a thumbprint no key has", proof)
		}
		if _, ok := err.(*bearer.DPoPError); !ok {
			t.Fatalf("error %T %v", err, err)
		}
	})
}

// BenchmarkDPoPVerify: one ES256 proof checked and its jti recorded (the
// cost DPoP adds to a Check over a cached token).
func BenchmarkDPoPVerify(b *testing.B) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	v := bearer.NewDPoPVerifier(bearer.DPoPConfig{Now: func() time.Time { return now }, ReplaySize: b.N + 1})
	req := bearer.DPoPRequest{Method: "POST", Scheme: "https", Host: dpopHost, Path: "/mcp", AccessToken: "tok", JKT: testkit.Thumbprint(b, &k.PublicKey)}
	hdr := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": testkit.ECJWK(k, false)}
	proofs := make([]string, b.N)
	for i := range proofs {
		proofs[i] = testkit.SignES256(b, k, hdr, map[string]any{"jti": "jti-" + strconv.Itoa(i), "htm": "POST", "htu": dpopHTU, "iat": now.Unix(), "ath": testkit.ATH("tok")})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := v.Verify(proofs[i], req); err != nil {
			b.Fatal(err)
		}
	}
}
