package extauthz

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
)

// TestSeamMark: with MarkSeam, an allowed Check (and a dry-run admission
// of a denied one) carries seam_class and is held in the Seam table; a
// denial carries none; without MarkSeam nothing is marked or held.
func TestSeamMark(t *testing.T) {
	const (
		allowed = `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`
		denied  = `{"orderId":"ord-1","amountMinor":1250,"currency":"CHF"}`
	)
	tests := []struct {
		name      string
		args      string
		mark, dry bool
		want      string // seam_class; "" none
	}{
		{"allowed", allowed, true, false, seamcover.Call},
		{"denied", denied, true, false, ""},
		{"dry run admits a denial", denied, true, true, seamcover.Call},
		{"seam off", allowed, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, req := benchRequest(t, tt.args, false)
			srv.Responder.MarkSeam, srv.DryRun = tt.mark, tt.dry
			srv.Seam = seamcover.New(seamcover.Config{Deadline: time.Minute})
			resp, _ := srv.Check(context.Background(), req)
			md := resp.GetDynamicMetadata().GetFields()
			if got := md["seam_class"].GetStringValue(); got != tt.want {
				t.Fatalf("seam_class %q, want %q", got, tt.want)
			}
			id := md["decision_id"].GetStringValue()
			held := srv.Seam.Met(id, seamcover.Call)
			if held != (tt.want != "") {
				t.Errorf("decision %s held %v, want %v", id, held, tt.want != "")
			}
		})
	}
}
