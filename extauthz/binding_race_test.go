package extauthz

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// gatedStore holds the first approval claim made while armed until
// released, so a test can run a second request between a first request's
// idempotency-key claim and its approval claim.
type gatedStore struct {
	state.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Claim(ctx context.Context, key, value string, ttl time.Duration) (bool, string, error) {
	if strings.HasPrefix(key, "jti:") && g.armed.CompareAndSwap(true, false) {
		close(g.entered) // the first approval claim while armed waits; later ones pass
		<-g.release
	}
	return g.Store.Claim(ctx, key, value, ttl)
}

// TestApprovalRetryRace: a retry under a key that a first request holds
// but whose approval it has not claimed yet is not admitted on the key
// alone. A spent approval raced with a fresh key twice admits nothing; a
// fresh approval raced the same way is spent once, and the other request
// is a retry.
func TestApprovalRetryRace(t *testing.T) {
	storeKinds(t, func(t *testing.T, up, _ func(t *testing.T) state.Store) {
		tests := []struct {
			name         string
			spent        bool     // the approval was used (with another key) before the race
			want         []string // reasons of the raced first request, then the second
			wantRuns     int64    // upstream runs, the one before the race included
			wantOneRetry bool
		}{
			{"spent approval, fresh key", true, []string{"approval_replayed", "approval_replayed"}, 1, false},
			{"fresh approval, the same request twice", false, []string{"allowed", "allowed"}, 1, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				g := &gatedStore{Store: up(t), entered: make(chan struct{}), release: make(chan struct{})}
				rig := newBindingRig(t, g)
				c := bigRefund
				c.approval = rig.approve(t, bigRefund, nil)
				if tt.spent {
					first := c
					first.key = "k-before"
					if got := rig.send(t, first); got.reason != "allowed" {
						t.Fatalf("first use: %s", got.reason)
					}
				}
				c.key = "k-race"
				g.armed.Store(true)
				firstOut := make(chan bindingOutcome, 1)
				go func() { firstOut <- rig.send(t, c) }()
				<-g.entered // the first request holds k-race, its approval claim waits
				second := rig.send(t, c)
				close(g.release)
				first := <-firstOut
				if first.reason != tt.want[0] || second.reason != tt.want[1] {
					t.Fatalf("raced requests: %s, %s; want %v", first.reason, second.reason, tt.want)
				}
				if n := rig.upstream.Load(); n != tt.wantRuns {
					t.Errorf("upstream ran %d times, want %d", n, tt.wantRuns)
				}
				if tt.wantOneRetry && first.retry == second.retry {
					t.Errorf("retry flags %v, %v: want exactly one request marked x-mcp-retry", first.retry, second.retry)
				}
			})
		}
	})
}
