package extauthz

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestIdPSlowProvider: a Check whose token needs a key fetch from a
// provider slower than the Check's deadline is denied with
// deadline_exceeded (503), never allowed; the fetch goes on and lands.
// (Garbage from the provider: bearer TestIdPFaults.)
func TestIdPSlowProvider(t *testing.T) {
	k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
	idp := testkit.NewIdP(t, k1)
	clock := testkit.NewClock()
	v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}, Now: clock.Now})
	if err := v.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(referencePolicy(t), v, nil)
	client := startGRPC(t, srv)
	idp.SetKeys(k1, k2)
	idp.Delay.Store(int64(2 * time.Second))
	clock.Advance(time.Minute) // past the refresh rate limit
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	c.Headers["authorization"] = "Bearer " + k2.Sign(t, idp.Claims())
	// 1s: Check answers a tenth (at most 50ms) before the deadline, a
	// margin a loaded CI machine needs; the provider still takes 2s.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	resp, err := client.Check(ctx, c.CheckRequest(true))
	if err != nil {
		t.Fatalf("Check with a slow provider: RPC error %v", err)
	}
	d, status := parseDenial(t, resp)
	if decision.Reason(d.Error.Data.Reason) != decision.ReasonDeadlineExceeded || status != 503 {
		t.Fatalf("slow provider: %d %s, want 503 deadline_exceeded", status, d.Error.Data.Reason)
	}
	// The fetch goes on in the background; a Verify within the rate
	// limit joins it (the fetch in flight is its signal) and k2 then
	// verifies.
	idp.Delay.Store(0)
	if _, err := v.Verify(t.Context(), k2.Sign(t, idp.Claims())); err != nil {
		t.Fatalf("k2 after the slow fetch landed: %v", err)
	}
}
