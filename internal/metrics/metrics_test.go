package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNewSeriesAtZero: the given reasons' series exist from start, with the
// decision they were given, and token reasons in the failures counter.
func TestNewSeriesAtZero(t *testing.T) {
	m := New(prometheus.NewRegistry(), []Reason{{"allowed", "allow", false}, {"token_expired", "deny", true}})
	if n := testutil.CollectAndCount(m.Decisions); n != 4 {
		t.Errorf("%d decision series, want 4 (2 reasons × dry_run)", n)
	}
	if n := testutil.CollectAndCount(m.TokenFailures); n != 1 {
		t.Errorf("%d token failure series, want 1", n)
	}
	m.Decided(time.Millisecond, "deny", "token_expired", "tools/call", "payments", true, true)
	if got := testutil.ToFloat64(m.Decisions.WithLabelValues("deny", "token_expired", "tools/call", "payments", "true")); got != 1 {
		t.Errorf("decisions = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.TokenFailures.WithLabelValues("token_expired")); got != 1 {
		t.Errorf("token failures = %v, want 1", got)
	}
	m.PolicyPublished("v1")
	m.PolicyPublished("v2")
	if n := testutil.CollectAndCount(m.PolicyInfo); n != 1 || testutil.ToFloat64(m.PolicyInfo.WithLabelValues("v2")) != 1 {
		t.Errorf("policy_info holds %d series; want only v2", n)
	}
	m.KeySetRefreshed(errors.New("x"))
	if got := testutil.ToFloat64(m.KeySetRefreshes.WithLabelValues("error")); got != 1 {
		t.Errorf("keyset errors = %v", got)
	}
}

// TestNilCountsNothing: every method is safe on a nil *Metrics.
func TestNilCountsNothing(t *testing.T) {
	var m *Metrics
	m.Decided(time.Second, "allow", "allowed", "ping", "none", false, false)
	m.ShadowMatched("deny")
	m.CheckStarted()()
	m.SetReady(true)
	m.PolicyPublished("v")
	m.PolicyRefused()
	m.OIDCDiscovered(nil)
	m.KeySetRefreshed(nil)
	m.TokenCacheResult("hit")
}
