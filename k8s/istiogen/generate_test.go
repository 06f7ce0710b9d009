package istiogen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/config/mesh"
)

// podIP is the address of the one Pod each layout's Deployment becomes, and
// of the proxy generated for it.
const podIP = "10.8.0.10"

// proxyVersion is the istio-proxy version the generated config is for: the
// pin's release line (doc.go).
const proxyVersion = "1.31.0"

// kubeFile is a file of Kubernetes objects; namespace, if set, is the one
// kustomize would give objects that name none.
type kubeFile struct{ path, namespace string }

// layout is one of k8s/istio's layouts as a user applies it: the Istio
// objects (kubectl apply), the Kubernetes objects of the MCP workload and
// of the provider's service, and what Istio must name.
type layout struct {
	name  string
	istio []string   // Istio objects (AuthorizationPolicy, EnvoyFilter, ServiceEntry)
	kube  []kubeFile // Services and Deployments; a Deployment becomes one Pod at podIP
	// mcpPort is the MCP container's port: Istio's inbound route and
	// cluster "inbound|PORT||" the seam's routes are patched into.
	mcpPort uint32
	// authzCluster is the CUSTOM provider's cluster as Istio names it
	// (outbound|PORT||HOST): ext_authz and ext_proc both call it.
	authzCluster string
}

// layouts: the in-pod layout (k8s/istio/in-pod, the provider
// mcp-extauthz-local on the Pod's loopback) and the shared one (a
// standalone release in namespace mcp-extauthz, provider mcp-extauthz).
// testdata/shared-workload.yaml is a sample MCP workload for the shared
// layout, on the port envoyfilter-extproc.yaml names (8080).
var layouts = []layout{
	{
		name: "in-pod",
		istio: []string{"../istio/in-pod/authorizationpolicy.yaml", "../istio/serviceentry-local.yaml",
			"../istio/envoyfilter-extproc-local.yaml", "../istio/envoyfilter-underscores.yaml"},
		kube:         []kubeFile{{path: "../istio/in-pod/service.yaml"}, {path: "../istio/in-pod/deployment.yaml"}},
		mcpPort:      3000,
		authzCluster: "outbound|9191||mcp-extauthz.local",
	},
	{
		name: "shared",
		istio: []string{"../istio/authorizationpolicy.yaml", "../istio/envoyfilter-extproc.yaml",
			"../istio/envoyfilter-underscores.yaml"},
		kube:         []kubeFile{{path: "testdata/shared-workload.yaml"}, {path: "../kustomize/base/service.yaml", namespace: "mcp-extauthz"}},
		mcpPort:      8080,
		authzCluster: "outbound|9191||mcp-extauthz.mcp-extauthz.svc.cluster.local",
	},
}

// generated is what istiod sends one sidecar: listeners (LDS), route
// configurations (RDS), clusters (CDS) and the EDS clusters' endpoints.
type generated struct {
	listeners []*listenerv3.Listener
	routes    []*routev3.RouteConfiguration
	clusters  []*clusterv3.Cluster
	endpoints []*endpointv3.ClusterLoadAssignment
}

// meshConfig reads k8s/istio/mesh-config.yaml's spec.meshConfig over
// Istio's defaults, as istiod reads its mesh config.
func meshConfig(t *testing.T) string {
	t.Helper()
	var op struct {
		Spec struct {
			MeshConfig map[string]any `json:"meshConfig"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(read(t, "../istio/mesh-config.yaml"), &op); err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(op.Spec.MeshConfig)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// service decodes one Service of f, with the namespace and port protocol
// the API server and kustomize would give it.
func service(t *testing.T, f kubeFile, doc []byte) *corev1.Service {
	t.Helper()
	s := &corev1.Service{}
	if err := yaml.UnmarshalStrict(doc, s); err != nil {
		t.Fatalf("%s: %v", f.path, err)
	}
	if s.Namespace == "" {
		s.Namespace = f.namespace
	}
	for i := range s.Spec.Ports {
		if s.Spec.Ports[i].Protocol == "" {
			s.Spec.Ports[i].Protocol = corev1.ProtocolTCP // the API server's default
		}
	}
	return s
}

// kubeObjects decodes l's Kubernetes objects; each Deployment becomes one
// ready Pod at podIP (its template, as the ReplicaSet would create it).
func kubeObjects(t *testing.T, l layout) (objs []runtime.Object, pod *corev1.Pod) {
	t.Helper()
	for _, f := range l.kube {
		for _, doc := range bytes.Split(read(t, f.path), []byte("\n---\n")) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			switch meta.Kind {
			case "Service":
				objs = append(objs, service(t, f, doc))
			case "Deployment":
				d := &appsv1.Deployment{}
				if err := yaml.UnmarshalStrict(doc, d); err != nil {
					t.Fatalf("%s: %v", f.path, err)
				}
				if pod != nil {
					t.Fatalf("%s: a second Deployment", f.path)
				}
				for _, c := range d.Spec.Template.Spec.Containers {
					for i := range c.Ports {
						if c.Ports[i].Protocol == "" {
							c.Ports[i].Protocol = corev1.ProtocolTCP // the API server's default
						}
					}
				}
				pod = &corev1.Pod{
					TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-0", Namespace: d.Namespace,
						Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
					Spec: d.Spec.Template.Spec,
					Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
						Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
				}
				objs = append(objs, pod)
			default:
				t.Fatalf("%s: kind %q", f.path, meta.Kind)
			}
		}
	}
	if pod == nil {
		t.Fatalf("layout %s: no Deployment", l.name)
	}
	return objs, pod
}

// generate runs Istio's config generation (the fake discovery server of
// Istio's pilot tests) over l, with edit applied to each Istio object
// file's content first (nil: as shipped), and returns what the MCP Pod's
// sidecar receives.
func generate(t *testing.T, l layout, edit func(path string, y []byte) []byte) generated {
	t.Helper()
	mc, err := mesh.ApplyMeshConfigDefaults(meshConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	var cfg bytes.Buffer
	for _, p := range l.istio {
		y := read(t, p)
		if edit != nil {
			y = edit(p, y)
		}
		fmt.Fprintf(&cfg, "%s\n---\n", y)
	}
	objs, pod := kubeObjects(t, l)
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{MeshConfig: mc, ConfigString: cfg.String(), KubernetesObjects: objs})
	p := s.SetupProxy(&model.Proxy{
		ID:              pod.Name + "." + pod.Namespace,
		ConfigNamespace: pod.Namespace,
		IPAddresses:     []string{podIP},
		Labels:          pod.Labels,
		Metadata: &model.NodeMetadata{
			Namespace:      pod.Namespace,
			Labels:         pod.Labels,
			ClusterID:      constants.DefaultClusterName,
			IstioVersion:   proxyVersion,
			ServiceAccount: pod.Spec.ServiceAccountName,
		},
	})
	g := generated{listeners: s.Listeners(p), clusters: s.Clusters(p), endpoints: s.Endpoints(p)}
	g.routes = s.RoutesFromListeners(p, g.listeners)
	return g
}

// inboundChain is one filter chain of the sidecar's inbound listener for
// the MCP port, and its HTTP connection manager.
type inboundChain struct {
	name string
	tls  bool // the chain Istio's mTLS traffic takes
	hcm  *hcmv3.HttpConnectionManager
	rc   *routev3.RouteConfiguration // inline, or the RDS one it names
}

// inboundChains returns every filter chain of the inbound listener
// (virtualInbound) that matches destination port port and runs an HTTP
// connection manager.
func inboundChains(t *testing.T, g generated, port uint32) []inboundChain {
	t.Helper()
	var out []inboundChain
	for _, l := range g.listeners {
		if l.GetName() != "virtualInbound" {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			if fc.GetFilterChainMatch().GetDestinationPort().GetValue() != port {
				continue
			}
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if tc := f.GetTypedConfig(); tc == nil || !tc.MessageIs(h) {
					continue
				}
				if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
					t.Fatal(err)
				}
				c := inboundChain{name: fc.GetName(), tls: fc.GetTransportSocket() != nil, hcm: h, rc: h.GetRouteConfig()}
				if name := h.GetRds().GetRouteConfigName(); name != "" {
					for _, rc := range g.routes {
						if rc.GetName() == name {
							c.rc = rc
						}
					}
					if c.rc == nil {
						t.Fatalf("filter chain %s: RDS %s not generated", fc.GetName(), name)
					}
				}
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no inbound HTTP filter chain for port %d", port)
	}
	return out
}

func cluster(g generated, name string) *clusterv3.Cluster {
	for _, c := range g.clusters {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// writeOrCompare writes b to path under -update, else fails unless path
// holds b.
func writeOrCompare(t *testing.T, path string, b []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := read(t, path); !bytes.Equal(got, b) {
		t.Errorf("%s is not what Istio generates from k8s/istio today: run go test -run %s -update in k8s/istiogen", path, t.Name())
	}
}
