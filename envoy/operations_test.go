package envoy

import (
	"os"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	statefulv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	envelopev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/envelope/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"
)

// routedClusters returns the clusters a route or ext_authz names (the
// admin cluster excluded, and the sidecar's loopback metadata cluster,
// which serves a few small GETs).
func routedClusters(t *testing.T, name string) []*clusterv3.Cluster {
	t.Helper()
	b := load(t, name)
	var out []*clusterv3.Cluster
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() != AdminCluster && !strings.HasSuffix(c.GetName(), "_health") && !(name == "sidecar.yaml" && c.GetName() == MetadataCluster) {
			out = append(out, c)
		}
	}
	return out
}

// TestCircuitBreakersFitSSE: every open SSE stream holds a request upstream;
// Envoy's default thresholds (1024) would refuse new requests long before
// the overload manager's connection limit.
func TestCircuitBreakersFitSSE(t *testing.T) {
	for name := range configs(t) {
		for _, c := range routedClusters(t, name) {
			th := c.GetCircuitBreakers().GetThresholds()
			if len(th) == 0 {
				t.Errorf("%s: cluster %s: no circuit_breakers (default 1024 requests)", name, c.GetName())
				continue
			}
			if th[0].GetMaxRequests().GetValue() < 10000 || th[0].GetMaxConnections().GetValue() < 10000 || th[0].GetMaxPendingRequests().GetValue() < 10000 {
				t.Errorf("%s: cluster %s: thresholds %v below 10000", name, c.GetName(), th[0])
			}
		}
	}
}

// TestTimeoutsKeepSSEAndCutSlowUploads: streams may idle for long, but the
// request itself must arrive quickly; HTTP/2 clients get bounded streams
// and windows.
func TestTimeoutsKeepSSEAndCutSlowUploads(t *testing.T) {
	for name := range configs(t) {
		hcms, err := HTTPConnectionManagers(load(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hcms {
			if !Forwards(h.HCM) {
				continue
			}
			if d := h.HCM.GetStreamIdleTimeout().AsDuration(); d.Minutes() < 30 {
				t.Errorf("%s/%s: stream_idle_timeout %v cuts idle SSE streams", name, h.Listener, d)
			}
			if d := h.HCM.GetRequestTimeout().AsDuration(); d <= 0 || d.Minutes() > 5 {
				t.Errorf("%s/%s: request_timeout %v, want (0, 5m]: a slow upload must be cut", name, h.Listener, d)
			}
			if d := h.HCM.GetRequestHeadersTimeout().AsDuration(); d <= 0 {
				t.Errorf("%s/%s: request_headers_timeout unset", name, h.Listener)
			}
			h2 := h.HCM.GetHttp2ProtocolOptions()
			if n := h2.GetMaxConcurrentStreams().GetValue(); n == 0 || n > 1000 || h2.GetInitialStreamWindowSize() == nil || h2.GetInitialConnectionWindowSize() == nil {
				t.Errorf("%s/%s: http2_protocol_options %v, want bounded streams and windows", name, h.Listener, h2)
			}
		}
	}
}

// TestStatsScrapeableAndAdminClosed: GET /stats/prometheus is reachable
// beyond loopback, nothing else of the admin API is; a catch-all route to
// the admin cluster is refused by CheckInvariants.
func TestStatsScrapeableAndAdminClosed(t *testing.T) {
	for name, y := range configs(t) {
		b := load(t, name)
		hcms, err := HTTPConnectionManagers(b)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range hcms {
			for _, vh := range h.HCM.GetRouteConfig().GetVirtualHosts() {
				for _, r := range vh.GetRoutes() {
					if r.GetRoute().GetCluster() == AdminCluster && r.GetMatch().GetPath() == StatsPath {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no %s route to %s", name, StatsPath, AdminCluster)
		}
		bad := mutate(t, y, "path: /stats/prometheus", "prefix: /")
		mb, err := ValidateBootstrapYAML(bad)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckInvariants(mb); err == nil || !strings.Contains(err.Error(), "exposes the admin API") {
			t.Errorf("%s: admin route widened to prefix /: %v", name, err)
		}
	}
}

func TestAccessLogHasResponseCodeDetails(t *testing.T) {
	for name := range configs(t) {
		hcms, err := HTTPConnectionManagers(load(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hcms {
			if !Forwards(h.HCM) {
				continue
			}
			l := &streamv3.StdoutAccessLog{}
			if err := h.HCM.GetAccessLog()[0].GetTypedConfig().UnmarshalTo(l); err != nil {
				t.Fatal(err)
			}
			if got := l.GetLogFormat().GetJsonFormat().GetFields()["response_code_details"].GetStringValue(); got != "%RESPONSE_CODE_DETAILS%" {
				t.Errorf("%s/%s: response_code_details = %q", name, h.Listener, got)
			}
		}
	}
}

// TestSidecarReadinessFollowsMCPServer: Envoy's /ready depends on a TCP
// health check of the MCP server's loopback address, the one mcp_server
// routes to, so the server needs no kubelet probe.
func TestSidecarReadinessFollowsMCPServer(t *testing.T) {
	b := load(t, "sidecar.yaml")
	eps, err := ReadinessEndpoints(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Endpoints(Cluster(b, "mcp_server"))
	if len(eps) != 1 || len(want) != 1 || eps[0] != want[0] {
		t.Errorf("readiness follows %v, want the MCP server %v", eps, want)
	}
}

// TestOverloadManager: envoy/overload.yaml merged over sidecar.yaml loads,
// and its heap limit stays below the 256Mi container limit.
func TestOverloadManager(t *testing.T) {
	y, err := os.ReadFile(OverloadFile)
	if err != nil {
		t.Fatal(err)
	}
	over, err := ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	b := load(t, "sidecar.yaml")
	proto.Merge(b, over)
	if err := b.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	heap, err := HeapLimit(b)
	if err != nil {
		t.Fatal(err)
	}
	if heap == 0 || heap >= 256<<20 {
		t.Errorf("heap limit %d, want set and below 256Mi", heap)
	}
	stops := false
	for _, a := range b.GetOverloadManager().GetActions() {
		if a.GetName() == "envoy.overload_actions.stop_accepting_requests" {
			stops = true
		}
	}
	if !stops {
		t.Error("no stop_accepting_requests action")
	}
	if h, err := HeapLimit(load(t, "gateway.yaml")); err != nil || h == 0 {
		t.Errorf("gateway heap limit %d %v", h, err)
	}
}

// TestGatewayUpstreams: every gateway upstream is health-checked per
// replica (DNS of a headless Service); the gRPC one with grpc.health.v1
// and HTTP/2 keepalive; sessions stick by Mcp-Session-Id, restored before
// ext_authz.
func TestGatewayUpstreams(t *testing.T) {
	b := load(t, "gateway.yaml")
	for _, c := range routedClusters(t, "gateway.yaml") {
		if c.GetType() != clusterv3.Cluster_STRICT_DNS || len(c.GetHealthChecks()) == 0 {
			t.Errorf("cluster %s: type %v, %d health checks; want STRICT_DNS with active health checks", c.GetName(), c.GetType(), len(c.GetHealthChecks()))
		}
		for _, ep := range Endpoints(c) {
			if !strings.Contains(ep, "-headless.") {
				t.Errorf("cluster %s: %s is not a headless Service", c.GetName(), ep)
			}
		}
	}
	ea := Cluster(b, "ext_authz")
	if ea.GetHealthChecks()[0].GetGrpcHealthCheck() == nil {
		t.Error("ext_authz: health check is not grpc.health.v1")
	}
	o := &upstreamhttpv3.HttpProtocolOptions{}
	if err := ea.GetTypedExtensionProtocolOptions()[HTTPProtocolOptionsKey].UnmarshalTo(o); err != nil {
		t.Fatal(err)
	}
	if ka := o.GetExplicitHttpConfig().GetHttp2ProtocolOptions().GetConnectionKeepalive(); ka.GetInterval() == nil || ka.GetTimeout() == nil {
		t.Errorf("ext_authz: HTTP/2 keepalive %v", ka)
	}
	hcms, err := HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hcms {
		if !Forwards(h.HCM) {
			continue
		}
		_, at, _ := ExtAuthz(h.HCM)
		ss := -1
		for i, f := range h.HCM.GetHttpFilters() {
			s := &statefulv3.StatefulSession{}
			if f.GetTypedConfig().MessageIs(s) {
				if err := f.GetTypedConfig().UnmarshalTo(s); err != nil {
					t.Fatal(err)
				}
				env := &envelopev3.EnvelopeSessionState{}
				if err := s.GetSessionState().GetTypedConfig().UnmarshalTo(env); err != nil || env.GetHeader().GetName() != "mcp-session-id" {
					t.Errorf("stateful_session state %v (%v), want envelope on mcp-session-id", s.GetSessionState(), err)
				}
				ss = i
			}
		}
		if ss < 0 || ss > at {
			t.Errorf("listener %s: stateful_session at %d, ext_authz at %d; want it before ext_authz", h.Listener, ss, at)
		}
	}
}
