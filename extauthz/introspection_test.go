package extauthz

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// Opaque tokens the loopback introspection endpoint knows.
const (
	opaqueActive   = "opq-active-5b1c9e2a7d3f"
	opaqueInactive = "opq-revoked-8e4a2c6b0d1f"
	opaqueBound    = "opq-dpop-bound-3c7e9a1b5d2f"
	opaqueOtherAud = "opq-other-audience-9d2b4f6a8c0e"
)

// jwtShaped records that the JWT verifier, not introspection, was asked.
type jwtShaped struct{ calls atomic.Int64 }

func (v *jwtShaped) Audiences() []string { return []string{testAudience} }
func (v *jwtShaped) Verify(context.Context, string) (*bearer.Principal, error) {
	v.calls.Add(1)
	return &bearer.Principal{Issuer: "https://idp.example.com", Subject: "jwt-user", Audience: testAudience, Audiences: []string{testAudience},
		Expiry: time.Now().Add(time.Hour), Claims: map[string]any{"sub": "jwt-user"}}, nil
}

// TestCheckOpaqueTokens: Check with --token-mode both against a loopback
// RFC 7662 endpoint: an active opaque token is allowed, an inactive one or
// one for another audience refused with the token reasons (401), a
// DPoP-bound one (cnf.jkt) sent as Bearer refused as a JWT would be, a
// JWT-shaped token goes to the JWT verifier; an endpoint that is down is
// idp_unavailable (503). No log line holds a token.
func TestCheckOpaqueTokens(t *testing.T) {
	var calls atomic.Int64
	var issuer string
	answer := func(tok string) map[string]any {
		m := map[string]any{"active": true, "iss": issuer, "sub": "alice", "aud": testAudience,
			"exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:tools", "client_id": "app-1"}
		switch tok {
		case opaqueActive:
		case opaqueBound:
			m["cnf"] = map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
		case opaqueOtherAud:
			m["aud"] = "https://other.example.com/mcp"
		default:
			m = map[string]any{"active": false}
		}
		return m
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcp-extauthz" || secret != "s" || r.ParseForm() != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer(r.PostForm.Get("token")))
	}))
	defer ts.Close()
	issuer = ts.URL
	iv, err := bearer.NewIntrospectionVerifier(bearer.IntrospectionConfig{Issuer: issuer, Audiences: []string{testAudience},
		Endpoint: ts.URL + "/introspect", ClientID: "mcp-extauthz", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	jwt := &jwtShaped{}
	core, logs := observer.New(zapcore.DebugLevel)
	srv := newTestServer(referencePolicy(t), bearer.DualVerifier{JWT: jwt, Opaque: iv}, zap.New(core))
	configure(t, srv, func(c *decision.Config) { c.DPoP = bearer.NewDPoPVerifier(bearer.DPoPConfig{}) })
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`
	const jwtToken = "eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJqd3QtdXNlciJ9.c2lnbmF0dXJl"
	tests := []struct {
		name       string
		tok        string
		wantReason decision.Reason
		wantStatus int    // 0: allowed
		wantScheme string // of the WWW-Authenticate challenge
	}{
		{"active", opaqueActive, decision.ReasonAllowed, 0, ""},
		{"inactive", opaqueInactive, decision.ReasonTokenInvalid, 401, "Bearer "},
		{"another audience", opaqueOtherAud, decision.ReasonTokenWrongAudience, 401, "Bearer "},
		{"DPoP-bound, sent as Bearer", opaqueBound, decision.ReasonDPoPProofMissing, 401, "DPoP "},
		{"JWT-shaped: the JWT verifier", jwtToken, decision.ReasonAllowed, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq(call)
			c.Headers["authorization"] = "Bearer " + tt.tok
			resp, err := srv.Check(t.Context(), c.CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != string(tt.wantReason) {
				t.Fatalf("reason %s, want %s", got, tt.wantReason)
			}
			if tt.wantStatus == 0 {
				return
			}
			_, status := parseDenial(t, resp)
			if www := responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate"); status != tt.wantStatus || !strings.HasPrefix(www, tt.wantScheme) {
				t.Errorf("HTTP %d, WWW-Authenticate %q; want %d with a %qchallenge", status, www, tt.wantStatus, tt.wantScheme)
			}
		})
	}
	if jwt.calls.Load() != 1 {
		t.Errorf("the JWT verifier was asked %d times, want once (the JWT-shaped token only)", jwt.calls.Load())
	}
	before := calls.Load()
	c := postReq(call)
	c.Headers["authorization"] = "Bearer " + opaqueActive
	if resp, _ := srv.Check(t.Context(), c.CheckRequest(true)); resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue() != "allowed" || calls.Load() != before {
		t.Errorf("a second Check of the active token: %d more calls, want 0 (cached)", calls.Load()-before)
	}

	ts.Close() // the endpoint goes down: a token not cached is refused
	c.Headers["authorization"] = "Bearer opq-never-seen-1a2b3c"
	resp, _ := srv.Check(t.Context(), c.CheckRequest(true))
	d, status := parseDenial(t, resp)
	if status != 503 || d.Error.Data.Reason != "idp_unavailable" || responseHeader(resp.GetDeniedResponse().GetHeaders(), "retry-after") == "" {
		t.Errorf("endpoint down: HTTP %d %s, want 503 idp_unavailable with Retry-After", status, d.Error.Data.Reason)
	}

	if logs.Len() == 0 {
		t.Fatal("no decision lines")
	}
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, tok := range []string{opaqueActive, opaqueInactive, opaqueBound, opaqueOtherAud, "opq-never-seen", jwtToken} {
			if strings.Contains(line, tok) {
				t.Errorf("a log line holds a token: %s", line)
			}
		}
	}
}

// TestCheckOpaqueTokenScopes: a rule's scopes are checked against the
// introspection answer's scope as against a JWT's: present, allowed;
// missing, insufficient_scope with its challenge.
func TestCheckOpaqueTokenScopes(t *testing.T) {
	var issuer string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "iss": issuer, "sub": "alice", "aud": testAudience,
			"exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:tools"})
	}))
	defer ts.Close()
	issuer = ts.URL
	iv, err := bearer.NewIntrospectionVerifier(bearer.IntrospectionConfig{Issuer: issuer, Audiences: []string{testAudience},
		Endpoint: ts.URL, ClientID: "mcp-extauthz", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	lp, err := decision.CompilePolicy("scopes.yaml", []byte(`default: deny
allow:
  - {match: payments/search, scopes: [mcp:tools]}
  - {match: payments/issue_refund, scopes: [refunds:write]}
`))
	if err != nil {
		t.Fatal(err)
	}
	store := &decision.PolicyStore{}
	store.Store(lp)
	srv := newTestServer(store, iv, nil)
	for _, tt := range []struct {
		tool string
		want decision.Reason
	}{{"search", decision.ReasonAllowed}, {"issue_refund", decision.ReasonInsufficientScope}} {
		c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tt.tool + `","arguments":{}}}`)
		c.Headers["authorization"] = "Bearer opaque-scoped-token"
		resp, _ := srv.Check(t.Context(), c.CheckRequest(true))
		if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != string(tt.want) {
			t.Errorf("%s: %s, want %s", tt.tool, got, tt.want)
		}
		if tt.want == decision.ReasonInsufficientScope {
			if www := responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate"); !strings.Contains(www, `scope="refunds:write"`) {
				t.Errorf("challenge %q, want the scope needed", www)
			}
		}
	}
}
