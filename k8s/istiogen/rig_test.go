package istiogen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// The rig (../shared/e2e-sdk/run-e2e.sh) runs the in-pod layout's sidecar:
// the MCP server on 127.0.0.1:3000 and extauthz on 127.0.0.1:9191 are the
// addresses it remaps onto its own processes, as the in-pod Pod has them.
const (
	rigLayout    = "in-pod"
	rigBootstrap = "testdata/istio-inpod-sidecar.yaml"
	// rigMCPServer is where the in-pod layout's MCP container listens, seen
	// from the sidecar (the rig's MCP server address).
	rigMCPServer = "127.0.0.1"
)

// droppedFilters are the HTTP filters Istio generates that the rig's
// Envoy stand-in does not model, each with why dropping it changes
// nothing the rig observes. A filter not listed fails the test: a new one
// may matter.
var droppedFilters = map[string]string{
	rbacFilter:                            "Istio's CUSTOM shadow RBAC, which only turns ext_authz on (filter_enabled_metadata): its shadow rules match every request (TestIstioGeneratesTheSeam), so ext_authz runs on every request, as in the rig",
	"istio.metadata_exchange":             "telemetry: peer metadata for Istio's stats",
	"istio.alpn":                          "upstream ALPN override for Istio's mTLS",
	"envoy.filters.http.fault":            "VirtualService fault injection, none configured",
	"envoy.filters.http.cors":             "VirtualService CORS, none configured on the sidecar",
	"istio.stats":                         "telemetry: Istio's request metrics",
	"envoy.filters.http.grpc_stats":       "telemetry: gRPC stats",
	"istio_authn":                         "PeerAuthentication/RequestAuthentication principal metadata, none configured",
	"envoy.filters.http.grpc_web":         "gRPC-Web translation, not MCP",
	"envoy.filters.http.set_filter_state": "filter state for Istio's telemetry",
}

// rigBootstrapFrom writes the generated config of the MCP port's plaintext
// inbound filter chain as a static Envoy bootstrap the rig's stand-in
// loads, and returns it with every adaptation made, one line each (also
// written at the head of the file). The HTTP connection manager, ext_authz
// and ext_proc configs, route configuration and clusters are Istio's, but
// for the listed adaptations.
func rigBootstrapFrom(t *testing.T, l layout, g generated) (*bootstrapv3.Bootstrap, []string) {
	t.Helper()
	var adapted []string
	note := func(format string, a ...any) { adapted = append(adapted, fmt.Sprintf(format, a...)) }

	var chain *inboundChain
	for _, c := range inboundChains(t, g, l.mcpPort) {
		if !c.tls {
			chain = &c
			break
		}
	}
	if chain == nil {
		t.Fatalf("no plaintext inbound filter chain for port %d", l.mcpPort)
	}
	h := proto.Clone(chain.hcm).(*hcmv3.HttpConnectionManager)
	note("listener: the MCP port's plaintext filter chain (%s) of virtualInbound alone, without Istio's listener filters and filter_chain_match; the rig's clients speak HTTP/1.1 without mTLS", chain.name)
	if h.GetRds() != nil {
		h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: chain.rc}
		note("route configuration %s: inline, as RDS sends it", chain.rc.GetName())
	}

	var kept []*hcmv3.HttpFilter
	for _, f := range h.GetHttpFilters() {
		switch f.GetName() {
		case envoy.ExtAuthzFilter, envoy.ExtProcFilter, envoy.RouterFilter:
			kept = append(kept, f)
			continue
		}
		why, ok := droppedFilters[f.GetName()]
		if !ok {
			t.Fatalf("HTTP filter %s: the stand-in does not model it, and droppedFilters does not say why it may go", f.GetName())
		}
		note("HTTP filter %s dropped: %s", f.GetName(), why)
	}
	h.HttpFilters = kept
	for _, f := range h.GetHttpFilters() {
		if f.GetName() != envoy.ExtAuthzFilter {
			continue
		}
		ea := &extauthzv3.ExtAuthz{}
		if err := f.GetTypedConfig().UnmarshalTo(ea); err != nil {
			t.Fatal(err)
		}
		if ea.GetFilterEnabledMetadata() != nil {
			ea.FilterEnabledMetadata = nil
			note("ext_authz filter_enabled_metadata dropped: it reads the dropped RBAC shadow filter's match, which every request makes")
		}
		a, err := anypb.New(ea)
		if err != nil {
			t.Fatal(err)
		}
		f.ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}
	}
	adaptHCM(h, note)
	retries := 0
	for _, vh := range h.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			rp := r.GetRoute().GetRetryPolicy()
			if rp == nil {
				continue
			}
			if rp.GetRetryOn() != "reset-before-request" {
				t.Fatalf("route %s: retry_policy %v: the stand-in does not model it, and only reset-before-request may be dropped", r.GetName(), rp)
			}
			r.GetRoute().RetryPolicy = nil
			retries++
		}
	}
	if retries > 0 {
		note("retry_policy reset-before-request dropped from %d routes: it retries only a request whose upstream stream was reset before it was sent, which the rig's servers never do, and the stand-in does not model retries", retries)
	}

	// The clusters the routes and the filters name.
	names := map[string]bool{}
	for _, vh := range h.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if c := r.GetRoute().GetCluster(); c != "" {
				names[c] = true
			}
		}
	}
	if ea, _, _ := envoy.ExtAuthz(h); ea != nil {
		names[ea.GetGrpcService().GetEnvoyGrpc().GetClusterName()] = true
	}
	if ep, _, _ := envoy.ExtProc(h); ep != nil {
		names[ep.GetGrpcService().GetEnvoyGrpc().GetClusterName()] = true
	}
	var clusters []*clusterv3.Cluster
	for _, n := range sortedKeys(names) {
		c := cluster(g, n)
		if c == nil {
			t.Fatalf("cluster %s: not generated", n)
		}
		clusters = append(clusters, adaptCluster(t, g, proto.Clone(c).(*clusterv3.Cluster), note))
	}

	hcm, err := anypb.New(h)
	if err != nil {
		t.Fatal(err)
	}
	b := &bootstrapv3.Bootstrap{
		Admin: &bootstrapv3.Admin{Address: socket("127.0.0.1", 15000)},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: []*listenerv3.Listener{{
				Name:    "virtualInbound",
				Address: socket("0.0.0.0", 15006),
				FilterChains: []*listenerv3.FilterChain{{
					Name:    chain.name,
					Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}},
				}},
			}},
			Clusters: clusters,
		},
	}
	note("admin on 127.0.0.1:15000 and the listener on 0.0.0.0:15006, as pilot-agent's bootstrap and Istio's inbound listener have them (the rig listens where it likes)")
	return b, adapted
}

// adaptHCM clears the HTTP connection manager fields Istio sets that the
// stand-in refuses and that change nothing the rig observes.
func adaptHCM(h *hcmv3.HttpConnectionManager, note func(string, ...any)) {
	if h.GetForwardClientCertDetails() != hcmv3.HttpConnectionManager_SANITIZE || h.GetSetCurrentClientCertDetails() != nil {
		h.ForwardClientCertDetails, h.SetCurrentClientCertDetails = hcmv3.HttpConnectionManager_SANITIZE, nil
		note("forward_client_cert_details and set_current_client_cert_details cleared: XFCC from mTLS peers; the rig has none")
	}
	if h.GetRequestIdExtension() != nil {
		h.RequestIdExtension = nil
		note("request_id_extension (Envoy's UUID request id, used for trace sampling) dropped: the UUID extension is Envoy's default, and the stand-in does not load its type")
	}
}

// adaptCluster turns one generated cluster into one the stand-in dials:
// EDS clusters get Istio's own EDS endpoints inline; the inbound
// ORIGINAL_DST cluster goes to the MCP container's port on rigMCPServer.
func adaptCluster(t *testing.T, g generated, c *clusterv3.Cluster, note func(string, ...any)) *clusterv3.Cluster {
	t.Helper()
	switch c.GetType() {
	case clusterv3.Cluster_EDS:
		var la *endpointv3.ClusterLoadAssignment
		for _, e := range g.endpoints {
			if e.GetClusterName() == c.GetName() {
				la = proto.Clone(e).(*endpointv3.ClusterLoadAssignment)
			}
		}
		if la == nil {
			t.Fatalf("cluster %s: no EDS endpoints generated", c.GetName())
		}
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
		c.EdsClusterConfig, c.LoadAssignment = nil, la
		note("cluster %s: EDS → STATIC with the endpoints Istio's EDS sends for it (%s)", c.GetName(), strings.Join(envoy.Endpoints(c), ", "))
	case clusterv3.Cluster_ORIGINAL_DST:
		port := strings.Split(c.GetName(), "|")[1]
		p, err := strconv.Atoi(port)
		if err != nil {
			t.Fatalf("cluster %s: %v", c.GetName(), err)
		}
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
		c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
		c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.GetName(), Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socket(rigMCPServer, uint32(p))}}}},
		}}}
		note("cluster %s: ORIGINAL_DST (the Pod's address the connection was for) → STATIC %s:%d, where the rig's MCP server is", c.GetName(), rigMCPServer, p)
	}
	if c.GetUpstreamBindConfig() != nil {
		c.UpstreamBindConfig = nil
		note("cluster %s: upstream_bind_config (source 127.0.0.6) dropped", c.GetName())
	}
	if len(c.GetFilters()) > 0 {
		c.Filters = nil
		note("cluster %s: upstream network filters (Istio's metadata exchange) dropped: telemetry", c.GetName())
	}
	if c.GetTransportSocketMatches() != nil || c.GetTransportSocket() != nil {
		c.TransportSocketMatches, c.TransportSocket = nil, nil
		note("cluster %s: transport sockets (Istio's auto mTLS) dropped: the endpoint has no Istio mTLS label, so Envoy dials it in plaintext anyway", c.GetName())
	}
	return c
}

func socket(addr string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func itoa(p uint32) string { return strconv.FormatUint(uint64(p), 10) }

// bootstrapYAML renders b as YAML (keys sorted, so stable), headed by the
// adaptations.
func bootstrapYAML(t *testing.T, b *bootstrapv3.Bootstrap, adapted []string) []byte {
	t.Helper()
	j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	var head strings.Builder
	head.WriteString("# GENERATED by k8s/istiogen (go test -run TestRigBootstrap -update): the in-pod\n")
	head.WriteString("# layout's MCP sidecar as Istio " + proxyVersion + "'s translator generates it from\n")
	head.WriteString("# k8s/istio (istio.io/istio v0.0.0-20260827124520-eed52ebb66ad), as a static\n")
	head.WriteString("# bootstrap for ../shared/e2e-sdk/run-e2e.sh (docs/deploy.md, \"Istio\"). Adapted for\n")
	head.WriteString("# the rig's Envoy stand-in, and only so:\n")
	for _, a := range adapted {
		head.WriteString("#   - " + a + "\n")
	}
	return append([]byte(head.String()), y...)
}

// TestRigBootstrap: each layout's generated sidecar, as a static bootstrap,
// loads (envoy.ValidateBootstrapYAML) and keeps envoy.CheckInvariants
// (every route to the MCP server checked and seen by the processor,
// failing closed; a route picked on headers forwards as its fallback); the
// in-pod one is what rigBootstrap holds (-update writes it).
func TestRigBootstrap(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			b, adapted := rigBootstrapFrom(t, l, generate(t, l, nil))
			y := bootstrapYAML(t, b, adapted)
			loaded, err := envoy.ValidateBootstrapYAML(y)
			if err != nil {
				t.Fatal(err)
			}
			if err := envoy.CheckInvariants(loaded); err != nil {
				t.Error(err)
			}
			if l.name == rigLayout {
				writeOrCompare(t, rigBootstrap, y)
			}
		})
	}
}
