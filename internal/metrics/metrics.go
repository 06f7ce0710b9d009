// Package metrics holds the service's Prometheus metrics (namespace
// mcp_extauthz). It takes plain label values and never decides what a valid
// label is: the caller bounds each label set (decisions, the closed set of
// reasons, MCP's own method names from internal/mcpmethod); never a subject,
// tool or URI. Every method is safe on a nil *Metrics, which counts nothing.
package metrics

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the service's Prometheus metrics.
type Metrics struct {
	Decisions         *prometheus.CounterVec   // decisions_total{decision,reason,method,server,dry_run}
	ShadowMatches     *prometheus.CounterVec   // shadow_matches_total{decision}
	CheckDuration     *prometheus.HistogramVec // check_duration_seconds{decision}
	InFlight          prometheus.Gauge         // checks_in_flight
	TokenFailures     *prometheus.CounterVec   // token_verification_failures_total{reason}
	TokenCache        *prometheus.CounterVec   // token_cache_total{result="hit|miss|expired|stale"}
	Introspections    *prometheus.CounterVec   // introspection_total{result="hit|active|refused|error|open"}
	KeySetRefreshes   *prometheus.CounterVec   // keyset_refreshes_total{result="ok|error"}
	OIDCDiscovery     *prometheus.CounterVec   // oidc_discovery_total{result="ok|error"}
	PolicyReloads     prometheus.Counter       // policy_reloads_total
	PolicyReloadError prometheus.Counter       // policy_reload_errors_total
	PolicyInfo        *prometheus.GaugeVec     // policy_info{version} 1
	Ready             prometheus.Gauge         // ready

	BuildInfo           *prometheus.GaugeVec     // build_info{version,commit,goversion} 1
	DryRun              prometheus.Gauge         // dry_run: 1 under --dry-run
	PolicyReloadOK      prometheus.Gauge         // policy_last_reload_successful: 1 when the last load compiled
	PolicyReloadTime    prometheus.Gauge         // policy_last_reload_success_timestamp_seconds
	KeySetRefreshTime   prometheus.Gauge         // keyset_last_refresh_success_timestamp_seconds
	StateStoreRequests  *prometheus.CounterVec   // state_store_requests_total{op,result}
	StateStoreDuration  *prometheus.HistogramVec // state_store_request_duration_seconds{op}
	DecisionLogErrors   *prometheus.CounterVec   // decision_log_write_errors_total{sink}
	DecisionLogDropped  *prometheus.CounterVec   // decision_log_dropped_total{sink}
	DecisionLogBlocked  *prometheus.CounterVec   // decision_log_blocked_total{sink}
	DecisionLogSampled  prometheus.Counter       // decision_log_sampled_out_total
	CELEvaluationErrors *prometheus.CounterVec   // cel_evaluation_errors_total{rule_id}
	RuleDecisions       *prometheus.CounterVec   // rule_decisions_total{rule_id,decision}
	QuotaDecisions      *prometheus.CounterVec   // quota_decisions_total{rule_id,outcome}
	SideStreams         *prometheus.CounterVec   // ext_proc_streams_total{route,outcome}
	ListsFiltered       *prometheus.CounterVec   // lists_filtered_total{kind,result}
	ListItemsRemoved    *prometheus.CounterVec   // list_items_removed_total{kind}
	Receipts            *prometheus.CounterVec   // receipts_total{outcome}
	SeamExpected        *prometheus.CounterVec   // seam_expected_total{class}
	SeamMet             *prometheus.CounterVec   // seam_met_total{class}
	SeamUnmet           *prometheus.CounterVec   // seam_unmet_total{class}
	SeamUntracked       *prometheus.CounterVec   // seam_untracked_total{class}

	reg prometheus.Registerer
	now func() time.Time // nil means time.Now
}

// unixNow is the time in Unix seconds, for the timestamp gauges.
func (m *Metrics) unixNow() float64 {
	now := time.Now
	if m.now != nil {
		now = m.now
	}
	return float64(now().UnixNano()) / 1e9
}

// Sinks are the values of the decision log's sink label, created at zero.
var Sinks = []string{"stdout", "file", "otlp"}

// StateStoreOps are the values of the state store's op label.
var StateStoreOps = []string{"claim", "release", "ping", "get", "quota"}

// ReceiptOutcomes are the values of receipts_total's outcome label.
var ReceiptOutcomes = []string{"success", "tool_error", "rpc_error", "task_created", "input_required", "http_error", "outcome_unknown"}

// SideStreamRoutes are the values of ext_proc_streams_total's route label.
var SideStreamRoutes = []string{"list", "get", "task", "call", "other"}

// ListKinds are the values of the list metrics' kind label ("unknown" for
// a list refused before its kind was known).
var ListKinds = []string{"tools", "prompts", "resources", "resourceTemplates", "tasks", "unknown"}

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
			Help: "Check decisions by decision (allow, deny, ask), reason, MCP method, MCP server (configured ids; other; none) and whether dry-run admitted them anyway."},
			[]string{"decision", "reason", "method", "server", "dry_run"}),
		ShadowMatches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "shadow_matches_total",
			Help: "Shadow rules that matched, by the decision they would have given."}, []string{"decision"}),
		CheckDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "check_duration_seconds",
			Help:    "Time spent in Check, from receipt to response, by decision (allow, deny, ask).",
			Buckets: []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}}, []string{"decision"}),
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
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "build_info",
			Help: "1, with the build's version, commit and Go version as labels."}, []string{"version", "commit", "goversion"}),
		DryRun: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "dry_run",
			Help: "1 when --dry-run admits every request."}),
		PolicyReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "policy_last_reload_successful",
			Help: "1 when the last policy load compiled and was published; 0 while a refused change is on disk."}),
		PolicyReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "policy_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last policy published."}),
		KeySetRefreshTime: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "keyset_last_refresh_success_timestamp_seconds",
			Help: "Unix time of the last successful fetch of the identity provider's key set (or load of --jwks-file)."}),
		StateStoreRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "state_store_requests_total",
			Help: "Requests to the approval / idempotency state store, by operation (claim, release, ping) and result (ok, error)."}, []string{"op", "result"}),
		StateStoreDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "state_store_request_duration_seconds",
			Help:    "Latency of state store requests, by operation.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}}, []string{"op"}),
		DecisionLogErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "decision_log_write_errors_total",
			Help: "Failed writes (or exports) of decision log batches, by sink."}, []string{"sink"}),
		DecisionLogDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "decision_log_dropped_total",
			Help: "Decision log lines dropped, by sink: the buffer was full (--decision-log-overflow drop), a batch failed, or shutdown could not flush them."}, []string{"sink"}),
		DecisionLogBlocked: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "decision_log_blocked_total",
			Help: "Decision log lines that waited for buffer space, by sink (--decision-log-overflow block): each held a Check."}, []string{"sink"}),
		DecisionLogSampled: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "decision_log_sampled_out_total",
			Help: "Allowed decisions not logged by --decision-log-sample-allowed."}),
		CELEvaluationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cel_evaluation_errors_total",
			Help: "`when` expressions that failed at run time (a missing args member, a wrong type, the cost limit), by rule id; deny and ask rules then match, allow rules do not."}, []string{"rule_id"}),
		RuleDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rule_decisions_total",
			Help: "Checks decided by a rule, by its id (from the policy file) and decision (allow, deny, ask): which rules deny most."}, []string{"rule_id", "decision"}),
		Introspections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "introspection_total",
			Help: "Opaque tokens verified by RFC 7662 introspection, by result: hit (answered from the cache), active (the endpoint's answer verified), refused (inactive, or a claim check failed), error (the endpoint failed: idp_unavailable), open (the circuit breaker is open: refused without a call)."}, []string{"result"}),
		QuotaDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "quota_decisions_total",
			Help: "Requests charged to a policy quota, by its id (from the policy file) and outcome (admitted, limited: rate_limited, store_refused: the bucket store failed and the quota fails closed, store_admitted: it failed and the quota says on_store_error: allow)."}, []string{"rule_id", "outcome"}),
		SideStreams: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "ext_proc_streams_total",
			Help: "ext_proc side streams (one per processed HTTP stream), by route (list, get, task, call, other) and outcome (ok: ended by Envoy; error: aborted by the processor; refused: answered with a local reply)."}, []string{"route", "outcome"}),
		ListsFiltered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "lists_filtered_total",
			Help: "List answers seen by the processor, by kind (tools, prompts, resources, resourceTemplates, tasks) and result (ok, refused: replaced by a JSON-RPC error)."}, []string{"kind", "result"}),
		ListItemsRemoved: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "list_items_removed_total",
			Help: "Items removed from list answers, by kind."}, []string{"kind"}),
		Receipts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "receipts_total",
			Help: "Receipts of allowed tools/call, by outcome (success, tool_error, rpc_error, task_created, input_required, http_error, outcome_unknown: the upstream may have run the call; nobody saw the answer)."}, []string{"outcome"}),
		SeamExpected: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "seam_expected_total",
			Help: "Decisions Check admitted that must meet the response seam's processor (--response-seam), by class (list, get, task, call, other)."}, []string{"class"}),
		SeamMet: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "seam_met_total",
			Help: "Decisions the response seam's processor saw, by the class Check marked them with; summed over replicas it matches seam_expected_total when every route runs the processor."}, []string{"class"}),
		SeamUnmet: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "seam_unmet_total",
			Help: "Decisions this replica admitted that no processor of this replica saw within their route's deadline (--seam-deadline), by class: exact when Check and ext_proc reach the same process (sidecar, one replica)."}, []string{"class"}),
		SeamUntracked: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "seam_untracked_total",
			Help: "Decisions not held for seam_unmet_total because its table was full, by class."}, []string{"class"}),
		reg: reg,
	}
	reg.MustRegister(m.Decisions, m.ShadowMatches, m.CheckDuration, m.InFlight, m.TokenFailures, m.TokenCache,
		m.KeySetRefreshes, m.OIDCDiscovery, m.PolicyReloads, m.PolicyReloadError, m.PolicyInfo, m.Ready,
		m.BuildInfo, m.DryRun, m.PolicyReloadOK, m.PolicyReloadTime, m.KeySetRefreshTime, m.StateStoreRequests,
		m.StateStoreDuration, m.DecisionLogErrors, m.DecisionLogDropped, m.DecisionLogBlocked, m.DecisionLogSampled,
		m.CELEvaluationErrors, m.RuleDecisions, m.QuotaDecisions, m.Introspections, m.SideStreams, m.ListsFiltered, m.ListItemsRemoved, m.Receipts,
		m.SeamExpected, m.SeamMet, m.SeamUnmet, m.SeamUntracked)
	for _, o := range ReceiptOutcomes {
		m.Receipts.WithLabelValues(o)
	}
	for _, r := range SideStreamRoutes {
		for _, o := range []string{"ok", "error", "refused"} {
			m.SideStreams.WithLabelValues(r, o)
		}
	}
	for _, c := range SideStreamRoutes {
		m.SeamExpected.WithLabelValues(c)
		m.SeamMet.WithLabelValues(c)
		m.SeamUnmet.WithLabelValues(c)
		m.SeamUntracked.WithLabelValues(c)
	}
	for _, k := range ListKinds {
		m.ListItemsRemoved.WithLabelValues(k)
		for _, r := range []string{"ok", "refused"} {
			m.ListsFiltered.WithLabelValues(k, r)
		}
	}
	for _, r := range reasons {
		for _, dry := range []string{"false", "true"} {
			m.Decisions.WithLabelValues(r.Decision, r.Reason, "none", "none", dry)
		}
		if r.Token {
			m.TokenFailures.WithLabelValues(r.Reason)
		}
	}
	for _, d := range []string{"allow", "deny", "ask"} {
		m.ShadowMatches.WithLabelValues(d)
		m.CheckDuration.WithLabelValues(d)
	}
	for _, op := range StateStoreOps {
		m.StateStoreDuration.WithLabelValues(op)
		for _, r := range []string{"ok", "error"} {
			m.StateStoreRequests.WithLabelValues(op, r)
		}
	}
	for _, s := range Sinks {
		m.DecisionLogErrors.WithLabelValues(s)
		m.DecisionLogDropped.WithLabelValues(s)
		m.DecisionLogBlocked.WithLabelValues(s)
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

// Decided counts one Check: its latency and its decision, reason, method
// and server labels, and the reason again in
// token_verification_failures_total when tokenFailure.
func (m *Metrics) Decided(latency time.Duration, decision, reason, method, server string, dryRun, tokenFailure bool) {
	if m == nil {
		return
	}
	m.CheckDuration.WithLabelValues(decision).Observe(latency.Seconds())
	dry := "false"
	if dryRun {
		dry = "true"
	}
	m.Decisions.WithLabelValues(decision, reason, method, server, dry).Inc()
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
	m.PolicyReloadOK.Set(1)
	m.PolicyReloadTime.Set(m.unixNow())
	m.PolicyInfo.Reset()
	m.PolicyInfo.WithLabelValues(version).Set(1)
}

// PolicyUnchanged records a load that found the live policy's file:
// policy_last_reload_successful is 1 again.
func (m *Metrics) PolicyUnchanged() {
	if m != nil {
		m.PolicyReloadOK.Set(1)
	}
}

// PolicyRefused counts a policy change refused; policy_last_reload_successful
// is 0 until the next one is published.
func (m *Metrics) PolicyRefused() {
	if m != nil {
		m.PolicyReloadError.Inc()
		m.PolicyReloadOK.Set(0)
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
		m.KeySetRefreshTime.Set(m.unixNow())
	}
}

// TokenCacheResult counts one token-cache lookup (bearer.NewCachingVerifier's
// onResult).
func (m *Metrics) TokenCacheResult(result string) {
	if m != nil {
		m.TokenCache.WithLabelValues(result).Inc()
	}
}

// SetBuildInfo sets build_info{version,commit,goversion} (the Go version
// of this binary) to 1.
func (m *Metrics) SetBuildInfo(version, commit string) {
	if m != nil {
		m.BuildInfo.Reset()
		m.BuildInfo.WithLabelValues(version, commit, runtime.Version()).Set(1)
	}
}

// SetDryRun sets the dry_run gauge.
func (m *Metrics) SetDryRun(on bool) {
	if m == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	m.DryRun.Set(v)
}

// StateStoreCall counts one state store request: op (one of
// StateStoreOps), its latency and whether it failed.
func (m *Metrics) StateStoreCall(op string, latency time.Duration, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.StateStoreRequests.WithLabelValues(op, result).Inc()
	m.StateStoreDuration.WithLabelValues(op).Observe(latency.Seconds())
}

// DecisionLogWriteError counts a failed write of a batch to sink.
func (m *Metrics) DecisionLogWriteError(sink string) {
	if m != nil {
		m.DecisionLogErrors.WithLabelValues(sink).Inc()
	}
}

// DecisionLogDrop counts n lines lost by sink.
func (m *Metrics) DecisionLogDrop(sink string, n int) {
	if m != nil {
		m.DecisionLogDropped.WithLabelValues(sink).Add(float64(n))
	}
}

// DecisionLogBlock counts a line that waited for sink's buffer.
func (m *Metrics) DecisionLogBlock(sink string) {
	if m != nil {
		m.DecisionLogBlocked.WithLabelValues(sink).Inc()
	}
}

// DecisionLogSampledOut counts an allowed decision left out of the log.
func (m *Metrics) DecisionLogSampledOut() {
	if m != nil {
		m.DecisionLogSampled.Inc()
	}
}

// RuleDecided counts a Check decided by rule ruleID (bounded by the
// policies loaded).
func (m *Metrics) RuleDecided(ruleID, decision string) {
	if m != nil {
		m.RuleDecisions.WithLabelValues(ruleID, decision).Inc()
	}
}

// IntrospectionResult counts one introspection outcome (see
// Introspections).
func (m *Metrics) IntrospectionResult(result string) {
	if m != nil {
		m.Introspections.WithLabelValues(result).Inc()
	}
}

// QuotaCharged counts a request charged to quota ruleID with its outcome
// (decision.QuotaOutcomes). Quota ids come from the policy file: the
// label set is bounded by the policies loaded.
func (m *Metrics) QuotaCharged(ruleID, outcome string) {
	if m != nil {
		m.QuotaDecisions.WithLabelValues(ruleID, outcome).Inc()
	}
}

// Rule is one rule of a loaded policy as the rule_id label sees it: its id
// and the decision it gives (allow, deny, ask).
type Rule struct {
	ID       string
	Decision string
}

// PolicyRules creates at zero the series of every rule of a policy just
// loaded, so an alert or a dashboard query on them has a series from
// start: rule_decisions_total{rule_id, decision} with the rule's own
// decision and cel_evaluation_errors_total{rule_id}. Series of the rules of
// an earlier policy are kept (counters are not reset by a reload).
func (m *Metrics) PolicyRules(rules []Rule) {
	if m == nil {
		return
	}
	for _, r := range rules {
		m.RuleDecisions.WithLabelValues(r.ID, r.Decision)
		m.CELEvaluationErrors.WithLabelValues(r.ID)
	}
}

// CELError counts a `when` expression of rule ruleID that failed at run
// time. Rule ids come from the policy file, so the label set is bounded
// by the policies loaded.
func (m *Metrics) CELError(ruleID string) {
	if m != nil {
		m.CELEvaluationErrors.WithLabelValues(ruleID).Inc()
	}
}

// ObserveDPoPReplayCache registers dpop_replay_cache_entries, read from
// size at every scrape: the DPoP proof ids (jti) remembered to refuse
// replays.
func (m *Metrics) ObserveDPoPReplayCache(size func() int) {
	if m == nil || size == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mcp_extauthz", Name: "dpop_replay_cache_entries",
		Help: "DPoP proof ids (jti) remembered to refuse replays, in this replica."}, func() float64 { return float64(size()) }))
}

// SideStreamEnded counts one ext_proc side stream by route and outcome
// (values of SideStreamRoutes; "ok", "error", "refused").
func (m *Metrics) SideStreamEnded(route, outcome string) {
	if m == nil {
		return
	}
	m.SideStreams.WithLabelValues(route, outcome).Inc()
}

// ListFiltered counts one list answer of kind (a ListKinds value), its
// result ("ok", "refused") and the items removed.
func (m *Metrics) ListFiltered(kind, result string, removed int) {
	if m == nil {
		return
	}
	m.ListsFiltered.WithLabelValues(kind, result).Inc()
	if removed > 0 {
		m.ListItemsRemoved.WithLabelValues(kind).Add(float64(removed))
	}
}

// Receipt counts one receipt of an allowed tools/call by its outcome.
func (m *Metrics) Receipt(outcome string) {
	if m == nil {
		return
	}
	m.Receipts.WithLabelValues(outcome).Inc()
}

// SeamExpect counts one decision Check marked for the response seam, of
// class (a value of SideStreamRoutes); SeamMeet one the processor saw;
// SeamUntrack one the coverage table could not hold.
func (m *Metrics) SeamExpect(class string) {
	if m != nil {
		m.SeamExpected.WithLabelValues(class).Inc()
	}
}

// SeamMeet: see SeamExpect.
func (m *Metrics) SeamMeet(class string) {
	if m != nil {
		m.SeamMet.WithLabelValues(class).Inc()
	}
}

// SeamUntrack: see SeamExpect.
func (m *Metrics) SeamUntrack(class string) {
	if m != nil {
		m.SeamUntracked.WithLabelValues(class).Inc()
	}
}

// SeamUnmetBy counts n decisions of class that met no processor in time.
func (m *Metrics) SeamUnmetBy(class string, n uint64) {
	if m == nil || n == 0 {
		return
	}
	m.SeamUnmet.WithLabelValues(class).Add(float64(n))
}
