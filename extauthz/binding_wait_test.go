package extauthz

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// TestRedisWaitReplicasCheck: on a store that waits for one replica, an
// approved request whose claim the paused replica does not acknowledge is
// denied (state_store_unavailable) and its approval not spent: the same
// approval admits the request once the replica is back, and only once.
func TestRedisWaitReplicasCheck(t *testing.T) {
	primary := statetest.StartServer(t)
	replica := statetest.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	r, err := state.OpenRedis("redis://"+primary.Addr, state.RedisOptions{Prefix: statetest.Prefix(), WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The replica is in sync once a claim is acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, err := r.Claim(context.Background(), "sync", "x", time.Minute); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("replica never acknowledged: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rig := newBindingRig(t, r)
	c := bigRefund
	c.approval = rig.approve(t, bigRefund, nil)

	replica.Pause()
	if got := rig.send(t, c); got.decision == "allow" || got.reason != "state_store_unavailable" {
		t.Fatalf("replica paused: %s/%s, want a state_store_unavailable denial", got.decision, got.reason)
	}
	replica.Resume()
	var got bindingOutcome
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = rig.send(t, c); got.reason != "state_store_unavailable" {
			break
		}
	}
	if got.reason != "allowed" {
		t.Fatalf("replica back: %s, want the same approval to admit the request", got.reason)
	}
	if got := rig.send(t, c); got.reason != "approval_replayed" {
		t.Fatalf("second use: %s, want approval_replayed", got.reason)
	}
	if n := rig.upstream.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want 1", n)
	}
}
