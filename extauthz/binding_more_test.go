package extauthz

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

var bigRefund = call{tool: "issue_refund", args: `{"amountMinor":9000,"currency":"USD","orderId":"o-1"}`}

// TestRedisOutage: while Redis is down, every request that needs it is
// denied (state_store_unavailable), never allowed; requests that do not
// need it are decided as usual.
func TestRedisOutage(t *testing.T) {
	url, stop := statetest.StartRedis(t)
	r, err := state.NewRedis(url, statetest.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rig := newBindingRig(t, r)
	c := bigRefund
	c.approval = rig.approve(t, bigRefund, nil)
	if got := rig.send(t, c); got.reason != "allowed" {
		t.Fatalf("before the outage: %s", got.reason)
	}
	stop()
	small := call{tool: "issue_refund", args: `{"amountMinor":100,"currency":"USD","orderId":"o-9"}`}
	for i := range 5 {
		c := bigRefund
		c.approval = rig.approve(t, bigRefund, nil) // a fresh, valid approval each time
		keyed := small
		keyed.key = "outage-" + string(rune('a'+i))
		for _, cc := range []call{c, keyed} {
			got := rig.send(t, cc)
			if got.decision == "allow" || got.reason != "state_store_unavailable" {
				t.Fatalf("Redis down: %s/%s, want a state_store_unavailable denial", got.decision, got.reason)
			}
		}
	}
	if got := rig.send(t, small); got.reason != "allowed" { // no key: the store is not needed
		t.Errorf("request that needs no store: %s", got.reason)
	}
	if rig.upstream.Load() != 2 {
		t.Errorf("upstream ran %d times, want 2 (the approved request before the outage, the keyless one after)", rig.upstream.Load())
	}
}

// TestApprovalUntrusted: anything but a well-formed approval of type
// mcp-approval+jwt signed by the approver, with every claim and a bounded
// lifetime, is approval_untrusted.
func TestApprovalUntrusted(t *testing.T) {
	rig := newBindingRig(t, state.NewMemory(0, nil))
	now := time.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := testkit.ClaimsOf(t, rig.approve(t, bigRefund, nil))
		edit(c)
		return c
	}
	tests := []struct {
		name string
		give string
	}{
		{"typ JWT (an access token shape)", signApproval(t, rig.apprKey, "JWT", claims(func(map[string]any) {}))},
		{"no typ", signApproval(t, rig.apprKey, "", claims(func(map[string]any) {}))},
		{"user's identity provider key", signApproval(t, rig.userKey, decision.ApprovalType, claims(func(map[string]any) {}))},
		{"issuer is the users' identity provider", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["iss"] = rig.idp.Issuer() }))},
		{"no jti", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { delete(c, "jti") }))},
		{"no approver", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { delete(c, "approver") }))},
		{"no digest", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { delete(c, "digest") }))},
		{"no iat", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { delete(c, "iat") }))},
		{"lives longer than the maximum", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["exp"] = now.Add(2 * time.Hour).Unix() }))},
		{"issued in the future", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["iat"] = now.Add(10 * time.Minute).Unix() }))},
		{"not a JWS", "not-a-jws"},
		{"typ of a DPoP proof", signApproval(t, rig.apprKey, "dpop+jwt", claims(func(map[string]any) {}))},
		{"typ with a parameter", signApproval(t, rig.apprKey, decision.ApprovalType+";v=1", claims(func(map[string]any) {}))},
		{"typ of another vendor's approval", signApproval(t, rig.apprKey, "application/approval+jwt", claims(func(map[string]any) {}))},
		{"typ in a header member TYP", signRawApproval(t, rig.apprKey, `{"alg":"RS256","kid":"approver-key","TYP":"mcp-approval+jwt"}`, claims(func(map[string]any) {}))},
		{"typ twice", signRawApproval(t, rig.apprKey, `{"alg":"RS256","kid":"approver-key","typ":"JWT","typ":"mcp-approval+jwt"}`, claims(func(map[string]any) {}))},
		{"nbf a second ahead", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Second).Unix() }))},
		{"nbf within go-oidc's 5-minute leeway", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["nbf"] = now.Add(4 * time.Minute).Unix() }))},
		{"nbf a string", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["nbf"] = strconv.FormatInt(now.Unix()-10, 10) }))},
		{"iat a string", signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) { c["iat"] = strconv.FormatInt(now.Unix(), 10) }))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := bigRefund
			c.approval = tt.give
			if got := rig.send(t, c); got.reason != "approval_untrusted" {
				t.Errorf("reason = %s, want approval_untrusted", got.reason)
			}
		})
	}
	// Each spelling of the one media type admits (each approval once).
	for _, typ := range []string{decision.ApprovalType, "application/" + decision.ApprovalType, "APPLICATION/MCP-APPROVAL+JWT", "Mcp-Approval+JWT"} {
		t.Run("typ "+typ, func(t *testing.T) {
			c := bigRefund
			c.approval = signApproval(t, rig.apprKey, typ, claims(func(c map[string]any) { c["jti"] = newDecisionID() }))
			if got := rig.send(t, c); got.reason != "allowed" {
				t.Errorf("reason = %s, want allowed", got.reason)
			}
		})
	}
	t.Run("nbf passed", func(t *testing.T) {
		c := bigRefund
		c.approval = signApproval(t, rig.apprKey, decision.ApprovalType, claims(func(c map[string]any) {
			c["jti"], c["nbf"] = newDecisionID(), time.Now().Add(-time.Second).Unix()
		}))
		if got := rig.send(t, c); got.reason != "allowed" {
			t.Errorf("reason = %s, want allowed", got.reason)
		}
	})
	t.Run("raw-signed control", func(t *testing.T) { // the signRawApproval cases above fail for their header only
		c := bigRefund
		c.approval = signRawApproval(t, rig.apprKey, `{"alg":"RS256","kid":"approver-key","typ":"mcp-approval+jwt"}`, claims(func(c map[string]any) { c["jti"] = newDecisionID() }))
		if got := rig.send(t, c); got.reason != "allowed" {
			t.Errorf("reason = %s, want allowed", got.reason)
		}
	})
	admitted := rig.upstream.Load()
	t.Run("header and _meta differ", func(t *testing.T) {
		c := bigRefund
		c.approval = rig.approve(t, bigRefund, nil)
		c.metaAppr = rig.approve(t, bigRefund, nil)
		if got := rig.send(t, c); got.reason != "approval_untrusted" {
			t.Errorf("reason = %s, want approval_untrusted", got.reason)
		}
	})
	t.Run("no approver configured", func(t *testing.T) {
		rig2 := newBindingRig(t, state.NewMemory(0, nil), func(s *Server) { configure(t, s, func(c *decision.Config) { c.Binding.Approvals = nil }) })
		c := bigRefund
		c.approval = rig2.approve(t, bigRefund, nil)
		if got := rig2.send(t, c); got.reason != "approval_untrusted" {
			t.Errorf("reason = %s, want approval_untrusted", got.reason)
		}
	})
	if n := rig.upstream.Load(); n != admitted || admitted != 6 {
		t.Errorf("upstream ran %d times, %d for the valid approvals; want 6 and no other", n, admitted)
	}
}

// signRawApproval signs claims under header as given (members go-jose
// would not write) as RS256 with k.
func signRawApproval(t testing.TB, k *testkit.Key, header string, claims map[string]any) string {
	t.Helper()
	p, _ := json.Marshal(claims)
	in := testkit.B64([]byte(header)) + "." + testkit.B64(p)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(nil, k.Priv, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + testkit.B64(sig)
}

// TestApprovalNotForwarded: the approval header never reaches the upstream;
// the admitted request is logged with its approver, never with the approval
// or an argument.
func TestApprovalNotForwarded(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	rig := newBindingRig(t, state.NewMemory(0, nil), func(s *Server) { s.Log = zap.New(core) })
	c := bigRefund
	c.approval = rig.approve(t, bigRefund, nil)
	got := rig.send(t, c)
	if got.reason != "allowed" {
		t.Fatalf("reason %s", got.reason)
	}
	if !contains(got.removed, decision.HeaderApproval) {
		t.Errorf("headers_to_remove = %v, want %s among them", got.removed, decision.HeaderApproval)
	}
	if _, set := got.upstreamHeaders[HeaderRetry]; set {
		t.Errorf("first admission marked as a retry")
	}
	e := logs.All()[0]
	b, _ := json.Marshal(e.ContextMap())
	if m := e.ContextMap(); m["approver"] != "bob@example.com" || m["approval_jti"] == "" {
		t.Errorf("log line lacks the approver: %s", b)
	}
	if strings.Contains(string(b), c.approval[:40]) || strings.Contains(string(b), "9000") {
		t.Errorf("log line leaks the approval or an argument: %s", b)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// FuzzBinding: whatever the approval, idempotency key and body, Check
// answers, with a reason from the closed set, OK exactly when allowed, and
// an approval that was not signed by the approver never admits an ask.
func FuzzBinding(f *testing.F) {
	f.Add("", "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{"amountMinor":9000,"currency":"EUR"}}}`))
	f.Add("a.b.c", "k1", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{},"_meta":{"io.mcp-extauthz/approval":"x.y.z"}}}`))
	f.Add("eyJ0eXAiOiJtY3AtYXBwcm92YWwrand0In0.e30.", "\"k\"", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{"amountMinor":9000},"_meta":{"io.mcp-extauthz/approval":7}}}`))
	srv := staticRig(f, nil)
	configure(f, srv, func(c *decision.Config) {
		c.Binding = &decision.Binding{
			Approvals:         warmVerifierStatic(f, testkit.NewKey(f, "approver-key")),
			Store:             state.NewMemory(1000, nil),
			IdempotencyHeader: decision.DefaultIdempotencyHeader,
			IdempotencyMeta:   "io.mcp-extauthz/idempotency-key",
		}
	})
	f.Fuzz(func(t *testing.T, approval, key string, body []byte) {
		c := postReq("")
		c.Body = body
		if approval != "" {
			c.Headers[decision.HeaderApproval] = approval
		}
		if key != "" {
			c.Headers[decision.DefaultIdempotencyHeader] = key
		}
		resp, err := srv.Check(t.Context(), c.CheckRequest(true))
		if err != nil || resp == nil {
			t.Fatalf("Check = %v, %v", resp, err)
		}
		md := resp.GetDynamicMetadata().GetFields()
		reason := md["reason"].GetStringValue()
		if _, ok := outcomes[decision.Reason(reason)]; !ok {
			t.Fatalf("reason %q outside the closed set", reason)
		}
		if (resp.GetOkResponse() != nil) != (reason == string(decision.ReasonAllowed)) {
			t.Fatalf("status %v with reason %q", resp.GetStatus(), reason)
		}
		// Without the approval and the key the same body is decided
		// alone; an allow must not come from a forged approval.
		if reason == string(decision.ReasonAllowed) && (approval != "" || strings.Contains(string(body), decision.MetaApproval)) {
			d := srv.Decider.Decide(t.Context(), RequestFromCheck(postReqBody(body).CheckRequest(true)))
			if d.Reason != decision.ReasonAllowed {
				t.Fatalf("a fuzzed approval admitted a request the policy decides %s", d.Reason)
			}
		}
	})
}

func postReqBody(body []byte) *capture.Request {
	c := postReq("")
	c.Body = body
	return c
}

// warmVerifierStatic verifies approvals signed by k (issuer
// https://approvals.example.com) against a static key set.
func warmVerifierStatic(t testing.TB, k *testkit.Key) *bearer.OIDCVerifier {
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: "https://approvals.example.com", Audiences: []string{testAudience}, Types: []string{decision.ApprovalType},
		KeySet: bearer.NewStaticKeySet([]jose.JSONWebKey{k.Public()})})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestApprovalBatch: an approval binds one request digest, so it never lifts
// an ask inside a batch (MCP 2025-03-26), whose other elements it does not
// name; nor does an idempotency key apply to a batch.
func TestApprovalBatch(t *testing.T) {
	rig := newBindingRig(t, state.NewMemory(0, nil))
	transfer := call{tool: "transfer_funds", args: `{"amountMinor":1}`}
	for _, body := range []string{
		`[` + bigRefund.body() + `]`,
		`[` + bigRefund.body() + `,` + strings.Replace(transfer.body(), `"id":7`, `"id":8`, 1) + `]`,
	} {
		capt := caseReq(body)
		delete(capt.Headers, "mcp-protocol-version") // batches exist only in 2025-03-26
		capt.Headers["authorization"] = "Bearer " + rig.token(t, call{})
		capt.Headers[decision.HeaderApproval] = rig.approve(t, bigRefund, nil)
		d, _ := parseDenial(t, check(t, rig.client, capt.CheckRequest(true)))
		if d.Error.Data.Reason != "authorization_required" {
			t.Errorf("batch with an approval of its first element: %s, want authorization_required", d.Error.Data.Reason)
		}
	}
	small := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}`
	for i, body := range []string{`[` + small + `]`, `[` + strings.Replace(small, `"id":1`, `"id":2`, 1) + `,` + small + `]`} {
		capt := caseReq(body)
		delete(capt.Headers, "mcp-protocol-version")
		capt.Headers["authorization"] = "Bearer " + rig.token(t, call{})
		capt.Headers[decision.DefaultIdempotencyHeader] = "same-key"
		if h := okHeaders(t, check(t, rig.client, capt.CheckRequest(true))); h[HeaderRetry] != "" {
			t.Errorf("batch %d marked as a retry", i)
		}
	}
}

// TestIdempotencyKeySpellings: the two spellings of one key, sent through
// gRPC, bind one request digest: the second is a retry, and another
// request under either spelling is replay_substitution.
func TestIdempotencyKeySpellings(t *testing.T) {
	rig := newBindingRig(t, state.NewMemory(0, nil))
	small := call{tool: "issue_refund", args: `{"amountMinor":100,"currency":"USD","orderId":"o-7"}`}
	other := call{tool: "issue_refund", args: `{"amountMinor":200,"currency":"USD","orderId":"o-7"}`}
	small.key = `"k\\1"`
	if got := rig.send(t, small); got.reason != "allowed" || got.retry {
		t.Fatalf("first: %+v", got)
	}
	small.key = `k\1`
	if got := rig.send(t, small); got.reason != "allowed" || !got.retry {
		t.Fatalf("the same key spelled bare: %+v, want a retry", got)
	}
	for _, k := range []string{`k\1`, `"k\\1"`} {
		other.key = k
		if got := rig.send(t, other); got.reason != "replay_substitution" {
			t.Errorf("another request under %s: %s, want replay_substitution", k, got.reason)
		}
	}
}
