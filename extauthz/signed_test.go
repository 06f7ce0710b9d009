package extauthz

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

func decisionSigner(t testing.TB, kid string) *mcpdecision.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpdecision.NewSigner([]jose.JSONWebKey{{Key: priv, KeyID: kid}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// callOfBody is the Call of a single JSON-RPC body, read as a server's
// JSON parser reads it.
func callOfBody(t *testing.T, body string) mcpdecision.Call {
	t.Helper()
	var m struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	if m.Method == "" {
		m.Method = "response"
	}
	return mcpdecision.CallOf(m.Method, m.Params)
}

// TestSignedDecisionOnEveryAllow: with Responder.Decisions set, every
// allowed request carries x-mcp-decision, a statement that verifies for
// the request as its body reads, naming the decision's id, digests,
// policy version and rule, the principal and the audience; a forged
// client copy is overwritten. Denials and asks carry none.
func TestSignedDecisionOnEveryAllow(t *testing.T) {
	s := decisionSigner(t, "k1")
	keys, err := mcpdecision.StaticKeys(s.PublicKeySet())
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock()
	srv := staticRig(t, nil)
	srv.Responder.Decisions, srv.Responder.Now = s, clock.Now
	allowed := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q","limit":10}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"issue_refund","arguments":{"orderId":"o-1","amountMinor":1250,"currency":"EUR"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"summarize","arguments":{"lang":"en"}}}`,
	}
	for _, body := range allowed {
		c := postReq(body)
		c.Headers[HeaderDecision] = "forged"
		resp, _ := srv.Check(t.Context(), c.CheckRequest(true))
		h := okHeaders(t, resp)
		jws := h[HeaderDecision]
		if jws == "" || jws == "forged" {
			t.Errorf("%s: x-mcp-decision %q", body, jws)
			continue
		}
		v := &mcpdecision.Verifier{Audience: testAudience, Keys: keys, Now: clock.Now}
		st, err := v.Verify(t.Context(), []string{jws}, callOfBody(t, body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		md := resp.GetDynamicMetadata().GetFields()
		switch {
		case st.ID != h[HeaderDecisionID], st.RequestDigest != h[HeaderRequestDigest], st.ArgsDigest != h[HeaderArgsDigest]:
			t.Errorf("%s: statement %+v, headers %v", body, st, h)
		case st.Issuer != "https://idp.example.com" || st.Subject != testSubject || st.Audience != testAudience || st.Server != testServerID:
			t.Errorf("%s: who %+v", body, st)
		case st.PolicyVersion != md["policy_version"].GetStringValue() || st.RuleID != md["rule_id"].GetStringValue() || st.PolicyVersion == "":
			t.Errorf("%s: policy %q rule %q, metadata %v", body, st.PolicyVersion, st.RuleID, md)
		case st.IssuedAt != clock.Now().Unix() || st.ExpiresAt != st.IssuedAt+60:
			t.Errorf("%s: iat %d exp %d", body, st.IssuedAt, st.ExpiresAt)
		}
	}
	refused := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"issue_refund","arguments":{"orderId":"o-1","amountMinor":4000,"currency":"EUR"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"q":1,"q":2}}}`,
	}
	for _, body := range refused {
		resp, _ := srv.Check(t.Context(), postReq(body).CheckRequest(true))
		if resp.GetOkResponse() != nil || strings.Contains(resp.String(), "mcp-decision+jwt") || responseHeader(resp.GetDeniedResponse().GetHeaders(), HeaderDecision) != "" {
			t.Errorf("%s: a denial carries a statement or was allowed: %v", body, resp.GetStatus())
		}
	}
}

// TestNoSigningRemovesClientCopies: without a signer no statement is sent,
// and a client's x-mcp-decision never reaches the upstream.
func TestNoSigningRemovesClientCopies(t *testing.T) {
	srv := staticRig(t, nil)
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`)
	c.Headers[HeaderDecision] = "forged"
	c.Headers["x_mcp_decision"] = "forged"
	resp, _ := srv.Check(t.Context(), c.CheckRequest(true))
	if h := okHeaders(t, resp); h[HeaderDecision] != "" {
		t.Errorf("x-mcp-decision %q without a signer", h[HeaderDecision])
	}
	rm := strings.Join(resp.GetOkResponse().GetHeadersToRemove(), ",")
	if !strings.Contains(rm, HeaderDecision) || !strings.Contains(rm, "x_mcp_decision") {
		t.Errorf("headers_to_remove %s", rm)
	}
}

// TestSignedBatch: an allowed batch (MCP 2025-03-26) carries one statement
// naming every element; each element verifies once.
func TestSignedBatch(t *testing.T) {
	s := decisionSigner(t, "k1")
	keys, _ := mcpdecision.StaticKeys(s.PublicKeySet())
	srv := staticRig(t, nil)
	srv.Responder.Decisions = s
	elems := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"a"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"b"}}}`,
	}
	c := postReq("[" + strings.Join(elems, ",") + "]")
	delete(c.Headers, "mcp-protocol-version")
	resp, _ := srv.Check(t.Context(), c.CheckRequest(true))
	jws := okHeaders(t, resp)[HeaderDecision]
	v := &mcpdecision.Verifier{Audience: testAudience, Keys: keys}
	for i, e := range elems {
		st, err := v.Verify(t.Context(), []string{jws}, callOfBody(t, e))
		if err != nil || st.Method != mcpdecision.BatchMethod || len(st.Batch) != 2 {
			t.Fatalf("element %d: %+v %v", i, st, err)
		}
	}
	if _, err := v.Verify(t.Context(), []string{jws}, callOfBody(t, elems[0])); err == nil {
		t.Error("an element verified twice")
	}
	other := callOfBody(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"c"}}}`)
	if _, err := v.Verify(t.Context(), []string{jws}, other); err == nil {
		t.Error("a message of no element verified")
	}
}

// TestSignedDryRun: a dry run signs the requests it would have allowed and
// none of those it admits only because it is a dry run.
func TestSignedDryRun(t *testing.T) {
	srv := staticRig(t, nil)
	srv.DryRun = true
	srv.Responder.Decisions = decisionSigner(t, "k1")
	for _, tt := range []struct {
		give string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`, true},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`, false},
	} {
		resp, _ := srv.Check(t.Context(), postReq(tt.give).CheckRequest(true))
		if got := okHeaders(t, resp)[HeaderDecision] != ""; got != tt.want {
			t.Errorf("%s: signed %v, want %v", tt.give, got, tt.want)
		}
	}
}

// TestSigningFailureDenies: a signer that cannot sign turns an allow into
// internal_error: no statement, no admission.
func TestSigningFailureDenies(t *testing.T) {
	srv := staticRig(t, nil)
	srv.Responder.Decisions = new(mcpdecision.Signer) // no keys
	resp, _ := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`).CheckRequest(true))
	if resp.GetOkResponse() != nil || resp.GetStatus().GetMessage() != string(decision.ReasonInternalError) {
		t.Errorf("status %v, want a denial with %s", resp.GetStatus(), decision.ReasonInternalError)
	}
}

// BenchmarkCheckSigned: a small allowed tools/call (the token cache on),
// signing off and on in one run, Ed25519 and ES256: the difference of
// cpu-ns/op is what a signed decision costs (issue 28: at most 10 µs).
func BenchmarkCheckSigned(b *testing.B) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	ed := decisionSigner(b, "ed")
	es, err := mcpdecision.NewSigner([]jose.JSONWebKey{{Key: ec, KeyID: "es"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		signer *mcpdecision.Signer
	}{{"signing=off", nil}, {"signing=EdDSA", ed}, {"signing=ES256", es}} {
		b.Run(bc.name, func(b *testing.B) {
			srv, req := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
			srv.Responder.Decisions = bc.signer
			resp, _ := srv.Check(context.Background(), req)
			if resp.GetOkResponse() == nil || (bc.signer != nil) != (responseHeader(resp.GetOkResponse().GetHeaders(), HeaderDecision) != "") {
				b.Fatalf("not allowed or not signed as configured: %v", resp.GetStatus())
			}
			b.ReportAllocs()
			b.ResetTimer()
			measureCPU(b, func() {
				for b.Loop() {
					_, _ = srv.Check(context.Background(), req)
				}
			})
		})
	}
}
