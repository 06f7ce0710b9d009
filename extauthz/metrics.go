package extauthz

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// Metrics are the service's Prometheus metrics (namespace mcp_extauthz).
// Labels are bounded: decisions, reasons and MCP's own method names (any
// other method counts as "other"); never a subject, tool or URI.
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

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
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
	m.initSeries()
	return m
}

// initSeries creates the labelled series a dashboard or an alert looks for
// at zero, so they exist from start rather than from their first event:
// every reason with its decision (method "none", both dry_run values),
// every token failure, cache result, refresh and discovery result, and
// shadow decision.
func (m *Metrics) initSeries() {
	for _, r := range Reasons() {
		d := "deny"
		switch r {
		case ReasonAllowed:
			d = "allow"
		case ReasonAuthorizationRequired:
			d = "ask"
		}
		for _, dry := range []string{"false", "true"} {
			m.Decisions.WithLabelValues(d, string(r), "none", dry)
		}
		if r.isTokenReason() || r == ReasonIdPUnavailable {
			m.TokenFailures.WithLabelValues(string(r))
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

// methodLabel bounds the method label to the methods MCP defines for clients
// (internal/mcpmethod) and the service's own names.
func methodLabel(m string) string {
	switch {
	case mcpmethod.FromClient(m), m == "GET", m == "DELETE", m == "response", m == "batch":
		return m
	case m == "":
		return "none"
	}
	return "other"
}

// keySetRefreshed counts one key-set fetch.
func (m *Metrics) keySetRefreshed(err error) {
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
// onResult); a nil m counts nothing.
func (m *Metrics) TokenCacheResult(result string) {
	if m != nil {
		m.TokenCache.WithLabelValues(result).Inc()
	}
}

// policyVersion marks v as the live policy version.
func (m *Metrics) policyVersion(v string) {
	if m == nil {
		return
	}
	m.PolicyInfo.Reset()
	m.PolicyInfo.WithLabelValues(v).Set(1)
}
