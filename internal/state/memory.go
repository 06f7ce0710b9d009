package state

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultMemoryCapacity is the default bound of a Memory store, in claims.
const DefaultMemoryCapacity = 100_000

// Memory is an in-process Store: one replica's view only, so a client whose
// retries reach other replicas is not recognised there (use Redis then). It
// holds at most Capacity unexpired claims; when full, a new claim fails with
// ErrUnavailable rather than evicting a live one, since forgetting a used
// approval id would let it be replayed. Expired claims are purged on the
// way.
type Memory struct {
	mu       sync.Mutex
	entries  map[string]memEntry
	expiries expiryHeap
	capacity int
	now      func() time.Time

	// Quota buckets (quota.go): key → TAT, and one expiry per bucket.
	buckets        map[string]time.Time
	bucketExpiries expiryHeap
}

type memEntry struct {
	value   string
	expires time.Time
}

// NewMemory returns a Memory store bounded to capacity claims (<= 0 means
// DefaultMemoryCapacity). now is the clock; nil means time.Now.
func NewMemory(capacity int, now func() time.Time) *Memory {
	if capacity <= 0 {
		capacity = DefaultMemoryCapacity
	}
	if now == nil {
		now = time.Now
	}
	return &Memory{entries: map[string]memEntry{}, capacity: capacity, now: now}
}

var _ Store = (*Memory)(nil)

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, key, value string, ttl time.Duration) (bool, string, error) {
	if err := ctx.Err(); err != nil {
		return false, "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if ttl <= 0 {
		return false, "", fmt.Errorf("%w: ttl %v is not positive", ErrUnavailable, ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.purge(now)
	if e, ok := m.entries[key]; ok && now.Before(e.expires) {
		return false, e.value, nil
	}
	if len(m.entries) >= m.capacity {
		return false, "", fmt.Errorf("%w: memory store full (%d claims)", ErrUnavailable, m.capacity)
	}
	exp := now.Add(ttl)
	m.entries[key] = memEntry{value: value, expires: exp}
	heap.Push(&m.expiries, expiry{key: key, at: exp})
	return true, "", nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[key]; ok && e.value == value {
		delete(m.entries, key) // its heap entry is skipped when it comes up
	}
	return nil
}

// Ping implements Store; a Memory store always answers.
func (m *Memory) Ping(context.Context) error { return nil }

// Close implements Store.
func (m *Memory) Close() error { return nil }

// Len returns the number of claims held, expired ones included until the
// next Claim purges them.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// purge drops claims expired at now, oldest first. Heap entries whose key
// was released or claimed again with a later expiry are skipped.
func (m *Memory) purge(now time.Time) {
	for len(m.expiries) > 0 && !now.Before(m.expiries[0].at) {
		x := heap.Pop(&m.expiries).(expiry)
		if e, ok := m.entries[x.key]; ok && e.expires.Equal(x.at) {
			delete(m.entries, x.key)
		}
	}
}

type expiry struct {
	key string
	at  time.Time
}

// expiryHeap is a min-heap of expiries (container/heap).
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
