//go:build !race

package extauthz

import (
	"context"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
)

// TestCheckAllocs: the warm small allowed Check (BenchmarkCheck's
// allow/cache=on) allocates no more than it did when its Request and
// Decision were moved to Check's stack and its blocks trimmed; a change
// that makes one escape again, or adds a per-Check allocation, fails here
// rather than only in a benchmark. (Not under -race, which allocates more.)
func TestCheckAllocs(t *testing.T) {
	srv, req := benchRequest(t, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
	ctx := context.Background()
	if resp, _ := srv.Check(ctx, req); resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue() != string(decision.ReasonAllowed) {
		t.Fatalf("not allowed: %v", resp)
	}
	const most = 19
	if n := testing.AllocsPerRun(200, func() { _, _ = srv.Check(ctx, req) }); n > most {
		t.Errorf("a warm allowed Check allocates %v times, want at most %d", n, most)
	}
}
