package k8s

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// TestGatewayManifests: `kubectl apply -k k8s/gateway` runs envoy/gateway.yaml
// on Kubernetes: its ConfigMap holds exactly that file, the Deployment runs
// Envoy on it with ports, probes, concurrency and memory that fit the
// bootstrap, the Service exposes the MCP listener only, and the Pods carry
// what the extauthz and MCP server NetworkPolicies admit.
func TestGatewayManifests(t *testing.T) {
	o := build(t, "gateway")
	if len(o.Namespaces) != 1 || o.Namespaces[0].Name != "mcp-gateway" || len(o.Deployments) != 1 || len(o.Services) != 1 ||
		len(o.ConfigMaps) != 1 || len(o.ServiceAccounts) != 1 || len(o.PDBs) != 1 || len(o.NetworkPolicies) != 0 {
		t.Fatalf("want Namespace mcp-gateway, one Deployment, Service, ConfigMap, ServiceAccount and PDB, no NetworkPolicy (networkpolicy-mcp-server.yaml goes to the servers' namespaces); got %+v", o.all())
	}
	checkNamespaces(t, o, "mcp-gateway")
	d := o.Deployments[0]
	checkPodTemplate(t, "Deployment "+d.Name, d.Spec.Template, nil)
	checkPodReferences(t, o, d, nil)

	// The ConfigMap is envoy/gateway.yaml, byte for byte, under a hashed
	// name (a change rolls the Pods: Envoy reads its bootstrap at start).
	want, err := os.ReadFile("../envoy/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := o.ConfigMaps[0]
	if got := cm.Data["envoy.yaml"]; got != string(want) {
		t.Fatalf("ConfigMap %s envoy.yaml differs from envoy/gateway.yaml: cp envoy/gateway.yaml k8s/gateway/envoy.yaml", cm.Name)
	}
	if cm.Name == "mcp-gateway-envoy" || !strings.HasPrefix(cm.Name, "mcp-gateway-envoy-") {
		t.Errorf("ConfigMap %s: want mcp-gateway-envoy with kustomize's hash suffix", cm.Name)
	}
	b, err := envoy.ValidateBootstrapYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := envoy.CheckInvariants(b); err != nil {
		t.Fatal(err)
	}

	ev := container(d, "envoy")
	if ev == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers %v, want envoy alone", d.Spec.Template.Spec.Containers)
	}
	if !strings.Contains(ev.Image, "@sha256:") {
		t.Errorf("envoy image %q is not pinned by digest", ev.Image)
	}
	if !mountedFrom(ev, d.Spec.Template.Spec, argAfter(ev.Args, "--config-path"), "configMap") ||
		filepath.Base(argAfter(ev.Args, "--config-path")) != "envoy.yaml" {
		t.Errorf("envoy --config-path %q is not the ConfigMap's envoy.yaml", argAfter(ev.Args, "--config-path"))
	}
	cpu := ev.Resources.Limits.Cpu().MilliValue()
	if got, want := argAfter(ev.Args, "--concurrency"), strconv.FormatInt((cpu+999)/1000, 10); got != want {
		t.Errorf("envoy --concurrency %q, want %s (the CPU limit)", got, want)
	}
	heap, err := envoy.HeapLimit(b)
	if err != nil {
		t.Fatal(err)
	}
	// The overload manager must act before the kubelet's OOM kill, and not
	// leave most of the container unused.
	if limit := uint64(ev.Resources.Limits.Memory().Value()); heap == 0 || heap > limit*8/10 || heap < limit/2 {
		t.Errorf("Envoy heap limit %d for a memory limit of %d: want 50-80%% of it", heap, limit)
	}

	// Container ports: exactly the listeners off loopback; readiness is the
	// health listener's /ready, the Service exposes the MCP listener only.
	var listeners []int32
	health := ""
	for _, l := range b.GetStaticResources().GetListeners() {
		sa := l.GetAddress().GetSocketAddress()
		if a, err := netip.ParseAddr(sa.GetAddress()); err == nil && !a.IsLoopback() {
			listeners = append(listeners, int32(sa.GetPortValue()))
		}
		if l.GetName() == "health" {
			health = strconv.Itoa(int(sa.GetPortValue()))
		}
	}
	var ports []int32
	for _, p := range ev.Ports {
		ports = append(ports, p.ContainerPort)
	}
	slices.Sort(listeners)
	slices.Sort(ports)
	if !slices.Equal(ports, listeners) {
		t.Errorf("envoy container ports %v, want the bootstrap's listeners %v", ports, listeners)
	}
	if rp := ev.ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/ready" || strconv.Itoa(int(portOf(ev, rp.HTTPGet.Port))) != health {
		t.Errorf("envoy readiness %+v, want GET /ready on the health listener :%s", rp, health)
	}
	svc := o.Services[0]
	labels := d.Spec.Template.Labels
	if !selects(svc.Spec.Selector, labels) || !selects(d.Spec.Selector.MatchLabels, labels) || !selects(o.PDBs[0].Spec.Selector.MatchLabels, labels) {
		t.Error("Service, Deployment or PDB selector does not select the Pods")
	}
	mcpPort := b.GetStaticResources().GetListeners()[0].GetAddress().GetSocketAddress().GetPortValue()
	if len(svc.Spec.Ports) != 1 || portOf(ev, svc.Spec.Ports[0].TargetPort) != int32(mcpPort) {
		t.Errorf("Service ports %+v, want the MCP listener :%d only", svc.Spec.Ports, mcpPort)
	}
	if !pdbAllowsDrain(o.PDBs[0], int(*d.Spec.Replicas)) || !pdbAllowsDrain(o.PDBs[0], 1) {
		t.Error("PDB blocks node drains")
	}
	if d.Spec.Template.Spec.ServiceAccountName != o.ServiceAccounts[0].Name {
		t.Errorf("Pods run as %q, not the ServiceAccount %q", d.Spec.Template.Spec.ServiceAccountName, o.ServiceAccounts[0].Name)
	}
	pre := ev.Lifecycle
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; pre == nil || pre.PreStop == nil || pre.PreStop.Sleep == nil || g == nil || *g <= pre.PreStop.Sleep.Seconds {
		t.Errorf("envoy preStop %+v: want a sleep shorter than the grace period", pre)
	}

	// Who may reach extauthz and the MCP servers: these Pods, in this
	// namespace (the standalone overlay's and the MCP server namespaces'
	// NetworkPolicies).
	ns := o.Namespaces[0].Name
	admits := func(file string) bool {
		t.Helper()
		var np *Objects
		if strings.HasSuffix(file, ".yaml") {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if np, err = decodeObjects(raw); err != nil {
				t.Fatal(err)
			}
		} else {
			np = build(t, file)
		}
		for _, p := range np.NetworkPolicies {
			for _, r := range p.Spec.Ingress {
				for _, peer := range r.From {
					if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == ns &&
						peer.PodSelector != nil && selects(peer.PodSelector.MatchLabels, labels) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, f := range []string{"kustomize/overlays/standalone", "gateway/networkpolicy-mcp-server.yaml"} {
		if !admits(f) {
			t.Errorf("%s does not admit the gateway's Pods (namespace %s, labels %v)", f, ns, labels)
		}
	}
}

// TestGatewayFolderIsComplete: every manifest of k8s/gateway is in its
// kustomization but the per-server NetworkPolicy, so none is forgotten by
// `kubectl apply -k k8s/gateway`.
func TestGatewayFolderIsComplete(t *testing.T) {
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	raw, err := os.ReadFile("gateway/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{"kustomization.yaml": true, "networkpolicy-mcp-server.yaml": true}
	for _, r := range k.Resources {
		used[r] = true
	}
	for _, g := range k.ConfigMapGenerator {
		for _, f := range g.Files {
			used[f] = true
		}
	}
	files, err := filepath.Glob("gateway/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !used[filepath.Base(f)] {
			t.Errorf("%s is not in gateway/kustomization.yaml", f)
		}
	}
	if slices.Contains(k.Resources, "networkpolicy-mcp-server.yaml") {
		t.Error("networkpolicy-mcp-server.yaml belongs to the MCP servers' namespaces, not the gateway's build (which sets namespace mcp-gateway)")
	}
}
