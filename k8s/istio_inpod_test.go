package k8s

import (
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// inPod decodes every manifest of k8s/istio/in-pod, strictly, as one
// `kubectl apply -f k8s/istio/in-pod/`.
func inPod(t *testing.T) *Objects {
	t.Helper()
	files, err := filepath.Glob("istio/in-pod/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no istio/in-pod/*.yaml: %v", err)
	}
	var all []byte
	for _, f := range files {
		all = append(append(all, mustRead(t, f)...), "\n---\n"...)
	}
	o, err := decodeObjects(all)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestIstioInPodLayout: the extauthz container runs beside the MCP server
// in its Pod on 127.0.0.1; the CUSTOM policy on those Pods names the mesh
// provider mcp-extauthz-local, which serviceentry-local.yaml resolves to
// exactly that loopback address; the server id, policy, probes and the
// underscore EnvoyFilter fit.
func TestIstioInPodLayout(t *testing.T) {
	o := inPod(t)
	if len(o.Deployments) != 1 || len(o.AuthzPolicies) != 1 || len(o.Services) != 1 || len(o.ConfigMaps) != 1 || len(o.ServiceAccounts) != 1 {
		t.Fatalf("want one Deployment, AuthorizationPolicy, Service, ConfigMap and ServiceAccount: %+v", o.all())
	}
	d, ap := o.Deployments[0], o.AuthzPolicies[0]
	ns := d.Namespace
	checkNamespaces(t, o, ns)
	checkPodTemplate(t, "Deployment "+d.Name, d.Spec.Template, nil)
	checkPodReferences(t, o, d, nil)
	labels := d.Spec.Template.Labels
	if labels["sidecar.istio.io/inject"] != "true" {
		t.Error("the Pods are not injected: no proxy would call the provider")
	}
	if !selects(d.Spec.Selector.MatchLabels, labels) || !selects(o.Services[0].Spec.Selector, labels) {
		t.Error("Deployment or Service selector does not select the Pods")
	}

	// The CUSTOM policy: every request of these Pods, to the local provider.
	providers := meshProviders(t)
	checkAuthorizationPolicy(t, ap, providers)
	if ap.Spec.Provider == nil || ap.Spec.Provider.Name != "mcp-extauthz-local" || ap.Namespace != ns || !selects(ap.Spec.Selector.MatchLabels, labels) {
		t.Errorf("AuthorizationPolicy %s/%s provider %+v selector %v: want mcp-extauthz-local on the Pods of %s", ap.Namespace, ap.Name, ap.Spec.Provider, ap.Spec.Selector, d.Name)
	}
	var se ServiceEntry
	decodeStrict(t, "istio/serviceentry-local.yaml", &se)
	var ef EnvoyFilter
	decodeStrict(t, "istio/envoyfilter-underscores.yaml", &ef)
	if se.Namespace != ns || ef.Namespace != ns || ef.Spec.WorkloadSelector == nil || !selects(ef.Spec.WorkloadSelector.Labels, labels) {
		t.Errorf("ServiceEntry in %s, EnvoyFilter in %s selecting %+v: want both with the Pods in %s", se.Namespace, ef.Namespace, ef.Spec.WorkloadSelector, ns)
	}

	// The provider's address is this Pod's extauthz, on loopback only.
	ex := container(d, "extauthz")
	mcp := container(d, "mcp-server")
	if ex == nil || mcp == nil || len(d.Spec.Template.Spec.Containers) != 2 {
		t.Fatalf("containers %v, want mcp-server and extauthz", d.Spec.Template.Spec.Containers)
	}
	grpcAddr, _ := env(ex, "EXTAUTHZ_GRPC_ADDR")
	gap, err := netip.ParseAddrPort(grpcAddr)
	if err != nil || !gap.Addr().IsLoopback() {
		t.Errorf("EXTAUTHZ_GRPC_ADDR %q: want loopback, so only the Pod's proxy calls Check", grpcAddr)
	}
	if got := se.Spec.Endpoints[0].Address + ":" + strconv.Itoa(se.Spec.Ports[0].Number); got != gap.String() {
		t.Errorf("ServiceEntry endpoint %s, extauthz listens on %s", got, grpcAddr)
	}
	if se.Spec.Hosts[0]+":"+strconv.Itoa(se.Spec.Ports[0].Number) != providers["mcp-extauthz-local"] {
		t.Errorf("ServiceEntry %s:%d is not the provider's %s", se.Spec.Hosts[0], se.Spec.Ports[0].Number, providers["mcp-extauthz-local"])
	}
	for _, e := range ex.Env {
		if !knownEnv[e.Name] {
			t.Errorf("extauthz env %s is no flag of extauthz serve", e.Name)
		}
	}
	if id, _ := env(ex, "EXTAUTHZ_SERVER_ID"); id == "" {
		t.Error("Istio sets no context extension: EXTAUTHZ_SERVER_ID must name the server")
	}
	if v, _ := env(ex, "EXTAUTHZ_RESPONSE_SEAM"); v != "true" {
		t.Error("EXTAUTHZ_RESPONSE_SEAM is not true: envoyfilter-extproc-local.yaml sends every answer to this Pod's processor, so each would fail closed")
	}
	if v, _ := env(ex, "EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK"); v == "true" && (d.Spec.Replicas == nil || *d.Spec.Replicas != 1) {
		t.Error("a memory state store in each of several Pods: approvals and task bindings would hold per Pod")
	}
	checkExtauthzProbes(t, "in-pod", ex)
	checkGracePeriod(t, "in-pod", d, ex)
	if port := d.Spec.Template.Annotations["prometheus.io/port"]; port != strconv.Itoa(int(containerPort(ex, "metrics"))) {
		t.Errorf("prometheus.io/port %q: want the extauthz HTTP port (Istio merges it into the proxy's scrape)", port)
	}

	// The policy: the reference policy of the example server, mounted
	// where EXTAUTHZ_POLICY points.
	p, _ := env(ex, "EXTAUTHZ_POLICY")
	if !mountedFrom(ex, d.Spec.Template.Spec, p, "configMap") {
		t.Errorf("EXTAUTHZ_POLICY=%s is not inside a ConfigMap mount", p)
	}
	want, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := o.ConfigMaps[0].Data[filepath.Base(p)]
	if src != string(want) {
		t.Error("istio/in-pod/configmap-policy.yaml differs from examples/policy.yaml")
	}
	if _, err := policy.Compile(p, []byte(src)); err != nil {
		t.Error(err)
	}

	// The server: reached by the proxy on the Pod IP, behind the check.
	listen := argAfter(mcp.Args, "--listen")
	lap, err := netip.ParseAddrPort(listen)
	if err != nil || !lap.Addr().IsUnspecified() || int32(lap.Port()) != containerPort(mcp, "mcp") {
		t.Errorf("mcp-server --listen %q: want 0.0.0.0 on its mcp port (Istio's proxy dials the Pod IP)", listen)
	}
	if sp := o.Services[0].Spec.Ports; len(sp) != 1 || sp[0].TargetPort.StrVal != "mcp" {
		t.Errorf("Service ports %+v, want the MCP server's port only", sp)
	}
	if !strings.Contains(mcp.Image, "example-payments-mcp") {
		t.Errorf("mcp-server image %q, want the example server whose targets the policy names", mcp.Image)
	}
}

// TestIstioMeshConfigHeader: mesh-config.yaml's comments never tell to
// `istioctl install -f` it alone, which README forbids (it re-installs
// Istio with only these settings).
func TestIstioMeshConfigHeader(t *testing.T) {
	for i, l := range strings.Split(string(mustRead(t, "istio/mesh-config.yaml")), "\n") {
		if strings.Contains(l, "istioctl install -f") && !strings.Contains(strings.ToLower(l), "never") {
			t.Errorf("istio/mesh-config.yaml:%d: %q recommends installing the file alone", i+1, l)
		}
	}
}
