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

// BenchmarkCheckSeam is BenchmarkCheck's warm allowed call (cache on) with
// the seam's marking and coverage table off and on (held for 1s, swept
// every 10ms, never met: the table's steady state under load).
func BenchmarkCheckSeam(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "seam=off"
		if on {
			name = "seam=on"
		}
		b.Run(name, func(b *testing.B) {
			srv, req := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
			if on {
				srv.Responder.MarkSeam = true
				srv.Seam = seamcover.New(seamcover.Config{Deadline: time.Second})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); srv.Seam.Run(ctx, 10*time.Millisecond) }()
				defer func() { cancel(); <-done }()
			}
			ctx := context.Background()
			_, _ = srv.Check(ctx, req)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = srv.Check(ctx, req)
			}
		})
	}
}
