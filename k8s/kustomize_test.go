package k8s

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// build runs `kustomize build dir` (what `kubectl apply -k` applies) on the
// real filesystem with kustomize's default, root-only load restrictions.
func build(t *testing.T, dir string) *Objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	y, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeObjects(y)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestKustomizeBuilds(t *testing.T) {
	tests := []struct {
		dir        string
		containers []string
		grpcAddr   string // want EXTAUTHZ_GRPC_ADDR
		netpol     bool
		authz      bool
	}{
		{dir: "kustomize/base", containers: []string{"extauthz"}, grpcAddr: "0.0.0.0:9191"},
		{dir: "kustomize/overlays/standalone", containers: []string{"extauthz"}, grpcAddr: "0.0.0.0:9191", netpol: true},
		{dir: "kustomize/overlays/istio", containers: []string{"extauthz"}, grpcAddr: "0.0.0.0:9191", authz: true},
		{dir: "kustomize/overlays/sidecar", containers: []string{"extauthz", "envoy", "mcp-server"}, grpcAddr: "127.0.0.1:9191", netpol: true},
	}
	entries, err := os.ReadDir("kustomize/overlays")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(tests)-1 {
		t.Fatalf("kustomize/overlays has %d entries; add the new ones to this table", len(entries))
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			o := build(t, tt.dir)
			if len(o.Deployments) != 1 || len(o.PDBs) != 1 || o.service("mcp-extauthz") == nil {
				t.Fatalf("want one Deployment, PDB and Service mcp-extauthz; got %d, %d, %v", len(o.Deployments), len(o.PDBs), o.Services)
			}
			d := o.Deployments[0]
			checkPodTemplate(t, "Deployment "+d.Name, d.Spec.Template, probedByEnvoy(t, o, d))
			checkNamespaces(t, o, baseNamespace(t))
			checkPodReferences(t, o, d, nil)
			if ex := container(d, "extauthz"); ex != nil {
				checkExtauthzProbes(t, tt.dir, ex)
				checkGracePeriod(t, tt.dir, d, ex)
				checkNetpolHTTP(t, o, ex, false)
			}
			// A patch to one replica must not block drains either.
			for _, n := range []int{int(*d.Spec.Replicas), 1} {
				if !pdbAllowsDrain(o.PDBs[0], n) {
					t.Errorf("PDB %s blocks every drain at %d replicas: minAvailable %v maxUnavailable %v", o.PDBs[0].Name, n, o.PDBs[0].Spec.MinAvailable, o.PDBs[0].Spec.MaxUnavailable)
				}
			}
			labels := d.Spec.Template.Labels
			if !selects(d.Spec.Selector.MatchLabels, labels) || !selects(o.PDBs[0].Spec.Selector.MatchLabels, labels) {
				t.Error("Deployment or PDB selector does not select the Pods")
			}
			for _, svc := range o.Services {
				if !selects(svc.Spec.Selector, labels) {
					t.Errorf("Service %s does not select the Pods", svc.Name)
				}
				for _, sp := range svc.Spec.Ports {
					if !podDeclaresPort(d.Spec.Template.Spec, sp.TargetPort.StrVal) {
						t.Errorf("Service %s port %s targets %q, which no container declares", svc.Name, sp.Name, sp.TargetPort.StrVal)
					}
				}
			}
			var names []string
			for _, c := range d.Spec.Template.Spec.Containers {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.containers, ",") {
				t.Errorf("containers %v, want %v", names, tt.containers)
			}
			ex := container(d, "extauthz")
			for _, e := range ex.Env {
				if !knownEnv[e.Name] {
					t.Errorf("extauthz env %s is no flag of extauthz serve", e.Name)
				}
			}
			// Several replicas share one state store: serve refuses the
			// memory store there without the acknowledgment.
			store, _ := env(ex, "EXTAUTHZ_STATE_STORE")
			if ack, _ := env(ex, "EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK"); (d.Spec.Replicas == nil || *d.Spec.Replicas > 1) && (store == "" || store == "memory") && ack != "true" {
				t.Errorf("%v replicas on the memory store: serve refuses to start", d.Spec.Replicas)
			}
			if got, _ := env(ex, "EXTAUTHZ_GRPC_ADDR"); got != tt.grpcAddr {
				t.Errorf("EXTAUTHZ_GRPC_ADDR = %q, want %q", got, tt.grpcAddr)
			}
			// Exactly this name: no hash suffix, so a policy change updates
			// the ConfigMap in place (hot reload) instead of rolling the Pods.
			cm := o.configMap("mcp-extauthz-policy")
			if cm == nil || cm.Name != "mcp-extauthz-policy" {
				t.Fatalf("policy ConfigMap %v, want exactly mcp-extauthz-policy", cm)
			}
			if _, err := policy.Compile("policy.yaml", []byte(cm.Data["policy.yaml"])); err != nil {
				t.Errorf("policy: %v", err)
			}
			if p, _ := env(ex, "EXTAUTHZ_POLICY"); !mountedFrom(ex, d.Spec.Template.Spec, p, "configMap") {
				t.Errorf("EXTAUTHZ_POLICY=%s is not inside a ConfigMap mount", p)
			}
			if got := len(o.NetworkPolicies) == 1; got != tt.netpol {
				t.Errorf("NetworkPolicy present = %v, want %v", got, tt.netpol)
			}
			for _, np := range o.NetworkPolicies {
				if !selects(np.Spec.PodSelector.MatchLabels, labels) {
					t.Error("NetworkPolicy does not select the Pods")
				}
			}
			if got := len(o.AuthzPolicies) == 1; got != tt.authz {
				t.Errorf("AuthorizationPolicy present = %v, want %v", got, tt.authz)
			}
			// Under Istio the MCP workloads' sidecars reject underscore
			// header names and run the response seam
			// (TestIstioRejectsUnderscoreHeaders, TestIstioResponseSeam
			// check the files).
			efs := map[string]bool{}
			for _, ef := range o.EnvoyFilters {
				efs[ef.Name] = true
			}
			if got := efs["mcp-reject-underscore-headers"] && efs["mcp-response-seam"] && len(efs) == 2; got != tt.authz {
				t.Errorf("EnvoyFilters %v, want mcp-reject-underscore-headers and mcp-response-seam: %v", efs, tt.authz)
			}
			for _, ap := range o.AuthzPolicies {
				checkAuthorizationPolicy(t, ap, meshProviders(t))
				if id, ok := env(ex, "EXTAUTHZ_SERVER_ID"); !ok || id == "" {
					t.Error("Istio sets no context extension: EXTAUTHZ_SERVER_ID must name the server")
				}
			}
			if tt.grpcAddr == "127.0.0.1:9191" {
				checkKustomizeSidecar(t, o)
			}
		})
	}
}

func checkKustomizeSidecar(t *testing.T, o *Objects) {
	t.Helper()
	cm := o.configMap("mcp-extauthz-envoy")
	if cm == nil {
		t.Fatal("no Envoy ConfigMap")
	}
	want, err := os.ReadFile("../envoy/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoy.ValidateBootstrapYAML([]byte(cm.Data["envoy.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	// The overlay is envoy/sidecar.yaml (headers_with_underscores_action:
	// REJECT_REQUEST included, asserted below).
	wantB, err := envoy.ValidateBootstrapYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(b, wantB) {
		t.Error("kustomize/overlays/sidecar/envoy.yaml differs from envoy/sidecar.yaml")
	}
	if err := envoy.CheckInvariants(b); err != nil {
		t.Fatal(err)
	}
	hcms, err := envoy.HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hcms {
		if a := h.HCM.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(); envoy.Forwards(h.HCM) && a != corev3.HttpProtocolOptions_REJECT_REQUEST {
			t.Errorf("listener %s: headers_with_underscores_action %v, want REJECT_REQUEST", h.Listener, a)
		}
	}
	d := o.Deployments[0]
	c := container(d, "extauthz")
	addr, _ := env(c, "EXTAUTHZ_GRPC_ADDR")
	if ap, err := netip.ParseAddrPort(addr); err != nil || envoy.Endpoints(envoy.Cluster(b, "ext_authz"))[0] != ap.String() {
		t.Errorf("Envoy ext_authz cluster %v does not reach EXTAUTHZ_GRPC_ADDR %s", envoy.Endpoints(envoy.Cluster(b, "ext_authz")), addr)
	}
	if p := c.ReadinessProbe; p.Exec == nil || strings.Join(p.Exec.Command, " ") != "/extauthz healthcheck --addr "+addr {
		t.Errorf("sidecar extauthz readiness = %+v, want exec healthcheck on %s", p, addr)
	}
	mcp := container(d, "mcp-server")
	if got := envoy.Endpoints(envoy.Cluster(b, "mcp_server")); len(got) != 1 || !strings.HasSuffix(got[0], ":"+strconv.Itoa(int(containerPort(mcp, "mcp-server")))) {
		t.Errorf("Envoy mcp_server cluster %v does not reach the mcp-server container port", got)
	}
	if mcp.Image != "ghcr.io/mcp-extauthz/example-payments-mcp:0.1.0" {
		t.Errorf("mcp-server image %q: the images transformer did not apply", mcp.Image)
	}
	if cm.Name == "mcp-extauthz-envoy" {
		t.Error("Envoy ConfigMap without a hash suffix: a bootstrap change would not restart Envoy")
	}
	ev := container(d, "envoy")
	if !strings.Contains(ev.Image, "@sha256:") {
		t.Errorf("envoy image %q is not pinned by digest", ev.Image)
	}
	// Only Envoy's port is reachable: not the MCP server's, not gRPC.
	if len(o.NetworkPolicies) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(o.NetworkPolicies))
	}
	grpc, _ := netip.ParseAddrPort(addr)
	for _, p := range []struct {
		c    *corev1.Container
		port int32
	}{{mcp, containerPort(mcp, "mcp-server")}, {c, int32(grpc.Port())}} {
		if covered, _ := netpolOpens(o.NetworkPolicies[0], p.c, p.port); covered {
			t.Errorf("NetworkPolicy admits port %d of %s", p.port, p.c.Name)
		}
	}
	if covered, _ := netpolOpens(o.NetworkPolicies[0], ev, containerPort(ev, "mcp")); !covered {
		t.Error("NetworkPolicy does not admit Envoy's MCP port")
	}
	if svc := o.service("mcp-extauthz"); len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != "mcp" {
		t.Errorf("MCP Service ports %+v, want Envoy's mcp port only", svc.Spec.Ports)
	}
	checkEnvoyArgs(t, ev, b)
	checkShutdownOrder(t, d, c, ev, mcp, false, b)
}

// baseNamespace is the namespace kustomize/base sets on its objects.
func baseNamespace(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("kustomize/base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	if k.Namespace == "" {
		t.Fatal("kustomize/base sets no namespace")
	}
	return k.Namespace
}
