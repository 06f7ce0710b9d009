//go:build !race

package extauthz

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
)

// TestCheckAllocsSeam: marking the decision for the response seam and
// holding it in the coverage table adds no allocation to the warm allowed
// Check of TestCheckAllocs (the metadata block has room for seam_class;
// the table's queue and map grow amortized).
func TestCheckAllocsSeam(t *testing.T) {
	srv, req := benchRequest(t, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
	srv.Responder.MarkSeam = true
	srv.Seam = seamcover.New(seamcover.Config{Deadline: time.Hour})
	ctx := context.Background()
	if resp, _ := srv.Check(ctx, req); resp.GetDynamicMetadata().GetFields()["seam_class"].GetStringValue() != seamcover.Call {
		t.Fatalf("not marked: %v", resp)
	}
	const most = 19
	if n := testing.AllocsPerRun(200, func() { _, _ = srv.Check(ctx, req) }); n > most {
		t.Errorf("a warm allowed Check marked for the seam allocates %v times, want at most %d", n, most)
	}
}
