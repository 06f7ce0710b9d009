package extauthz

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

const (
	dpopHost = "mcp.example.com"
	dpopHTU  = "https://mcp.example.com/mcp"
)

// signWithEmbeddedJWK signs claims as a dpop+jwt with go-jose, embedding
// the public key of priv.
func signWithEmbeddedJWK(t testing.TB, alg jose.SignatureAlgorithm, priv any, claims map[string]any) string {
	t.Helper()
	return testkit.SignJWS(t, jose.SigningKey{Algorithm: alg, Key: priv}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"), claims)
}

// dpopRig is a Check server on loopback verifying tokens through discovery
// at a loopback provider, with DPoP on and a clock the test moves.
type dpopRig struct {
	idp     *testkit.IdP
	key     *testkit.Key
	clock   *testkit.Clock
	client  authv3.AuthorizationClient
	client2 *ecdsa.PrivateKey // the client's DPoP key
	jti     int
}

func newDPoPRig(t *testing.T) *dpopRig { return newDPoPRigLog(t, nil) }

func newDPoPRigLog(t *testing.T, log *zap.Logger) *dpopRig {
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	srv := newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), log)
	clock := testkit.NewClock()
	configure(t, srv, func(c *decision.Config) { c.DPoP = bearer.NewDPoPVerifier(bearer.DPoPConfig{Now: clock.Now}) })
	ck, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &dpopRig{idp: idp, key: key, clock: clock, client: startGRPC(t, srv), client2: ck}
}

// token signs an access token whose cnf is cnf (nil: no cnf).
func (r *dpopRig) token(t testing.TB, cnf any) string {
	c := r.idp.Claims()
	if cnf != nil {
		c["cnf"] = cnf
	}
	return r.key.Sign(t, c)
}

// claims are valid proof claims for token on POST dpopHTU, with a new jti.
func (r *dpopRig) claims(token string) map[string]any {
	r.jti++
	return map[string]any{"jti": "jti-" + strings.Repeat("x", r.jti%7) + string(rune('a'+r.jti%26)) + time.Now().Format("150405.000000000"),
		"htm": "POST", "htu": dpopHTU, "iat": r.clock.Now().Unix(), "ath": testkit.ATH(token)}
}

// proof signs claims with the client's key as a valid dpop+jwt.
func (r *dpopRig) proof(t testing.TB, claims map[string]any) string {
	return testkit.SignES256(t, r.client2, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": testkit.ECJWK(r.client2, false)}, claims)
}

// request is a tools/call of search with the given headers (name, value
// pairs; a name may repeat), as Envoy with encode_raw_headers sends it.
func dpopRequest(headers ...string) *authv3.CheckRequest {
	c := &capture.Request{Method: "POST", Path: "/mcp",
		Body:    []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`),
		Headers: map[string]string{"content-type": "application/json", "host": dpopHost, "mcp-protocol-version": "2025-11-25"}}
	req := c.CheckRequest(true)
	h := req.GetAttributes().GetRequest().GetHttp()
	h.Scheme = "https"
	hm := &corev3.HeaderMap{}
	for k, v := range h.Headers {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: k, RawValue: []byte(v)})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: headers[i], RawValue: []byte(headers[i+1])})
	}
	h.Headers, h.HeaderMap = nil, hm
	return req
}

// outcome sends req and returns the reason, HTTP status and WWW-Authenticate.
func (r *dpopRig) outcome(t *testing.T, req *authv3.CheckRequest) (decision.Reason, int, string) {
	t.Helper()
	resp := check(t, r.client, req)
	if resp.GetOkResponse() != nil {
		okHeaders(t, resp)
		return decision.ReasonAllowed, http.StatusOK, ""
	}
	d, status := parseDenial(t, resp)
	if status == http.StatusUnauthorized && d.Error.Code != CodeUnauthenticated {
		t.Errorf("401 with JSON-RPC code %d", d.Error.Code)
	}
	return decision.Reason(d.Error.Data.Reason), status, responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate")
}

// TestDPoP: one table per class of outcome, with real tokens from the
// loopback provider and real proofs. give builds the request's extra
// headers from the rig.
func TestDPoP(t *testing.T) {
	r := newDPoPRig(t)
	bound := func() string { return r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, &r.client2.PublicKey)}) }
	// withProof: a bound token under the DPoP scheme and a proof over the
	// claims after mut.
	withProof := func(mut func(c map[string]any)) func() []string {
		return func() []string {
			tok := bound()
			c := r.claims(tok)
			if mut != nil {
				mut(c)
			}
			return []string{"authorization", "DPoP " + tok, "dpop", r.proof(t, c)}
		}
	}
	// withHeader: a bound token and a hand-signed proof with header hdr
	// (the client's key signs).
	withHeader := func(hdr map[string]any) func() []string {
		return func() []string {
			tok := bound()
			return []string{"authorization", "DPoP " + tok, "dpop", testkit.SignES256(t, r.client2, hdr, r.claims(tok))}
		}
	}
	pubJWK := testkit.ECJWK(r.client2, false)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey := testkit.NewKey(t, "dpop-rsa").Priv
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)

	t.Run("allowed", func(t *testing.T) {
		tests := []struct {
			name string
			give func() []string
		}{
			{"ES256", withProof(nil)},
			{"scheme in lower case", func() []string {
				h := withProof(nil)()
				h[1] = "dpop " + strings.TrimPrefix(h[1], "DPoP ")
				return h
			}},
			{"htu with default port, upper-case host and scheme", withProof(func(c map[string]any) { c["htu"] = "HTTPS://MCP.Example.COM:443/mcp" })},
			{"htu with query and fragment", withProof(func(c map[string]any) { c["htu"] = dpopHTU + "?a=1#f" })},
			{"htu with an encoded unreserved character", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/%6Dcp" })},
			{"htu with dot segments", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/a/b/../../mcp" })},
			{"htu with a dot segment", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/./mcp" })},
			{"htu with encoded dot segments", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/x/%2E%2e/mcp" })},
			{"htu climbing above the root", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/../../mcp" })},
			{"iat with a fraction", withProof(func(c map[string]any) { c["iat"] = float64(r.clock.Now().UnixNano())/1e9 - 0.5 })},
			{"iat 59s old", withProof(func(c map[string]any) { c["iat"] = r.clock.Now().Add(-59 * time.Second).Unix() })},
			{"iat 9s ahead", withProof(func(c map[string]any) { c["iat"] = r.clock.Now().Add(9 * time.Second).Unix() })},
			{"PS256 proof", func() []string {
				tok := r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, &rsaKey.PublicKey)})
				return []string{"authorization", "DPoP " + tok, "dpop", signWithEmbeddedJWK(t, jose.PS256, rsaKey, r.claims(tok))}
			}},
			{"EdDSA proof", func() []string {
				tok := r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, edKey.Public())})
				return []string{"authorization", "DPoP " + tok, "dpop", signWithEmbeddedJWK(t, jose.EdDSA, edKey, r.claims(tok))}
			}},
			{"unbound token as Bearer with a stray DPoP header", func() []string {
				tok := r.token(t, nil)
				return []string{"authorization", "Bearer " + tok, "dpop", r.proof(t, r.claims(tok))}
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got, status, _ := r.outcome(t, dpopRequest(tt.give()...)); got != decision.ReasonAllowed {
					t.Fatalf("got %s %d, want allowed", got, status)
				}
			})
		}
	})

	refused := []struct {
		name       string
		give       func() []string
		wantReason decision.Reason
	}{
		// cnf bindings that cannot be checked here.
		{"x5t#S256 as Bearer", func() []string {
			return []string{"authorization", "Bearer " + r.token(t, map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"})}
		}, decision.ReasonTokenBindingUnsupported},
		{"x5t#S256 under DPoP", func() []string {
			tok := r.token(t, map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"})
			return []string{"authorization", "DPoP " + tok, "dpop", r.proof(t, r.claims(tok))}
		}, decision.ReasonTokenBindingUnsupported},
		{"jkt and x5t#S256", func() []string {
			tok := r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, &r.client2.PublicKey), "x5t#S256": "x"})
			return []string{"authorization", "DPoP " + tok, "dpop", r.proof(t, r.claims(tok))}
		}, decision.ReasonTokenBindingUnsupported},
		{"cnf jwk", func() []string {
			return []string{"authorization", "Bearer " + r.token(t, map[string]any{"jwk": pubJWK})}
		}, decision.ReasonTokenBindingUnsupported},
		{"cnf is a string", func() []string { return []string{"authorization", "Bearer " + r.token(t, "jkt")} }, decision.ReasonTokenBindingUnsupported},
		{"cnf is empty", func() []string { return []string{"authorization", "Bearer " + r.token(t, map[string]any{})} }, decision.ReasonTokenBindingUnsupported},
		{"cnf.jkt empty", func() []string { return []string{"authorization", "Bearer " + r.token(t, map[string]any{"jkt": ""})} }, decision.ReasonTokenBindingUnsupported},
		// Missing proofs.
		{"bound token as Bearer", func() []string { return []string{"authorization", "Bearer " + bound()} }, decision.ReasonDPoPProofMissing},
		{"bound token as Bearer with a valid proof", func() []string {
			h := withProof(nil)()
			h[1] = "Bearer " + strings.TrimPrefix(h[1], "DPoP ")
			return h
		}, decision.ReasonDPoPProofMissing},
		{"DPoP scheme without DPoP header", func() []string { return []string{"authorization", "DPoP " + bound()} }, decision.ReasonDPoPProofMissing},
		// Invalid proofs.
		{"two DPoP headers", func() []string { return append(withProof(nil)(), "dpop", r.proof(t, r.claims(bound()))) }, decision.ReasonDPoPProofInvalid},
		{"proof not a JWS", func() []string { return []string{"authorization", "DPoP " + bound(), "dpop", "not-a-jwt"} }, decision.ReasonDPoPProofInvalid},
		{"typ JWT", withHeader(map[string]any{"typ": "JWT", "alg": "ES256", "jwk": pubJWK}), decision.ReasonDPoPProofInvalid},
		{"no typ", withHeader(map[string]any{"alg": "ES256", "jwk": pubJWK}), decision.ReasonDPoPProofInvalid},
		{"no jwk", withHeader(map[string]any{"typ": "dpop+jwt", "alg": "ES256"}), decision.ReasonDPoPProofInvalid},
		{"private jwk", withHeader(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": testkit.ECJWK(r.client2, true)}), decision.ReasonDPoPProofInvalid},
		{"alg HS256", withHeader(map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": pubJWK}), decision.ReasonDPoPProofInvalid},
		{"alg none", func() []string {
			tok := bound()
			h, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "none", "jwk": pubJWK})
			c, _ := json.Marshal(r.claims(tok))
			return []string{"authorization", "DPoP " + tok, "dpop", testkit.B64(h) + "." + testkit.B64(c) + "."}
		}, decision.ReasonDPoPProofInvalid},
		{"signed by another key than its jwk", func() []string {
			tok := bound()
			return []string{"authorization", "DPoP " + tok, "dpop", testkit.SignES256(t, other, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": pubJWK}, r.claims(tok))}
		}, decision.ReasonDPoPProofInvalid},
		{"no jti", withProof(func(c map[string]any) { delete(c, "jti") }), decision.ReasonDPoPProofInvalid},
		{"empty jti", withProof(func(c map[string]any) { c["jti"] = "" }), decision.ReasonDPoPProofInvalid},
		{"jti of 257 bytes", withProof(func(c map[string]any) { c["jti"] = strings.Repeat("j", 257) }), decision.ReasonDPoPProofInvalid},
		{"no ath", withProof(func(c map[string]any) { delete(c, "ath") }), decision.ReasonDPoPProofInvalid},
		{"no htm", withProof(func(c map[string]any) { delete(c, "htm") }), decision.ReasonDPoPProofInvalid},
		{"no htu", withProof(func(c map[string]any) { delete(c, "htu") }), decision.ReasonDPoPProofInvalid},
		{"no iat", withProof(func(c map[string]any) { delete(c, "iat") }), decision.ReasonDPoPProofInvalid},
		{"iat is a string", withProof(func(c map[string]any) { c["iat"] = "now" }), decision.ReasonDPoPProofInvalid},
		{"iat is a string of digits", withProof(func(c map[string]any) { c["iat"] = strconv.FormatInt(r.clock.Now().Unix(), 10) }), decision.ReasonDPoPProofInvalid},
		{"iat is null", withProof(func(c map[string]any) { c["iat"] = nil }), decision.ReasonDPoPProofInvalid},
		{"iat is true", withProof(func(c map[string]any) { c["iat"] = true }), decision.ReasonDPoPProofInvalid},
		{"htu relative", withProof(func(c map[string]any) { c["htu"] = "/mcp" }), decision.ReasonDPoPProofInvalid},
		{"htu with userinfo", withProof(func(c map[string]any) { c["htu"] = "https://u@mcp.example.com/mcp" }), decision.ReasonDPoPProofInvalid},
		{"htu of another scheme", withProof(func(c map[string]any) { c["htu"] = "wss://mcp.example.com/mcp" }), decision.ReasonDPoPProofInvalid},
		// Mismatches.
		{"htm GET", withProof(func(c map[string]any) { c["htm"] = "GET" }), decision.ReasonDPoPProofMismatch},
		{"htm in lower case", withProof(func(c map[string]any) { c["htm"] = "post" }), decision.ReasonDPoPProofMismatch},
		{"htu of another host", withProof(func(c map[string]any) { c["htu"] = "https://evil.example.com/mcp" }), decision.ReasonDPoPProofMismatch},
		{"htu of another path", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/admin" }), decision.ReasonDPoPProofMismatch},
		{"htu with a trailing slash", withProof(func(c map[string]any) { c["htu"] = dpopHTU + "/" }), decision.ReasonDPoPProofMismatch},
		{"htu over http", withProof(func(c map[string]any) { c["htu"] = "http://mcp.example.com/mcp" }), decision.ReasonDPoPProofMismatch},
		{"htu on another port", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com:8443/mcp" }), decision.ReasonDPoPProofMismatch},
		{"htu with an encoded slash", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/%2Fmcp" }), decision.ReasonDPoPProofMismatch},
		{"htu whose dot segment climbs out", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/mcp/.." }), decision.ReasonDPoPProofMismatch},
		{"htu with a trailing dot segment", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/mcp/." }), decision.ReasonDPoPProofMismatch},
		{"htu whose dots hide behind an encoded slash", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/x/..%2Fmcp" }), decision.ReasonDPoPProofMismatch},
		{"htu with three dots", withProof(func(c map[string]any) { c["htu"] = "https://mcp.example.com/x/.../mcp" }), decision.ReasonDPoPProofMismatch},
		{"ath of another token", withProof(func(c map[string]any) { c["ath"] = testkit.ATH("another token") }), decision.ReasonDPoPProofMismatch},
		{"proof key is not cnf.jkt", func() []string {
			tok := r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, &other.PublicKey)})
			return []string{"authorization", "DPoP " + tok, "dpop", r.proof(t, r.claims(tok))}
		}, decision.ReasonDPoPProofMismatch},
		{"unbound token under DPoP", func() []string {
			tok := r.token(t, nil)
			return []string{"authorization", "DPoP " + tok, "dpop", r.proof(t, r.claims(tok))}
		}, decision.ReasonDPoPProofMismatch},
		// Window.
		{"iat 61s old", withProof(func(c map[string]any) { c["iat"] = r.clock.Now().Add(-61 * time.Second).Unix() }), decision.ReasonDPoPProofStale},
		{"iat 11s ahead", withProof(func(c map[string]any) { c["iat"] = r.clock.Now().Add(11 * time.Second).Unix() }), decision.ReasonDPoPProofStale},
		{"iat 1e300", withProof(func(c map[string]any) { c["iat"] = 1e300 }), decision.ReasonDPoPProofStale},
		// A token fault under the DPoP scheme is still the token's reason.
		{"expired bound token", func() []string {
			c := r.idp.Claims()
			c["exp"] = time.Now().Add(-time.Hour).Unix()
			c["cnf"] = map[string]any{"jkt": testkit.Thumbprint(t, &r.client2.PublicKey)}
			tok := r.key.Sign(t, c)
			return []string{"authorization", "DPoP " + tok, "dpop", r.proof(t, r.claims(tok))}
		}, decision.ReasonTokenExpired},
		{"DPoP scheme with two tokens", func() []string { return []string{"authorization", "DPoP " + bound() + " " + bound()} }, decision.ReasonTokenMalformed},
	}
	t.Run("refused", func(t *testing.T) {
		for _, tt := range refused {
			t.Run(tt.name, func(t *testing.T) {
				give := tt.give()
				got, status, www := r.outcome(t, dpopRequest(give...))
				if got != tt.wantReason || status != http.StatusUnauthorized {
					t.Fatalf("got %s %d, want %s 401", got, status, tt.wantReason)
				}
				wantScheme, wantErr := "Bearer ", `error="invalid_token"`
				if strings.HasPrefix(give[1], "DPoP ") || strings.HasPrefix(string(got), "dpop_") {
					wantScheme = "DPoP "
				}
				if strings.HasPrefix(string(got), "dpop_") && got != decision.ReasonDPoPProofMissing {
					wantErr = `error="invalid_dpop_proof"`
				}
				if !strings.HasPrefix(www, wantScheme) || !strings.Contains(www, wantErr) ||
					!strings.Contains(www, `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`) ||
					(wantScheme == "DPoP ") != strings.Contains(www, `algs="RS256 `) {
					t.Errorf("WWW-Authenticate = %q; want %s challenge with %s", www, wantScheme, wantErr)
				}
			})
		}
	})

	t.Run("replayed", func(t *testing.T) {
		h := withProof(nil)()
		if got, _, _ := r.outcome(t, dpopRequest(h...)); got != decision.ReasonAllowed {
			t.Fatalf("first use: %s", got)
		}
		if got, status, www := r.outcome(t, dpopRequest(h...)); got != decision.ReasonDPoPProofReplayed || status != 401 || !strings.HasPrefix(www, `DPoP error="invalid_dpop_proof"`) {
			t.Fatalf("second use: %s %d %q, want dpop_proof_replayed 401", got, status, www)
		}
		// A refused proof does not burn its jti: fixed, the same jti passes
		// once.
		tok := bound()
		c := r.claims(tok)
		c["htm"] = "GET"
		if got, _, _ := r.outcome(t, dpopRequest("authorization", "DPoP "+tok, "dpop", r.proof(t, c))); got != decision.ReasonDPoPProofMismatch {
			t.Fatalf("GET proof on POST: %s", got)
		}
		c["htm"] = "POST"
		if got, _, _ := r.outcome(t, dpopRequest("authorization", "DPoP "+tok, "dpop", r.proof(t, c))); got != decision.ReasonAllowed {
			t.Fatalf("same jti after a refused proof: %s", got)
		}
	})
}

// TestDPoPLog: a refused proof's decision line says why, and carries
// neither the token nor the proof.
func TestDPoPLog(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	r := newDPoPRigLog(t, zap.New(core))
	tok := r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, &r.client2.PublicKey)})
	c := r.claims(tok)
	c["htm"] = "DELETE"
	proof := r.proof(t, c)
	if got, _, _ := r.outcome(t, dpopRequest("authorization", "DPoP "+tok, "dpop", proof)); got != decision.ReasonDPoPProofMismatch {
		t.Fatalf("reason %s", got)
	}
	entries := logs.FilterMessage("decision").All()
	if len(entries) != 1 {
		t.Fatalf("%d decision lines", len(entries))
	}
	m := entries[0].ContextMap()
	if m["reason"] != string(decision.ReasonDPoPProofMismatch) || !strings.Contains(fmt.Sprint(m["detail"]), `htm "DELETE"`) {
		t.Errorf("decision line %v", m)
	}
	for k, v := range m {
		if s := fmt.Sprint(v); strings.Contains(s, tok) || strings.Contains(s, proof) || strings.Contains(s, strings.Split(proof, ".")[2]) {
			t.Errorf("field %s carries the token or the proof", k)
		}
	}
}

// TestTokenCases2 replays cases D11 (Bearer 1*SP) and D12 (a cnf.jkt token
// as Bearer) of cases-2.jsonl over gRPC with real tokens, and the classes
// around them: several Authorization headers and inner spaces stay refused,
// and D12's token passes with the DPoP scheme and a valid proof.
func TestTokenCases2(t *testing.T) {
	r := newDPoPRig(t)
	plain := r.token(t, nil)
	cnfJKT := r.token(t, map[string]any{"jkt": testkit.Thumbprint(t, &r.client2.PublicKey)})
	replay := func(id string, tokens map[string]string) (decision.Reason, int) {
		c := loadTokenCase2(t, id)
		capt, err := capture.Parse(c.Request)
		if err != nil {
			t.Fatal(err)
		}
		for ph, tok := range tokens {
			capt.Headers["authorization"] = strings.ReplaceAll(capt.Headers["authorization"], ph, tok)
		}
		got, status, _ := r.outcome(t, capt.CheckRequest(true))
		if *c.Want.Allow != (got == decision.ReasonAllowed) || !*c.Want.Allow && status != c.Want.Status {
			t.Errorf("%s: got %s %d; want allow=%v status %d", id, got, status, *c.Want.Allow, c.Want.Status)
		}
		return got, status
	}
	replay("D11", map[string]string{"{{TOKEN_OK}}": plain})
	if got, _ := replay("D12", map[string]string{"{{TOKEN_OK_WITH_CNF_JKT}}": cnfJKT}); got != decision.ReasonDPoPProofMissing {
		t.Errorf("D12: reason %s, want dpop_proof_missing", got)
	}
	tests := []struct {
		name       string
		give       []string
		wantReason decision.Reason
	}{
		{"one space", []string{"authorization", "Bearer " + plain}, decision.ReasonAllowed},
		{"three spaces", []string{"authorization", "Bearer   " + plain}, decision.ReasonAllowed},
		{"tab", []string{"authorization", "Bearer\t" + plain}, decision.ReasonTokenMalformed},
		{"inner space", []string{"authorization", "Bearer " + strings.Replace(plain, ".", ". ", 1)}, decision.ReasonTokenMalformed},
		{"two tokens", []string{"authorization", "Bearer " + plain + " " + plain}, decision.ReasonTokenMalformed},
		{"two Authorization headers", []string{"authorization", "Bearer " + plain, "authorization", "Bearer " + plain}, decision.ReasonTokenMalformed},
		{"joined Authorization headers", []string{"authorization", "Bearer " + plain + ",Bearer " + plain}, decision.ReasonTokenMalformed},
		{"D12 token as Bearer", []string{"authorization", "Bearer " + cnfJKT}, decision.ReasonDPoPProofMissing},
		{"D12 token as DPoP with its proof", []string{"authorization", "DPoP  " + cnfJKT, "dpop", r.proof(t, r.claims(cnfJKT))}, decision.ReasonAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, status, _ := r.outcome(t, dpopRequest(tt.give...)); got != tt.wantReason {
				t.Fatalf("got %s %d, want %s", got, status, tt.wantReason)
			}
		})
	}
}
