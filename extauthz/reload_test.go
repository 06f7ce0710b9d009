package extauthz

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/mcp-extauthz/mcp-extauthz/internal/reload"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestReloadIsAtomic: Checks running while the policy flips between A and B
// always report the rule id of the policy version they report: a Check never
// decides with one policy and labels the answer with the other.
func TestReloadIsAtomic(t *testing.T) {
	a, b := testkit.SearchPolicy("a-search"), testkit.SearchPolicy("b-search")
	want := map[string]string{testkit.PolicyVersion(a): "a-search", testkit.PolicyVersion(b): "b-search"}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, a)
	store := &decision.PolicyStore{}
	var published atomic.Int64
	loader := &reload.Loader{File: file, Publish: store.Publish, Loaded: func(changed bool, _ error) {
		if changed {
			published.Add(1)
		}
	}}
	if _, err := loader.Load(); err != nil {
		t.Fatal(err)
	}
	srv := staticRig(t, nil)
	configure(t, srv, func(c *decision.Config) { c.Policies = store })
	req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`).CheckRequest(true)

	const (
		checkers = 8
		minSwaps = 200
	)
	var (
		stop       atomic.Bool
		seen       [2]atomic.Int64 // Checks answered under A, under B
		checks     atomic.Int64
		wg         sync.WaitGroup
		mismatchMu sync.Mutex
		mismatches []string
	)
	for range checkers {
		wg.Go(func() {
			for !stop.Load() {
				resp, err := srv.Check(context.Background(), req)
				checks.Add(1)
				if err != nil || resp.GetOkResponse() == nil {
					mismatchMu.Lock()
					mismatches = append(mismatches, fmt.Sprintf("not allowed: %v %v", resp.GetStatus(), err))
					mismatchMu.Unlock()
					continue
				}
				md := resp.GetDynamicMetadata().GetFields()
				v, rule := md["policy_version"].GetStringValue(), md["rule_id"].GetStringValue()
				if want[v] != rule {
					mismatchMu.Lock()
					mismatches = append(mismatches, fmt.Sprintf("policy_version %s with rule_id %q", v, rule))
					mismatchMu.Unlock()
				}
				if v == testkit.PolicyVersion(a) {
					seen[0].Add(1)
				} else {
					seen[1].Add(1)
				}
			}
		})
	}

	// The swaps are counted, not timed: a loaded machine makes them slower,
	// never fewer. The deadline only bounds the wait for Checks under both
	// policies once the swaps are done.
	deadline := time.Now().Add(testkit.WaitTimeout)
	swaps := 0
	for swaps < minSwaps || seen[0].Load() == 0 || seen[1].Load() == 0 {
		// Past the deadline the assertions below report what was missed.
		if swaps >= minSwaps && time.Now().After(deadline) {
			break
		}
		src := a
		if swaps%2 == 0 {
			src = b
		}
		testkit.WriteFile(t, file, src)
		if _, err := loader.Load(); err != nil {
			t.Error(err)
			break
		}
		swaps++
	}
	stop.Store(true)
	wg.Wait()

	if len(mismatches) > 0 {
		t.Errorf("%d of %d Checks mixed two policies, e.g. %s", len(mismatches), checks.Load(), mismatches[0])
	}
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Errorf("Checks saw A %d times and B %d times; the test needs both", seen[0].Load(), seen[1].Load())
	}
	if got := published.Load(); got != int64(swaps+1) {
		t.Errorf("%d policies published after %d swaps, want %d", got, swaps, swaps+1)
	}
	t.Logf("%d swaps, %d Checks (A %d, B %d)", swaps, checks.Load(), seen[0].Load(), seen[1].Load())
}
