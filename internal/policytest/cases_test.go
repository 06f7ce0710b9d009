package policytest

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
)

// D09 of ../shared/cases/cases-2.jsonl, replayed offline: a rule marked
// `shadow: True` (a YAML 1.2 boolean) is a shadow rule, so it never decides.
func TestCaseD09(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "shared", "cases", "cases-2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c struct {
		ID         string          `json:"id"`
		Request    json.RawMessage `json:"request"`
		PolicyYAML string          `json:"policy_yaml"`
		Want       struct {
			Allow  bool   `json:"allow"`
			Status int    `json:"status"`
			Reason string `json:"reason"`
		} `json:"want"`
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID == "D09" {
			break
		}
	}
	if c.ID != "D09" || c.PolicyYAML == "" {
		t.Fatal("no D09 with a policy_yaml in cases-2.jsonl")
	}
	lp, err := decision.CompilePolicy("D09.yaml", []byte(c.PolicyYAML))
	if err != nil {
		t.Fatal(err)
	}
	capt, err := capture.Parse([]byte(`{"request":` + string(c.Request) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	// The line's {{TOKEN_OK}} stands for a valid token: offline, any
	// well-formed one is.
	capt.Headers["authorization"] = "Bearer " + PlaceholderToken
	d := Decide(context.Background(), lp, "payments", Principal{}, capt)
	// want.status is the line's HTTP error (--denial-status http-error).
	resp := (&extauthz.Responder{DenialStatus: extauthz.DenialStatusHTTPError}).Response(d, nil)
	status := 200
	if den := resp.GetDeniedResponse(); den != nil {
		status = int(den.GetStatus().GetCode())
	}
	if d.Allowed() != c.Want.Allow || status != c.Want.Status || string(d.Reason) != c.Want.Reason {
		t.Errorf("D09: allowed %v, status %d, reason %s; want %v %d %s", d.Allowed(), status, d.Reason, c.Want.Allow, c.Want.Status, c.Want.Reason)
	}
	if len(d.Shadow) != 1 || d.Shadow[0].RuleID != "trial-export" {
		t.Errorf("D09: shadow matches %+v, want trial-export", d.Shadow)
	}
}
