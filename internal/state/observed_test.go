package state_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// TestObserve: every call is reported with its operation and error, and
// answers as the wrapped store does; a store that went away reports
// errors.
func TestObserve(t *testing.T) {
	url, stop := statetest.StartRedis(t)
	r, err := state.NewRedis(url, statetest.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	s := state.Observe(r, func(op string, latency time.Duration, err error) {
		if latency < 0 {
			t.Errorf("%s: latency %v", op, latency)
		}
		got = append(got, op+"="+map[bool]string{true: "error", false: "ok"}[err != nil])
	})
	defer s.Close()
	ctx := context.Background()
	if ok, _, err := s.Claim(ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("claim %v %v", ok, err)
	}
	if ok, prev, _ := s.Claim(ctx, "k", "w", time.Minute); ok || prev != "v" {
		t.Fatalf("second claim %v %q", ok, prev)
	}
	_ = s.Release(ctx, "k", "v")
	_ = s.Ping(ctx)
	stop()
	if err := s.Ping(ctx); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("ping after stop: %v", err)
	}
	if want := "claim=ok,claim=ok,release=ok,ping=ok,ping=error"; strings.Join(got, ",") != want {
		t.Errorf("observed %v, want %s", got, want)
	}
}
