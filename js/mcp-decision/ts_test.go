// Package mcpdecision_test tests the TypeScript verifier (index.js) from Go:
// the shared vectors, and a server of the official TypeScript SDK
// (@modelcontextprotocol/sdk, Streamable HTTP) with verifyDecisions against
// issue 28's scenarios (internal/decisiontest). npm installs the package's
// dependencies into a temporary folder; without node and npm the tests
// skip, and fail under CI=true.
package mcpdecision_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/decisiontest"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

const audience = "https://mcp.example.com/mcp"

// tsQuirks are requests whose arguments the TypeScript SDK's JSON.parse
// reads otherwise than a reader that keeps the first of a repeated member
// (RFC 8785 needs I-JSON, which has none): JSON.parse keeps the last, so
// the handler would run with other arguments than were decided.
var tsQuirks = []decisiontest.Quirk{
	{Name: "a repeated member, last one kept", Args: `{"query":"refunds","query":"all"}`, Digest: decisiontest.RawDigest(`{"query":"refunds"}`)},
	{Name: "a member repeated under an escaped name", Args: `{"query":"refunds","\u0071uery":"all"}`, Digest: decisiontest.RawDigest(`{"query":"refunds"}`)},
}

func newSigner(t *testing.T, kid string) *mcpdecision.Signer {
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

// TestTypeScript: one npm ci, then the vectors and the SDK server.
func TestTypeScript(t *testing.T) {
	dir := decisiontest.InstallJS(t, ".")
	t.Run("vectors", func(t *testing.T) {
		node, _ := decisiontest.NodeOrSkip(t)
		abs, err := filepath.Abs("../../mcpdecision/testdata/vectors.json")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "test/vectors.mjs", abs)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("%s", out)
	})
	t.Run("sdk server", func(t *testing.T) {
		s := newSigner(t, "k1")
		jwks := filepath.Join(t.TempDir(), "decision-jwks.json")
		if err := os.WriteFile(jwks, s.PublicKeySet(), 0o644); err != nil {
			t.Fatal(err)
		}
		srv := decisiontest.StartTS(t, dir, "AUDIENCE="+audience, "DECISION_JWKS_FILE="+jwks)
		decisiontest.RunScenarios(t, srv, decisiontest.Issuer{Signer: s, Audience: audience}, newSigner(t, "k1"), tsQuirks)
		// The handlers got the verified statement (decisionOf(extra)).
		resp, err := http.Get(strings.TrimSuffix(srv.URL, "/mcp") + "/runs")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Seen []struct {
				Tool, Sub, JTI, PolicyVersion string
			} `json:"seen"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if len(r.Seen) != 2 {
			t.Fatalf("handlers saw %+v", r.Seen)
		}
		for _, s := range r.Seen {
			if s.Sub != "alice" || s.JTI == "" || s.PolicyVersion == "" {
				t.Errorf("handler of %s got %+v, want the verified statement", s.Tool, s)
			}
		}
	})
}
