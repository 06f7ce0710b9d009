package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reader is a Store that can also read a claim without making one. Memory,
// Redis and Observe's wrapper of a Reader implement it.
type Reader interface {
	Store
	// Get returns the value held by key's unexpired claim, and found
	// false when there is none. Errors wrap ErrUnavailable.
	Get(ctx context.Context, key string) (value string, found bool, err error)
	// GetMany is Get of every key in one store round trip: values[i] and
	// found[i] answer keys[i]. On a single Redis server or a Sentinel
	// primary it is one MGET; on a Redis Cluster the keys of each node go
	// in one pipeline, the nodes' in parallel (a round trip's latency, one
	// exchange per node holding a key). Not a snapshot across keys on
	// Redis: a claim made between two keys' reads may be seen for one
	// only. Errors wrap ErrUnavailable; then nothing is known of any key.
	GetMany(ctx context.Context, keys ...string) (values []string, found []bool, err error)
}

// fewAnswers is how many keys' answers answers allocates as one block.
const fewAnswers = 4

// answers returns n zero values and found flags for GetMany: one
// allocation for up to fewAnswers keys (toolpin's Lookup reads 3 or 4).
func answers(n int) ([]string, []bool) {
	if n > fewAnswers {
		return make([]string, n), make([]bool, n)
	}
	a := new(struct {
		values [fewAnswers]string
		found  [fewAnswers]bool
	})
	return a.values[:n:n], a.found[:n:n]
}

// Get implements Reader.
func (m *Memory) Get(ctx context.Context, key string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[key]; ok && m.now().Before(e.expires) {
		return e.value, true, nil
	}
	return "", false, nil
}

// GetMany implements Reader: one look at every key under one lock.
func (m *Memory) GetMany(ctx context.Context, keys ...string) ([]string, []bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	values, found := answers(len(keys))
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for i, k := range keys {
		if e, ok := m.entries[k]; ok && now.Before(e.expires) {
			values[i], found[i] = e.value, true
		}
	}
	return values, found, nil
}

// Get implements Reader.
func (r *Redis) Get(ctx context.Context, key string) (string, bool, error) {
	v, err := r.c.Get(ctx, r.prefix+key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	return v, true, nil
}

// GetMany implements Reader: MGET on one server or a Sentinel primary;
// on a Cluster, a GET per key in a cluster pipeline (go-redis sends each
// node its keys' commands in one pipeline, the nodes in parallel, and
// follows MOVED/ASK; MGET would fail with CROSSSLOT, since the keys of one
// caller rarely share a slot). A key holding a value that is not a string
// reads as not found on one server and as an error on a Cluster.
func (r *Redis) GetMany(ctx context.Context, keys ...string) ([]string, []bool, error) {
	values, found := answers(len(keys))
	if len(keys) == 0 {
		return values, found, nil
	}
	if r.cluster != nil {
		pipe := r.cluster.Pipeline()
		cmds := make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.Get(ctx, r.prefix+k)
		}
		_, _ = pipe.Exec(ctx) // errors are read per command below
		for i, c := range cmds {
			v, err := c.Result()
			switch {
			case errors.Is(err, redis.Nil):
			case err != nil:
				r.reloadTopology()
				return nil, nil, fmt.Errorf("%w: redis cluster: %w", ErrUnavailable, err)
			default:
				values[i], found[i] = v, true
			}
		}
		return values, found, nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = r.prefix + k
	}
	got, err := r.c.MGet(ctx, full...).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	if len(got) != len(keys) {
		return nil, nil, fmt.Errorf("%w: redis: MGET of %d keys answered %d values", ErrUnavailable, len(keys), len(got))
	}
	for i, v := range got {
		switch v := v.(type) {
		case nil:
		case string:
			values[i], found[i] = v, true
		default:
			return nil, nil, fmt.Errorf("%w: redis: MGET answered a %T", ErrUnavailable, v)
		}
	}
	return values, found, nil
}

// Get implements Reader when the observed store does; otherwise it fails
// with ErrUnavailable.
func (o *observed) Get(ctx context.Context, key string) (string, bool, error) {
	r, ok := o.s.(Reader)
	if !ok {
		return "", false, fmt.Errorf("%w: the store cannot read claims", ErrUnavailable)
	}
	start := o.now()
	v, found, err := r.Get(ctx, key)
	o.observe("get", o.now().Sub(start), err)
	return v, found, err
}

// TaskOwner is the principal a task is bound to: the token's issuer and
// subject, so equal subjects of two issuers never share a task.
func TaskOwner(issuer, subject string) string {
	if issuer == "" {
		return subject
	}
	return issuer + " " + subject
}

// ErrTaskConflict is returned by Tasks.Bind when the task id is already
// bound to another principal: the binding is kept, never replaced.
var ErrTaskConflict = errors.New("task id bound to another principal")

// Default bounds of a task binding's lifetime.
const (
	// DefaultTaskTTL is used when the task states no ttl (MCP 2025-11-25
	// Task.ttl is the milliseconds the receiver keeps it; null: unlimited).
	DefaultTaskTTL = time.Hour
	// DefaultMaxTaskTTL caps every binding.
	DefaultMaxTaskTTL = 24 * time.Hour
)

// Tasks binds MCP task ids (MCP 2025-11-25 "Tasks", CreateTaskResult
// task.taskId) to the principal that created them, in the keyspace
// "task:<len(server)>:<server>:<taskId>" of a Store, for the task's
// lifetime capped at MaxTTL. The server and task id are length-prefixed so
// that no (server, id) pair can name another's key.
type Tasks struct {
	Store Reader
	// DefaultTTL and MaxTTL bound bindings; zero takes the defaults above.
	DefaultTTL, MaxTTL time.Duration
}

func taskKey(server, taskID string) string {
	return "task:" + strconv.Itoa(len(server)) + ":" + server + ":" + taskID
}

// ttl returns the binding lifetime for a task ttl in ms (< 0: none stated).
func (t Tasks) ttl(taskTTLms int64) time.Duration {
	def, maxTTL := t.DefaultTTL, t.MaxTTL
	if def <= 0 {
		def = DefaultTaskTTL
	}
	if maxTTL <= 0 {
		maxTTL = DefaultMaxTaskTTL
	}
	d := def
	if taskTTLms >= 0 {
		d = time.Duration(min(taskTTLms, int64(maxTTL/time.Millisecond))) * time.Millisecond
	}
	return max(min(d, maxTTL), time.Millisecond)
}

// Bind records that principal created task taskID on server, for the
// task's ttl (milliseconds; < 0 when the task states none) capped at
// MaxTTL. Binding again to the same principal succeeds; to another is
// ErrTaskConflict. Errors of the store wrap ErrUnavailable.
func (t Tasks) Bind(ctx context.Context, server, taskID, principal string, taskTTLms int64) error {
	if taskID == "" || principal == "" {
		return fmt.Errorf("%w: empty task id or principal", ErrUnavailable)
	}
	claimed, prev, err := t.Store.Claim(ctx, taskKey(server, taskID), principal, t.ttl(taskTTLms))
	switch {
	case err != nil:
		return err
	case claimed || prev == principal:
		return nil
	}
	return ErrTaskConflict
}

// Owner returns the principal bound to taskID on server, and found false
// when the id is unbound (never bound, or expired). Errors wrap
// ErrUnavailable: the caller refuses then.
func (t Tasks) Owner(ctx context.Context, server, taskID string) (principal string, found bool, err error) {
	return t.Store.Get(ctx, taskKey(server, taskID))
}

// GetMany implements Reader when the observed store does (one "get"
// observation per call: one round trip); otherwise it fails with
// ErrUnavailable.
func (o *observed) GetMany(ctx context.Context, keys ...string) ([]string, []bool, error) {
	r, ok := o.s.(Reader)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the store cannot read claims", ErrUnavailable)
	}
	start := o.now()
	values, found, err := r.GetMany(ctx, keys...)
	o.observe("get", o.now().Sub(start), err)
	return values, found, err
}
