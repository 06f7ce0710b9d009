package state

import (
	"context"
	"fmt"
	"time"
)

// DefaultMaxResultBytes bounds one recorded result (Results.MaxBytes).
const DefaultMaxResultBytes = 64 << 10

// Results keeps the result of a tools/call that ran under an idempotency
// key, so a retry of the same request (same key, same request digest) is
// answered from it instead of running again (issue 18: "same nonce, same
// digest: return the prior result"). Keys are the idempotency key's id
// (decision.Binding: already scoped to issuer, subject and server, and
// hashed), in the keyspace "result:". The first result recorded under a key
// stays; results over MaxBytes are not recorded.
type Results struct {
	Store    Reader
	MaxBytes int // zero: DefaultMaxResultBytes
}

// Record keeps result (the JSON of a response's result member) under
// keyID for ttl. It reports whether it was recorded: false for a result
// over MaxBytes or a key that already holds one. Errors wrap ErrUnavailable.
func (r Results) Record(ctx context.Context, keyID string, result []byte, ttl time.Duration) (bool, error) {
	max := r.MaxBytes
	if max <= 0 {
		max = DefaultMaxResultBytes
	}
	if keyID == "" || len(result) == 0 || len(result) > max || ttl <= 0 {
		return false, nil
	}
	claimed, _, err := r.Store.Claim(ctx, "result:"+keyID, string(result), ttl)
	if err != nil {
		return false, fmt.Errorf("results: %w", err)
	}
	return claimed, nil
}

// Lookup returns the result recorded under keyID, found false when none
// is (never recorded, expired, or too large to keep). Errors wrap
// ErrUnavailable.
func (r Results) Lookup(ctx context.Context, keyID string) (result []byte, found bool, err error) {
	v, found, err := r.Store.Get(ctx, "result:"+keyID)
	if err != nil || !found {
		return nil, false, err
	}
	return []byte(v), true, nil
}
