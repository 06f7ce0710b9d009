package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// The chart's monitoring files, from the repository root (the tests'
// working directory).
const (
	dashboardFile = "k8s/helm/mcp-extauthz/files/grafana-dashboard.json"
	rulesFile     = "k8s/helm/mcp-extauthz/files/prometheus-rules.yaml"
)

// envoyMetrics are the Envoy series the rules and the dashboard read: the
// ext_authz filter's counters (cluster.<route cluster>.ext_authz.*) and the
// ext_authz cluster's request time, as Envoy's /stats/prometheus names
// them. https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/ext_authz_filter#statistics
var envoyMetrics = map[string]bool{
	"envoy_cluster_ext_authz_ok": true, "envoy_cluster_ext_authz_denied": true, "envoy_cluster_ext_authz_error": true,
	"envoy_cluster_ext_authz_failure_mode_allowed": true, "envoy_cluster_ext_authz_disabled": true,
	"envoy_cluster_upstream_rq_time_bucket": true,
}

// exported returns the names of every metric family serve registers
// (histograms with their _bucket, _sum and _count), from the metrics'
// descriptors.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg)
	m.ObserveDPoPReplayCache(bearer.NewDPoPVerifier(bearer.DPoPConfig{}).ReplayCacheSize)
	// Every vector gets a child, so that Gather lists its family.
	m.SetBuildInfo("v", "c")
	m.CELError("r")
	m.RuleDecided("r", "deny")
	m.PolicyPublished("v")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{"up": true}
	for _, mf := range mfs {
		n := mf.GetName()
		out[n] = true
		if mf.GetType().String() == "HISTOGRAM" {
			out[n+"_bucket"], out[n+"_sum"], out[n+"_count"] = true, true, true
		}
	}
	for _, want := range []string{"mcp_extauthz_decisions_total", "mcp_extauthz_state_store_requests_total", "mcp_extauthz_dpop_replay_cache_entries", "mcp_extauthz_cel_evaluation_errors_total"} {
		if !out[want] {
			t.Fatalf("%s not gathered: the check below would be vacuous", want)
		}
	}
	return out
}

// metricNames returns the metric names an expression reads (not label
// names, functions or recording rules, which hold a ':').
var metricNameRE = regexp.MustCompile(`\b((?:mcp_extauthz|envoy|up)[a-z0-9_]*)\b(?:[^:(a-z_]|$)`)

func metricNames(expr string) []string {
	// Drop label matchers and label lists, which name labels.
	expr = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(expr, `{}`)
	expr = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(expr, "")
	var out []string
	for _, m := range metricNameRE.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestMonitoringReadsExportedMetrics: every metric a rule or a dashboard
// query reads is one serve exports (or one of Envoy's ext_authz series),
// and every recording rule an alert reads is defined.
func TestMonitoringReadsExportedMetrics(t *testing.T) {
	have := exported(t)
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Record, Alert, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	var exprs []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
			exprs = append(exprs, r.Expr)
		}
	}
	for _, e := range exprs {
		for _, rec := range regexp.MustCompile(`mcp_extauthz:[a-z0-9_:]+`).FindAllString(e, -1) {
			if !recorded[rec] {
				t.Errorf("rules read %s, which no rule records", rec)
			}
		}
	}
	for _, q := range dashboardQueries(t) {
		exprs = append(exprs, q)
	}
	n := 0
	for _, e := range exprs {
		for _, name := range metricNames(e) {
			n++
			if !have[name] && !envoyMetrics[name] {
				t.Errorf("%s is read by %q but serve does not export it", name, strings.TrimSpace(e))
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d metric references found: the extraction is broken", n)
	}
}

// dashboardQueries returns every expr of the committed dashboard.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardFile, err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

// panel is one dashboard panel: its title, kind, unit, width (of 24) and
// queries (legend, expr).
type panel struct {
	title, kind, unit string
	width             int
	queries           [][2]string
	row               bool
}

// sel is the dashboard's selector of the service's series.
const sel = `namespace=~"$namespace",job=~"$job"`

// dashboardPanels are the dashboard, in order. Change them and run
// `go test ./cmd/extauthz -run TestGrafanaDashboard -update`.
var dashboardPanels = []panel{
	{title: "Decisions", row: true},
	{title: "Checks by decision", kind: "timeseries", unit: "reqps", width: 8, queries: [][2]string{
		{"{{decision}}", `sum by (decision) (rate(mcp_extauthz_decisions_total{` + sel + `}[$__rate_interval]))`}}},
	{title: "Refusals by reason", kind: "timeseries", unit: "reqps", width: 8, queries: [][2]string{
		{"{{reason}}", `sum by (reason) (rate(mcp_extauthz_decisions_total{` + sel + `,decision!="allow"}[$__rate_interval]))`}}},
	{title: "Top deny and ask rules", kind: "bargauge", unit: "short", width: 8, queries: [][2]string{
		{"{{rule_id}} {{decision}}", `topk(10, sum by (rule_id, decision) (increase(mcp_extauthz_rule_decisions_total{` + sel + `,decision!="allow"}[$__range])))`}}},
	{title: "Token failures by reason", kind: "timeseries", unit: "reqps", width: 8, queries: [][2]string{
		{"{{reason}}", `sum by (reason) (rate(mcp_extauthz_token_verification_failures_total{` + sel + `}[$__rate_interval]))`}}},
	{title: "Checks by server and method", kind: "timeseries", unit: "reqps", width: 8, queries: [][2]string{
		{"{{server}} {{method}}", `sum by (server, method) (rate(mcp_extauthz_decisions_total{` + sel + `}[$__rate_interval]))`}}},
	{title: "Dry run, shadow rules", kind: "timeseries", unit: "reqps", width: 8, queries: [][2]string{
		{"dry run {{pod}}", `max by (pod) (mcp_extauthz_dry_run{` + sel + `})`},
		{"shadow {{decision}}", `sum by (decision) (rate(mcp_extauthz_shadow_matches_total{` + sel + `}[$__rate_interval]))`}}},

	{title: "Latency", row: true},
	{title: "Check latency (service)", kind: "timeseries", unit: "s", width: 12, queries: [][2]string{
		{"p50 {{decision}}", `histogram_quantile(0.5, sum by (le, decision) (rate(mcp_extauthz_check_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`},
		{"p99 {{decision}}", `histogram_quantile(0.99, sum by (le, decision) (rate(mcp_extauthz_check_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`}}},
	{title: "ext_authz call latency (Envoy)", kind: "timeseries", unit: "s", width: 12, queries: [][2]string{
		{"p50", `histogram_quantile(0.5, sum by (le) (rate(envoy_cluster_upstream_rq_time_bucket{namespace=~"$namespace",envoy_cluster_name="ext_authz"}[$__rate_interval]))) / 1000`},
		{"p99", `histogram_quantile(0.99, sum by (le) (rate(envoy_cluster_upstream_rq_time_bucket{namespace=~"$namespace",envoy_cluster_name="ext_authz"}[$__rate_interval]))) / 1000`}}},
	{title: "Envoy ext_authz outcomes", kind: "timeseries", unit: "reqps", width: 12, queries: [][2]string{
		{"ok {{envoy_cluster_name}}", `sum by (envoy_cluster_name) (rate(envoy_cluster_ext_authz_ok{namespace=~"$namespace"}[$__rate_interval]))`},
		{"denied {{envoy_cluster_name}}", `sum by (envoy_cluster_name) (rate(envoy_cluster_ext_authz_denied{namespace=~"$namespace"}[$__rate_interval]))`},
		{"error {{envoy_cluster_name}}", `sum by (envoy_cluster_name) (rate(envoy_cluster_ext_authz_error{namespace=~"$namespace"}[$__rate_interval]))`},
		{"failure_mode_allowed {{envoy_cluster_name}}", `sum by (envoy_cluster_name) (rate(envoy_cluster_ext_authz_failure_mode_allowed{namespace=~"$namespace"}[$__rate_interval]))`}}},
	{title: "Checks in flight", kind: "timeseries", unit: "short", width: 12, queries: [][2]string{
		{"{{pod}}", `sum by (pod) (mcp_extauthz_checks_in_flight{` + sel + `})`}}},

	{title: "Replicas", row: true},
	{title: "Ready", kind: "stat", unit: "short", width: 6, queries: [][2]string{
		{"{{pod}}", `max by (pod) (mcp_extauthz_ready{` + sel + `})`}}},
	{title: "Policy version", kind: "table", unit: "short", width: 6, queries: [][2]string{
		{"{{pod}} {{version}}", `max by (pod, version) (mcp_extauthz_policy_info{` + sel + `})`}}},
	{title: "Key set age", kind: "timeseries", unit: "s", width: 6, queries: [][2]string{
		{"{{pod}}", `time() - max by (pod) (mcp_extauthz_keyset_last_refresh_success_timestamp_seconds{` + sel + `})`}}},
	{title: "Build", kind: "table", unit: "short", width: 6, queries: [][2]string{
		{"{{pod}} {{version}} {{commit}}", `max by (pod, version, commit, goversion) (mcp_extauthz_build_info{` + sel + `})`}}},
	{title: "Policy reloads", kind: "timeseries", unit: "short", width: 8, queries: [][2]string{
		{"published", `sum(increase(mcp_extauthz_policy_reloads_total{` + sel + `}[$__rate_interval]))`},
		{"refused", `sum(increase(mcp_extauthz_policy_reload_errors_total{` + sel + `}[$__rate_interval]))`},
		{"last load ok {{pod}}", `min by (pod) (mcp_extauthz_policy_last_reload_successful{` + sel + `})`}}},
	{title: "Identity provider fetches", kind: "timeseries", unit: "short", width: 8, queries: [][2]string{
		{"key set {{result}}", `sum by (result) (increase(mcp_extauthz_keyset_refreshes_total{` + sel + `}[$__rate_interval]))`},
		{"discovery {{result}}", `sum by (result) (increase(mcp_extauthz_oidc_discovery_total{` + sel + `}[$__rate_interval]))`},
		{"token cache {{result}}", `sum by (result) (rate(mcp_extauthz_token_cache_total{` + sel + `}[$__rate_interval]))`}}},
	{title: "`when` errors by rule", kind: "timeseries", unit: "short", width: 8, queries: [][2]string{
		{"{{rule_id}}", `sum by (rule_id) (increase(mcp_extauthz_cel_evaluation_errors_total{` + sel + `}[$__rate_interval]))`}}},

	{title: "State store and decision log", row: true},
	{title: "State store requests", kind: "timeseries", unit: "reqps", width: 8, queries: [][2]string{
		{"{{op}} {{result}}", `sum by (op, result) (rate(mcp_extauthz_state_store_requests_total{` + sel + `}[$__rate_interval]))`}}},
	{title: "State store latency", kind: "timeseries", unit: "s", width: 8, queries: [][2]string{
		{"p99 {{op}}", `histogram_quantile(0.99, sum by (le, op) (rate(mcp_extauthz_state_store_request_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`}}},
	{title: "Decision log", kind: "timeseries", unit: "short", width: 8, queries: [][2]string{
		{"dropped {{sink}}", `sum by (sink) (increase(mcp_extauthz_decision_log_dropped_total{` + sel + `}[$__rate_interval]))`},
		{"blocked {{sink}}", `sum by (sink) (increase(mcp_extauthz_decision_log_blocked_total{` + sel + `}[$__rate_interval]))`},
		{"write errors {{sink}}", `sum by (sink) (increase(mcp_extauthz_decision_log_write_errors_total{` + sel + `}[$__rate_interval]))`},
		{"sampled out", `sum(increase(mcp_extauthz_decision_log_sampled_out_total{` + sel + `}[$__rate_interval]))`},
		{"DPoP replay cache {{pod}}", `max by (pod) (mcp_extauthz_dpop_replay_cache_entries{` + sel + `})`}}},

	{title: "Response seam", row: true},
	{title: "Admitted requests that met no processor", kind: "timeseries", unit: "short", width: 12, queries: [][2]string{
		{"fleet {{class}}", `sum by (class) (increase(mcp_extauthz_seam_expected_total{` + sel + `}[$__rate_interval])) - sum by (class) (increase(mcp_extauthz_seam_met_total{` + sel + `}[$__rate_interval]))`},
		{"unmet {{pod}} {{class}}", `sum by (pod, class) (increase(mcp_extauthz_seam_unmet_total{` + sel + `}[$__rate_interval]))`}}},
	{title: "ext_proc side streams", kind: "timeseries", unit: "reqps", width: 12, queries: [][2]string{
		{"{{route}} {{outcome}}", `sum by (route, outcome) (rate(mcp_extauthz_ext_proc_streams_total{` + sel + `}[$__rate_interval]))`}}},
}

// buildDashboard renders dashboardPanels as a Grafana dashboard (schema
// 39): a Prometheus data source variable, namespace and job variables from
// build_info, panels laid out left to right in rows.
func buildDashboard() ([]byte, error) {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	var panels []map[string]any
	x, y, id := 0, 0, 1
	for _, p := range dashboardPanels {
		if p.row {
			if x > 0 {
				x, y = 0, y+8
			}
			panels = append(panels, map[string]any{"type": "row", "title": p.title, "id": id, "collapsed": false,
				"gridPos": map[string]int{"x": 0, "y": y, "w": 24, "h": 1}, "panels": []any{}})
			id, y = id+1, y+1
			continue
		}
		if x+p.width > 24 {
			x, y = 0, y+8
		}
		var targets []map[string]any
		for i, q := range p.queries {
			tg := map[string]any{"datasource": ds, "expr": q[1], "legendFormat": q[0], "refId": string(rune('A' + i))}
			if p.kind == "table" || p.kind == "bargauge" || p.kind == "stat" {
				tg["instant"] = true
			}
			targets = append(targets, tg)
		}
		panel := map[string]any{"type": p.kind, "title": p.title, "id": id, "datasource": ds,
			"gridPos":     map[string]int{"x": x, "y": y, "w": p.width, "h": 8},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.unit}, "overrides": []any{}},
			"options":     map[string]any{}, "targets": targets}
		if p.kind == "table" {
			panel["transformations"] = []any{map[string]any{"id": "labelsToFields", "options": map[string]any{}}}
		}
		panels = append(panels, panel)
		x, id = x+p.width, id+1
	}
	variable := func(name, label, query string) map[string]any {
		return map[string]any{"name": name, "label": label, "type": "query", "datasource": ds,
			"query": map[string]any{"query": query, "refId": name}, "definition": query,
			"includeAll": true, "multi": true, "allValue": ".*", "refresh": 2, "sort": 1,
			"current": map[string]any{"selected": true, "text": []string{"All"}, "value": []string{"$__all"}}}
	}
	d := map[string]any{
		"uid": "mcp-extauthz", "title": "mcp-extauthz", "tags": []string{"mcp", "envoy", "ext_authz"},
		"description":   "mcp-extauthz, the MCP authorization service for Envoy ext_authz: decisions, latency, replicas, dependencies. Generated by TestGrafanaDashboard (cmd/extauthz/monitoring_test.go).",
		"schemaVersion": 39, "version": 1, "editable": true, "graphTooltip": 1, "refresh": "30s",
		"time":     map[string]string{"from": "now-6h", "to": "now"},
		"timezone": "", "links": []any{}, "annotations": map[string]any{"list": []any{}},
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
				"current": map[string]any{}, "hide": 0, "refresh": 1},
			variable("namespace", "Namespace", "label_values(mcp_extauthz_build_info, namespace)"),
			variable("job", "Job", `label_values(mcp_extauthz_build_info{namespace=~"$namespace"}, job)`),
		}},
		"panels": panels,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// TestGrafanaDashboard: the committed dashboard is what dashboardPanels
// generate (-update rewrites it), valid JSON, with unique panel ids, a
// legend for every query and no panel past the grid's 24 columns.
func TestGrafanaDashboard(t *testing.T) {
	want, err := buildDashboard()
	if err != nil {
		t.Fatal(err)
	}
	got, same := testkit.Golden(t, dashboardFile, want)
	if !same {
		t.Fatalf("%s is not what dashboardPanels generate: go test ./cmd/extauthz -run TestGrafanaDashboard -update", dashboardFile)
	}
	var d struct {
		Panels []struct {
			ID      int
			Type    string
			GridPos struct{ X, W int }
			Targets []struct{ Expr, LegendFormat, RefID string }
		}
	}
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	var kinds []string
	for _, p := range d.Panels {
		if ids[p.ID] || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d: duplicate id or past column 24 (%+v)", p.ID, p.GridPos)
		}
		ids[p.ID] = true
		kinds = append(kinds, p.Type)
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.LegendFormat == "" || tg.RefID == "" {
				t.Errorf("panel %d: query %+v", p.ID, tg)
			}
		}
	}
	sort.Strings(kinds)
	if !strings.Contains(fmt.Sprint(kinds), "row") || len(d.Panels) < 20 {
		t.Errorf("%d panels of kinds %v", len(d.Panels), kinds)
	}
}
