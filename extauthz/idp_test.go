package extauthz

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// fakeClock is a settable clock for key-set rate limits and token expiry.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// countingVerifier counts the verifications that reach next.
type countingVerifier struct {
	next  bearer.TokenVerifier
	calls atomic.Int64
}

func (c *countingVerifier) Verify(ctx context.Context, raw string) (*bearer.Principal, error) {
	c.calls.Add(1)
	return c.next.Verify(ctx, raw)
}

func (c *countingVerifier) Audiences() []string { return c.next.Audiences() }

func (c *countingVerifier) KeyGeneration() uint64 {
	return c.next.(bearer.KeyGenerationer).KeyGeneration()
}

func reasonOf(t *testing.T, err error) decision.Reason {
	t.Helper()
	if err == nil {
		return decision.ReasonAllowed
	}
	var te *bearer.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *bearer.TokenError", err)
	}
	return decision.Reason(te.Kind.String())
}

func TestTokenCache(t *testing.T) {
	k1, k2 := newTestKey(t, "k1"), newTestKey(t, "k2")
	idp := newTestIdP(t, k1, k2)
	clock := newFakeClock()
	ov, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.issuer(), Audiences: []string{testAudience}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := ov.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := newMetrics(prometheus.NewRegistry())
	inner := &countingVerifier{next: ov}
	cv, err := bearer.NewCachingVerifier(inner, 2, clock.Now, m.TokenCacheResult)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	claims := idp.claims()
	claims["exp"] = clock.Now().Add(10 * time.Minute).Unix()
	tok1 := k1.sign(t, claims)

	for range 3 {
		if _, err := cv.Verify(ctx, tok1); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.calls.Load(); got != 1 {
		t.Fatalf("3 verifications of one token reached the signature check %d times, want 1", got)
	}
	if hits := testutil.ToFloat64(m.TokenCache.WithLabelValues("hit")); hits != 2 {
		t.Errorf("cache hits = %v, want 2", hits)
	}

	// Bounded: a third token evicts the least recently used.
	tokB, tokC := k2.sign(t, idp.claims()), k2.sign(t, withSub(idp.claims(), "bob"))
	for _, tok := range []string{tokB, tokC, tok1} {
		if _, err := cv.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.calls.Load(); got != 4 {
		t.Fatalf("after evicting tok1 from a 2-entry cache: %d verifications, want 4", got)
	}

	// Expired while cached: refused without asking the verifier.
	clock.Advance(11 * time.Minute)
	if r := reasonOf(t, verifyErr(cv.Verify(ctx, tok1))); r != decision.ReasonTokenExpired {
		t.Fatalf("cached token after exp: %s, want token_expired", r)
	}
	if got := inner.calls.Load(); got != 4 {
		t.Fatalf("an expired cached token reached the verifier (%d calls)", got)
	}

	// A key that leaves the set stops verifying after the next refresh, even
	// for tokens in the cache.
	if _, err := cv.Verify(ctx, tokC); err != nil {
		t.Fatal(err)
	}
	idp.setKeys(k1)
	if err := ov.RefreshKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if r := reasonOf(t, verifyErr(cv.Verify(ctx, tokC))); r != decision.ReasonTokenInvalid {
		t.Fatalf("k2 token after k2 left the key set: %s, want token_invalid", r)
	}
	if stale := testutil.ToFloat64(m.TokenCache.WithLabelValues("stale")); stale != 1 {
		t.Errorf("stale = %v, want 1", stale)
	}
}

func withSub(c map[string]any, sub string) map[string]any {
	c["sub"] = sub
	return c
}

func verifyErr(_ *bearer.Principal, err error) error { return err }

// TestIdPFaults: a provider that answers slowly or with garbage never turns
// into an allow; the last good keys stay in use.
func TestIdPFaults(t *testing.T) {
	t.Run("garbage at start", func(t *testing.T) {
		idp := newTestIdP(t, newTestKey(t, "k1"))
		idp.garbage.Store(true)
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.issuer(), Audiences: []string{testAudience}})
		if err := v.Warm(t.Context()); err == nil || v.Ready() {
			t.Fatalf("Warm on garbage: %v, ready %v", err, v.Ready())
		}
		if r := reasonOf(t, verifyErr(v.Verify(t.Context(), newTestKey(t, "k1").sign(t, idp.claims())))); r != decision.ReasonIdPUnavailable {
			t.Fatalf("reason %s, want idp_unavailable", r)
		}
	})
	t.Run("garbage key set keeps the last good keys", func(t *testing.T) {
		k1, k2 := newTestKey(t, "k1"), newTestKey(t, "k2")
		idp := newTestIdP(t, k1)
		var refreshErrs atomic.Int64
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.issuer(), Audiences: []string{testAudience},
			OnKeySetRefresh: func(err error) {
				if err != nil {
					refreshErrs.Add(1)
				}
			}})
		if err := v.Warm(t.Context()); err != nil {
			t.Fatal(err)
		}
		idp.garbage.Store(true)
		if err := v.RefreshKeys(t.Context()); err == nil {
			t.Fatal("refresh from garbage succeeded")
		}
		if _, err := v.Verify(t.Context(), k1.sign(t, idp.claims())); err != nil {
			t.Fatalf("k1 token after a failed refresh: %v", err)
		}
		if r := reasonOf(t, verifyErr(v.Verify(t.Context(), k2.sign(t, idp.claims())))); r != decision.ReasonTokenInvalid {
			t.Fatalf("unknown key while the provider answers garbage: %s", r)
		}
		if refreshErrs.Load() == 0 {
			t.Error("failed refreshes were not reported")
		}
	})
	t.Run("slow provider", func(t *testing.T) {
		k1, k2 := newTestKey(t, "k1"), newTestKey(t, "k2")
		idp := newTestIdP(t, k1)
		clock := newFakeClock()
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.issuer(), Audiences: []string{testAudience}, Now: clock.Now})
		if err := v.Warm(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv := newTestServer(referencePolicy(t), v, nil)
		client := startGRPC(t, srv)
		idp.setKeys(k1, k2)
		idp.delay.Store(int64(2 * time.Second))
		clock.Advance(time.Minute) // past the refresh rate limit
		c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		c.Headers["authorization"] = "Bearer " + k2.sign(t, idp.claims())
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
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
		idp.delay.Store(0)
		if _, err := v.Verify(t.Context(), k2.sign(t, idp.claims())); err != nil {
			t.Fatalf("k2 after the slow fetch landed: %v", err)
		}
	})
}
