package extauthz

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// TestTightenedSchemaRefusesApproval: under arguments: validate, a call
// the pinned definition's inputSchema refuses is arguments_invalid (400,
// -32602, data.pointer and data.keyword, never the value) before any ask;
// an approval issued for a call the first definition accepted is refused
// once the tool is listed with a schema that refuses the call, whichever
// definition the approval names, and it is not consumed.
func TestTightenedSchemaRefusesApproval(t *testing.T) {
	def := func(schema string) toolpin.Definition {
		d, err := toolpin.Parse([]byte(`{"name":"transfer_funds","inputSchema":`+schema+`}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	v1 := def(`{"type":"object","properties":{"amountMinor":{"type":"integer"},"to":{"type":"string"}},"required":["amountMinor","to"]}`)
	v2 := def(`{"type":"object","properties":{"amountMinor":{"type":"integer","maximum":1000},"to":{"type":"string"}},"required":["amountMinor","to"]}`)
	src, err := os.ReadFile(filepath.Join("testdata", "binding-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, append(src, "pin_mode: tofu\narguments:\n  mode: validate\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	store := state.NewMemory(0, nil)
	clock := time.Now()
	obs := toolpin.Observations{Store: store, Now: func() time.Time { return clock }}
	rig := newBindingRig(t, store, func(srv *Server) {
		configure(t, srv, func(c *decision.Config) { c.Definitions, c.Schemas, c.Policies = obs, obs, compileStore(t, file) })
	})
	ctx := context.Background()
	if err := obs.Observe(ctx, testServerID, v1); err != nil {
		t.Fatal(err)
	}
	bad := call{tool: "transfer_funds", args: `{"amountMinor":"5000","to":"bob"}`}
	if got := rig.send(t, bad); got.reason != string(decision.ReasonArgumentsInvalid) {
		t.Fatalf("a string for an integer: %s, want arguments_invalid before the ask", got.reason)
	}
	capt := caseReq(bad.body())
	capt.Headers["authorization"] = "Bearer " + rig.token(t, bad)
	resp := check(t, rig.client, capt.CheckRequest(true))
	d, status := parseDenial(t, resp)
	if status != 400 || d.Error.Code != -32602 || d.Error.Data.Pointer != "/amountMinor" || d.Error.Data.Keyword != "type" {
		t.Errorf("denial %d %d pointer %q keyword %q; want 400 -32602 /amountMinor type", status, d.Error.Code, d.Error.Data.Pointer, d.Error.Data.Keyword)
	}
	if body := resp.GetDeniedResponse().GetBody(); strings.Contains(body, "5000") {
		t.Errorf("the denial quotes the value: %s", body)
	}

	c := call{tool: "transfer_funds", args: `{"amountMinor":5000,"to":"bob"}`}
	if got := rig.send(t, c); got.reason != string(decision.ReasonAuthorizationRequired) {
		t.Fatalf("valid arguments: %s, want authorization_required", got.reason)
	}
	approved := c
	approved.approval = rig.approve(t, c, nil)
	clock = clock.Add(time.Hour)
	if err := obs.Observe(ctx, testServerID, v2); err != nil { // amountMinor now at most 1000
		t.Fatal(err)
	}
	if got := rig.send(t, approved); got.reason != string(decision.ReasonArgumentsInvalid) {
		t.Errorf("approval after the schema tightened: %s, want arguments_invalid", got.reason)
	}
	withDef := c
	withDef.approval = rig.approve(t, c, func(m map[string]any) { m["tooldef"] = v2.Fingerprint })
	if got := rig.send(t, withDef); got.reason != string(decision.ReasonArgumentsInvalid) {
		t.Errorf("approval naming the tightened definition: %s, want arguments_invalid", got.reason)
	}
	if n := rig.upstream.Load(); n != 0 {
		t.Errorf("the upstream ran %d calls, want none", n)
	}
	// A call the tightened schema accepts is asked (the definition changed).
	small := call{tool: "transfer_funds", args: `{"amountMinor":900,"to":"bob"}`}
	if got := rig.send(t, small); got.reason != string(decision.ReasonDefinitionChanged) {
		t.Errorf("a call the new schema accepts: %s, want definition_changed", got.reason)
	}
}

// TestApprovalBindsClient: the request digest (v3) covers the token's
// client, so an approval of a call made through one agent does not admit
// the same call by the same principal through another.
func TestApprovalBindsClient(t *testing.T) {
	rig := newBindingRig(t, state.NewMemory(0, nil))
	c := call{tool: "transfer_funds", args: `{"amountMinor":5000,"to":"bob"}`, client: "https://agent-a.example.com/client.json"}
	got := rig.send(t, c)
	if got.reason != string(decision.ReasonAuthorizationRequired) || got.digest != rig.digest(t, c) {
		t.Fatalf("ask: %s digest %s, want authorization_required with README's digest %s", got.reason, got.digest, rig.digest(t, c))
	}
	other := c
	other.client = "agent-b"
	if rig.digest(t, other) == got.digest {
		t.Fatal("two clients, one digest")
	}
	other.approval = rig.approve(t, c, nil)
	if got := rig.send(t, other); got.reason != string(decision.ReasonApprovalDigestMismatch) {
		t.Errorf("approval for agent A presented by agent B: %s, want approval_digest_mismatch", got.reason)
	}
	same := c
	same.approval = rig.approve(t, c, nil)
	if got := rig.send(t, same); got.reason != string(decision.ReasonAllowed) {
		t.Errorf("approval for agent A presented by agent A: %s, want allowed", got.reason)
	}
}
