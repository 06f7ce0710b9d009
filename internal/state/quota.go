package state

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limiter keeps token buckets (policy quotas) as GCRA, the generic cell
// rate algorithm of ATM networks (ITU-T I.371), which is a token bucket
// kept as one time per key: the theoretical arrival time (TAT) of the next
// request. A bucket of burst tokens gains one every interval; a request
// takes one. Memory and Redis implement it.
type Limiter interface {
	// Take takes one token from key's bucket, which holds at most burst
	// tokens and gains one every interval. allowed false means the bucket
	// is empty and nothing was taken; retryAfter is then how long until a
	// token is back (0 when allowed). Concurrent Takes of one key never
	// take more tokens than the bucket holds, on Redis across every
	// replica of the service. interval must be at least a microsecond and
	// burst at least 1. Errors wrap ErrUnavailable; then nothing is known
	// about the bucket and the caller decides (quotas fail closed unless
	// their rule says otherwise).
	Take(ctx context.Context, key string, interval time.Duration, burst int) (allowed bool, retryAfter time.Duration, err error)
}

var (
	_ Limiter = (*Memory)(nil)
	_ Limiter = (*Redis)(nil)
)

// checkBucket refuses an interval or burst no bucket has.
func checkBucket(interval time.Duration, burst int) error {
	if interval < time.Microsecond || burst < 1 {
		return fmt.Errorf("%w: bucket of %d tokens every %v", ErrUnavailable, burst, interval)
	}
	return nil
}

// gcra decides a Take at now of a bucket whose TAT is tat (zero: a full
// bucket): it returns the new TAT when allowed, else how long until it
// would be.
func gcra(tat, now time.Time, interval time.Duration, burst int) (next time.Time, allowed bool, retryAfter time.Duration) {
	if tat.Before(now) {
		tat = now
	}
	next = tat.Add(interval)
	if at := next.Add(-time.Duration(burst) * interval); at.After(now) {
		return tat, false, at.Sub(now)
	}
	return next, true, 0
}

// Take implements Limiter in this process: at most Capacity buckets,
// apart from the claims; a full store refuses a new bucket with ErrUnavailable rather than
// forget one, which would hand its key a full burst. A bucket is dropped
// once it is full again.
func (m *Memory) Take(ctx context.Context, key string, interval time.Duration, burst int) (bool, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return false, 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := checkBucket(interval, burst); err != nil {
		return false, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.purgeBuckets(now)
	tat, held := m.buckets[key]
	next, allowed, retry := gcra(tat, now, interval, burst)
	if !allowed {
		return false, retry, nil
	}
	if !held {
		if len(m.buckets) >= m.capacity {
			return false, 0, fmt.Errorf("%w: memory store full (%d buckets)", ErrUnavailable, m.capacity)
		}
		if m.buckets == nil {
			m.buckets = map[string]time.Time{}
		}
		heap.Push(&m.bucketExpiries, expiry{key: key, at: next})
	}
	m.buckets[key] = next
	return true, 0, nil
}

// purgeBuckets drops the buckets full at now. One heap entry per bucket:
// an entry that comes up before its bucket's TAT goes back in at the TAT.
func (m *Memory) purgeBuckets(now time.Time) {
	for len(m.bucketExpiries) > 0 && !now.Before(m.bucketExpiries[0].at) {
		x := &m.bucketExpiries[0]
		tat, ok := m.buckets[x.key]
		switch {
		case !ok:
			heap.Pop(&m.bucketExpiries)
		case now.Before(tat):
			x.at = tat
			heap.Fix(&m.bucketExpiries, 0)
		default:
			delete(m.buckets, x.key)
			heap.Pop(&m.bucketExpiries)
		}
	}
}

// Buckets returns the number of quota buckets held.
func (m *Memory) Buckets() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}

// takeScript is GCRA in one script on one key, on the server's clock
// (TIME), so every replica of the service reads one time and none over-
// admits by clock skew. KEYS[1] holds the TAT in microseconds since the
// epoch, expiring when the bucket is full again; ARGV[1] is the interval
// and ARGV[2] the burst. The reply is {1, 0} when a token was taken, else
// {0, microseconds until one is back}. Redis 7 replicates a script by its
// effects, so TIME before a write is allowed. Microsecond times stay below
// 2^53, exact in Lua's doubles; string.format writes them without an
// exponent.
const takeScript = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call("GET", KEYS[1]) or "0") or 0
if tat < now then tat = now end
local nxt = tat + interval
local at = nxt - burst * interval
if at > now then return {0, at - now} end
redis.call("SET", KEYS[1], string.format("%.0f", nxt), "PX", math.ceil((nxt - now) / 1000))
return {1, 0}`

var takeRedisScript = redis.NewScript(takeScript)

// Take implements Limiter with one script on the primary that holds key
// (EVALSHA, then EVAL once when the server lacks it): every replica of
// the service sharing this Redis shares the bucket, and no interleaving
// of their Takes admits over it. With RedisOptions.WaitReplicas the
// script is followed on the same connection by WAIT, as a claim is; fewer
// acknowledgements in time is an error wrapping ErrNotReplicated, and the
// token taken stays taken (the bucket errs towards refusing).
func (r *Redis) Take(ctx context.Context, key string, interval time.Duration, burst int) (bool, time.Duration, error) {
	if err := checkBucket(interval, burst); err != nil {
		return false, 0, err
	}
	k := r.prefix + key
	var c redis.Scripter = r.c
	if r.cluster != nil {
		node, err := r.cluster.MasterForKey(ctx, k)
		if err != nil {
			return false, 0, fmt.Errorf("%w: redis cluster: %w", ErrUnavailable, err)
		}
		c = node
	}
	args := []any{intervalMicros(interval), burst}
	var res []int64
	var err error
	if r.wait > 0 {
		res, err = r.takeReplicated(ctx, c.(redis.Cmdable), k, args)
	} else {
		res, err = takeRedisScript.Run(ctx, c, []string{k}, args...).Int64Slice()
	}
	if err != nil {
		r.reloadTopology()
		if errors.Is(err, ErrUnavailable) {
			return false, 0, err
		}
		return false, 0, fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("%w: redis: quota script answered %d values", ErrUnavailable, len(res))
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Microsecond, nil
}

// takeReplicated runs the script and WAIT in one pipeline on one
// connection.
func (r *Redis) takeReplicated(ctx context.Context, c redis.Cmdable, k string, args []any) ([]int64, error) {
	pipe := c.Pipeline()
	take := pipe.Eval(ctx, takeScript, []string{k}, args...)
	acks := pipe.Do(ctx, "wait", r.wait, r.waitFor.Milliseconds())
	_, _ = pipe.Exec(ctx) // errors are read per command below
	res, err := take.Int64Slice()
	if err != nil {
		return nil, err
	}
	n, err := acks.Int64()
	if err != nil {
		return nil, fmt.Errorf("%w: %w: redis WAIT: %w", ErrUnavailable, ErrNotReplicated, err)
	}
	if n < int64(r.wait) {
		return nil, fmt.Errorf("%w: %w: %d of %d replicas within %v", ErrUnavailable, ErrNotReplicated, n, r.wait, r.waitFor)
	}
	return res, nil
}

// Take implements Limiter when the observed store does (one "quota"
// observation); otherwise it fails with ErrUnavailable.
func (o *observed) Take(ctx context.Context, key string, interval time.Duration, burst int) (bool, time.Duration, error) {
	l, ok := o.s.(Limiter)
	if !ok {
		return false, 0, fmt.Errorf("%w: the store keeps no quota buckets", ErrUnavailable)
	}
	start := o.now()
	allowed, retry, err := l.Take(ctx, key, interval, burst)
	o.observe("quota", o.now().Sub(start), err)
	return allowed, retry, err
}

// intervalMicros is interval in whole microseconds, the script's unit,
// rounded up: truncating would refill faster than the quota says (a 1.9 µs
// interval, 1 s / 526 315, refilled every 1 µs: 90% over the limit, the
// memory bucket not). The bucket errs towards refusing by under a
// microsecond per token.
func intervalMicros(interval time.Duration) int64 {
	return int64((interval + time.Microsecond - 1) / time.Microsecond)
}
