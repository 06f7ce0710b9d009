package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// The shipped alerts and dashboards, both copies of each (Helm's and
// kustomize's monitoring component), from the repository root.
var (
	shippedRuleFiles  = []string{rulesFile, "k8s/kustomize/components/monitoring/prometheusrule.yaml"}
	shippedDashboards = []string{dashboardFile, "k8s/kustomize/components/monitoring/grafana-dashboard.json"}
)

// monitoringQuery is one PromQL expression a shipped file evaluates.
type monitoringQuery struct{ file, expr string }

// shippedQueries returns every expression of the shipped alerting and
// recording rules (Helm's groups, kustomize's PrometheusRule spec.groups)
// and dashboards (panel targets, rows' panels included, and the template
// variables' queries), and the names the rules record.
func shippedQueries(t *testing.T) (qs []monitoringQuery, recorded map[string]bool) {
	t.Helper()
	recorded = map[string]bool{}
	type group struct {
		Rules []struct{ Record, Alert, Expr string }
	}
	for _, f := range shippedRuleFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []group
			Spec   struct{ Groups []group }
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := 0
		for _, g := range append(rf.Groups, rf.Spec.Groups...) {
			for _, r := range g.Rules {
				n++
				if r.Record != "" {
					recorded[r.Record] = true
				}
				qs = append(qs, monitoringQuery{f, r.Expr})
			}
		}
		if n < 10 {
			t.Fatalf("%s: %d rules read: the file's shape changed", f, n)
		}
	}
	for _, f := range shippedDashboards {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		type panel struct {
			Targets []struct{ Expr string }
			Panels  []json.RawMessage
		}
		var d struct {
			Panels     []json.RawMessage
			Templating struct {
				List []struct {
					Type  string
					Query json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var walk func([]json.RawMessage)
		walk = func(ps []json.RawMessage) {
			for _, raw := range ps {
				var p panel
				if err := json.Unmarshal(raw, &p); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				for _, tg := range p.Targets {
					qs = append(qs, monitoringQuery{f, tg.Expr})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				if err := json.Unmarshal(v.Query, &q.Query); err != nil {
					t.Fatalf("%s: variable query %s: %v", f, v.Query, err)
				}
			}
			qs = append(qs, monitoringQuery{f, q.Query})
		}
	}
	return qs, recorded
}

var (
	promqlString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	grafanaVar     = regexp.MustCompile(`\$(?:\{[^}]*\}|\w+)`)
	labelValues    = regexp.MustCompile(`^\s*label_values\s*\(([^,)]*(?:\{[^}]*\})?[^,)]*)(,[^)]*)?\)\s*$`)
)

// promqlKeywords are PromQL's words that are not metric names when they
// are not called: binary operators and modifiers (functions and
// aggregations are told apart by the '(' that follows them).
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
	"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true, "atan2": true,
}

// promqlMetricNames returns the metric names (and recording rule names,
// which hold a ':') that a PromQL expression, or a Grafana label_values
// query, selects, in order: string literals, label matchers, ranges,
// grouping label lists and Grafana variables are dropped first, then every
// identifier not called as a function and not a keyword is a name. It is
// not a PromQL parser (github.com/prometheus/prometheus is not a
// dependency of this module); TestPromQLMetricNames holds its cases.
func promqlMetricNames(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		if m[2] == "" { // label_values(label): no metric
			return nil
		}
		expr = m[1]
	}
	expr = promqlString.ReplaceAllString(expr, `""`)
	expr = grafanaVar.ReplaceAllString(expr, "")
	expr = promqlMatchers.ReplaceAllString(expr, "{}")
	expr = promqlRange.ReplaceAllString(expr, "")
	expr = promqlGrouping.ReplaceAllString(expr, "")
	identStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	identPart := func(c byte) bool { return identStart(c) || c >= '0' && c <= '9' }
	var out []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c >= '0' && c <= '9' || c == '.': // a number or a duration: 0.025, 1e3, 5m, 0x1f
			for i < len(expr) && (identPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case identStart(c):
			j := i
			for j < len(expr) && identPart(expr[j]) {
				j++
			}
			name := expr[i:j]
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n' || expr[k] == '\r') {
				k++
			}
			if (k == len(expr) || expr[k] != '(') && !promqlKeywords[strings.ToLower(name)] {
				out = append(out, name)
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// TestPromQLMetricNames: the names promqlMetricNames finds, from written
// expressions.
func TestPromQLMetricNames(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{give: `up`, want: []string{"up"}},
		{give: `absent(up{job="mcp-extauthz"} == 1)`, want: []string{"up"}},
		{give: `sum by (namespace, job) (rate(a_total{job="x",reason=~"b_total|c"}[5m])) / sum without (result) (rate(d_total[5m]))`, want: []string{"a_total", "d_total"}},
		{give: `histogram_quantile(0.99, sum by (le) (rate(h_bucket{x='}'}[$__rate_interval]))) > 0.025`, want: []string{"h_bucket"}},
		{give: `sum(rate(a_total[5m])) by (rule_id) > 0 and on (job) b_gauge offset 5m unless ignoring(pod) c == bool 1`, want: []string{"a_total", "b_gauge", "c"}},
		{give: `mcp_extauthz:check_slow:ratio_rate1h > (14.4 * 0.001) or vector(1e3)`, want: []string{"mcp_extauthz:check_slow:ratio_rate1h"}},
		{give: `topk(10, increase(r_total{` + sel + `}[$__range])) * on (pod) group_left (version) build_info`, want: []string{"r_total", "build_info"}},
		{give: `time() - max by (pod) (ts_seconds{a="b"})`, want: []string{"ts_seconds"}},
		{give: `a_total{} + Inf - NaN`, want: []string{"a_total"}},
		{give: `label_values(mcp_extauthz_build_info{namespace=~"$namespace"}, job)`, want: []string{"mcp_extauthz_build_info"}},
		{give: `label_values(namespace)`, want: nil},
		{give: `{__name__="x"}`, want: nil},
	}
	for _, tt := range tests {
		if got := promqlMetricNames(tt.give); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("promqlMetricNames(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// sampleRE reads a sample line of the text exposition format: its metric
// name and labels.
var sampleRE = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? `)

// TestMetricsExistFromStart: right after serve starts, before any request,
// /metrics holds a series of every metric that a shipped alert, recording
// rule or dashboard query reads (Envoy's own series aside), so no alert
// waits on a first event to exist, and a new alert on a metric that is not
// there from start fails here; and a series of rule_decisions_total and
// cel_evaluation_errors_total for every rule of the loaded policy.
func TestMetricsExistFromStart(t *testing.T) {
	idp := testkit.NewIdP(t)
	const policyFile = "examples/policy.yaml"
	_, httpAddr, _ := startServe(t, "--policy", policyFile, "--issuer", idp.Issuer(),
		"--audience", "https://mcp.example.com/mcp", "--server-id", "payments",
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--state-store-memory-per-replica-ok")
	body := scrape(t, httpAddr)

	have := map[string]bool{}
	series := map[string]bool{}
	for _, m := range sampleRE.FindAllStringSubmatch(body, -1) {
		have[m[1]] = true
		series[m[1]+m[2]] = true
	}
	qs, recorded := shippedQueries(t)
	read := map[string]bool{}
	for _, q := range qs {
		for _, name := range promqlMetricNames(q.expr) {
			read[name] = true
			switch {
			case strings.Contains(name, ":"):
				if !recorded[name] {
					t.Errorf("%s reads %s, which no shipped rule records", q.file, name)
				}
			case strings.HasPrefix(name, "mcp_extauthz_"):
				if !have[name] {
					t.Errorf("%s reads %s, which /metrics does not hold at start: %q", q.file, name, strings.TrimSpace(q.expr))
				}
			case name != "up" && !envoyMetrics[name]:
				t.Errorf("%s reads %s, neither ours nor one of Envoy's known ext_authz series", q.file, name)
			}
		}
	}
	for _, want := range []string{"mcp_extauthz_rule_decisions_total", "mcp_extauthz_cel_evaluation_errors_total",
		"mcp_extauthz_decisions_total", "mcp_extauthz_check_duration_seconds_bucket", "mcp_extauthz_build_info", "up"} {
		if !read[want] {
			t.Errorf("no shipped query reads %s: the extraction is broken (%d names read)", want, len(read))
		}
	}

	src, err := os.ReadFile(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(policyFile, src)
	if err != nil {
		t.Fatal(err)
	}
	rules := pol.Rules()
	if len(rules) < 5 {
		t.Fatalf("%s has %d rules", policyFile, len(rules))
	}
	for _, r := range rules {
		for _, want := range []string{
			`mcp_extauthz_rule_decisions_total{decision="` + r.Decision.String() + `",rule_id="` + r.ID + `"}`,
			`mcp_extauthz_cel_evaluation_errors_total{rule_id="` + r.ID + `"}`,
		} {
			if !series[want] {
				t.Errorf("/metrics at start lacks %s", want)
			}
		}
	}
}

// TestReloadCreatesRuleSeries: a policy published by a reload gets the
// series of its rules at zero; those of the policy before stay.
func TestReloadCreatesRuleSeries(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, []byte("default: deny\nallow:\n  - id: search\n    match: \"*/search\"\n"))
	r := newPolicyRig(t, file)
	testkit.WriteFile(t, file, []byte("default: deny\ndeny:\n  - id: no-deletes\n    match: \"*/delete_*\"\n    when: args.force\nask:\n  - id: would-ask\n    match: \"*/x\"\n    shadow: true\n"))
	if _, err := r.loader.Load(); err != nil {
		t.Fatal(err)
	}
	// Every series by its labels, at zero: search from the first policy,
	// no-deletes and the shadow would-ask from the second.
	want := `
# HELP mcp_extauthz_rule_decisions_total x
# TYPE mcp_extauthz_rule_decisions_total counter
mcp_extauthz_rule_decisions_total{decision="allow",rule_id="search"} 0
mcp_extauthz_rule_decisions_total{decision="ask",rule_id="would-ask"} 0
mcp_extauthz_rule_decisions_total{decision="deny",rule_id="no-deletes"} 0
# HELP mcp_extauthz_cel_evaluation_errors_total x
# TYPE mcp_extauthz_cel_evaluation_errors_total counter
mcp_extauthz_cel_evaluation_errors_total{rule_id="no-deletes"} 0
mcp_extauthz_cel_evaluation_errors_total{rule_id="search"} 0
mcp_extauthz_cel_evaluation_errors_total{rule_id="would-ask"} 0
`
	for name, c := range map[string]prometheus.Collector{"mcp_extauthz_rule_decisions_total": r.metrics.RuleDecisions, "mcp_extauthz_cel_evaluation_errors_total": r.metrics.CELEvaluationErrors} {
		if err := testutil.CollectAndCompare(c, strings.NewReader(withHelp(want, c)), name); err != nil {
			t.Error(err)
		}
	}
}

// withHelp puts c's own help text in place of want's "x" (CollectAndCompare
// compares help too).
func withHelp(want string, c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	d := (<-ch).String()
	m := regexp.MustCompile(`fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)"`).FindStringSubmatch(d)
	if m == nil {
		return want
	}
	help, _ := strconv.Unquote(`"` + m[2] + `"`)
	return strings.ReplaceAll(want, "# HELP "+m[1]+" x", "# HELP "+m[1]+" "+help)
}
