package k8s

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the kustomize monitoring component's copies of the chart's files")

// The monitoring files: the chart's (the source), their promtool tests and
// the kustomize component's copies.
const (
	rulesFile          = chartDir + "/files/prometheus-rules.yaml"
	dashboardFile      = chartDir + "/files/grafana-dashboard.json"
	rulesTestFile      = "monitoring/promtool-tests.yaml"
	componentDir       = "kustomize/components/monitoring"
	componentRules     = componentDir + "/prometheusrule.yaml"
	componentDashboard = componentDir + "/grafana-dashboard.json"
	defaultRunbookBase = "https://github.com/mcp-extauthz/mcp-extauthz/blob/main/docs/operations.md"
)

func readRuleFile(t *testing.T, b []byte) RuleFile {
	t.Helper()
	var rf RuleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		t.Fatal(err)
	}
	if len(rf.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	return rf
}

// componentRuleObject is the kustomize component's PrometheusRule: the
// chart's rule file as its spec.
func componentRuleObject(rules []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`# Generated from helm/mcp-extauthz/files/prometheus-rules.yaml by
# k8s/monitoring_test.go (go test ./... -run TestMonitoringCopies -update):
# edit that file, not this one.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: mcp-extauthz
  namespace: mcp-extauthz
  labels:
    app.kubernetes.io/name: mcp-extauthz
    app.kubernetes.io/part-of: mcp-extauthz
spec:
`)
	for _, line := range strings.SplitAfter(string(rules), "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString(line)
			continue
		}
		b.WriteString("  " + line)
	}
	return b.Bytes()
}

// TestMonitoringCopies: the kustomize component holds the chart's rules
// and dashboard, byte for byte (-update rewrites its copies).
func TestMonitoringCopies(t *testing.T) {
	rules, dash := mustRead(t, rulesFile), mustRead(t, dashboardFile)
	want := map[string][]byte{componentRules: componentRuleObject(rules), componentDashboard: dash}
	for path, b := range want {
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(mustRead(t, path), b) {
			t.Errorf("%s differs from the chart's file: go test ./... -run TestMonitoringCopies -update", path)
		}
	}
}

// TestPrometheusRules runs promtool (Debian's prometheus package, which
// .ci/run installs): the rules check, and every alert fires on the
// synthetic series of monitoring/promtool-tests.yaml that should page and stays
// quiet on the others. Without promtool it skips, except under CI.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not on PATH under CI: .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool not on PATH (apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// githubAnchors returns the anchors GitHub gives the headings of
// docs/operations.md (the runbooks, under "Alerts").
func githubAnchors(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(mustRead(t, "../docs/operations.md")), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		out[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return out
}

// TestAlertsFollowMixins: every alert is named MCPExtAuthz<Thing> in
// CamelCase, has a monitoring-mixins severity (critical, warning, info),
// a summary, a description and a runbook_url naming a section of
// docs/operations.md,
// and has a promtool test case that expects it to fire.
func TestAlertsFollowMixins(t *testing.T) {
	rf := readRuleFile(t, mustRead(t, rulesFile))
	anchors := githubAnchors(t)
	tests := string(mustRead(t, rulesTestFile))
	name := regexp.MustCompile(`^MCPExtAuthz[A-Z][A-Za-z]+$`)
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				if !strings.HasPrefix(r.Record, "mcp_extauthz:") || strings.Count(r.Record, ":") != 2 {
					t.Errorf("recording rule %q: want mcp_extauthz:<what>:<how> (level:metric:operations)", r.Record)
				}
				continue
			}
			alerts++
			if !name.MatchString(r.Alert) {
				t.Errorf("alert %q: want MCPExtAuthz<Thing>", r.Alert)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[k] == "" {
					t.Errorf("%s: no %s", r.Alert, k)
				}
			}
			base, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
			if !ok || base != defaultRunbookBase || !anchors[anchor] || anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook_url %q, want %s#%s, a heading of docs/operations.md", r.Alert, r.Annotations["runbook_url"], defaultRunbookBase, strings.ToLower(r.Alert))
			}
			if !regexp.MustCompile(`alertname: ` + r.Alert + `\n\s+exp_alerts:\n\s+- exp_labels`).MatchString(tests) {
				t.Errorf("%s: no promtool test expects it to fire", r.Alert)
			}
		}
	}
	if alerts < 15 {
		t.Errorf("%d alerts", alerts)
	}
}

// wantRules is the chart's rule file with the job and the runbooks the
// chart sets.
func wantRules(t *testing.T, job, runbookBase string) RuleFile {
	t.Helper()
	s := strings.ReplaceAll(string(mustRead(t, rulesFile)), `job="mcp-extauthz"`, `job="`+job+`"`)
	s = strings.ReplaceAll(s, defaultRunbookBase, runbookBase)
	return readRuleFile(t, []byte(s))
}

// TestChartMonitoring: with the ci/ values that enable them, the chart
// renders the PrometheusRule (the rule file, job and runbooks set), the
// dashboard ConfigMap (the JSON file, sidecar label), and the
// ServiceMonitor or the PodMonitor (jobLabel, scrapeTimeout,
// relabelings, namespace selector, Envoy's stats in sidecar mode); both
// monitors at once is an error.
func TestChartMonitoring(t *testing.T) {
	c := loadChart(t)
	sets := valueSets(t)
	dash := mustRead(t, dashboardFile)
	if !json.Valid(dash) {
		t.Fatal("the dashboard is not JSON")
	}
	for _, tt := range []struct {
		values, runbookBase, dashNamespace string
		podMonitor                         bool
	}{
		{"standalone-monitoring-values.yaml", defaultRunbookBase, "", false},
		{"sidecar-podmonitor-values.yaml", "https://docs.example.com/mcp-extauthz/README.md", "monitoring", true},
	} {
		t.Run(tt.values, func(t *testing.T) {
			out, values, err := render(c, sets[tt.values])
			if err != nil {
				t.Fatal(err)
			}
			o, err := decodeObjects([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			if len(o.PrometheusRules) != 1 {
				t.Fatalf("%d PrometheusRules", len(o.PrometheusRules))
			}
			if got, want := o.PrometheusRules[0].Spec, wantRules(t, "mcp-extauthz", tt.runbookBase); !reflect.DeepEqual(got, want) {
				t.Errorf("PrometheusRule spec differs from %s (job, runbooks)", rulesFile)
			}
			var cm []string
			for _, m := range o.ConfigMaps {
				if m.Labels["grafana_dashboard"] == "1" {
					cm = append(cm, m.Name)
					if m.Data["mcp-extauthz.json"] != strings.TrimSuffix(string(dash), "\n") || m.Namespace != tt.dashNamespace {
						t.Errorf("ConfigMap %s: namespace %q, dashboard equal to the file: %v", m.Name, m.Namespace, m.Data["mcp-extauthz.json"] == string(dash))
					}
				}
			}
			if len(cm) != 1 {
				t.Errorf("dashboard ConfigMaps %v, want 1", cm)
			}
			if tt.podMonitor {
				if len(o.PodMonitors) != 1 || len(o.ServiceMonitors) != 0 {
					t.Fatalf("%d PodMonitors, %d ServiceMonitors", len(o.PodMonitors), len(o.ServiceMonitors))
				}
				pm := o.PodMonitors[0]
				d := o.Deployments[0]
				if pm.Spec.JobLabel != "app.kubernetes.io/name" || !selects(pm.Spec.Selector.MatchLabels, d.Spec.Template.Labels) ||
					!slices.Equal(pm.Spec.NamespaceSelector.MatchNames, []string{"mcp-extauthz"}) {
					t.Errorf("PodMonitor spec %+v", pm.Spec)
				}
				var paths []string
				for _, ep := range pm.Spec.PodMetricsEndpoints {
					paths = append(paths, ep.Path)
					if ep.ScrapeTimeout != "10s" || len(ep.Relabelings) != 1 || !podDeclaresPort(d.Spec.Template.Spec, ep.Port) {
						t.Errorf("PodMonitor endpoint %+v", ep)
					}
				}
				if values["mode"] == "sidecar" && !slices.Contains(paths, "/stats/prometheus") {
					t.Errorf("PodMonitor paths %v lack Envoy's stats", paths)
				}
			} else {
				if len(o.ServiceMonitors) != 1 || o.ServiceMonitors[0].Spec.JobLabel != "app.kubernetes.io/name" || o.ServiceMonitors[0].Spec.Endpoints[0].ScrapeTimeout != "10s" {
					t.Errorf("ServiceMonitor %+v", o.ServiceMonitors)
				}
			}
		})
	}

	// nameOverride renames the job, and the rules follow.
	vals := map[string]any{"nameOverride": "authz"}
	for k, v := range sets["standalone-monitoring-values.yaml"] {
		vals[k] = v
	}
	out, _, err := render(c, vals)
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.PrometheusRules[0].Spec, wantRules(t, "authz", defaultRunbookBase); !reflect.DeepEqual(got, want) {
		t.Error("with nameOverride authz, the rules do not select job=\"authz\"")
	}

	both := map[string]any{"podMonitor": map[string]any{"enabled": true}}
	for k, v := range sets["standalone-monitoring-values.yaml"] {
		if k != "podMonitor" {
			both[k] = v
		}
	}
	if _, _, err := render(c, both); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("serviceMonitor and podMonitor both enabled: %v, want an error", err)
	}
}

// TestKustomizeMonitoringComponent: an overlay with the component builds,
// and adds a PodMonitor that selects the Pods, the rules, and the
// dashboard ConfigMap.
func TestKustomizeMonitoringComponent(t *testing.T) {
	dir := t.TempDir()
	// kustomize takes relative paths only.
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + abs("kustomize/overlays/sidecar") +
		"\ncomponents:\n  - " + abs(componentDir) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	o := build(t, dir)
	if len(o.PodMonitors) != 1 || len(o.PrometheusRules) != 1 || len(o.Deployments) != 1 {
		t.Fatalf("%d PodMonitors, %d PrometheusRules, %d Deployments", len(o.PodMonitors), len(o.PrometheusRules), len(o.Deployments))
	}
	pm, d := o.PodMonitors[0], o.Deployments[0]
	if !selects(pm.Spec.Selector.MatchLabels, d.Spec.Template.Labels) || pm.Spec.JobLabel != "app.kubernetes.io/name" ||
		d.Spec.Template.Labels["app.kubernetes.io/name"] != "mcp-extauthz" || pm.Namespace != d.Namespace {
		t.Errorf("PodMonitor %+v does not select %s's Pods %v", pm.Spec, d.Name, d.Spec.Template.Labels)
	}
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		if !podDeclaresPort(d.Spec.Template.Spec, ep.Port) {
			t.Errorf("PodMonitor scrapes port %s, which the sidecar Pod lacks", ep.Port)
		}
	}
	if !reflect.DeepEqual(o.PrometheusRules[0].Spec, wantRules(t, "mcp-extauthz", defaultRunbookBase)) {
		t.Error("the component's PrometheusRule differs from the chart's rules")
	}
	found := false
	for _, cm := range o.ConfigMaps {
		if cm.Labels["grafana_dashboard"] == "1" {
			found = cm.Data["mcp-extauthz.json"] == string(mustRead(t, dashboardFile)) && cm.Name == "mcp-extauthz-dashboard"
		}
	}
	if !found {
		t.Error("no dashboard ConfigMap equal to the chart's")
	}
}
