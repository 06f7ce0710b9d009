package envoy

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// version parses "1.36.0" (a leading v allowed) into its three numbers.
func version(t *testing.T, s string) [3]int {
	t.Helper()
	var v [3]int
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		t.Fatalf("version %q: want MAJOR.MINOR.PATCH", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("version %q: %v", s, err)
		}
		v[i] = n
	}
	return v
}

func atLeast(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

// TestMinEnvoyVersion: the minimum is what the shipped configs need, every
// config says it, and every Envoy image the repository pins meets it.
func TestMinEnvoyVersion(t *testing.T) {
	min := version(t, MinEnvoyVersion)
	// ext_proc's status_on_error is new in 1.36.0 (changelogs/1.36.0.yaml):
	// an older Envoy refuses the configs as having an unknown field.
	for _, name := range []string{"sidecar.yaml", "gateway.yaml"} {
		hcms, err := HTTPConnectionManagers(load(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hcms {
			ep, _, err := ExtProc(h.HCM)
			if err != nil {
				t.Fatal(err)
			}
			if ep.GetStatusOnError() != nil && !atLeast(min, [3]int{1, 36, 0}) {
				t.Errorf("%s sets ext_proc status_on_error (Envoy 1.36.0), MinEnvoyVersion is %s", name, MinEnvoyVersion)
			}
		}
		y, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := "# Needs Envoy " + MinEnvoyVersion + " or later"; !strings.Contains(string(y), want) {
			t.Errorf("%s: header lacks %q", name, want)
		}
	}

	// The pinned images: compose.yaml by tag, the chart by tag, the
	// manifests pinned by digest name their release in a comment.
	pins := map[string]*regexp.Regexp{
		"../compose.yaml":                                         regexp.MustCompile(`envoyproxy/envoy:(v[0-9.]+)@`),
		"../k8s/helm/mcp-extauthz/values.yaml":                    regexp.MustCompile(`repository: envoyproxy/envoy\n(?:\s*#.*\n)*\s*tag: (v[0-9.]+)`),
		"../k8s/gateway/deployment.yaml":                          regexp.MustCompile(`# envoyproxy/envoy (v[0-9.]+), pinned by digest`),
		"../k8s/kustomize/overlays/sidecar/deployment-patch.yaml": regexp.MustCompile(`# envoyproxy/envoy (v[0-9.]+), pinned by digest`),
	}
	for path, re := range pins {
		b, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindAllStringSubmatch(string(b), -1)
		if len(m) == 0 {
			t.Errorf("%s: no pinned Envoy release found", path)
		}
		for _, g := range m {
			if !atLeast(version(t, g[1]), min) {
				t.Errorf("%s pins Envoy %s, below MinEnvoyVersion %s", path, g[1], MinEnvoyVersion)
			}
		}
	}

	// README, where it names a minimum, names this one.
	b := []byte(testkit.Docs(t, ".."))
	for _, m := range regexp.MustCompile(`(?i)Envoy (v?[0-9]+\.[0-9]+\.[0-9]+) or later`).FindAllStringSubmatch(string(b), -1) {
		if strings.TrimPrefix(m[1], "v") != MinEnvoyVersion {
			t.Errorf("README says %q, MinEnvoyVersion is %s", m[0], MinEnvoyVersion)
		}
	}
}

// TestListMethods: every method named is one a client sends (a typo would
// route nothing to the list route).
func TestListMethods(t *testing.T) {
	for _, m := range ListMethods {
		if m != "batch" && !contains(requestMethods(), m) {
			t.Errorf("%q is not a method a client sends", m)
		}
	}
	if !contains(requestMethods(), StreamMethod) {
		t.Errorf("%q is not a value of %s", StreamMethod, MethodHeader)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
