package redisreplay

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// TestClaim: against a real redis-server, an id is fresh once, taken by
// another replica's store (another client) after that, and free again
// once its time has passed; a server that is down is an error.
func TestClaim(t *testing.T) {
	url, stop := statetest.StartRedis(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	a, b := redis.NewClient(opt), redis.NewClient(opt)
	defer a.Close()
	defer b.Close()
	prefix := statetest.Prefix()
	r1, r2 := &Store{Client: a, Prefix: prefix}, &Store{Client: b, Prefix: prefix}
	ctx := context.Background()
	until := time.Now().Add(time.Second)
	steps := []struct {
		store *Store
		id    string
		want  bool
	}{
		{r1, "d1", true},
		{r1, "d1", false},
		{r2, "d1", false},
		{r2, "d2", true},
	}
	for i, tt := range steps {
		got, err := tt.store.Claim(ctx, tt.id, until)
		if err != nil || got != tt.want {
			t.Errorf("step %d: %v %v, want %v", i, got, err, tt.want)
		}
	}
	time.Sleep(time.Until(until) + 100*time.Millisecond)
	if got, err := r2.Claim(ctx, "d1", time.Now().Add(time.Minute)); err != nil || !got {
		t.Errorf("after expiry: %v %v, want fresh", got, err)
	}
	stop()
	if got, err := r1.Claim(ctx, "d3", time.Now().Add(time.Minute)); err == nil || got {
		t.Errorf("redis down: %v %v, want an error", got, err)
	}
}
