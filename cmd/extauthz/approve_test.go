package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

const (
	fpPinned   = "tooldef-v2:sha256:1111111111111111111111111111111111111111111111111111111111111111"
	fpObserved = "tooldef-v2:sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// observed is the response seam's observations for the test: every tool
// listed with the one definition fp, not its baseline (as
// toolpin.Observations.Lookup reports a definition that is not in the pins).
type observed struct{ fp string }

func (o observed) Lookup(context.Context, *policy.Policy, string, string, string) (*policy.ToolDefinition, error) {
	return &policy.ToolDefinition{Listed: true, Changed: true, Fingerprint: o.fp}, nil
}

// definitionChangedDecider decides as serve with examples/config.yaml's
// approver (issuer, audience, approver-jwks.json) would, with search pinned
// to fpPinned but observed as fpObserved: a tools/call of search is a
// definition_changed ask.
func definitionChangedDecider(t *testing.T) (*decision.Decider, *decision.Request) {
	t.Helper()
	lp, err := decision.CompilePolicy("pinned.yaml", []byte("default: deny\npin_mode: strict\npins:\n  payments:\n    search: ["+fpPinned+"]\nallow:\n  - id: search\n    match: payments/search\n"))
	if err != nil {
		t.Fatal(err)
	}
	store := &decision.PolicyStore{}
	store.Store(lp)
	ks, err := bearer.LoadJWKS("examples/approver-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: "https://approvals.example.com", Audiences: []string{"https://mcp.example.com/mcp"},
		KeySet: ks, Types: []string{decision.ApprovalType}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := decision.NewDecider(decision.Config{ServerID: "payments", Policies: store, Limits: mcpparse.DefaultLimits(),
		Verifier:    policytest.Verifier{P: policytest.Principal{Issuer: "https://idp.example.com", Subject: "alice", Audience: "https://mcp.example.com/mcp"}},
		Definitions: observed{fpObserved},
		Binding:     &decision.Binding{Approvals: approvals, Store: state.NewMemory(0, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	r := policytest.Request{Body: []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`), Headers: map[string]string{}}
	return d, extauthz.RequestFromCheck(r.Captured().CheckRequest(true))
}

// TestApproveDefinitionChanged: an approval made by approve from a
// definition_changed denial (the JSON-RPC body, or check --addr --json's
// output with it in http_body), or with --digest and --tooldef, names the
// observed definition in its tooldef claim, and the retry carrying it is
// allowed; one without tooldef is refused approval_digest_mismatch with a
// detail naming the definition; a --tooldef the denial does not name, or
// that is no fingerprint, is refused by approve (exit 2).
func TestApproveDefinitionChanged(t *testing.T) {
	t.Setenv("EXTAUTHZ_CONFIG", "")
	decider, req := definitionChangedDecider(t)
	ask := decider.Decide(t.Context(), req)
	if ask.Reason != decision.ReasonDefinitionChanged || ask.ToolFingerprint != fpObserved || ask.RequestDigest == "" {
		t.Fatalf("first call: %s (%s) fingerprint %q digest %q", ask.Reason, ask.Detail, ask.ToolFingerprint, ask.RequestDigest)
	}
	body := (&extauthz.Responder{}).Response(ask, req.Headers).GetDeniedResponse().GetBody()
	if !strings.Contains(body, `"tool_fingerprint":"`+fpObserved+`"`) {
		t.Fatalf("denial body %s names no tool_fingerprint", body)
	}
	checkOut, _ := json.Marshal(map[string]string{"decision": "ask", "reason": string(ask.Reason), "request_digest": ask.RequestDigest, "http_status": "403", "http_body": body})
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	denial, checked := write("denial.json", body), write("check.json", string(checkOut))
	base := []string{"approve", "--config", "examples/config.yaml", "--sub", "alice"}

	tests := []struct {
		name        string
		give        []string
		wantTooldef string // "" for none
		wantReason  decision.Reason
		wantDetail  string
	}{
		{"the denial body", []string{denial}, fpObserved, decision.ReasonAllowed, ""},
		{"check --addr --json's output", []string{checked}, fpObserved, decision.ReasonAllowed, ""},
		{"--tooldef agreeing with the denial", []string{"--tooldef", fpObserved, denial}, fpObserved, decision.ReasonAllowed, ""},
		{"--digest and --tooldef", []string{"--digest", ask.RequestDigest, "--tooldef", fpObserved}, fpObserved, decision.ReasonAllowed, ""},
		{"--digest alone", []string{"--digest", ask.RequestDigest}, "", decision.ReasonApprovalDigestMismatch,
			"approval tooldef does not name the tool's observed definition " + fpObserved},
		{"--digest and the pinned definition", []string{"--digest", ask.RequestDigest, "--tooldef", fpPinned}, fpPinned, decision.ReasonApprovalDigestMismatch,
			"approval tooldef does not name the tool's observed definition " + fpObserved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, append(base, tt.give...)...)
			if code != 0 {
				t.Fatalf("approve: exit %d %s", code, errs)
			}
			claims := testkit.ClaimsOf(t, out)
			if got, _ := claims["tooldef"].(string); got != tt.wantTooldef || claims["digest"] != ask.RequestDigest {
				t.Errorf("claims tooldef %v digest %v, want %q and %s", claims["tooldef"], claims["digest"], tt.wantTooldef, ask.RequestDigest)
			}
			retry := *req
			retry.Headers = decision.Headers{}
			for k, v := range req.Headers {
				retry.Headers[k] = v
			}
			retry.Headers[decision.HeaderApproval] = []string{strings.TrimSpace(out)}
			d := decider.Decide(t.Context(), &retry)
			if d.Reason != tt.wantReason || !strings.Contains(d.Detail, tt.wantDetail) {
				t.Errorf("retry: %s (%s), want %s (%s)", d.Reason, d.Detail, tt.wantReason, tt.wantDetail)
			}
		})
	}

	refused := []struct {
		name string
		give []string
		want string
	}{
		{"--tooldef the denial does not name", []string{"--tooldef", fpPinned, denial}, "approve: --tooldef " + fpPinned + " is not the definition the denial names (" + fpObserved + ")"},
		{"--tooldef no fingerprint", []string{"--digest", ask.RequestDigest, "--tooldef", "sha256:abc"}, `approve: tooldef "sha256:abc": want tooldef-v2:sha256:<64 lowercase hex digits>`},
		{"check output whose body names another digest", []string{write("mixed.json", strings.Replace(string(checkOut), ask.RequestDigest, "sha256:"+strings.Repeat("0", 64), 1))}, "differ: not one check's output"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, append(base, tt.give...)...)
			if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, tt.want)
			}
		})
	}
}
