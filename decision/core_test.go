package decision

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// The core rig's identities: the users' issuer, the approver's, and the two
// audiences (RFC 8707 resource URIs) its verifiers accept.
const (
	coreIssuer    = "https://idp.example.com"
	coreApprover  = "https://approver.example.com"
	coreAudience  = testkit.Audience
	coreAudience2 = "https://mcp.example.com/github/mcp"
	coreServer    = "payments"
	coreHTU       = "https://mcp.example.com/mcp"
)

// coreRig decides with real parts: RS256 JWTs signed by testkit keys and
// checked by bearer.OIDCVerifier over a static key set (no discovery),
// approvals of typ mcp-approval+jwt checked by a second verifier, DPoP
// proofs (ES256) by bearer.DPoPVerifier, approvals, idempotency keys and
// quota buckets in a state.Memory, the policy testdata/core-policy.yaml.
type coreRig struct {
	user, appr *testkit.Key
	dpop       *ecdsa.PrivateKey
	store      *state.Memory
	policies   *PolicyStore
	cfg        Config
}

func newCoreRig(t testing.TB) *coreRig {
	t.Helper()
	r := &coreRig{user: testkit.NewKey(t, "core-user"), appr: testkit.NewKey(t, "core-approver")}
	var err error
	if r.dpop, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	r.policies = corePolicy(t, "core-policy.yaml")
	auds := []string{coreAudience, coreAudience2}
	users, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: coreIssuer, Audiences: auds,
		KeySet: bearer.NewStaticKeySet([]jose.JSONWebKey{r.user.Public()})})
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: coreApprover, Audiences: auds, Types: []string{ApprovalType},
		KeySet: bearer.NewStaticKeySet([]jose.JSONWebKey{r.appr.Public()})})
	if err != nil {
		t.Fatal(err)
	}
	r.store = state.NewMemory(0, nil)
	r.cfg = Config{
		ServerID: coreServer,
		Verifier: users,
		DPoP:     bearer.NewDPoPVerifier(bearer.DPoPConfig{}),
		Policies: r.policies,
		Quotas:   r.store,
		Binding: &Binding{
			Approvals:         approvals,
			Store:             r.store,
			IdempotencyHeader: DefaultIdempotencyHeader,
			IdempotencyMeta:   "io.mcp-extauthz/idempotency-key",
			ApprovalURL:       "https://approvals.example.com/approve?digest={digest}",
			Results:           &state.Results{Store: r.store},
		},
	}
	return r
}

// corePolicy compiles testdata/name into a store.
func corePolicy(t testing.TB, name string) *PolicyStore {
	t.Helper()
	file := filepath.Join("testdata", name)
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := CompilePolicy(file, src)
	if err != nil {
		t.Fatal(err)
	}
	s := new(PolicyStore)
	s.Store(lp)
	return s
}

// decider is a Decider of the rig's configuration as edit changes it (nil:
// unchanged).
func (r *coreRig) decider(t testing.TB, edit func(*Config)) *Decider {
	t.Helper()
	c := r.cfg
	if c.Binding != nil {
		b := *c.Binding
		c.Binding = &b
	}
	if edit != nil {
		edit(&c)
	}
	d, err := NewDecider(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// claims are valid access-token claims of the rig's issuer for alice,
// issued now for an hour.
func (r *coreRig) claims() map[string]any {
	c := testkit.ClaimsFor(coreIssuer)
	c["client_id"] = "https://agent.example.com/client.json"
	return c
}

// token signs the rig's claims as edit changes them (nil: unchanged).
func (r *coreRig) token(t testing.TB, edit func(map[string]any)) string {
	t.Helper()
	c := r.claims()
	if edit != nil {
		edit(c)
	}
	return r.user.Sign(t, c)
}

// approval signs an approval of digest for alice at coreAudience, issued
// now for ten minutes, as edit changes its claims (nil: unchanged).
func (r *coreRig) approval(t testing.TB, digest string, edit func(map[string]any)) string {
	t.Helper()
	now := time.Now()
	c := map[string]any{"iss": coreApprover, "aud": coreAudience, "sub": testkit.Subject, "digest": digest,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "jti": "appr-" + newDecisionID(), "approver": "bob@example.com"}
	if edit != nil {
		edit(c)
	}
	return r.appr.SignTyped(t, ApprovalType, c)
}

// proof is a DPoP proof (RFC 9449 section 4.2) for a POST of token to
// coreHTU, signed by the rig's DPoP key, as edit changes its claims.
func (r *coreRig) proof(t testing.TB, token string, edit func(map[string]any)) string {
	t.Helper()
	c := map[string]any{"jti": newDecisionID(), "htm": "POST", "htu": coreHTU, "iat": time.Now().Unix(), "ath": testkit.ATH(token)}
	if edit != nil {
		edit(c)
	}
	return testkit.SignES256(t, r.dpop, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": testkit.ECJWK(r.dpop, false)}, c)
}

// jkt is the thumbprint of the rig's DPoP key (cnf.jkt).
func (r *coreRig) jkt(t testing.TB) string { return testkit.Thumbprint(t, &r.dpop.PublicKey) }

// postReq is a POST of body with token as Bearer and the JSON headers of MCP
// 2025-11-25, then the name, value pairs of hdr (a value "" removes the
// header; a repeated name adds a value).
func postReq(token, body string, hdr ...string) *Request {
	h := Headers{"content-type": {"application/json"}, "accept": {"application/json, text/event-stream"},
		"mcp-protocol-version": {"2025-11-25"}}
	if token != "" {
		h["authorization"] = []string{"Bearer " + token}
	}
	set := map[string]bool{}
	for i := 0; i+1 < len(hdr); i += 2 {
		k, v := hdr[i], hdr[i+1]
		switch {
		case v == "":
			delete(h, k)
		case set[k]:
			h[k] = append(h[k], v)
		default:
			h[k], set[k] = []string{v}, true
		}
	}
	return &Request{Method: "POST", Scheme: "https", Host: "mcp.example.com", Path: "/mcp", Headers: h, Body: []byte(body)}
}

// metaCall is the body of a tools/call of tool with arguments args (JSON),
// params._meta meta and id 1 (toolCall without _meta).
func metaCall(tool, args, meta string) string {
	m := `,"_meta":` + meta
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + m + `}}`
}

// rpc is the body of a request of method with params (JSON; "" for none)
// and id 1.
func rpc(method, params string) string {
	if params == "" {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `"}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
}

// decide is d.Decide under a background context.
func decide(d *Decider, r *Request) *Decision { return d.Decide(context.Background(), r) }

// checkNoToken fails when a decision's detail quotes the token.
func checkNoToken(t testing.TB, dec *Decision, token string) {
	t.Helper()
	if token != "" && strings.Contains(dec.DetailText(), token) {
		t.Errorf("the detail quotes the token: %s", dec.DetailText())
	}
}
