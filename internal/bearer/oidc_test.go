package bearer_test

// Tests of OIDCVerifier and CachingVerifier against a loopback identity
// provider (internal/testkit), through bearer's exported API only.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
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

// kindOf is the Kind of a *bearer.TokenError, 0 for nil; any other error
// fails the test.
func kindOf(t *testing.T, err error) bearer.Kind {
	t.Helper()
	if err == nil {
		return 0
	}
	var te *bearer.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *bearer.TokenError", err)
	}
	return te.Kind
}

func TestTokenCache(t *testing.T) {
	k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
	idp := testkit.NewIdP(t, k1, k2)
	clock := testkit.NewClock()
	ov, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testkit.Audience}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := ov.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(prometheus.NewRegistry(), nil)
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
	if r := kindOf(t, verifyErr(cv.Verify(ctx, tok1))); r != bearer.KindExpired {
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
	if r := kindOf(t, verifyErr(cv.Verify(ctx, tokC))); r != bearer.KindInvalid {
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

// TestIdPFaults: a provider that answers garbage never turns into a
// verified token; the last good keys stay in use. (A slow provider through
// Check: extauthz TestIdPSlowProvider.)
func TestIdPFaults(t *testing.T) {
	t.Run("garbage at start", func(t *testing.T) {
		idp := testkit.NewIdP(t, testkit.NewKey(t, "k1"))
		idp.Garbage.Store(true)
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testkit.Audience}})
		if err := v.Warm(t.Context()); err == nil || v.Ready() {
			t.Fatalf("Warm on garbage: %v, ready %v", err, v.Ready())
		}
		if r := kindOf(t, verifyErr(v.Verify(t.Context(), testkit.NewKey(t, "k1").Sign(t, idp.Claims())))); r != bearer.KindUnavailable {
			t.Fatalf("reason %s, want idp_unavailable", r)
		}
	})
	t.Run("garbage key set keeps the last good keys", func(t *testing.T) {
		k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
		idp := testkit.NewIdP(t, k1)
		var refreshErrs atomic.Int64
		v, _ := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testkit.Audience},
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
		if r := kindOf(t, verifyErr(v.Verify(t.Context(), k2.Sign(t, idp.Claims())))); r != bearer.KindInvalid {
			t.Fatalf("unknown key while the provider answers garbage: %s", r)
		}
		if refreshErrs.Load() == 0 {
			t.Error("failed refreshes were not reported")
		}
	})
}

// TestKeyRotation is case C17: after the service cached k1, the provider
// serves only k2; a k2 token is allowed after one refetch, and 50 tokens with
// random unknown kids cause at most one more fetch.
func TestKeyRotation(t *testing.T) {
	k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
	idp := testkit.NewIdP(t, k1)
	now := time.Now()
	clock := func() time.Time { return now }
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testkit.Audience}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := v.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, k1.Sign(t, idp.Claims())); err != nil {
		t.Fatalf("k1 before rotation: %v", err)
	}
	if got := idp.JWKSGets.Load(); got != 1 {
		t.Fatalf("jwks fetches after first token = %d, want 1", got)
	}
	idp.SetKeys(k2)
	now = now.Add(time.Minute)
	if _, err := v.Verify(ctx, k2.Sign(t, idp.Claims())); err != nil {
		t.Fatalf("k2 after rotation: %v", err)
	}
	if got := idp.JWKSGets.Load(); got != 2 {
		t.Fatalf("jwks fetches after rotation = %d, want 2", got)
	}
	if _, err := v.Verify(ctx, k1.Sign(t, idp.Claims())); err == nil {
		t.Fatal("a k1 token still verifies after k1 left the key set")
	}
	rogue := testkit.NewKey(t, "rogue")
	for i := range 50 {
		_, err := v.Verify(ctx, rogue.SignAs(t, fmt.Sprintf("random-%d", i), idp.Claims()))
		var te *bearer.TokenError
		if err == nil || !errors.As(err, &te) || te.Kind != bearer.KindInvalid {
			t.Fatalf("rogue kid %d: %v", i, err)
		}
	}
	if got := idp.JWKSGets.Load(); got > 3 {
		t.Fatalf("50 unknown kids caused %d fetches in total, want the refresh rate-limited (<= 3)", got)
	}
}
