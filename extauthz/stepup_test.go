package extauthz

import (
	"encoding/json"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestScopeStepUp: a rule's scopes missing from the token give 403 with
// the RFC 6750 insufficient_scope challenge (scopes needed and RFC 9728
// resource_metadata) and the JSON-RPC denial; a token with them passes.
func TestScopeStepUp(t *testing.T) {
	rig := newBindingRig(t, state.NewMemory(0, nil))
	export := call{tool: "export_ledger", args: `{"year":2026}`}
	tests := []struct {
		name       string
		giveClaims map[string]any // scope claims of the token
		wantReason string
	}{
		{"no scope claim", map[string]any{"scope": nil}, "insufficient_scope"},
		{"other scopes", map[string]any{"scope": "mcp:tools ledger:read"}, "insufficient_scope"},
		{"scope is a prefix", map[string]any{"scope": "ledger:export2 ledger:read"}, "insufficient_scope"},
		{"all scopes", map[string]any{"scope": "ledger:read mcp:tools ledger:export"}, "allowed"},
		{"scp list", map[string]any{"scope": nil, "scp": []string{"ledger:export", "ledger:read"}}, "allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := rig.idp.Claims()
			for k, v := range tt.giveClaims {
				if v == nil {
					delete(claims, k)
				} else {
					claims[k] = v
				}
			}
			capt := caseReq(export.body())
			capt.Headers["authorization"] = "Bearer " + rig.userKey.Sign(t, claims)
			resp := check(t, rig.client, capt.CheckRequest(true))
			if tt.wantReason == "allowed" {
				okHeaders(t, resp)
				return
			}
			d, status := parseDenial(t, resp)
			if status != 403 || d.Error.Data.Reason != tt.wantReason || d.Error.Code != CodeForbidden {
				t.Errorf("got %d %s %d, want 403 %s %d", status, d.Error.Data.Reason, d.Error.Code, tt.wantReason, CodeForbidden)
			}
			want := `Bearer error="insufficient_scope", scope="ledger:export ledger:read", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
			if got := responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate"); got != want {
				t.Errorf("WWW-Authenticate = %s\nwant %s", got, want)
			}
			var body struct {
				Error struct {
					Data struct {
						Scope string `json:"scope"`
					} `json:"data"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(resp.GetDeniedResponse().GetBody()), &body)
			if body.Error.Data.Scope != "ledger:export ledger:read" {
				t.Errorf("error.data.scope = %q", body.Error.Data.Scope)
			}
		})
	}
}

// TestConceal: under refusal: conceal, a refused tools/call, prompts/get
// or resources/read is answered exactly as the chosen SDK answers an
// unknown target (HTTP 200), while dynamic metadata and the log keep the
// true reason; what is not concealable is still explained.
func TestConceal(t *testing.T) {
	policy := "refusal: conceal\n" +
		"deny: [{id: no-deletes, match: '*/delete_*'}, {id: explained, match: '*/wipe', refusal: explain}]\n" +
		"ask: [{id: transfers, match: payments/transfer_funds}]\n" +
		"allow: [{id: search, match: '*/search'}]\n"
	bodies := map[string]string{
		"tool":     `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`,
		"ask":      `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"transfer_funds","arguments":{}}}`,
		"prompt":   `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"secret<prompt>"}}`,
		"resource": `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///etc/shadow"}}`,
	}
	tests := []struct {
		style ConcealStyle
		give  string
		want  string
	}{
		{ConcealGoSDK, "tool", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool \"delete_repo\""}}`},
		{ConcealGoSDK, "ask", `{"jsonrpc":"2.0","id":"a-1","error":{"code":-32602,"message":"unknown tool \"transfer_funds\""}}`},
		{ConcealGoSDK, "prompt", `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"unknown prompt \"secret<prompt>\""}}`},
		{ConcealGoSDK, "resource", `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"file:///etc/shadow"}}}`},
		{ConcealTypeScriptSDK, "tool", `{"result":{"content":[{"type":"text","text":"MCP error -32602: Tool delete_repo not found"}],"isError":true},"jsonrpc":"2.0","id":7}`},
		{ConcealTypeScriptSDK, "prompt", `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"MCP error -32602: Prompt secret<prompt> not found"}}`},
		{ConcealTypeScriptSDK, "resource", `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"MCP error -32602: Resource file:///etc/shadow not found"}}`},
		{ConcealTypeScriptSDKV2, "tool", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Tool delete_repo not found"}}`},
		{ConcealTypeScriptSDKV2, "prompt", `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Prompt secret<prompt> not found"}}`},
		{ConcealTypeScriptSDKV2, "resource", `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Resource not found: file:///etc/shadow","data":{"uri":"file:///etc/shadow"}}}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.style)+"/"+tt.give, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			rig := newBindingRig(t, state.NewMemory(0, nil), func(s *Server) {
				s.Responder.ConcealAs = tt.style
				s.Log = zap.New(core)
			})
			lp, err := decision.CompilePolicy("conceal.yaml", []byte(policy))
			if err != nil {
				t.Fatal(err)
			}
			rig.policies.Store(lp)
			capt := caseReq(bodies[tt.give])
			capt.Headers["authorization"] = "Bearer " + rig.token(t, call{})
			resp := check(t, rig.client, capt.CheckRequest(true))
			dr := resp.GetDeniedResponse()
			if dr == nil || resp.GetStatus().GetCode() == 0 {
				t.Fatalf("want a denial, got %v", resp)
			}
			if got := dr.GetBody(); got != tt.want {
				t.Errorf("body\n got %s\nwant %s", got, tt.want)
			}
			if dr.GetStatus().GetCode() != 200 || responseHeader(dr.GetHeaders(), "www-authenticate") != "" {
				t.Errorf("status %d, want 200 with no challenge", dr.GetStatus().GetCode())
			}
			reason := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue()
			m := logs.All()[0].ContextMap()
			if reason == "" || m["reason"] != reason || m["concealed"] != true {
				t.Errorf("true reason not kept: metadata %q, log %v", reason, m)
			}
		})
	}
	t.Run("explained", func(t *testing.T) {
		rig := newBindingRig(t, state.NewMemory(0, nil))
		lp, _ := decision.CompilePolicy("conceal.yaml", []byte(policy))
		rig.policies.Store(lp)
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wipe","arguments":{}}}`,         // the rule says explain
			`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///etc/shadow"}}`,  // not a read
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}}}`, // a bad request
		} {
			capt := caseReq(body)
			capt.Headers["authorization"] = "Bearer " + rig.token(t, call{})
			d, status := parseDenial(t, check(t, rig.client, capt.CheckRequest(true)))
			if status == 200 || d.Error.Data.Reason == "" {
				t.Errorf("%s: concealed, want the explained denial", body)
			}
		}
		capt := caseReq(bodies["tool"])
		capt.Headers["authorization"] = "Bearer expired.or.bad"
		if _, status := parseDenial(t, check(t, rig.client, capt.CheckRequest(true))); status != 401 {
			t.Errorf("bad token on a concealed tool: %d, want 401", status)
		}
	})
}

// TestScopeSeparators is case E06 and its class, through gRPC with real
// tokens: a rule's `scopes:` and a CEL condition reading claims.scope the
// way README shows (split(" ")) agree on every separator, and neither
// grants a scope joined to another by anything but U+0020.
func TestScopeSeparators(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	v := newDiscoveryVerifier(t, idp)
	compile := func(yaml string) *decision.PolicyStore {
		lp, err := decision.CompilePolicy("p.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		s := &decision.PolicyStore{}
		s.Store(lp)
		return s
	}
	byField := startGRPC(t, newTestServer(compile("default: deny\nallow:\n  - id: s\n    match: \"*/search\"\n    scopes: [mcp:search]\n"), v, nil))
	byCEL := startGRPC(t, newTestServer(compile("default: deny\nallow:\n  - id: s\n    match: \"*/search\"\n    when: 'claims.scope.split(\" \").exists(s, s == \"mcp:search\")'\n"), v, nil))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`
	for _, sep := range []string{" ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\u00a0", "\u1680", "\u2000", "\u2003", "\u2028", "\u205f", "\u3000", "\u0085", "\ufeff", ",", "+", "%20"} {
		for _, scope := range []string{"openid" + sep + "mcp:search", "mcp:search" + sep + "openid"} {
			c := idp.Claims()
			c["scope"] = scope
			capt := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body), Headers: map[string]string{
				"content-type": "application/json", "mcp-protocol-version": "2025-06-18", "authorization": "Bearer " + key.Sign(t, c)}}
			field := check(t, byField, capt.CheckRequest(true))
			cel := check(t, byCEL, capt.CheckRequest(true))
			want := sep == " " || sep == "  "
			if got := field.GetOkResponse() != nil; got != want {
				t.Errorf("scopes: field, scope %q: allowed %v, want %v", scope, got, want)
			}
			if got := cel.GetOkResponse() != nil; got != want {
				t.Errorf("CEL split, scope %q: allowed %v, want %v", scope, got, want)
			}
			if !want {
				if d, status := parseDenial(t, field); status != 403 || decision.Reason(d.Error.Data.Reason) != decision.ReasonInsufficientScope {
					t.Errorf("scope %q: %d %s, want 403 insufficient_scope (E06)", scope, status, d.Error.Data.Reason)
				}
			}
		}
	}
}
