package extauthz

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// BenchmarkApproval measures what approvals and idempotency keys add to a
// Decide (in process, fixed principal): "ask" is the request an approval
// lifts; "approved" is the same request with an approval: ask + verifying
// the approval's JWS ("verify-approval", ES256 or RS256) + one store claim of its
// jti, and no other I/O. "keyed-allow" is an allowed request whose
// idempotency key is claimed. store=redis minus store=memory is the store
// round trip, which "redis-claim" measures alone.
func BenchmarkApproval(b *testing.B) {
	const bigArgs = `{"amountMinor":9000,"currency":"USD","orderId":"o-1"}`
	const apprIss = "https://approvals.example.com"
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	rsaKey := testkit.NewKey(b, "approver-key").Priv
	approvals, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: apprIss, Audiences: []string{testAudience}, Types: []string{decision.ApprovalType},
		KeySet: &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{&ecKey.PublicKey, &rsaKey.PublicKey}}})
	if err != nil {
		b.Fatal(err)
	}
	signers := map[string]jose.Signer{}
	for alg, k := range map[jose.SignatureAlgorithm]any{jose.ES256: ecKey, jose.RS256: rsaKey} {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: k}, (&jose.SignerOptions{}).WithType(decision.ApprovalType))
		if err != nil {
			b.Fatal(err)
		}
		signers[string(alg)] = s
	}
	stores := map[string]func(b *testing.B) state.Store{
		"memory": func(*testing.B) state.Store { return state.NewMemory(1<<22, nil) },
		"redis": func(b *testing.B) state.Store {
			r, err := state.NewRedis(statetest.RedisURL(b), statetest.Prefix())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.Close() })
			return r
		},
	}
	server := func(b *testing.B, st state.Store) *Server {
		srv := newTestServer(compileStore(b, filepath.Join("testdata", "binding-policy.yaml")), staticVerifier{bearer.Principal{
			Issuer: "https://idp.example.com", Subject: testSubject, Audience: testAudience, Audiences: []string{testAudience},
			Claims: map[string]any{"sub": testSubject},
		}}, nil)
		configure(b, srv, func(c *decision.Config) {
			c.Binding = &decision.Binding{Approvals: approvals, Store: st, IdempotencyHeader: decision.DefaultIdempotencyHeader}
		})
		return srv
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"issue_refund","arguments":` + bigArgs + `}}`
	digest := func(b *testing.B, srv *Server) string {
		d := srv.Decider.Decide(context.Background(), RequestFromCheck(postReq(body).CheckRequest(true)))
		if d.Reason != decision.ReasonAuthorizationRequired {
			b.Fatalf("setup: %s", d.Reason)
		}
		return d.RequestDigest
	}
	for _, name := range []string{"memory", "redis"} {
		b.Run("ask/store="+name, func(b *testing.B) {
			srv := server(b, stores[name](b))
			req := RequestFromCheck(postReq(body).CheckRequest(true))
			b.ReportAllocs()
			for b.Loop() {
				_ = srv.Decider.Decide(context.Background(), req)
			}
		})
		for _, alg := range []string{"ES256", "RS256"} {
			b.Run("approved/store="+name+"/alg="+alg, func(b *testing.B) {
				signer := signers[alg]
				srv := server(b, stores[name](b))
				dg := digest(b, srv)
				now := time.Now()
				reqs := make([]*decision.Request, b.N) // single use: one approval per Check
				for i := range reqs {
					payload, _ := json.Marshal(map[string]any{"iss": apprIss, "aud": testAudience, "sub": testSubject, "digest": dg,
						"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "jti": strconv.Itoa(i) + "-" + newDecisionID(), "approver": "bob"})
					jws, err := signer.Sign(payload)
					if err != nil {
						b.Fatal(err)
					}
					tok, _ := jws.CompactSerialize()
					c := postReq(body)
					c.Headers[decision.HeaderApproval] = tok
					reqs[i] = RequestFromCheck(c.CheckRequest(true))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if d := srv.Decider.Decide(context.Background(), reqs[i]); d.Reason != decision.ReasonAllowed {
						b.Fatalf("approved Check: %s %s", d.Reason, d.Detail)
					}
				}
			})
		}
		b.Run("keyed-allow/store="+name, func(b *testing.B) {
			srv := server(b, stores[name](b))
			small := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"issue_refund","arguments":{"amountMinor":100,"currency":"USD","orderId":"o-2"}}}`
			prefix := newDecisionID()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := postReq(small)
				c.Headers[decision.DefaultIdempotencyHeader] = prefix + strconv.Itoa(i)
				if d := srv.Decider.Decide(context.Background(), RequestFromCheck(c.CheckRequest(true))); d.Reason != decision.ReasonAllowed {
					b.Fatalf("keyed Check: %s", d.Reason)
				}
				i++
			}
		})
	}
	for _, alg := range []string{"ES256", "RS256"} {
		b.Run("verify-approval/alg="+alg, func(b *testing.B) { // the approval's JWS alone
			signer := signers[alg]
			payload, _ := json.Marshal(map[string]any{"iss": apprIss, "aud": testAudience, "sub": testSubject, "digest": "sha256:x",
				"iat": time.Now().Unix(), "exp": time.Now().Add(10 * time.Minute).Unix(), "jti": "j", "approver": "bob"})
			jws, _ := signer.Sign(payload)
			tok, _ := jws.CompactSerialize()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := approvals.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("redis-claim", func(b *testing.B) {
		st := stores["redis"](b)
		prefix := newDecisionID()
		i := 0
		for b.Loop() {
			if _, _, err := st.Claim(context.Background(), prefix+strconv.Itoa(i), "v", time.Minute); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
