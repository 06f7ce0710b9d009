package extauthz

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// tokenCase2 is one line of ../shared/cases/cases-2.jsonl, as far as the
// token cases (D10-D12) use it.
type tokenCase2 struct {
	ID      string          `json:"id"`
	Request json.RawMessage `json:"request"`
	Setup   struct {
		JWKSExtraKeys []json.RawMessage `json:"jwks_extra_keys"`
	} `json:"setup"`
	Want struct {
		Allow  *bool `json:"allow"`
		Status int   `json:"status"`
	} `json:"want"`
}

// loadTokenCase2 returns case id of cases-2.jsonl; a missing case, or one
// without want.allow, fails.
func loadTokenCase2(t *testing.T, id string) tokenCase2 {
	t.Helper()
	var c tokenCase2
	if err := json.Unmarshal(testkit.CaseLine(t, filepath.Join(sharedDir, "cases", "cases-2.jsonl"), id), &c); err != nil {
		t.Fatal(err)
	}
	if c.Want.Allow == nil {
		t.Fatalf("case %s has no want.allow", id)
	}
	return c
}

// TestD10Discovery replays case D10 over gRPC against a loopback provider
// whose JWKS carries the case's extra keys; then a rotation that adds
// another encryption key with a new signing key is picked up, not frozen.
func TestD10Discovery(t *testing.T) {
	c := loadTokenCase2(t, "D10")
	k1, k2, k3 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2"), testkit.NewKey(t, "k3")
	idp := testkit.NewIdP(t, k1)
	idp.SetExtraKeys(c.Setup.JWKSExtraKeys...)
	clock := testkit.NewClock()
	var mu sync.Mutex
	var reports [][]bearer.IgnoredKey
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}, Now: clock.Now,
		OnIgnoredKeys: func(k []bearer.IgnoredKey) {
			mu.Lock()
			reports = append(reports, k)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Warm(t.Context()); err != nil || !v.Ready() {
		t.Fatalf("Warm with D10's key set: %v, ready %v", err, v.Ready())
	}
	client := startGRPC(t, newTestServer(referencePolicy(t), v, nil))
	capt, err := capture.Parse(c.Request)
	if err != nil {
		t.Fatal(err)
	}
	send := func(tok string) *capture.Request {
		d := cloneCapture(capt)
		d.Headers["authorization"] = strings.ReplaceAll(d.Headers["authorization"], "{{TOKEN_OK}}", tok)
		return d
	}
	okHeaders(t, check(t, client, send(k1.Sign(t, idp.Claims())).CheckRequest(true)))
	mu.Lock()
	if len(reports) != 1 || len(reports[0]) != 2 || !strings.Contains(reports[0][0].Reason, `use "enc"`) {
		t.Errorf("ignored-key reports = %v; want one naming both extra keys", reports)
	}
	mu.Unlock()

	// Rotation: k2 joins with one more encryption key; k2's first token
	// triggers the refetch, which must succeed.
	enc2 := testkit.RawJWK(t, jose.JSONWebKey{Key: &k3.Priv.PublicKey, KeyID: "kc-enc-2", Use: "enc", Algorithm: "RSA-OAEP-256"})
	idp.SetKeys(k1, k2)
	idp.SetExtraKeys(append(c.Setup.JWKSExtraKeys, enc2)...)
	clock.Advance(time.Minute)
	okHeaders(t, check(t, client, send(k2.Sign(t, idp.Claims())).CheckRequest(true)))
	// And the next rotation through the periodic refresh.
	idp.SetKeys(k3)
	if err := v.RefreshKeys(t.Context()); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	okHeaders(t, check(t, client, send(k3.Sign(t, idp.Claims())).CheckRequest(true)))
	if _, err := v.Verify(t.Context(), k1.Sign(t, idp.Claims())); err == nil {
		t.Fatal("k1 still verifies after it left the set")
	}
	// An unchanged set is not reported again.
	if err := v.RefreshKeys(t.Context()); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 3 || len(reports[1]) != 3 || len(reports[2]) != 3 {
		t.Errorf("ignored-key reports = %v; want one per changed set (three), each rotation naming three keys", reports)
	}
}
