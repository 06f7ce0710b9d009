package k8s

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

const chartDir = "helm/mcp-extauthz"

// kubeVersion is what the renders and lint assume (the chart needs 1.30 or later).
var kubeVersion = chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render does what `helm template --namespace mcp-extauthz mcp-extauthz
// CHART -f values` does without a cluster: coalesce the values, validate
// them against values.schema.json, and run the templates. It returns the
// manifests (NOTES.txt and partials excluded) and the coalesced values.
func render(c *chart.Chart, vals map[string]any) (string, chartutil.Values, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	opts := chartutil.ReleaseOptions{Name: "mcp-extauthz", Namespace: "mcp-extauthz", Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(c, vals, opts, caps)
	if err != nil {
		return "", nil, err
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		return "", nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString("---\n# Source: " + n + "\n" + files[n] + "\n")
	}
	values, _ := rv["Values"].(chartutil.Values)
	return b.String(), values, nil
}

// valueSets are the chart's default values and every ci/*-values.yaml file
// (the chart-testing convention), keyed by name.
func valueSets(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The defaults render alone (one replica on the memory store:
	// TestChartDefaultRender).
	sets := map[string]map[string]any{"default": {}}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sets[filepath.Base(f)] = v
	}
	for _, want := range []string{"sidecar-values.yaml", "standalone-values.yaml"} {
		if sets[want] == nil {
			t.Fatalf("ci/%s missing", want)
		}
	}
	return sets
}

func TestChartLints(t *testing.T) {
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, vals, "mcp-extauthz", &kubeVersion)
			for _, m := range l.Messages {
				// Like `helm lint --strict`: warnings fail too.
				if m.Severity >= support.WarningSev {
					t.Error(m)
				}
			}
		})
	}
}

func TestChartRendersEveryMode(t *testing.T) {
	c := loadChart(t)
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			out, values, err := render(c, vals)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decodeObjects([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			checkRelease(t, o, values)
		})
	}
}

// checkRelease asserts what every release must hold, whatever its values.
func checkRelease(t *testing.T, o *Objects, v chartutil.Values) {
	t.Helper()
	if len(o.Deployments) != 1 {
		t.Fatalf("%d Deployments, want 1", len(o.Deployments))
	}
	d := o.Deployments[0]
	checkPodTemplate(t, "Deployment "+d.Name, d.Spec.Template, probedByEnvoy(t, o, d))
	if _, ok := d.Spec.Template.Annotations["checksum/policy"]; ok {
		t.Error("checksum/policy annotation: every policy change would restart the Pods (the service reloads it)")
	}
	podLabels := d.Spec.Template.Labels
	if !selects(d.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("Deployment selector %v does not select its Pods %v", d.Spec.Selector.MatchLabels, podLabels)
	}
	if got, want := *d.Spec.Replicas, int32(v["replicaCount"].(float64)); got != want {
		t.Errorf("replicas = %d, want %d", got, want)
	}

	// A PDB over one replica could only block drains: the chart renders
	// none then, and one that lets a Pod go otherwise.
	wantPDBs := 0
	if v["podDisruptionBudget"].(map[string]any)["enabled"].(bool) && *d.Spec.Replicas > 1 {
		wantPDBs = 1
	}
	if len(o.PDBs) != wantPDBs {
		t.Fatalf("%d PodDisruptionBudgets for %d replicas, want %d", len(o.PDBs), *d.Spec.Replicas, wantPDBs)
	}
	for _, pdb := range o.PDBs {
		if !selects(pdb.Spec.Selector.MatchLabels, podLabels) || !pdbAllowsDrain(pdb, int(*d.Spec.Replicas)) {
			t.Errorf("PDB %s: selector %v, minAvailable %v maxUnavailable %v for %d replicas", pdb.Name, pdb.Spec.Selector.MatchLabels, pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable, *d.Spec.Replicas)
		}
	}
	main, metrics := o.service(d.Name), o.service(d.Name+"-metrics")
	if main == nil || metrics == nil {
		t.Fatalf("want Services %s and %s-metrics, got %d Services", d.Name, d.Name, len(o.Services))
	}
	for _, svc := range o.Services {
		if !selects(svc.Spec.Selector, podLabels) {
			t.Errorf("Service %s does not select the Pods", svc.Name)
		}
		for _, sp := range svc.Spec.Ports {
			if !podDeclaresPort(d.Spec.Template.Spec, sp.TargetPort.StrVal) {
				t.Errorf("Service %s port %s targets %q, which no container declares", svc.Name, sp.Name, sp.TargetPort.StrVal)
			}
		}
	}
	// MCP clients (or Check callers) see no metrics port.
	for _, sp := range main.Spec.Ports {
		if sp.TargetPort.StrVal == "metrics" || sp.TargetPort.StrVal == "envoy-ready" {
			t.Errorf("Service %s exposes %s: metrics belong on %s-metrics", main.Name, sp.TargetPort.StrVal, d.Name)
		}
	}
	if !serviceHasPort(metrics, "http-metrics") || metrics.Spec.ClusterIP != "None" {
		t.Errorf("Service %s: want headless with port http-metrics", metrics.Name)
	}

	// The policy from values is the file the service reads, and it compiles.
	cm := o.configMap("-policy")
	if cm == nil {
		t.Fatal("no policy ConfigMap")
	}
	if cm.Data["policy.yaml"] != v["policy"] {
		t.Errorf("policy ConfigMap holds %q, want the values' policy", cm.Data["policy.yaml"])
	}
	if _, err := policy.Compile("policy.yaml", []byte(cm.Data["policy.yaml"])); err != nil {
		t.Errorf("policy does not compile: %v", err)
	}

	ex := container(d, "extauthz")
	if ex == nil {
		t.Fatal("no extauthz container")
	}
	checkServiceFlags(t, o, d, ex, v)
	checkExtauthzProbes(t, "chart", ex)
	checkGracePeriod(t, "chart", d, ex)
	if g, want := d.Spec.Template.Spec.TerminationGracePeriodSeconds, v["terminationGracePeriodSeconds"]; g == nil || want == nil || float64(*g) != want.(float64) {
		t.Errorf("terminationGracePeriodSeconds = %v, want the value %v", g, want)
	}
	external := map[string]bool{}
	if s, _ := v["auth"].(map[string]any)["jwks"].(map[string]any)["existingSecret"].(string); s != "" {
		external[s] = true
	}
	if s, _ := v["tls"].(map[string]any)["secretName"].(string); s != "" {
		external[s] = true
	}
	for _, s := range stateStoreSecrets(v) {
		external[s] = true
	}
	// The approver's key set and the seam's cursor key.
	if s, _ := v["approvals"].(map[string]any)["jwksSecret"].(map[string]any)["name"].(string); s != "" {
		external[s] = true
	}
	if s, _ := v["responseSeam"].(map[string]any)["cursorKeySecret"].(map[string]any)["name"].(string); s != "" {
		external[s] = true
	}
	if s, _ := v["signedDecisions"].(map[string]any)["keySecret"].(map[string]any)["name"].(string); s != "" {
		external[s] = true
	}
	checkPodReferences(t, o, d, external)
	checkStateStore(t, d, ex, v)
	checkNetpolHTTP(t, o, ex, len(v["networkPolicy"].(map[string]any)["metricsFrom"].([]any)) > 0)

	switch mode := v["mode"]; mode {
	case "sidecar":
		checkSidecar(t, o, d, ex, v)
	case "standalone":
		checkStandalone(t, o, d, ex)
	default:
		t.Fatalf("mode %v", mode)
	}

	nps := o.NetworkPolicies
	if enabled := v["networkPolicy"].(map[string]any)["enabled"].(bool); enabled != (len(nps) == 1) {
		t.Errorf("networkPolicy.enabled=%v but %d NetworkPolicies", enabled, len(nps))
	}
	for _, np := range nps {
		if !selects(np.Spec.PodSelector.MatchLabels, podLabels) {
			t.Errorf("NetworkPolicy %s does not select the Pods", np.Name)
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if !podDeclaresPort(d.Spec.Template.Spec, p.Port.StrVal) {
					t.Errorf("NetworkPolicy opens %q, which no container declares", p.Port.StrVal)
				}
			}
		}
	}
	sm := v["serviceMonitor"].(map[string]any)["enabled"].(bool)
	if sm != (len(o.ServiceMonitors) == 1) {
		t.Errorf("serviceMonitor.enabled=%v but %d ServiceMonitors", sm, len(o.ServiceMonitors))
	}
	for _, m := range o.ServiceMonitors {
		for _, svc := range o.Services {
			if selects(m.Spec.Selector.MatchLabels, svc.Labels) != (svc == metrics) {
				t.Errorf("ServiceMonitor %s: selects Service %s = %v, want only %s", m.Name, svc.Name, !(svc == metrics), metrics.Name)
			}
		}
		for _, ep := range m.Spec.Endpoints {
			if !serviceHasPort(metrics, ep.Port) {
				t.Errorf("ServiceMonitor %s scrapes port %s, which %s lacks", m.Name, ep.Port, metrics.Name)
			}
		}
		if v["mode"] == "sidecar" && !slices.ContainsFunc(m.Spec.Endpoints, func(e ServiceMonitorEndpoint) bool { return e.Path == envoy.StatsPath }) {
			t.Errorf("ServiceMonitor %s does not scrape Envoy's %s", m.Name, envoy.StatsPath)
		}
	}
}

// knownEnv are the EXTAUTHZ_* variables of `extauthz serve` (one per flag).
var knownEnv = map[string]bool{
	"EXTAUTHZ_GRPC_ADDR": true, "EXTAUTHZ_HTTP_ADDR": true, "EXTAUTHZ_POLICY": true,
	"EXTAUTHZ_ISSUER": true, "EXTAUTHZ_JWKS_FILE": true, "EXTAUTHZ_AUDIENCE": true,
	"EXTAUTHZ_SERVER_ID": true, "EXTAUTHZ_RESOURCE_METADATA_URL": true,
	"EXTAUTHZ_LOG_LEVEL": true, "EXTAUTHZ_MAX_BODY_BYTES": true, "EXTAUTHZ_CONFIG": true,
	"EXTAUTHZ_MAX_JSON_DEPTH": true, "EXTAUTHZ_MAX_JSON_KEYS": true, "EXTAUTHZ_MAX_JSON_ELEMENTS": true,
	"EXTAUTHZ_MAX_STRING_BYTES": true, "EXTAUTHZ_DRY_RUN": true, "EXTAUTHZ_TOKEN_CACHE_SIZE": true,
	"EXTAUTHZ_JWKS_REFRESH_INTERVAL": true, "EXTAUTHZ_DRAIN_PERIOD": true, "EXTAUTHZ_SHUTDOWN_TIMEOUT": true,
	"EXTAUTHZ_SERVER_ID_BY_PRINCIPAL": true, "EXTAUTHZ_ALLOW_TEST_KEYS": true, "EXTAUTHZ_TLS_CERT_FILE": true, "EXTAUTHZ_TLS_KEY_FILE": true, "EXTAUTHZ_CLIENT_CA_FILE": true,
	"EXTAUTHZ_STATE_STORE": true, "EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK": true,
	"EXTAUTHZ_STATE_STORE_PASSWORD_FILE": true, "EXTAUTHZ_STATE_STORE_SENTINEL_PASSWORD_FILE": true,
	"EXTAUTHZ_STATE_STORE_TLS_CA_FILE": true, "EXTAUTHZ_STATE_STORE_TLS_CERT_FILE": true, "EXTAUTHZ_STATE_STORE_TLS_KEY_FILE": true,
	"EXTAUTHZ_STATE_STORE_TLS_SERVER_NAME": true, "EXTAUTHZ_STATE_STORE_WAIT_REPLICAS": true, "EXTAUTHZ_STATE_STORE_WAIT_TIMEOUT": true,
	"EXTAUTHZ_APPROVER_ISSUER": true, "EXTAUTHZ_APPROVER_JWKS_FILE": true, "EXTAUTHZ_APPROVAL_URL": true, "EXTAUTHZ_APPROVAL_MAX_LIFETIME": true,
	"EXTAUTHZ_IDEMPOTENCY_HEADER": true, "EXTAUTHZ_IDEMPOTENCY_META": true, "EXTAUTHZ_IDEMPOTENCY_TTL": true,
	"EXTAUTHZ_DENIAL_STATUS": true, "EXTAUTHZ_CONCEAL_AS": true, "EXTAUTHZ_CONCEAL_JSON_RESPONSE": true,
	"EXTAUTHZ_RESPONSE_SEAM": true, "EXTAUTHZ_CURSOR_KEY_FILE": true, "EXTAUTHZ_LIST_CACHE_TTL": true,
	"EXTAUTHZ_DECISION_KEY_FILE": true,
}

// pendingEnv are knownEnv entries whose serve flag is not yet in the flag
// table of docs/configuration.md (TestKnownEnvAreServeFlags); each is named with the reason.
var pendingEnv = map[string]string{}

// TestKnownEnvAreServeFlags: every variable the chart may set is the
// environment form of a flag the reference (docs/configuration.md) names, so knownEnv cannot
// vouch for a flag serve does not have.
func TestKnownEnvAreServeFlags(t *testing.T) {
	readme := string(docsText(t))
	for e := range knownEnv {
		flag := "`--" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(e, "EXTAUTHZ_")), "_", "-")
		in := strings.Contains(readme, flag+" ") || strings.Contains(readme, flag+"`") || strings.Contains(readme, flag+"=")
		why, pending := pendingEnv[e]
		switch {
		case !in && !pending:
			t.Errorf("%s: README names no %s` flag", e, flag[1:])
		case in && pending:
			t.Logf("%s: %s` is in README now (%s): drop it from pendingEnv", e, flag[1:], why)
		}
	}
}

func checkServiceFlags(t *testing.T, o *Objects, d interface{ GetName() string }, ex *corev1.Container, v chartutil.Values) {
	t.Helper()
	if len(ex.Args) == 0 || ex.Args[0] != "serve" {
		t.Errorf("extauthz args = %v, want serve", ex.Args)
	}
	for _, e := range ex.Env {
		if !knownEnv[e.Name] {
			t.Errorf("extauthz env %s is no flag of extauthz serve", e.Name)
		}
	}
	auth := v["auth"].(map[string]any)
	want := map[string]string{
		"EXTAUTHZ_ISSUER":         auth["issuer"].(string),
		"EXTAUTHZ_AUDIENCE":       joinAny(auth["audiences"].([]any)),
		"EXTAUTHZ_MAX_BODY_BYTES": strconv.Itoa(int(v["maxRequestBytes"].(float64))),
	}
	for k, w := range want {
		if got, _ := env(ex, k); got != w {
			t.Errorf("%s = %q, want %q", k, got, w)
		}
	}
	// The policy path is where the policy ConfigMap is mounted.
	policyPath, _ := env(ex, "EXTAUTHZ_POLICY")
	if !mountedFrom(ex, o.Deployments[0].Spec.Template.Spec, policyPath, "configMap") {
		t.Errorf("EXTAUTHZ_POLICY=%s is not inside a ConfigMap mount", policyPath)
	}
	// JWKS: a mounted Secret when configured, OIDC discovery otherwise.
	jwks := auth["jwks"].(map[string]any)
	jwksFile, hasFile := env(ex, "EXTAUTHZ_JWKS_FILE")
	wantFile := jwks["existingSecret"] != "" || jwks["inline"] != ""
	if hasFile != wantFile {
		t.Errorf("EXTAUTHZ_JWKS_FILE set=%v, want %v", hasFile, wantFile)
	}
	if hasFile && !mountedFrom(ex, o.Deployments[0].Spec.Template.Spec, jwksFile, "secret") {
		t.Errorf("EXTAUTHZ_JWKS_FILE=%s is not inside a Secret mount", jwksFile)
	}
	if inline, _ := jwks["inline"].(string); inline != "" {
		if len(o.Secrets) != 1 {
			t.Fatalf("inline JWKS: %d Secrets, want 1", len(o.Secrets))
		}
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal([]byte(o.Secrets[0].StringData[jwks["key"].(string)]), &set); err != nil || len(set.Keys) == 0 {
			t.Errorf("JWKS Secret does not hold a key set: %v", err)
		}
		for _, k := range set.Keys {
			if _, private := k["d"]; private {
				t.Error("JWKS Secret holds a private key")
			}
		}
	}
}

func joinAny(xs []any) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.(string)
	}
	return strings.Join(s, ",")
}

// mountedFrom reports whether path lies under a mount of c backed by a
// volume of the given source ("configMap" or "secret").
func mountedFrom(c *corev1.Container, ps corev1.PodSpec, path, source string) bool {
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, vol := range ps.Volumes {
			if vol.Name != m.Name {
				continue
			}
			switch {
			case source == "configMap" && vol.ConfigMap != nil, source == "secret" && vol.Secret != nil:
				return true
			}
		}
	}
	return false
}

func podDeclaresPort(ps corev1.PodSpec, name string) bool {
	for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

func serviceHasPort(s *corev1.Service, name string) bool {
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func checkStandalone(t *testing.T, o *Objects, d *appsv1.Deployment, ex *corev1.Container) {
	t.Helper()
	addr, _ := env(ex, "EXTAUTHZ_GRPC_ADDR")
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsUnspecified() {
		t.Errorf("standalone EXTAUTHZ_GRPC_ADDR = %q, want 0.0.0.0:port (the Service reaches it)", addr)
	}
	// Readiness is gRPC health, or HTTP /readyz when the port speaks TLS
	// (the kubelet's gRPC probe has no TLS); liveness is HTTP /healthz.
	_, tls := env(ex, "EXTAUTHZ_TLS_CERT_FILE")
	switch p := ex.ReadinessProbe; {
	case tls && (p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz"):
		t.Errorf("standalone readiness with TLS is not HTTP /readyz: %+v", p)
	case !tls && (p == nil || p.GRPC == nil || p.GRPC.Port != int32(ap.Port())):
		t.Errorf("standalone readiness probe is not a gRPC probe on %d: %+v", ap.Port(), p)
	}
	// Envoy gateways reach every replica through the headless Service.
	h := o.service(d.Name + "-headless")
	if h == nil || h.Spec.ClusterIP != "None" || !serviceHasPort(h, "grpc") {
		t.Errorf("no headless Service %s-headless with the grpc port: %+v", d.Name, h)
	}
	// A NetworkPolicy admits named callers only to the gRPC port.
	for _, np := range o.NetworkPolicies {
		if covered, fromAll := netpolOpens(np, ex, int32(ap.Port())); !covered || fromAll {
			t.Errorf("NetworkPolicy %s: gRPC port admitted=%v from every Pod=%v, want only the Envoy callers", np.Name, covered, fromAll)
		}
	}
}

func checkSidecar(t *testing.T, o *Objects, d interface{}, ex *corev1.Container, v chartutil.Values) {
	t.Helper()
	dep := o.Deployments[0]
	mcpName := v["sidecar"].(map[string]any)["mcpServer"].(map[string]any)["name"].(string)
	ev, mcp := container(dep, "envoy"), container(dep, mcpName)
	if ev == nil || mcp == nil {
		t.Fatalf("sidecar Pod lacks envoy or %s: %v", mcpName, dep.Spec.Template.Spec.Containers)
	}
	addr, _ := env(ex, "EXTAUTHZ_GRPC_ADDR")
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		t.Errorf("sidecar EXTAUTHZ_GRPC_ADDR = %q, want loopback", addr)
	}
	// Loopback is out of the kubelet's reach: readiness runs the image's
	// gRPC health client against the same address.
	if p := ex.ReadinessProbe; p == nil || p.Exec == nil || strings.Join(p.Exec.Command, " ") != "/extauthz healthcheck --addr "+addr {
		t.Errorf("sidecar extauthz readiness = %+v, want exec /extauthz healthcheck --addr %s", p, addr)
	}

	cm := o.configMap("-envoy")
	if cm == nil {
		t.Fatal("no Envoy ConfigMap")
	}
	b, err := envoy.ValidateBootstrapYAML([]byte(cm.Data["envoy.yaml"]))
	if err != nil {
		t.Fatalf("Envoy config: %v", err)
	}
	if err := envoy.CheckInvariants(b); err != nil {
		t.Fatalf("Envoy config: %v", err)
	}
	if got := envoy.Endpoints(envoy.Cluster(b, "ext_authz")); len(got) != 1 || got[0] != addr {
		t.Errorf("Envoy ext_authz cluster = %v, want [%s]", got, addr)
	}
	mcpPort := containerPort(mcp, "mcp-server")
	if got := envoy.Endpoints(envoy.Cluster(b, "mcp_server")); len(got) != 1 || got[0] != "127.0.0.1:"+strconv.Itoa(int(mcpPort)) {
		t.Errorf("Envoy mcp_server cluster = %v, want [127.0.0.1:%d]", got, mcpPort)
	}
	hcms, err := envoy.HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hcms {
		if a := h.HCM.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(); envoy.Forwards(h.HCM) && a != corev3.HttpProtocolOptions_REJECT_REQUEST {
			t.Errorf("listener %s: headers_with_underscores_action %v, want REJECT_REQUEST", h.Listener, a)
		}
		if ea, _, _ := envoy.ExtAuthz(h.HCM); ea != nil {
			if got, _ := env(ex, "EXTAUTHZ_MAX_BODY_BYTES"); got != strconv.Itoa(int(ea.GetWithRequestBody().GetMaxRequestBytes())) {
				t.Errorf("Envoy max_request_bytes %d != service --max-body-bytes %s", ea.GetWithRequestBody().GetMaxRequestBytes(), got)
			}
		}
	}
	listeners := map[string]uint32{}
	for _, l := range b.GetStaticResources().GetListeners() {
		listeners[l.GetName()] = l.GetAddress().GetSocketAddress().GetPortValue()
	}
	if listeners["mcp"] != uint32(containerPort(ev, "mcp")) || listeners["health"] != uint32(containerPort(ev, "envoy-ready")) {
		t.Errorf("Envoy listeners %v do not match the envoy container ports %v", listeners, ev.Ports)
	}
	if ev.ReadinessProbe.HTTPGet == nil || ev.ReadinessProbe.HTTPGet.Port.StrVal != "envoy-ready" {
		t.Errorf("envoy readiness = %+v, want httpGet on envoy-ready", ev.ReadinessProbe)
	}
	admin := b.GetAdmin().GetAddress().GetSocketAddress().GetPortValue()
	for _, p := range ev.Ports {
		if uint32(p.ContainerPort) == admin {
			t.Errorf("envoy declares the admin port %d", admin)
		}
	}
	if cfg := argAfter(ev.Args, "--config-path"); !mountedFrom(ev, dep.Spec.Template.Spec, cfg, "configMap") {
		t.Errorf("envoy --config-path %q is not inside a ConfigMap mount", cfg)
	}
	if svc := o.service(dep.Name); len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != "mcp" {
		t.Errorf("sidecar Service ports %+v, want Envoy's mcp port only", svc.Spec.Ports)
	}
	if got, want := string(o.service(dep.Name).Spec.SessionAffinity), v["service"].(map[string]any)["sessionAffinity"]; got != want {
		t.Errorf("sidecar Service sessionAffinity %q, want the value %v", got, want)
	}
	if !strings.Contains(ev.Image, "@sha256:") {
		t.Errorf("envoy image %q is not pinned by digest", ev.Image)
	}
	// The NetworkPolicy never admits the MCP server's or the service's own port.
	for _, np := range o.NetworkPolicies {
		for _, p := range []struct {
			c    *corev1.Container
			port int32
		}{{mcp, mcpPort}, {ex, int32(ap.Port())}} {
			if covered, _ := netpolOpens(np, p.c, p.port); covered {
				t.Errorf("NetworkPolicy %s admits port %d of %s: a way around the check", np.Name, p.port, p.c.Name)
			}
		}
	}
	checkEnvoyArgs(t, ev, b)
	checkShutdownOrder(t, dep, ex, ev, mcp, v["sidecar"].(map[string]any)["nativeSidecars"] == true, b)
}

// checkEnvoyArgs: --concurrency is the CPU limit rounded up; --config-yaml
// carries the overload manager with a heap limit below the container's
// memory limit, and merges over the bootstrap into a valid config.
func checkEnvoyArgs(t *testing.T, ev *corev1.Container, b *bootstrapv3.Bootstrap) {
	t.Helper()
	cpu := ev.Resources.Limits.Cpu().MilliValue()
	if got, want := argAfter(ev.Args, "--concurrency"), strconv.FormatInt((cpu+999)/1000, 10); got != want {
		t.Errorf("envoy --concurrency %q, want %s (CPU limit %s)", got, want, ev.Resources.Limits.Cpu())
	}
	over, err := envoy.ValidateBootstrapYAML([]byte(argAfter(ev.Args, "--config-yaml")))
	if err != nil {
		t.Fatalf("envoy --config-yaml: %v", err)
	}
	merged := proto.Clone(b).(*bootstrapv3.Bootstrap)
	proto.Merge(merged, over)
	if err := merged.ValidateAll(); err != nil {
		t.Errorf("bootstrap + --config-yaml: %v", err)
	}
	heap, err := envoy.HeapLimit(merged)
	if err != nil {
		t.Fatal(err)
	}
	if limit := ev.Resources.Limits.Memory().Value(); heap <= 0 || heap >= uint64(limit) {
		t.Errorf("Envoy heap limit %d, want below the container's memory limit %d", heap, limit)
	}
}

// checkShutdownOrder: extauthz's preStop drains Envoy through its admin API
// for --drain-time-s and only then lets the service drain (it outlives
// both); Envoy's preStop outlasts its drain, the MCP server's outlasts
// Envoy's; the grace period covers the whole chain.
func checkShutdownOrder(t *testing.T, d *appsv1.Deployment, ex, ev, mcp *corev1.Container, native bool, b *bootstrapv3.Bootstrap) {
	t.Helper()
	drain, err := strconv.Atoi(argAfter(ev.Args, "--drain-time-s"))
	if err != nil || drain <= 0 {
		t.Fatalf("envoy --drain-time-s %q", argAfter(ev.Args, "--drain-time-s"))
	}
	if native {
		// Kubernetes stops native sidecars after the MCP server, in reverse order.
		ps := d.Spec.Template.Spec
		if len(ps.InitContainers) != 2 || ps.InitContainers[0].Name != "extauthz" || ps.InitContainers[1].Name != "envoy" {
			t.Fatalf("native sidecars: init containers %v, want extauthz then envoy", ps.InitContainers)
		}
		for _, c := range ps.InitContainers {
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways || c.StartupProbe == nil {
				t.Errorf("native sidecar %s: restartPolicy %v, startupProbe %v", c.Name, c.RestartPolicy, c.StartupProbe)
			}
		}
		return
	}
	pre := ex.Lifecycle.PreStop
	admin := "127.0.0.1:" + strconv.Itoa(int(b.GetAdmin().GetAddress().GetSocketAddress().GetPortValue()))
	if pre == nil || pre.Exec == nil || strings.Join(pre.Exec.Command, " ") != "/extauthz envoy-drain --admin-addr "+admin+" --drain-time "+strconv.Itoa(drain)+"s" {
		t.Errorf("extauthz preStop %+v, want /extauthz envoy-drain --admin-addr %s --drain-time %ds", pre, admin, drain)
	}
	sleep := func(c *corev1.Container) int64 {
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
			t.Errorf("%s: no preStop sleep", c.Name)
			return 0
		}
		return c.Lifecycle.PreStop.Sleep.Seconds
	}
	// extauthz waits out Envoy's drain in its preStop, then drains itself.
	own := func(name string) time.Duration { v, _ := env(ex, name); d, _ := time.ParseDuration(v); return d }
	need := time.Duration(drain)*time.Second + own("EXTAUTHZ_DRAIN_PERIOD") + own("EXTAUTHZ_SHUTDOWN_TIMEOUT")
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %v, want > %v (Envoy drain + the service's drain and shutdown timeout)", g, need)
	}
	if se, sm := sleep(ev), sleep(mcp); se <= int64(drain) || sm <= se {
		t.Errorf("preStop sleeps: envoy %ds, %s %ds; want envoy > --drain-time-s %d and the server > envoy", se, mcp.Name, sm, drain)
	}
}

// probedByEnvoy names the containers of d whose readiness Envoy's own
// readiness reports: Envoy health-checks a loopback endpoint on one of
// their ports (envoy.ReadinessEndpoints). Such a container needs no probe
// of its own, and a server bound to 127.0.0.1 could not pass one.
func probedByEnvoy(t *testing.T, o *Objects, d *appsv1.Deployment) map[string]bool {
	t.Helper()
	cm := o.configMap("-envoy")
	if cm == nil {
		return nil
	}
	b, err := envoy.ValidateBootstrapYAML([]byte(cm.Data["envoy.yaml"]))
	if err != nil {
		t.Fatalf("Envoy config: %v", err)
	}
	eps, err := envoy.ReadinessEndpoints(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, ep := range eps {
		ap, err := netip.ParseAddrPort(ep)
		if err != nil || !ap.Addr().IsLoopback() {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				if p.ContainerPort == int32(ap.Port()) {
					out[c.Name] = true
				}
			}
		}
	}
	return out
}

func containerPort(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestChartEnvoyConfigMirrorsSidecarFile keeps templates/_envoy.tpl and
// envoy/sidecar.yaml one config: with the file's ports they must render to
// the same Bootstrap, but for headers_with_underscores_action, which the
// chart sets to REJECT_REQUEST.
func TestChartEnvoyConfigMirrorsSidecarFile(t *testing.T) {
	out, _, err := render(loadChart(t), valueSets(t)["sidecar-values.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	got, err := envoy.ValidateBootstrapYAML([]byte(o.configMap("-envoy").Data["envoy.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile("../envoy/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := envoy.ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		m := protojson.MarshalOptions{Multiline: true}
		t.Errorf("chart Envoy config differs from envoy/sidecar.yaml\nchart: %s\nfile: %s", m.Format(got), m.Format(want))
	}
}

// storeURL is a shared state store for releases of several replicas (the
// default two need one), and storeBase sets it.
const (
	storeURL  = "redis://redis.mcp-extauthz.svc:6379/0"
	storeBase = "stateStore: {url: '" + storeURL + "'}\n"
)

// sidecarBase is a minimal valid sidecar release, for tests to extend.
const sidecarBase = storeBase + "mode: sidecar\nserverId: p\nsidecar: {mcpServer: {image: {repository: x, tag: '1'}}}\n"

func TestChartRejectsWrongValues(t *testing.T) {
	c := loadChart(t)
	tests := []struct {
		name string
		give string // YAML values over the defaults
		want string
	}{
		{"unknown mode", "mode: bogus", "'/mode'"},
		{"negative replicas", "replicaCount: -1", "'/replicaCount'"},
		{"zero replicas", "replicaCount: 0", "'/replicaCount'"},
		{"missing issuer", "auth: {issuer: ''}", "'/auth/issuer'"},
		{"null issuer", "auth: {issuer: null}", "'issuer'"},
		{"plain http issuer", "auth: {issuer: 'http://idp.example.com'}", "'/auth/issuer'"},
		{"no audience", "auth: {audiences: []}", "'/auth/audiences'"},
		{"empty policy", "policy: ''", "'/policy'"},
		{"typo at top level", "replicas: 3", "'replicas' not allowed"},
		{"sidecar without an MCP server image", "mode: sidecar", "sidecar.mcpServer.image.repository: your MCP server's image"},
		{"writable root filesystem", "securityContext: {readOnlyRootFilesystem: false}", "'/securityContext/readOnlyRootFilesystem'"},
		{"root allowed", "podSecurityContext: {runAsNonRoot: false}", "'/podSecurityContext/runAsNonRoot'"},
		{"no limits", "resources: {limits: null}", "missing property 'limits'"},
		{"port out of range", "ports: {grpc: 70000}", "'/ports/grpc'"},
		{"body limit zero", "maxRequestBytes: 0", "'/maxRequestBytes'"},
		{"CORS origin with a path", "mode: sidecar\nsidecar: {mcpServer: {image: {repository: x}}, envoy: {cors: {allowOrigins: [\"https://app.example.com/x\"]}}}", "'/sidecar/envoy/cors/allowOrigins/0'"},
		{"check timeout not an Envoy duration", "mode: sidecar\nsidecar: {mcpServer: {image: {repository: x}}, envoy: {checkTimeout: 500ms}}", "'/sidecar/envoy/checkTimeout'"},
		{"MCP server named like a chart container", "mode: sidecar\nsidecar: {mcpServer: {name: envoy, image: {repository: x}}}", "'/sidecar/mcpServer/name'"},
		{"MCP server container weakened", "mode: sidecar\nsidecar: {mcpServer: {image: {repository: x}, securityContext: {readOnlyRootFilesystem: false}}}", "'/sidecar/mcpServer/securityContext/readOnlyRootFilesystem'"},
		{"capability added", "securityContext: {capabilities: {drop: [ALL], add: [NET_ADMIN]}}", "'/securityContext/capabilities/add'"},
		{"PDB that blocks every drain", "replicaCount: 2\npodDisruptionBudget: {minAvailable: 2}", "minAvailable must be below replicaCount"},
		{"grace period within the drain", "terminationGracePeriodSeconds: 15", "terminationGracePeriodSeconds must exceed"},
		{"grace period shorter than a longer drain", "shutdown: {drainPeriodSeconds: 40, timeoutSeconds: 10}", "terminationGracePeriodSeconds must exceed"},
		{"grace period within the Envoy drain", sidecarBase + "shutdown: {drainPeriodSeconds: 5, timeoutSeconds: 10, envoyDrainSeconds: 30}", "+ shutdown.envoyDrainSeconds"},
		{"sidecar without serverId", "mode: sidecar\nsidecar: {mcpServer: {image: {repository: x, tag: '1'}}}", "serverId: the Pod serves one MCP server"},
		{"sidecar MCP server on latest", "mode: sidecar\nserverId: p\nsidecar: {mcpServer: {image: {repository: x, tag: latest}}}", "'/sidecar/mcpServer/image/tag'"},
		{"sidecar MCP server without a tag", "mode: sidecar\nserverId: p\nsidecar: {mcpServer: {image: {repository: x}}}", "sidecar.mcpServer.image.tag: its tag"},
		{"TLS in sidecar mode", sidecarBase + "tls: {secretName: t}", "tls.secretName is for mode=standalone"},
		{"Envoy memory limit not in Mi or Gi", storeBase + "mode: sidecar\nserverId: p\nsidecar: {mcpServer: {image: {repository: x, tag: '1'}}, envoy: {resources: {requests: {cpu: 1, memory: 1Mi}, limits: {cpu: 1, memory: 1G}}}}", "give it in Mi or Gi"},
		{"zero shutdown timeout", "shutdown: {drainPeriodSeconds: 5, timeoutSeconds: 0}", "'/shutdown/timeoutSeconds'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRefused(t, c, tt.give, tt.want) })
	}
}

// notes renders NOTES.txt with vals over the defaults.
func notes(t *testing.T, vals map[string]any) string {
	t.Helper()
	c := loadChart(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "r", Namespace: "n", IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		t.Fatal(err)
	}
	return files["mcp-extauthz/templates/NOTES.txt"]
}

// values parses give, YAML values over the chart's defaults.
func values(t *testing.T, give string) map[string]any {
	t.Helper()
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(give), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// wantRefused renders c with the values give and fails the test unless
// the chart refuses them with an error mentioning want.
func wantRefused(t *testing.T, c *chart.Chart, give, want string) {
	t.Helper()
	if _, _, err := render(c, values(t, give)); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error mentioning %q", err, want)
	}
}

// renderObjects renders the chart with YAML values over the defaults and
// decodes the result strictly.
func renderObjects(t *testing.T, give string) (*Objects, chartutil.Values) {
	t.Helper()
	out, v, err := render(loadChart(t), values(t, give))
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return o, v
}

// TestChartVariants renders the options no ci/ file uses and holds each to
// the release-wide checks plus its own property.
func TestChartVariants(t *testing.T) {
	tests := []struct {
		name  string
		give  string
		check func(t *testing.T, o *Objects)
	}{
		{"native sidecars", sidecarBase + "sidecar: {nativeSidecars: true, mcpServer: {image: {repository: x, tag: '1'}}}", func(t *testing.T, o *Objects) {
			ps := o.Deployments[0].Spec.Template.Spec
			if len(ps.Containers) != 1 || ps.Containers[0].Name != "mcp-server" {
				t.Errorf("containers %v, want only the MCP server (Envoy and extauthz are init containers)", ps.Containers)
			}
		}},
		{"IPv6", sidecarBase + "ipv6: true", func(t *testing.T, o *Objects) {
			b, err := envoy.ValidateBootstrapYAML([]byte(o.configMap("-envoy").Data["envoy.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range b.GetStaticResources().GetListeners() {
				if sa := l.GetAddress().GetSocketAddress(); sa.GetAddress() != "::" || !sa.GetIpv4Compat() {
					t.Errorf("listener %s on %s (ipv4_compat %v), want :: with ipv4_compat", l.GetName(), sa.GetAddress(), sa.GetIpv4Compat())
				}
			}
			if got, _ := env(container(o.Deployments[0], "extauthz"), "EXTAUTHZ_HTTP_ADDR"); got != "[::]:9192" {
				t.Errorf("EXTAUTHZ_HTTP_ADDR %q, want [::]:9192", got)
			}
		}},
		{"standalone mTLS", storeBase + "tls: {secretName: extauthz-tls}", func(t *testing.T, o *Objects) {
			ex := container(o.Deployments[0], "extauthz")
			for k, file := range map[string]string{"EXTAUTHZ_TLS_CERT_FILE": "tls.crt", "EXTAUTHZ_TLS_KEY_FILE": "tls.key", "EXTAUTHZ_CLIENT_CA_FILE": "ca.crt"} {
				p, _ := env(ex, k)
				if !strings.HasSuffix(p, "/"+file) || !mountedFrom(ex, o.Deployments[0].Spec.Template.Spec, p, "secret") {
					t.Errorf("%s=%q is not %s in a mounted Secret", k, p, file)
				}
			}
		}},
		{"writable volume and token", sidecarBase + "serviceAccount: {automountToken: false}\nsidecar: {mcpServer: {image: {repository: x, tag: '1'}, writableVolume: {enabled: true, mountPath: /data, sizeLimit: 1Gi}}}", func(t *testing.T, o *Objects) {
			mcp := container(o.Deployments[0], "mcp-server")
			if len(mcp.VolumeMounts) != 1 || mcp.VolumeMounts[0].MountPath != "/data" || mcp.VolumeMounts[0].ReadOnly {
				t.Errorf("MCP server mounts %+v, want a writable /data", mcp.VolumeMounts)
			}
		}},
		{"network policy off", storeBase + "networkPolicy: {enabled: false}", func(t *testing.T, o *Objects) {
			if len(o.NetworkPolicies) != 0 {
				t.Error("NetworkPolicy rendered while disabled")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, v := renderObjects(t, tt.give)
			checkRelease(t, o, v)
			tt.check(t, o)
		})
	}
}

// TestChartNotesWarnWithoutNetworkPolicy: with the policy off, NOTES.txt
// says what is exposed; on, it says a CNI must enforce it.
func TestChartNotesWarnWithoutNetworkPolicy(t *testing.T) {
	tests := []struct {
		give, want string
	}{
		{sidecarBase + "networkPolicy: {enabled: false}", "past\n  every check"},
		{storeBase + "networkPolicy: {enabled: false}", "Any Pod can call Check"},
		{storeBase + "networkPolicy: {enabled: true}", "enforced only by a CNI"},
		{"replicaCount: 1", "stateStore.url is empty: each Pod keeps"},
		{storeBase, "waitReplicas is 0"},
	}
	for _, tt := range tests {
		if got := notes(t, values(t, tt.give)); !strings.Contains(got, tt.want) {
			t.Errorf("%s: NOTES.txt lacks %q:\n%s", tt.give, tt.want, got)
		}
	}
}

// TestChartCIValuesCanBecomeReady: chart-testing installs every ci/ file,
// so each must reach readiness without outside help (keys without the
// placeholder issuer's discovery, an MCP server image tag) or say
// "render-only:" and why.
func TestChartCIValuesCanBecomeReady(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "# render-only:") {
			continue
		}
		_, v, err := render(loadChart(t), valueSets(t)[filepath.Base(f)])
		if err != nil {
			t.Fatal(err)
		}
		auth := v["auth"].(map[string]any)
		jwks := auth["jwks"].(map[string]any)
		if auth["issuer"] == "https://idp.example.com" && jwks["inline"] == "" {
			t.Errorf("%s: placeholder issuer with OIDC discovery never becomes ready: set auth.jwks.inline or mark it render-only", f)
		}
		if jwks["existingSecret"] != "" {
			t.Errorf("%s: auth.jwks.existingSecret needs a Secret chart-testing does not create", f)
		}
	}
}

// TestChartIstioValues: as Istio's provider, the callers of Check are the
// MCP workloads' own sidecar proxies: the NetworkPolicy admits the
// namespace and labels k8s/istio/authorizationpolicy.yaml selects, never
// istio-system; the principal mapping reaches the service.
func TestChartIstioValues(t *testing.T) {
	var ap AuthorizationPolicy
	decodeStrict(t, "istio/authorizationpolicy.yaml", &ap)
	out, _, err := render(loadChart(t), valueSets(t)["istio-values.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.NetworkPolicies) != 1 {
		t.Fatalf("%d NetworkPolicies", len(o.NetworkPolicies))
	}
	admitsWorkloads := false
	for _, r := range o.NetworkPolicies[0].Spec.Ingress {
		for _, p := range r.From {
			ns := ""
			if p.NamespaceSelector != nil {
				ns = p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			}
			if ns == "istio-system" {
				t.Error("istio-system admitted: Istio's control plane never calls Check")
			}
			if ns == ap.Namespace && p.PodSelector != nil && selects(p.PodSelector.MatchLabels, ap.Spec.Selector.MatchLabels) {
				admitsWorkloads = true
			}
		}
	}
	if !admitsWorkloads {
		t.Errorf("NetworkPolicy does not admit the workloads the AuthorizationPolicy selects (%s %v)", ap.Namespace, ap.Spec.Selector.MatchLabels)
	}
	ex := container(o.Deployments[0], "extauthz")
	if got, _ := env(ex, "EXTAUTHZ_SERVER_ID_BY_PRINCIPAL"); got != "spiffe://cluster.local/ns/billing/sa/billing-mcp=billing" {
		t.Errorf("EXTAUTHZ_SERVER_ID_BY_PRINCIPAL = %q", got)
	}
	if o.Deployments[0].Spec.Template.Labels["sidecar.istio.io/inject"] != "true" {
		t.Error("the service's Pods are not in the mesh")
	}
}
