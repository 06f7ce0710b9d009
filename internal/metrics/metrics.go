// Package metrics holds the service's Prometheus metrics (namespace
// mcp_extauthz). It takes plain label values and never decides what a valid
// label is: the caller bounds each label set (decisions, the closed set of
// reasons, MCP's own method names from internal/mcpmethod); never a subject,
// tool or URI. Every method is safe on a nil *Metrics, which counts nothing.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the service's Prometheus metrics.
type Metrics struct {
	Decisions         *prometheus.CounterVec // decisions_total{decision,reason,method,dry_run}
	ShadowMatches     *prometheus.CounterVec // shadow_matches_total{decision}
	CheckDuration     prometheus.Histogram   // check_duration_seconds
	InFlight          prometheus.Gauge       // checks_in_flight
	TokenFailures     *prometheus.CounterVec // token_verification_failures_total{reason}
	TokenCache        *prometheus.CounterVec // token_cache_total{result="hit|miss|expired|stale"}
	KeySetRefreshes   *prometheus.CounterVec // keyset_refreshes_total{result="ok|error"}
	OIDCDiscovery     *prometheus.CounterVec // oidc_discovery_total{result="ok|error"}
	PolicyReloads     prometheus.Counter     // policy_reloads_total
	PolicyReloadError prometheus.Counter     // policy_reload_errors_total
	PolicyInfo        *prometheus.GaugeVec   // policy_info{version} 1
	Ready             prometheus.Gauge       // ready
}

// Reason is one value of the reason label, with the decision label it goes
// with and whether it is a token failure (token_verification_failures_total).
type Reason struct {
	Reason   string // e.g. "token_expired"
	Decision string // "allow", "deny" or "ask"
	Token    bool
}

// New creates the metrics, registers them with reg and creates at zero the
// series a dashboard or an alert looks for, so they exist from start: every
// reason of reasons with its decision (method "none", both dry_run values),
// every token failure, cache result, refresh and discovery result, and
// shadow decision.
func New(reg prometheus.Registerer, reasons []Reason) *Metrics {
	const ns = "mcp_extauthz"
	m := &Metrics{
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "decisions_total",
			Help: "Check decisions by decision (allow, deny, ask), reason, MCP method and whether dry-run admitted them anyway."},
			[]string{"decision", "reason", "method", "dry_run"}),
		ShadowMatches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "shadow_matches_total",
			Help: "Shadow rules that matched, by the decision they would have given."}, []string{"decision"}),
		CheckDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "check_duration_seconds",
			Help:    "Time spent in Check, from receipt to response.",
			Buckets: []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "checks_in_flight",
			Help: "Checks being decided now."}),
		TokenFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "token_verification_failures_total",
			Help: "Bearer tokens refused, by reason."}, []string{"reason"}),
		TokenCache: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "token_cache_total",
			Help: "Verified-token cache lookups by result (hit, miss, expired, stale)."}, []string{"result"}),
		KeySetRefreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "keyset_refreshes_total",
			Help: "Fetches of the identity provider's key set, by result (ok, error)."}, []string{"result"}),
		OIDCDiscovery: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "oidc_discovery_total",
			Help: "Fetches of the issuer's OpenID configuration (discovery), by result (ok, error)."}, []string{"result"}),
		PolicyReloads: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "policy_reloads_total",
			Help: "Policies compiled and published: the first load, then every change."}),
		PolicyReloadError: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "policy_reload_errors_total",
			Help: "Policy changes refused (read or compile errors); the last good policy stays live."}),
		PolicyInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "policy_info",
			Help: "1 for the live policy's version (sha256 of the file)."}, []string{"version"}),
		Ready: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "ready",
			Help: "1 when a policy is compiled and signing keys are available."}),
	}
	reg.MustRegister(m.Decisions, m.ShadowMatches, m.CheckDuration, m.InFlight, m.TokenFailures, m.TokenCache,
		m.KeySetRefreshes, m.OIDCDiscovery, m.PolicyReloads, m.PolicyReloadError, m.PolicyInfo, m.Ready)
	for _, r := range reasons {
		for _, dry := range []string{"false", "true"} {
			m.Decisions.WithLabelValues(r.Decision, r.Reason, "none", dry)
		}
		if r.Token {
			m.TokenFailures.WithLabelValues(r.Reason)
		}
	}
	for _, d := range []string{"allow", "deny", "ask"} {
		m.ShadowMatches.WithLabelValues(d)
	}
	for _, r := range []string{"hit", "miss", "expired", "stale"} {
		m.TokenCache.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error"} {
		m.KeySetRefreshes.WithLabelValues(r)
		m.OIDCDiscovery.WithLabelValues(r)
	}
	return m
}

// Decided counts one Check: its latency and its decision, reason and method
// labels, and the reason again in token_verification_failures_total when
// tokenFailure.
func (m *Metrics) Decided(latency time.Duration, decision, reason, method string, dryRun, tokenFailure bool) {
	if m == nil {
		return
	}
	m.CheckDuration.Observe(latency.Seconds())
	dry := "false"
	if dryRun {
		dry = "true"
	}
	m.Decisions.WithLabelValues(decision, reason, method, dry).Inc()
	if tokenFailure {
		m.TokenFailures.WithLabelValues(reason).Inc()
	}
}

// ShadowMatched counts one shadow rule that would have decided decision.
func (m *Metrics) ShadowMatched(decision string) {
	if m != nil {
		m.ShadowMatches.WithLabelValues(decision).Inc()
	}
}

// CheckStarted counts a Check in flight until the returned func is called.
func (m *Metrics) CheckStarted() (done func()) {
	if m == nil {
		return func() {}
	}
	m.InFlight.Inc()
	return m.InFlight.Dec
}

// SetReady sets the ready gauge.
func (m *Metrics) SetReady(ready bool) {
	if m == nil {
		return
	}
	v := 0.0
	if ready {
		v = 1
	}
	m.Ready.Set(v)
}

// PolicyPublished counts a policy published and marks version as the live
// one in policy_info.
func (m *Metrics) PolicyPublished(version string) {
	if m == nil {
		return
	}
	m.PolicyReloads.Inc()
	m.PolicyInfo.Reset()
	m.PolicyInfo.WithLabelValues(version).Set(1)
}

// PolicyRefused counts a policy change refused.
func (m *Metrics) PolicyRefused() {
	if m != nil {
		m.PolicyReloadError.Inc()
	}
}

// OIDCDiscovered counts one discovery attempt.
func (m *Metrics) OIDCDiscovered(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.OIDCDiscovery.WithLabelValues("error").Inc()
	} else {
		m.OIDCDiscovery.WithLabelValues("ok").Inc()
	}
}

// KeySetRefreshed counts one key-set fetch and its result.
func (m *Metrics) KeySetRefreshed(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.KeySetRefreshes.WithLabelValues("error").Inc()
	} else {
		m.KeySetRefreshes.WithLabelValues("ok").Inc()
	}
}

// TokenCacheResult counts one token-cache lookup (bearer.NewCachingVerifier's
// onResult).
func (m *Metrics) TokenCacheResult(result string) {
	if m != nil {
		m.TokenCache.WithLabelValues(result).Inc()
	}
}
