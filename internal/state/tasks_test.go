package state

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTasks(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	for name, store := range map[string]Reader{
		"memory":   NewMemory(10, clock),
		"observed": Observe(NewMemory(10, clock), func(string, time.Duration, error) {}).(Reader),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tk := Tasks{Store: store, MaxTTL: time.Minute}
			if _, found, err := tk.Owner(ctx, "payments", "t1"); found || err != nil {
				t.Fatalf("unbound: %v %v", found, err)
			}
			if err := tk.Bind(ctx, "payments", "t1", "alice", 30_000); err != nil {
				t.Fatal(err)
			}
			if err := tk.Bind(ctx, "payments", "t1", "alice", 30_000); err != nil {
				t.Fatalf("rebind by the owner: %v", err)
			}
			if err := tk.Bind(ctx, "payments", "t1", "bob", 30_000); !errors.Is(err, ErrTaskConflict) {
				t.Fatalf("bob took alice's task: %v", err)
			}
			if p, found, _ := tk.Owner(ctx, "payments", "t1"); !found || p != "alice" {
				t.Fatalf("owner %q %v", p, found)
			}
			if _, found, _ := tk.Owner(ctx, "github", "t1"); found {
				t.Fatal("a task id is bound per server")
			}
			// Length prefixes keep (server, id) pairs apart.
			if err := tk.Bind(ctx, "pay", "x:t1", "carol", -1); err != nil {
				t.Fatal(err)
			}
			if p, _, _ := tk.Owner(ctx, "payments", "t1"); p != "alice" {
				t.Fatal("key collision")
			}
			// The task's ttl is capped by MaxTTL.
			now = now.Add(61 * time.Second)
			if _, found, _ := tk.Owner(ctx, "payments", "t1"); found {
				t.Fatal("binding outlived MaxTTL")
			}
			now = time.Unix(1000, 0)
		})
	}
}

func TestTaskTTL(t *testing.T) {
	tk := Tasks{}
	tests := []struct {
		give int64
		want time.Duration
	}{
		{-1, DefaultTaskTTL},
		{0, time.Millisecond},
		{5000, 5 * time.Second},
		{int64(48 * time.Hour / time.Millisecond), DefaultMaxTaskTTL},
		{1 << 62, DefaultMaxTaskTTL},
	}
	for _, tt := range tests {
		if got := tk.ttl(tt.give); got != tt.want {
			t.Errorf("ttl(%d) = %v, want %v", tt.give, got, tt.want)
		}
	}
}
