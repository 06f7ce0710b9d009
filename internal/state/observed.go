package state

import (
	"context"
	"time"
)

// Observe returns s with every Claim, Release and Ping reported to
// observe: the operation ("claim", "release", "ping"), its latency and its
// error (nil on success; a claim refused because the key is held is a
// success). observe runs on the caller's goroutine after the call.
func Observe(s Store, observe func(op string, latency time.Duration, err error)) Store {
	return &observed{s: s, observe: observe, now: time.Now}
}

type observed struct {
	s       Store
	observe func(string, time.Duration, error)
	now     func() time.Time
}

func (o *observed) Claim(ctx context.Context, key, value string, ttl time.Duration) (bool, string, error) {
	start := o.now()
	claimed, prev, err := o.s.Claim(ctx, key, value, ttl)
	o.observe("claim", o.now().Sub(start), err)
	return claimed, prev, err
}

func (o *observed) Release(ctx context.Context, key, value string) error {
	start := o.now()
	err := o.s.Release(ctx, key, value)
	o.observe("release", o.now().Sub(start), err)
	return err
}

func (o *observed) Ping(ctx context.Context) error {
	start := o.now()
	err := o.s.Ping(ctx)
	o.observe("ping", o.now().Sub(start), err)
	return err
}

func (o *observed) Close() error { return o.s.Close() }
