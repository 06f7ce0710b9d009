package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// TestHelmValueNamesInComments: where the Envoy configs' comments and
// README name a chart value ("Helm: sidecar.envoy.cors.allowOrigins"),
// values.yaml has it.
func TestHelmValueNamesInComments(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	has := func(path string) bool {
		var v any = values
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = m[k]; !ok {
				return false
			}
		}
		return true
	}
	files, err := filepath.Glob("../envoy/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "kustomize/overlays/sidecar/envoy.yaml", "gateway/envoy.yaml", "../README.md")
	docs, _ := filepath.Glob("../docs/*.md")
	files = append(files, docs...)
	ref := regexp.MustCompile("Helm:?\\s+(?:the\\s+)?`?([a-z][A-Za-z0-9]*(?:\\.[A-Za-z0-9]+)+)")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllSubmatch(b, -1) {
			n++
			if p := strings.TrimSuffix(string(m[1]), "."); !has(p) {
				t.Errorf("%s names the chart value %s, which values.yaml does not have", f, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no chart value named anywhere: the pattern is wrong")
	}
}

// TestHelmTemplateNeedsKubeVersion: `helm template` checks the chart's
// kubeVersion against its capabilities (Helm's action.renderResources),
// which without --kube-version are Helm's defaults, Kubernetes v1.20: the
// chart is refused there with the message README quotes, and accepted at
// its floor. Every `helm template` in README passes --kube-version at or
// above the floor.
func TestHelmTemplateNeedsKubeVersion(t *testing.T) {
	c := loadChart(t)
	want := c.Metadata.KubeVersion
	def := chartutil.DefaultCapabilities.KubeVersion.String()
	if chartutil.IsCompatibleRange(want, def) {
		t.Fatalf("the chart (kubeVersion %s) renders at Helm's default %s: README's --kube-version advice is moot", want, def)
	}
	readme := docsText(t)
	// Helm's own words (pkg/action/action.go), joined across README's lines.
	msg := fmt.Sprintf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", want, def)
	if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), msg) {
		t.Errorf("README does not quote Helm's refusal %q", msg)
	}
	floor := strings.TrimSuffix(strings.TrimPrefix(want, ">="), ".0-0")
	if kv, err := chartutil.ParseKubeVersion(floor); err != nil || !chartutil.IsCompatibleRange(want, kv.String()) {
		t.Errorf("--kube-version %s (the chart's floor): %v", floor, err)
	}
	lines := regexp.MustCompile(`(?m)^helm template .*$`).FindAll(readme, -1)
	if len(lines) == 0 {
		t.Fatal("README has no helm template example")
	}
	for _, l := range lines {
		m := regexp.MustCompile(`--kube-version (\S+)`).FindSubmatch(l)
		if m == nil {
			t.Errorf("README: %q lacks --kube-version", l)
			continue
		}
		kv, err := chartutil.ParseKubeVersion(string(m[1]))
		if err != nil || !chartutil.IsCompatibleRange(want, kv.String()) {
			t.Errorf("README: %q: --kube-version %s is below the chart's %s", l, m[1], want)
		}
	}
}
