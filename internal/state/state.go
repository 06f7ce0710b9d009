// Package state holds the short-lived facts that bind authority to one
// request across Checks and replicas: approval ids (JWT "jti", RFC 7519
// section 4.1.7) that were used once, and idempotency keys with the request
// digest first seen under them.
//
// A Store records a key → value claim with a time to live, atomically: of
// two concurrent claims of one key exactly one wins. Two implementations:
// Memory (one process, bounded, forgotten on restart) and Redis (SET NX PX
// GET on one key; one server, Sentinel or Cluster; optionally WAIT for
// replicas), shared by every replica. Callers fail closed on any error: a
// store that cannot answer never admits a request.
package state

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable wraps every failure to reach or use a store (connection
// refused, timeout, a full Memory store). Callers deny on it.
var ErrUnavailable = errors.New("state store unavailable")

// Store records claims. Implementations are safe for concurrent use.
type Store interface {
	// Claim records key → value for ttl unless key is held by an unexpired
	// claim. It returns claimed true when this call recorded it; otherwise
	// claimed false and prev, the value held. ttl must be positive. Errors
	// wrap ErrUnavailable; then nothing is known about key.
	Claim(ctx context.Context, key, value string, ttl time.Duration) (claimed bool, prev string, err error)
	// Release deletes key if it still holds value, undoing a Claim whose
	// request was denied after all. Errors wrap ErrUnavailable.
	Release(ctx context.Context, key, value string) error
	// Ping reports whether the store answers; errors wrap ErrUnavailable.
	Ping(ctx context.Context) error
	// Close frees the store's resources.
	Close() error
}
