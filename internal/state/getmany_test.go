package state_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// TestGetMany: GetMany answers each key as Get does (held, never claimed,
// released), in order, including a key given twice and no key at all, on
// memory, the observed wrapper, one redis-server and a three-primary Redis
// Cluster whose keys span its nodes (where MGET would fail CROSSSLOT);
// a store that is down answers ErrUnavailable. It also asserts one "get"
// observation per GetMany: one round trip.
func TestGetMany(t *testing.T) {
	var gets atomic.Int64
	var clusterNodes []*statetest.Server // the Cluster's primaries, once started
	stores := []struct {
		name string
		open func(t *testing.T) (st state.Reader, down func())
	}{
		{"memory", func(*testing.T) (state.Reader, func()) { return state.NewMemory(0, nil), nil }},
		{"observed", func(*testing.T) (state.Reader, func()) {
			return state.Observe(state.NewMemory(0, nil), func(op string, _ time.Duration, _ error) {
				if op == "get" {
					gets.Add(1)
				}
			}).(state.Reader), nil
		}},
		{"redis", func(t *testing.T) (state.Reader, func()) {
			url, stop := statetest.StartRedis(t)
			r, err := state.NewRedis(url, statetest.Prefix())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r, stop
		}},
		{"redis-cluster", func(t *testing.T) (state.Reader, func()) {
			c := startCluster(t)
			clusterNodes = c.primaries
			r, err := state.OpenRedis("redis-cluster://"+c.seed, state.RedisOptions{Prefix: statetest.Prefix()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r, func() {
				for _, s := range append(c.primaries, c.replica) {
					s.Stop()
				}
			}
		}},
	}
	// Enough keys that a cluster's three slot ranges each hold some.
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			st, down := s.open(t)
			ctx := context.Background()
			want := make([]string, len(keys))
			for i, k := range keys {
				if i%3 == 2 {
					continue // never claimed
				}
				want[i] = "v-" + k
				if _, _, err := st.Claim(ctx, k, want[i], time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Release(ctx, keys[0], want[0]); err != nil {
				t.Fatal(err)
			}
			want[0] = ""
			if s.name == "redis-cluster" {
				holding := 0
				for _, n := range clusterNodes {
					if k, err := admin(t, n.Addr).DBSize(ctx).Result(); err == nil && k > 0 {
						holding++
					}
				}
				if holding < 2 {
					t.Fatalf("the keys lie on %d primaries: the cross-slot read is not exercised", holding)
				}
			}
			ask := append(slices.Clone(keys), keys[1]) // a key twice
			before := gets.Load()
			values, found, err := st.GetMany(ctx, ask...)
			if err != nil {
				t.Fatal(err)
			}
			if s.name == "observed" && gets.Load()-before != 1 {
				t.Errorf("GetMany observed as %d gets, want 1", gets.Load()-before)
			}
			if len(values) != len(ask) || len(found) != len(ask) {
				t.Fatalf("%d values, %d found for %d keys", len(values), len(found), len(ask))
			}
			for i, k := range ask {
				v, f, err := st.Get(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				w := want[slices.Index(keys, k)]
				if values[i] != w || found[i] != (w != "") || values[i] != v || found[i] != f {
					t.Errorf("%s: GetMany %q %v, Get %q %v, want %q", k, values[i], found[i], v, f, w)
				}
			}
			if v, f, err := st.GetMany(ctx); err != nil || len(v) != 0 || len(f) != 0 {
				t.Errorf("no keys: %v %v %v", v, f, err)
			}
			if down == nil {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				down, ctx = func() {}, cctx // a Memory store refuses a done context
			}
			down()
			if _, _, err := st.GetMany(ctx, keys...); !errors.Is(err, state.ErrUnavailable) {
				t.Errorf("store down: %v, want ErrUnavailable", err)
			}
		})
	}
}
