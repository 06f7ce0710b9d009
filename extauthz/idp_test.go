package extauthz

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

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
	k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
	idp := testkit.NewIdP(t, k1, k2)
	clock := testkit.NewClock()
	ov, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}, Now: clock.Now})
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
	claims := idp.Claims()
	claims["exp"] = clock.Now().Add(10 * time.Minute).Unix()
	tok1 := k1.Sign(t, claims)

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
	tokB, tokC := k2.Sign(t, idp.Claims()), k2.Sign(t, withSub(idp.Claims(), "bob"))
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
	idp.SetKeys(k1)
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
		idp := testkit.NewIdP(t, testkit.NewKey(t, "k1"))
		idp.Garbage.Store(true)
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}})
		if err := v.Warm(t.Context()); err == nil || v.Ready() {
			t.Fatalf("Warm on garbage: %v, ready %v", err, v.Ready())
		}
		if r := reasonOf(t, verifyErr(v.Verify(t.Context(), testkit.NewKey(t, "k1").Sign(t, idp.Claims())))); r != decision.ReasonIdPUnavailable {
			t.Fatalf("reason %s, want idp_unavailable", r)
		}
	})
	t.Run("garbage key set keeps the last good keys", func(t *testing.T) {
		k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
		idp := testkit.NewIdP(t, k1)
		var refreshErrs atomic.Int64
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience},
			OnKeySetRefresh: func(err error) {
				if err != nil {
					refreshErrs.Add(1)
				}
			}})
		if err := v.Warm(t.Context()); err != nil {
			t.Fatal(err)
		}
		idp.Garbage.Store(true)
		if err := v.RefreshKeys(t.Context()); err == nil {
			t.Fatal("refresh from garbage succeeded")
		}
		if _, err := v.Verify(t.Context(), k1.Sign(t, idp.Claims())); err != nil {
			t.Fatalf("k1 token after a failed refresh: %v", err)
		}
		if r := reasonOf(t, verifyErr(v.Verify(t.Context(), k2.Sign(t, idp.Claims())))); r != decision.ReasonTokenInvalid {
			t.Fatalf("unknown key while the provider answers garbage: %s", r)
		}
		if refreshErrs.Load() == 0 {
			t.Error("failed refreshes were not reported")
		}
	})
	t.Run("slow provider", func(t *testing.T) {
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
		idp.Delay.Store(0)
		if _, err := v.Verify(t.Context(), k2.Sign(t, idp.Claims())); err != nil {
			t.Fatalf("k2 after the slow fetch landed: %v", err)
		}
	})
}
