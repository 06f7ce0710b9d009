package state_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// take is one Take after advancing the clock by after.
type take struct {
	after       time.Duration
	key         string
	wantAllowed bool
	wantRetry   time.Duration
}

// TestTakeMemory: GCRA on a clock the test moves, so every retry-after is
// exact: bursts, refill one token per interval, a bucket that never holds
// more than burst however long it idles, keys apart.
func TestTakeMemory(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		burst    int
		give     []take
	}{
		{"burst then refused", time.Second, 3, []take{
			{0, "a", true, 0}, {0, "a", true, 0}, {0, "a", true, 0},
			{0, "a", false, time.Second},
			{400 * time.Millisecond, "a", false, 600 * time.Millisecond},
			{600 * time.Millisecond, "a", true, 0},
			{0, "a", false, time.Second},
		}},
		{"a refusal takes nothing", time.Second, 1, []take{
			{0, "a", true, 0},
			{500 * time.Millisecond, "a", false, 500 * time.Millisecond},
			{400 * time.Millisecond, "a", false, 100 * time.Millisecond},
			{100 * time.Millisecond, "a", true, 0},
		}},
		{"idle never fills past burst", time.Second, 2, []take{
			{0, "a", true, 0},
			{time.Hour, "a", true, 0}, {0, "a", true, 0},
			{0, "a", false, time.Second},
		}},
		{"steady rate at the interval", 100 * time.Millisecond, 1, []take{
			{0, "a", true, 0}, {100 * time.Millisecond, "a", true, 0}, {100 * time.Millisecond, "a", true, 0},
			{99 * time.Millisecond, "a", false, time.Millisecond},
		}},
		{"keys are isolated", time.Minute, 1, []take{
			{0, "alice", true, 0}, {0, "alice", false, time.Minute},
			{0, "bob", true, 0}, {0, "bob", false, time.Minute},
			{time.Minute, "alice", true, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_800_000_000, 0)
			m := state.NewMemory(0, func() time.Time { return now })
			for i, g := range tt.give {
				now = now.Add(g.after)
				allowed, retry, err := m.Take(context.Background(), g.key, tt.interval, tt.burst)
				if err != nil || allowed != g.wantAllowed || retry != g.wantRetry {
					t.Errorf("take %d (%s, +%v) = %v, %v, %v; want %v, %v", i, g.key, g.after, allowed, retry, err, g.wantAllowed, g.wantRetry)
				}
			}
		})
	}
}

// TestTakeMemoryBounded: a full store refuses a new bucket (fail closed,
// never forgetting one), and full buckets are dropped.
func TestTakeMemoryBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := state.NewMemory(2, func() time.Time { return now })
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		if ok, _, err := m.Take(ctx, k, time.Second, 5); !ok || err != nil {
			t.Fatalf("Take %s = %v, %v", k, ok, err)
		}
	}
	if _, _, err := m.Take(ctx, "c", time.Second, 5); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("full store: err = %v, want ErrUnavailable", err)
	}
	if ok, _, err := m.Take(ctx, "a", time.Second, 5); !ok || err != nil {
		t.Fatalf("a held bucket is still kept in a full store: %v, %v", ok, err)
	}
	now = now.Add(2 * time.Second) // a (2 tokens out) and b (1) are full again
	if ok, _, err := m.Take(ctx, "c", time.Second, 5); !ok || err != nil {
		t.Fatalf("after refill: %v, %v", ok, err)
	}
	if n := m.Buckets(); n != 1 {
		t.Errorf("Buckets = %d, want 1 (a and b dropped when full)", n)
	}
	if _, _, err := m.Take(ctx, "x", 0, 1); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("zero interval: err = %v, want ErrUnavailable", err)
	}
}

// TestTakeRedis: the same bucket on a real redis-server, on its clock.
func TestTakeRedis(t *testing.T) {
	r, err := state.NewRedis(statetest.RedisURL(t), statetest.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	const interval = 300 * time.Millisecond
	for i := range 3 {
		if ok, retry, err := r.Take(ctx, "a", interval, 3); !ok || retry != 0 || err != nil {
			t.Fatalf("take %d = %v, %v, %v; want allowed", i, ok, retry, err)
		}
	}
	ok, retry, err := r.Take(ctx, "a", interval, 3)
	if ok || err != nil || retry <= 0 || retry > interval {
		t.Fatalf("4th take = %v, %v, %v; want refused with 0 < retry <= %v", ok, retry, err, interval)
	}
	if ok, _, err := r.Take(ctx, "b", interval, 3); !ok || err != nil {
		t.Fatalf("another key = %v, %v; want allowed", ok, err)
	}
	time.Sleep(retry + 20*time.Millisecond)
	if ok, _, err := r.Take(ctx, "a", interval, 3); !ok || err != nil {
		t.Fatalf("after retry-after = %v, %v; want allowed", ok, err)
	}
	if ok, _, _ := r.Take(ctx, "a", interval, 3); ok {
		t.Fatal("one token came back, two taken")
	}
}

// TestTakeReplicasShareOneRedis: four replicas of the service (four
// clients) on one redis-server, 16 goroutines each, take from one bucket
// at once: exactly burst requests are admitted, none over.
func TestTakeReplicasShareOneRedis(t *testing.T) {
	url := statetest.RedisURL(t)
	prefix := statetest.Prefix()
	const replicas, workers, each, burst = 4, 16, 8, 50
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range replicas {
		r, err := state.NewRedis(url, prefix)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					ok, _, err := r.Take(context.Background(), "shared", time.Hour, burst)
					switch {
					case err != nil:
						t.Error(err)
						return
					case ok:
						admitted.Add(1)
					default:
						refused.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if admitted.Load() != burst || admitted.Load()+refused.Load() != replicas*workers*each {
		t.Errorf("admitted %d, refused %d of %d; want exactly %d admitted", admitted.Load(), refused.Load(), replicas*workers*each, burst)
	}
}

// TestTakeMemoryConcurrent: the same on one replica's Memory store.
func TestTakeMemoryConcurrent(t *testing.T) {
	m := state.NewMemory(0, nil)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if ok, _, err := m.Take(context.Background(), "k", time.Hour, 100); ok && err == nil {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 100 {
		t.Errorf("admitted %d of 640, want 100", admitted.Load())
	}
}

// TestTakeRedisDown: a stopped server, and a WAIT no replica answers, are
// ErrUnavailable (the caller fails closed).
func TestTakeRedisDown(t *testing.T) {
	url, stop := statetest.StartRedis(t)
	r, err := state.NewRedis(url, statetest.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := state.OpenRedis(url, state.RedisOptions{Prefix: statetest.Prefix(), WaitReplicas: 1, WaitTimeout: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, err := w.Take(context.Background(), "k", time.Second, 1); !errors.Is(err, state.ErrNotReplicated) || !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("WAIT without replicas: err = %v, want ErrNotReplicated and ErrUnavailable", err)
	}
	if ok, _, err := r.Take(context.Background(), "k", time.Second, 1); !ok || err != nil {
		t.Fatalf("Take = %v, %v", ok, err)
	}
	stop()
	if _, _, err := r.Take(context.Background(), "k", time.Second, 1); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("server down: err = %v, want ErrUnavailable", err)
	}
	o := state.Observe(state.NewMemory(0, nil), func(string, time.Duration, error) {})
	if ok, _, err := o.(state.Limiter).Take(context.Background(), "k", time.Second, 1); !ok || err != nil {
		t.Errorf("observed memory Take = %v, %v", ok, err)
	}
}

// TestTakeRedisCluster: buckets on a three-primary Redis Cluster, each on
// the primary of its slot (keys span all three): a burst of one each. With
// WaitReplicas 1, a bucket on the primary that has a replica is taken and
// acknowledged; one on a primary without a replica is ErrNotReplicated.
func TestTakeRedisCluster(t *testing.T) {
	c := startCluster(t)
	prefix := statetest.Prefix()
	r, err := state.OpenRedis("redis-cluster://"+c.seed, state.RedisOptions{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	seed := admin(t, c.seed)
	slots := map[bool]string{} // slot on the first primary (0..5460, the one with a replica) → a key
	for i := range 30 {
		k := "bucket-" + string(rune('a'+i%26)) + string(rune('0'+i/26))
		slot, err := seed.ClusterKeySlot(ctx, prefix+k).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot <= 5460] = k
		if ok, _, err := r.Take(ctx, k, time.Hour, 1); !ok || err != nil {
			t.Fatalf("first take of %s (slot %d) = %v, %v", k, slot, ok, err)
		}
		if ok, retry, err := r.Take(ctx, k, time.Hour, 1); ok || err != nil || retry <= 0 {
			t.Fatalf("second take of %s = %v, %v, %v; want refused", k, ok, retry, err)
		}
	}
	if len(slots) != 2 {
		t.Fatalf("keys on %d sides, want both", len(slots))
	}
	// The same keys under a new prefix land elsewhere: find one on each
	// side again.
	wprefix := statetest.Prefix()
	sides := map[bool]string{}
	for i := 0; len(sides) < 2 && i < 100; i++ {
		k := "w-" + strconv.Itoa(i)
		slot, err := seed.ClusterKeySlot(ctx, wprefix+k).Result()
		if err != nil {
			t.Fatal(err)
		}
		sides[slot <= 5460] = k
	}
	w, err := state.OpenRedis("redis-cluster://"+c.seed, state.RedisOptions{Prefix: wprefix, WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ok, _, err := w.Take(ctx, sides[true], time.Hour, 1); !ok || err != nil {
		t.Errorf("replicated primary: %v, %v", ok, err)
	}
	if _, _, err := w.Take(ctx, sides[false], time.Hour, 1); !errors.Is(err, state.ErrNotReplicated) {
		t.Errorf("primary without replica: err = %v, want ErrNotReplicated", err)
	}
}
