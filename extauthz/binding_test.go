package extauthz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

const (
	gatewayAudience = "https://mcp.example.com/github/mcp" // a second MCP server behind the same service
	otherAudience   = "https://other.example.com/mcp"      // an MCP server this service does not guard
	approvalURL     = "https://approvals.example.com/approve?digest={digest}"
)

// bindingRig is a Check server with approvals and idempotency keys on a
// given store: real gRPC, real JWTs against JWKS served on loopback for the
// users' identity provider and for the approver.
type bindingRig struct {
	client   authv3.AuthorizationClient
	idp      *testkit.IdP
	userKey  *testkit.Key
	approver *testkit.IdP
	apprKey  *testkit.Key
	policies *decision.PolicyStore
	binding  *decision.Binding
	upstream atomic.Int64 // allowed requests that are not retries: the upstream runs them
}

func newBindingRig(t *testing.T, store state.Store, opts ...func(*Server)) *bindingRig {
	t.Helper()
	rig := &bindingRig{userKey: testkit.NewKey(t, "user-key"), apprKey: testkit.NewKey(t, "approver-key")}
	rig.idp = testkit.NewIdP(t, rig.userKey)
	rig.approver = testkit.NewIdP(t, rig.apprKey)
	auds := []string{testAudience, gatewayAudience}
	users := warmVerifier(t, rig.idp.Issuer(), auds, nil)
	rig.binding = &decision.Binding{
		Approvals:         warmVerifier(t, rig.approver.Issuer(), auds, []string{decision.ApprovalType}),
		Store:             store,
		IdempotencyHeader: decision.DefaultIdempotencyHeader,
		IdempotencyMeta:   "io.mcp-extauthz/idempotency-key",
		ApprovalURL:       approvalURL,
	}
	rig.policies = compileStore(t, filepath.Join("testdata", "binding-policy.yaml"))
	srv := newTestServer(rig.policies, users, nil)
	configure(t, srv, func(c *decision.Config) { c.Binding = rig.binding })
	for _, o := range opts {
		o(srv)
	}
	rig.client = startGRPC(t, srv)
	return rig
}

// warmVerifier verifies JWTs of types (nil: access tokens) through
// discovery at issuer.
func warmVerifier(t *testing.T, issuer string, auds, types []string) *bearer.OIDCVerifier {
	t.Helper()
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: issuer, Audiences: auds, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	return v
}

// call is one tools/call as a client sends it.
type call struct {
	sub      string   // token sub; "" means alice
	client   string   // token client_id; "" for none
	tokenAud []string // token aud; nil means testAudience
	routeAud string   // the route's mcp_audience context extension
	tool     string
	args     string // canonical JSON (keys sorted, no spaces)
	key      string // Idempotency-Key header
	metaKey  string // params._meta idempotency key
	approval string // x-mcp-approval header
	metaAppr string // params._meta approval
}

func (c call) subject() string {
	if c.sub == "" {
		return testSubject
	}
	return c.sub
}

// audience is the audience the request digest names.
func (c call) audience() string {
	if c.routeAud != "" {
		return c.routeAud
	}
	if c.tokenAud != nil {
		return c.tokenAud[0]
	}
	return testAudience
}

func (c call) body() string {
	meta := map[string]string{}
	if c.metaKey != "" {
		meta["io.mcp-extauthz/idempotency-key"] = c.metaKey
	}
	if c.metaAppr != "" {
		meta[decision.MetaApproval] = c.metaAppr
	}
	m := ""
	if len(meta) > 0 {
		b, _ := json.Marshal(meta)
		m = `,"_meta":` + string(b)
	}
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":` + c.args + m + `}}`
}

// digest is the request digest of c, computed from README's specification
// (v3: the envelope names the arguments by their digest and the token's
// client; both are RFC 8785 forms, computed here with gowebpki/jcs).
func (rig *bindingRig) digest(t testing.TB, c call) string {
	t.Helper()
	sha := func(b []byte) string {
		canon, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(canon)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	env, err := json.Marshal(map[string]any{
		"v": "mcp-extauthz/request/v3", "aud": c.audience(), "client": c.client, "iss": rig.idp.Issuer(), "sub": c.subject(),
		"server": testServerID, "method": "tools/call", "target": c.tool, "args_digest": sha([]byte(c.args)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return sha(env)
}

func (rig *bindingRig) token(t testing.TB, c call) string {
	claims := rig.idp.Claims()
	claims["sub"] = c.subject()
	if c.client != "" {
		claims["client_id"] = c.client
	}
	if c.tokenAud != nil {
		claims["aud"] = c.tokenAud
	}
	return rig.userKey.Sign(t, claims)
}

// approve signs an approval of c's digest for c's principal and audience;
// edit changes the claims before signing.
func (rig *bindingRig) approve(t testing.TB, c call, edit func(map[string]any)) string {
	now := time.Now()
	claims := map[string]any{
		"iss": rig.approver.Issuer(), "aud": c.audience(), "sub": c.subject(), "digest": rig.digest(t, c),
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "jti": newDecisionID(), "approver": "bob@example.com",
	}
	if edit != nil {
		edit(claims)
	}
	return signApproval(t, rig.apprKey, decision.ApprovalType, claims)
}

func signApproval(t testing.TB, k *testkit.Key, typ string, claims map[string]any) string {
	t.Helper()
	return testkit.SignJWS(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.Priv, KeyID: k.Kid}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)), claims)
}

// outcome is what one Check decided, as Envoy and the upstream see it.
type bindingOutcome struct {
	decision, reason, digest string
	retry                    bool
	approvalURL              string
	upstreamHeaders          map[string]string
	removed                  []string
}

// send checks c and counts an upstream run for every allowed request that
// is not a retry (an idempotent upstream answers retries from its record).
func (rig *bindingRig) send(t testing.TB, c call) bindingOutcome {
	t.Helper()
	capt := caseReq(c.body())
	capt.Headers["authorization"] = "Bearer " + rig.token(t, c)
	if c.key != "" {
		capt.Headers["idempotency-key"] = c.key
	}
	if c.approval != "" {
		capt.Headers[decision.HeaderApproval] = c.approval
	}
	req := capt.CheckRequest(true)
	if c.routeAud != "" {
		req.Attributes.ContextExtensions = map[string]string{ContextExtensionAudience: c.routeAud}
	}
	resp := check(t, rig.client, req)
	md := resp.GetDynamicMetadata().GetFields()
	out := bindingOutcome{decision: md["decision"].GetStringValue(), reason: md["reason"].GetStringValue()}
	if ok := resp.GetOkResponse(); ok != nil {
		out.upstreamHeaders = okHeaders(t, resp)
		out.digest = out.upstreamHeaders[HeaderRequestDigest]
		out.retry = out.upstreamHeaders[HeaderRetry] == "true"
		out.removed = ok.GetHeadersToRemove()
		if !out.retry {
			rig.upstream.Add(1)
		}
		return out
	}
	d, _ := parseDenial(t, resp)
	out.digest = d.Error.Data.RequestDigest
	var data struct {
		Error struct {
			Data struct {
				ApprovalURL string `json:"approval_url"`
			} `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(resp.GetDeniedResponse().GetBody()), &data)
	out.approvalURL = data.Error.Data.ApprovalURL
	return out
}

// storeKinds runs f with a memory store and with a real Redis; down is a
// store of the same kind that cannot answer (a full memory store; a Redis
// client whose server was stopped).
func storeKinds(t *testing.T, f func(t *testing.T, up, down func(t *testing.T) state.Store)) {
	t.Run("memory", func(t *testing.T) {
		f(t, func(*testing.T) state.Store { return state.NewMemory(0, nil) }, func(t *testing.T) state.Store {
			m := state.NewMemory(1, nil)
			if _, _, err := m.Claim(context.Background(), "filler", "x", time.Hour); err != nil {
				t.Fatal(err)
			}
			return m
		})
	})
	t.Run("redis", func(t *testing.T) {
		f(t, func(t *testing.T) state.Store {
			r, err := state.NewRedis(statetest.RedisURL(t), statetest.Prefix())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		}, func(t *testing.T) state.Store {
			url, stop := statetest.StartRedis(t)
			stop()
			r, err := state.NewRedis(url, statetest.Prefix())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		})
	})
}

// TestApprovalConformance is issue 10's conformance table, run against both
// stores. Each row sends its calls in order (the approval, if any, minted
// for `approved` before the first) and asserts the last call's decision,
// reason and digest, and how many times the upstream ran over the row.
func TestApprovalConformance(t *testing.T) {
	big := call{tool: "issue_refund", args: `{"amountMinor":9000,"currency":"USD","orderId":"o-1"}`}
	small := call{tool: "issue_refund", args: `{"amountMinor":2000,"currency":"USD","orderId":"o-2"}`}
	with := func(c call, edit func(*call)) call { edit(&c); return c }
	denyRefunds := "deny: [{id: no-refunds, match: payments/issue_refund}]\nask: [{id: transfers, match: payments/transfer_funds}]\n"

	tests := []struct {
		name      string
		approved  *call                // the request the approver signed; nil: no approval
		edit      func(map[string]any) // changes to the approval's claims
		inMeta    bool                 // the approval travels in params._meta
		policy    string               // replaces the policy after the approval is minted
		storeDown bool                 // the state store cannot answer
		calls     []call               // sent in order; each carries the approval
		want      [3]string            // decision, reason of the last call; digest of ("" none)
		wantRuns  int64
	}{
		{name: "exact approved request", approved: &big, calls: []call{big},
			want: [3]string{"allow", "allowed"}, wantRuns: 1},
		{name: "approval in params._meta", approved: &big, inMeta: true, calls: []call{big},
			want: [3]string{"allow", "allowed"}, wantRuns: 1},
		{name: "amount changed after approval", approved: &big,
			calls: []call{with(big, func(c *call) { c.args = `{"amountMinor":9500,"currency":"USD","orderId":"o-1"}` })},
			want:  [3]string{"ask", "approval_digest_mismatch"}},
		{name: "tool changed", approved: &big, calls: []call{with(big, func(c *call) { c.tool = "transfer_funds" })},
			want: [3]string{"ask", "approval_digest_mismatch"}},
		{name: "audience changed: token for another MCP server", approved: &big,
			calls: []call{with(big, func(c *call) { c.tokenAud = []string{otherAudience} })},
			want:  [3]string{"deny", "token_wrong_audience", "none"}},
		{name: "audience changed: approval for another server of the gateway", approved: &big,
			calls: []call{with(big, func(c *call) { c.tokenAud = []string{testAudience, gatewayAudience}; c.routeAud = gatewayAudience })},
			want:  [3]string{"ask", "approval_audience_mismatch"}},
		{name: "principal changed: approval for alice used by bob", approved: &big,
			calls: []call{with(big, func(c *call) { c.sub = "bob" })},
			want:  [3]string{"ask", "approval_principal_mismatch"}},
		{name: "expired approval", approved: &big,
			edit: func(c map[string]any) {
				c["iat"] = time.Now().Add(-20 * time.Minute).Unix()
				c["exp"] = time.Now().Add(-time.Minute).Unix()
			},
			calls: []call{big}, want: [3]string{"ask", "approval_expired"}},
		{name: "same approval twice: second denied", approved: &big, calls: []call{big, big},
			want: [3]string{"ask", "approval_replayed"}, wantRuns: 1},
		{name: "same idempotency key, same request: a retry", calls: []call{with(small, func(c *call) { c.key = "k-1" }), with(small, func(c *call) { c.key = "k-1" })},
			want: [3]string{"allow", "allowed"}, wantRuns: 1},
		{name: "same _meta idempotency key, same request: a retry", calls: []call{with(small, func(c *call) { c.metaKey = "k-1" }), with(small, func(c *call) { c.metaKey = "k-1" })},
			want: [3]string{"allow", "allowed"}, wantRuns: 1},
		{name: "same key, new arguments", calls: []call{
			with(small, func(c *call) { c.key = "k-2" }),
			with(small, func(c *call) { c.key = "k-2"; c.args = `{"amountMinor":2400,"currency":"USD","orderId":"o-2"}` })},
			want: [3]string{"deny", "replay_substitution"}, wantRuns: 1},
		{name: "approved request retried with its idempotency key", approved: &big,
			calls: []call{with(big, func(c *call) { c.key = "k-3" }), with(big, func(c *call) { c.key = "k-3" })},
			want:  [3]string{"allow", "allowed"}, wantRuns: 1},
		{name: "approval for a different digest with a lower amount",
			approved: &call{tool: "issue_refund", args: `{"amountMinor":2600,"currency":"USD","orderId":"o-1"}`},
			calls:    []call{big}, want: [3]string{"ask", "approval_digest_mismatch"}},
		{name: "approval never carries over to a smaller request", approved: &big,
			calls: []call{with(big, func(c *call) { c.args = `{"amountMinor":2600,"currency":"USD","orderId":"o-1"}` })},
			want:  [3]string{"ask", "approval_digest_mismatch"}},
		{name: "policy now denies the approved tool", approved: &big, policy: denyRefunds, calls: []call{big},
			want: [3]string{"deny", "policy_denied"}},
		{name: "approval signed by an untrusted key", approved: &big, edit: func(c map[string]any) { c["untrusted"] = true },
			calls: []call{big}, want: [3]string{"ask", "approval_untrusted"}},
		{name: "store down: approved request", approved: &big, storeDown: true, calls: []call{big},
			want: [3]string{"deny", "state_store_unavailable"}}, // a fault: the verdict is the reason's (deny)
		{name: "store down: allowed request with an idempotency key", storeDown: true,
			calls: []call{with(small, func(c *call) { c.key = "k-4" })}, want: [3]string{"deny", "state_store_unavailable"}},
	}
	storeKinds(t, func(t *testing.T, up, down func(t *testing.T) state.Store) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				store := up
				if tt.storeDown {
					store = down
				}
				rig := newBindingRig(t, store(t))
				var appr string
				if tt.approved != nil {
					untrusted := false
					appr = rig.approve(t, *tt.approved, func(c map[string]any) {
						if tt.edit != nil {
							tt.edit(c)
						}
						_, untrusted = c["untrusted"]
						delete(c, "untrusted")
					})
					if untrusted {
						appr = signApproval(t, testkit.NewKey(t, "approver-key"+"-rogue"), decision.ApprovalType, testkit.ClaimsOf(t, appr))
					}
				}
				if tt.policy != "" {
					lp, err := decision.CompilePolicy("deny.yaml", []byte(tt.policy))
					if err != nil {
						t.Fatal(err)
					}
					rig.policies.Store(lp)
				}
				var got bindingOutcome
				for _, c := range tt.calls {
					if appr != "" && tt.inMeta {
						c.metaAppr = appr
					} else {
						c.approval = appr
					}
					got = rig.send(t, c)
				}
				last := tt.calls[len(tt.calls)-1]
				wantDigest := rig.digest(t, last)
				if tt.want[2] == "none" {
					wantDigest = ""
				}
				if got.decision != tt.want[0] || got.reason != tt.want[1] || got.digest != wantDigest || rig.upstream.Load() != tt.wantRuns {
					t.Errorf("got %s/%s digest %s, upstream ran %d; want %s/%s digest %s, %d",
						got.decision, got.reason, got.digest, rig.upstream.Load(), tt.want[0], tt.want[1], wantDigest, tt.wantRuns)
				}
				if len(tt.calls) == 2 && got.decision == "allow" && !got.retry {
					t.Error("second allowed call with the same idempotency key is not marked x-mcp-retry")
				}
				if got.decision == "ask" && got.reason != "state_store_unavailable" {
					if want := strings.ReplaceAll(approvalURL, "{digest}", url.QueryEscape(got.digest)); got.approvalURL != want {
						t.Errorf("approval_url = %q, want %q", got.approvalURL, want)
					}
				}
			})
		}
	})
}
