package k8s

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// TestChartDefaultRender: `helm install` with no values renders a working,
// safe release: one replica on the memory store (acknowledged for the
// service, which refuses the memory store otherwise), no
// PodDisruptionBudget over it, the NetworkPolicy, the response seam, the
// chart's image; NOTES.txt says to build and push the image first, to
// replace the placeholder issuer, and how the Istio path applies the
// seam's EnvoyFilter.
func TestChartDefaultRender(t *testing.T) {
	out, v, err := render(loadChart(t), nil)
	if err != nil {
		t.Fatalf("the defaults do not render: %v", err)
	}
	o, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	checkRelease(t, o, v)
	d := o.Deployments[0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1", d.Spec.Replicas)
	}
	ex := container(d, "extauthz")
	for k, want := range map[string]string{
		"EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK": "true",
		"EXTAUTHZ_RESPONSE_SEAM":                     "true",
	} {
		if got, _ := env(ex, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := ex.Image; got != "ghcr.io/mcp-extauthz/mcp-extauthz:0.1.0" {
		t.Errorf("image %q, want the chart's appVersion", got)
	}
	if len(o.PDBs) != 0 {
		t.Error("a PodDisruptionBudget over one replica blocks every node drain")
	}
	if len(o.NetworkPolicies) != 1 {
		t.Errorf("%d NetworkPolicies, want 1", len(o.NetworkPolicies))
	}
	n := notes(t, nil)
	for _, want := range []string{
		"IMAGES: build and push first",
		"k8s/build-images.sh REGISTRY TAG",
		"--set image.repository=REGISTRY/mcp-extauthz --set image.tag=TAG",
		"kubectl apply -k k8s/istio",
		"auth.issuer is the quick-start's",
		"With one replica, a node drain",
	} {
		if !strings.Contains(n, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, n)
		}
	}
	if got := notes(t, values(t, "image: {repository: registry.example.com/p/mcp-extauthz, tag: '1'}")); strings.Contains(got, "IMAGES:") {
		t.Errorf("NOTES.txt asks to build an image the values already name:\n%s", got)
	}
}

// TestChartImageTagInteger: `--set image.tag=1` (an int64, as Helm's
// strvals parses it) and `tag: 1` in a values file (a float64) render the
// tag "1", for the service, the MCP server and Envoy alike; a fraction is
// refused (it reads as a number that lost its digits).
func TestChartImageTagInteger(t *testing.T) {
	tests := []struct {
		name string
		give map[string]any
	}{
		{"--set", mustSet(t, "image.tag=1", "mode=sidecar", "serverId=p", "sidecar.mcpServer.image.repository=x", "sidecar.mcpServer.image.tag=1")},
		{"values file", values(t, "image: {tag: 1}\nmode: sidecar\nserverId: p\nsidecar: {mcpServer: {image: {repository: x, tag: 1}}}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, v, err := render(loadChart(t), tt.give)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decodeObjects([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			checkRelease(t, o, v)
			if got := container(o.Deployments[0], "extauthz").Image; got != "ghcr.io/mcp-extauthz/mcp-extauthz:1" {
				t.Errorf("extauthz image %q", got)
			}
			if got := container(o.Deployments[0], "mcp-server").Image; got != "x:1" {
				t.Errorf("MCP server image %q", got)
			}
		})
	}
	wantRefused(t, loadChart(t), "image: {tag: 1.5}", "'/image/tag'")
}

// mustSet parses --set arguments as Helm's CLI does.
func mustSet(t *testing.T, sets ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatal(err)
		}
	}
	return vals
}

// TestChartAudienceSchema: the schema refuses an audience serve refuses
// (checkAudiences: an absolute URI with a host and no fragment, RFC 8707
// section 2) and takes the ones it accepts.
func TestChartAudienceSchema(t *testing.T) {
	c := loadChart(t)
	for _, give := range []string{"payments", "urn:mcp:payments", "https:///mcp", "https://mcp.example.com/mcp#x", "mcp.example.com/mcp", "https://mcp example.com/mcp"} {
		t.Run("refused "+give, func(t *testing.T) {
			wantRefused(t, c, "auth: {audiences: ['"+give+"']}", "'/auth/audiences/0'")
		})
	}
	for _, give := range []string{"https://mcp.example.com/mcp", "https://mcp.example.com", "http://127.0.0.1:8080/mcp", "https://mcp.example.com/mcp?tenant=a"} {
		t.Run("taken "+give, func(t *testing.T) {
			if _, _, err := render(c, values(t, "auth: {audiences: ['"+give+"']}")); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestChartNamesEveryMissingValue: one render error lists every value
// still missing, each with why, rather than one per attempt.
func TestChartNamesEveryMissingValue(t *testing.T) {
	_, _, err := render(loadChart(t), values(t, "mode: sidecar\nreplicaCount: 2"))
	if err == nil {
		t.Fatal("rendered")
	}
	for _, want := range []string{"missing values (4)", "- serverId:", "- sidecar.mcpServer.image.repository:", "- sidecar.mcpServer.image.tag:", "- stateStore.url: replicaCount is 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// applied resolves the files one `kubectl apply` command line applies
// (-f FILE, -f DIR/, -k DIR, recursively through kustomizations), as paths
// from the repository root.
func applied(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var kust func(dir string)
	kust = func(dir string) {
		var k struct {
			Resources []string `json:"resources"`
		}
		if err := yaml.Unmarshal(mustRead(t, filepath.Join("..", dir, "kustomization.yaml")), &k); err != nil {
			t.Fatal(err)
		}
		for _, r := range k.Resources {
			p := filepath.Clean(filepath.Join(dir, r))
			if fi, err := os.Stat(filepath.Join("..", p)); err == nil && fi.IsDir() {
				kust(p)
			} else {
				out = append(out, p)
			}
		}
	}
	w := strings.Fields(strings.SplitN(line, "#", 2)[0])
	for i := 2; i+1 < len(w); i++ {
		switch w[i] {
		case "-k":
			kust(strings.TrimSuffix(w[i+1], "/"))
		case "-f":
			p := filepath.Clean(w[i+1])
			if fi, err := os.Stat(filepath.Join("..", p)); err == nil && fi.IsDir() {
				ms, _ := filepath.Glob(filepath.Join("..", p, "*.yaml"))
				for _, m := range ms {
					out = append(out, strings.TrimPrefix(m, "../"))
				}
			} else {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestReadmeIstioAppliesTheSeam: every README `kubectl apply` that puts the
// shared service's CUSTOM AuthorizationPolicy in place also applies the
// response seam's EnvoyFilter (the service runs --response-seam: without
// the filter tasks are refused task_not_owned and lists pass unfiltered),
// the Helm path's line included.
func TestReadmeIstioAppliesTheSeam(t *testing.T) {
	lines := regexp.MustCompile(`(?m)^\s*kubectl apply .*$`).FindAllString(string(docsText(t)), -1)
	helm := false
	for _, line := range lines {
		files := applied(t, line)
		if slices.Contains(files, "k8s/istio/in-pod/authorizationpolicy.yaml") && !slices.Contains(files, "k8s/istio/envoyfilter-extproc-local.yaml") {
			t.Errorf("README: %q applies the in-pod layout without its response seam's EnvoyFilter (applies %v)", strings.TrimSpace(line), files)
		}
		if !slices.Contains(files, "k8s/istio/authorizationpolicy.yaml") {
			continue
		}
		if !slices.Contains(files, "k8s/istio/envoyfilter-extproc.yaml") {
			t.Errorf("README: %q applies the CUSTOM AuthorizationPolicy without the response seam's EnvoyFilter (applies %v)", strings.TrimSpace(line), files)
		}
		helm = helm || strings.Contains(line, "Helm")
	}
	if !helm {
		t.Error("README has no kubectl apply line for the Istio objects of a Helm release")
	}
}

// TestChartNotesNameTheSeamCluster: NOTES.txt of README's standalone
// install names the outbound cluster k8s/istio/envoyfilter-extproc.yaml
// sends the side streams to and mesh-config.yaml's provider names, so a
// release named otherwise is told which name to set (a CDS cluster that
// matches no Service makes ext_proc fail open on Envoys without
// envoyproxy/envoy#45189).
func TestChartNotesNameTheSeamCluster(t *testing.T) {
	re := regexp.MustCompile(`outbound\|[0-9]+\|\|[a-z0-9.-]+`)
	ef := re.FindString(string(mustRead(t, "istio/envoyfilter-extproc.yaml")))
	if ef == "" {
		t.Fatal("no outbound cluster in istio/envoyfilter-extproc.yaml")
	}
	svc := strings.Split(ef, "||")[1]
	if !strings.Contains(string(mustRead(t, "istio/mesh-config.yaml")), "service: "+svc) {
		t.Errorf("mesh-config.yaml names no provider service %s", svc)
	}
	c := loadChart(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	rv, err := chartutil.ToRenderValues(c, map[string]any{"serverId": "payments"}, chartutil.ReleaseOptions{Name: "mcp-extauthz", Namespace: "mcp-extauthz", IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		t.Fatal(err)
	}
	if got := re.FindString(files["mcp-extauthz/templates/NOTES.txt"]); got != ef {
		t.Errorf("NOTES.txt names cluster %q, the EnvoyFilter %q", got, ef)
	}
}

// TestBuildImagesScript runs k8s/build-images.sh with a stand-in docker
// (it logs its arguments): both Dockerfiles are built from the repository
// root and pushed under REGISTRY with TAG, and the values it prints name
// the images the manifests use (the chart's image, kustomize's images).
func TestBuildImagesScript(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "docker.log")
	fake := filepath.Join(dir, "docker")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$PWD $*\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "build-images.sh", "registry.example.com/p/", "1.2.3")
	cmd.Env = append(os.Environ(), "DOCKER="+fake)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(mustReadAbs(t, log))), "\n")
	if len(got) != 4 {
		t.Fatalf("docker ran %d times, want 2 builds and 2 pushes:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`^` + regexp.QuoteMeta(root) + ` build --build-arg VERSION=\S+ --build-arg COMMIT=\S+ -f Dockerfile -t registry.example.com/p/mcp-extauthz:1.2.3 \.$`),
		regexp.MustCompile(`^` + regexp.QuoteMeta(root) + ` push registry.example.com/p/mcp-extauthz:1.2.3$`),
		regexp.MustCompile(`^` + regexp.QuoteMeta(root) + ` build -f examples/payments-mcp/Dockerfile -t registry.example.com/p/example-payments-mcp:1.2.3 \.$`),
		regexp.MustCompile(`^` + regexp.QuoteMeta(root) + ` push registry.example.com/p/example-payments-mcp:1.2.3$`),
	} {
		if !want.MatchString(got[i]) {
			t.Errorf("docker call %d: %q, want %s", i, got[i], want)
		}
	}
	// The printed Helm values render, and name the pushed images.
	m := regexp.MustCompile(`--set image.repository=(\S+) --set image.tag=(\S+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no Helm values printed:\n%s", out)
	}
	o, _ := renderObjects(t, "image: {repository: "+m[1]+", tag: '"+m[2]+"'}")
	if img := container(o.Deployments[0], "extauthz").Image; img != "registry.example.com/p/mcp-extauthz:1.2.3" {
		t.Errorf("the printed values render image %q", img)
	}
	// The printed kustomize images replace the names the manifests use.
	for _, name := range []string{"ghcr.io/mcp-extauthz/mcp-extauthz", "ghcr.io/mcp-extauthz/example-payments-mcp"} {
		if !strings.Contains(string(out), "{name: "+name+", newName: ") {
			t.Errorf("no kustomize image for %s:\n%s", name, out)
		}
	}
	for _, f := range []string{"kustomize/base/deployment.yaml", "kustomize/overlays/sidecar/kustomization.yaml"} {
		b := string(mustRead(t, f))
		if !strings.Contains(b, "ghcr.io/mcp-extauthz/") {
			t.Errorf("%s names no ghcr.io/mcp-extauthz image: the printed images: would not apply", f)
		}
	}
}

func mustReadAbs(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
