package bearer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"
	"unsafe"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CachingVerifier remembers verified tokens, keyed by the SHA-256 of the raw
// token, in a bounded LRU, so the steady state does not repeat the
// signature check. An entry lives until the token's exp at the latest (an
// expired token is refused even when cached) and only while the signing keys
// are those it was verified with: when the key set changes, every entry is
// verified again, so a token whose key left the set stops verifying after the
// next refresh. Failures are never cached.
type CachingVerifier struct {
	next     TokenVerifier
	gen      func() uint64
	now      func() time.Time
	cache    *lru.Cache[[sha256.Size]byte, cachedToken]
	onResult func(result string)
}

type cachedToken struct {
	p   *Principal
	gen uint64
}

// KeyGenerationer is a TokenVerifier whose key set can change.
type KeyGenerationer interface {
	KeyGeneration() uint64
}

// NewCachingVerifier caches up to size verified tokens of next. now may be
// nil (time.Now). onResult, if not nil, is called with the outcome of every
// lookup: "hit", "miss", "stale" (the keys changed) or "expired".
func NewCachingVerifier(next TokenVerifier, size int, now func() time.Time, onResult func(result string)) (*CachingVerifier, error) {
	if size <= 0 {
		return nil, errors.New("token cache size must be positive")
	}
	c, err := lru.New[[sha256.Size]byte, cachedToken](size)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	gen := func() uint64 { return 0 }
	if g, ok := next.(KeyGenerationer); ok {
		gen = g.KeyGeneration
	}
	return &CachingVerifier{next: next, gen: gen, now: now, cache: c, onResult: onResult}, nil
}

var _ Service = (*CachingVerifier)(nil)

// Verify answers from the cache when it can, else asks the next verifier
// and caches a success.
func (c *CachingVerifier) Verify(ctx context.Context, rawToken string) (*Principal, error) {
	// The token's bytes without a copy: Sum256 only reads them.
	key := sha256.Sum256(unsafe.Slice(unsafe.StringData(rawToken), len(rawToken)))
	gen := c.gen()
	if e, ok := c.cache.Get(key); ok {
		switch {
		case !c.now().Before(e.p.Expiry):
			c.cache.Remove(key)
			c.result("expired")
			return nil, &TokenError{Kind: KindExpired, Err: fmt.Errorf("token exp %s is past", e.p.Expiry.UTC().Format(time.RFC3339))}
		case e.gen == gen:
			c.result("hit")
			return e.p, nil
		default:
			c.cache.Remove(key)
			c.result("stale")
		}
	} else {
		c.result("miss")
	}
	p, err := c.next.Verify(ctx, rawToken)
	if err != nil {
		return nil, err
	}
	if !p.Expiry.IsZero() {
		c.cache.Add(key, cachedToken{p: p, gen: gen})
	}
	return p, nil
}

// Audiences passes the next verifier's configured audiences through.
func (c *CachingVerifier) Audiences() []string { return c.next.Audiences() }

// Close closes the next verifier if it is a ClosingVerifier.
func (c *CachingVerifier) Close() {
	if cl, ok := c.next.(ClosingVerifier); ok {
		cl.Close()
	}
}

// Ready passes the next verifier's readiness through (true unless it is a
// ReadyVerifier that is not ready).
func (c *CachingVerifier) Ready() bool {
	if r, ok := c.next.(ReadyVerifier); ok {
		return r.Ready()
	}
	return true
}

func (c *CachingVerifier) result(r string) {
	if c.onResult != nil {
		c.onResult(r)
	}
}
