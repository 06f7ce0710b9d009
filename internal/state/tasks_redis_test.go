package state_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// Task bindings on a real redis-server: one replica binds, another reads.
func TestTasksRedis(t *testing.T) {
	prefix, url := statetest.Prefix(), statetest.RedisURL(t)
	a, err := state.NewRedis(url, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := state.NewRedis(url, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if err := (state.Tasks{Store: a}).Bind(ctx, "payments", "t1", "alice", 60_000); err != nil {
		t.Fatal(err)
	}
	other := state.Tasks{Store: b}
	if p, found, err := other.Owner(ctx, "payments", "t1"); err != nil || !found || p != "alice" {
		t.Fatalf("owner %q %v %v", p, found, err)
	}
	if _, found, err := other.Owner(ctx, "payments", "t2"); err != nil || found {
		t.Fatalf("unbound: %v %v", found, err)
	}
	if err := other.Bind(ctx, "payments", "t1", "bob", 60_000); !errors.Is(err, state.ErrTaskConflict) {
		t.Fatalf("bob: %v", err)
	}
}
