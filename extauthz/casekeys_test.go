package extauthz

import (
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
)

// TestCaseSensitiveKeysPerServer: through a real gRPC server, arguments
// whose names differ only by case are refused (case_variant_key) for a
// server not listed in Decider.CaseSensitiveKeys, and decided as two
// members, each in the digest, for one that is; duplicates and protocol
// variants are refused for both, and names only full case folding joins
// (Maße/Masse) are two members everywhere.
func TestCaseSensitiveKeysPerServer(t *testing.T) {
	lp, err := decision.CompilePolicy("p.yaml", []byte("default: deny\nallow:\n  - id: search\n    match: \"*/search\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	store := &decision.PolicyStore{}
	store.Store(lp)
	srv := staticRig(t, nil)
	configure(t, srv, func(c *decision.Config) { c.Policies = store })
	configure(t, srv, func(c *decision.Config) { c.CaseSensitiveKeys = map[string]bool{"files": true} })
	client := startGRPC(t, srv)

	tests := []struct {
		name, server, args string
		want               decision.Reason
	}{
		{"variant, default server", "payments", `{"q":"a","Q":"b"}`, decision.ReasonCaseVariantKey},
		{"variant, case-sensitive server", "files", `{"q":"a","Q":"b"}`, decision.ReasonAllowed},
		{"Kelvin, default server", "payments", `{"k":1,"\u212a":2}`, decision.ReasonCaseVariantKey},
		{"Kelvin, case-sensitive server", "files", `{"k":1,"\u212a":2}`, decision.ReasonAllowed},
		{"nested variant, case-sensitive server", "files", `{"q":{"a":1,"A":2}}`, decision.ReasonAllowed},
		{"full folding only, default server", "payments", `{"Masse":1,"Maße":2,"file":3,"ﬁle":4}`, decision.ReasonAllowed},
		{"duplicate, case-sensitive server", "files", `{"q":"a","q":"b"}`, decision.ReasonDuplicateKey},
		{"protocol variant, case-sensitive server", "files", `{"q":"a"},"Name":"delete_repo"`, decision.ReasonCaseVariantKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":` + tt.args + `}}`)
			req := c.CheckRequest(true)
			req.Attributes.ContextExtensions = map[string]string{ContextExtensionServer: tt.server}
			resp := check(t, client, req)
			if tt.want != decision.ReasonAllowed {
				d, _ := parseDenial(t, resp)
				if decision.Reason(d.Error.Data.Reason) != tt.want {
					t.Fatalf("reason %s, want %s", d.Error.Data.Reason, tt.want)
				}
				return
			}
			if resp.GetOkResponse() == nil {
				d, _ := parseDenial(t, resp)
				t.Fatalf("denied %s (%s), want allowed", d.Error.Data.Reason, d.Error.Message)
			}
			want, err := jcsoracle.Digest([]byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if got := okHeaders(t, resp)[HeaderArgsDigest]; got != want {
				t.Errorf("args digest %s, want %s (every member)", got, want)
			}
		})
	}
}

// audVerifier accepts any token as its principal and is configured with
// the audiences aud.
type audVerifier struct {
	staticVerifier
	aud []string
}

func (v audVerifier) Audiences() []string { return v.aud }

// TestRouteAudienceNeedsConfiguredAudience: a route's mcp_audience is
// checked against the verifier's configured audiences for every verifier
// (it was skipped for one without an Audiences method): a verifier
// configured without it, or with none, refuses it even when the token
// carries it.
func TestRouteAudienceNeedsConfiguredAudience(t *testing.T) {
	const routeAud = "https://other.example.com/mcp"
	p := staticRig(t, nil).Decider.Config().Verifier.(staticVerifier).p
	p.Audiences = []string{routeAud}
	tests := []struct {
		name string
		aud  []string
		want decision.Reason
	}{
		{"configured", []string{testAudience, routeAud}, decision.ReasonAllowed},
		{"not configured", []string{testAudience}, decision.ReasonTokenWrongAudience},
		{"no audiences", nil, decision.ReasonTokenWrongAudience},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := staticRig(t, nil)
			configure(t, srv, func(c *decision.Config) { c.Verifier = audVerifier{staticVerifier{p}, tt.aud} })
			req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`).CheckRequest(true)
			req.Attributes.ContextExtensions = map[string]string{ContextExtensionAudience: routeAud}
			resp, err := srv.Check(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == decision.ReasonAllowed {
				if resp.GetOkResponse() == nil {
					d, _ := parseDenial(t, resp)
					t.Fatalf("denied %s", d.Error.Data.Reason)
				}
				return
			}
			d, _ := parseDenial(t, resp)
			if decision.Reason(d.Error.Data.Reason) != tt.want {
				t.Fatalf("reason %s, want %s", d.Error.Data.Reason, tt.want)
			}
		})
	}
}
