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
	m.PolicyRules([]Rule{{"r", "deny"}})
}

// TestPolicyRulesAtZero: the rules of each policy loaded get their
// rule_decisions_total and cel_evaluation_errors_total series at zero;
// those of an earlier policy stay, with what they counted.
func TestPolicyRulesAtZero(t *testing.T) {
	m := New(prometheus.NewRegistry(), nil)
	if n := testutil.CollectAndCount(m.RuleDecisions) + testutil.CollectAndCount(m.CELEvaluationErrors); n != 0 {
		t.Fatalf("%d rule series before any policy, want 0", n)
	}
	m.PolicyRules([]Rule{{"no-deletes", "deny"}, {"search", "allow"}})
	m.RuleDecided("no-deletes", "deny")
	m.PolicyRules([]Rule{{"search", "allow"}, {"big-refunds", "ask"}})
	// Counted before the values are read (reading one creates it).
	if n := testutil.CollectAndCount(m.RuleDecisions); n != 3 {
		t.Errorf("%d rule_decisions_total series, want 3", n)
	}
	if n := testutil.CollectAndCount(m.CELEvaluationErrors); n != 3 {
		t.Errorf("%d cel_evaluation_errors_total series, want 3", n)
	}
	for _, tt := range []struct {
		give []string
		want float64
	}{
		{give: []string{"no-deletes", "deny"}, want: 1},
		{give: []string{"search", "allow"}, want: 0},
		{give: []string{"big-refunds", "ask"}, want: 0},
	} {
		if got := testutil.ToFloat64(m.RuleDecisions.WithLabelValues(tt.give...)); got != tt.want {
			t.Errorf("rule_decisions_total%v = %v, want %v", tt.give, got, tt.want)
		}
	}
}
