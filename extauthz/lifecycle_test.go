package extauthz

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/lifecycle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// readiness is serve's readiness with the signing keys left out (the
// verifiers here need none): a policy compiled; m's ready gauge, when m is
// not nil, follows it. (Readiness with keys: internal/lifecycle's tests.)
func readiness(store *decision.PolicyStore, m *metrics.Metrics) *lifecycle.Readiness {
	return &lifecycle.Readiness{Checks: []func() error{store.Ready}, OnReady: m.SetReady}
}

// scrape fetches /metrics and parses the Prometheus text format.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := testkit.Get(t, url+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not the text format: %v\n%s", err, body)
	}
	return mfs
}

// series returns the metric of family name whose labels include want, or
// nil.
func series(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// TestMetricsEndpoint: after Checks through a Server with Metrics, /metrics
// exposes the decision counter with bounded labels, the duration
// histogram, the in-flight gauge and the token failure counter.
func TestMetricsEndpoint(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := staticRig(t, nil)
	srv.Metrics = newMetrics(reg)
	url := testkit.StartHTTP(t, lifecycle.HTTPHandler(readiness(srv.Decider.Config().Policies, srv.Metrics), reg))

	denied := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_repo","arguments":{"repo":"r"}}}`)
	noToken := postReq(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`)
	delete(noToken.Headers, "authorization")
	for _, c := range []*capture.Request{denied, noToken} {
		resp, err := srv.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		parseDenial(t, resp)
	}

	mfs := scrape(t, url)
	tests := []struct {
		name   string
		labels map[string]string
	}{
		{"mcp_extauthz_decisions_total", map[string]string{"decision": "deny", "reason": "policy_denied", "method": "tools/call", "dry_run": "false"}},
		{"mcp_extauthz_decisions_total", map[string]string{"decision": "deny", "reason": "token_missing", "method": "tools/call", "dry_run": "false"}},
		{"mcp_extauthz_token_verification_failures_total", map[string]string{"reason": "token_missing"}},
	}
	for _, tt := range tests {
		m := series(mfs, tt.name, tt.labels)
		if m == nil {
			t.Errorf("no series %s%v in /metrics; have %v", tt.name, tt.labels, mfs[tt.name].GetMetric())
			continue
		}
		if got := m.GetCounter().GetValue(); got != 1 {
			t.Errorf("%s%v = %v, want 1", tt.name, tt.labels, got)
		}
	}
	// Every token failure series exists from start; only token_missing
	// counted.
	for _, m := range mfs["mcp_extauthz_token_verification_failures_total"].GetMetric() {
		want := 0.0
		if m.GetLabel()[0].GetValue() == "token_missing" {
			want = 1
		}
		if got := m.GetCounter().GetValue(); got != want {
			t.Errorf("token_verification_failures_total%v = %v, want %v", m.GetLabel(), got, want)
		}
	}
	tokenReasons := 0
	for _, r := range decision.Reasons() {
		if o := outcomeOf(r); o.class == classToken || r == decision.ReasonIdPUnavailable {
			tokenReasons++
		}
	}
	if n := len(mfs["mcp_extauthz_token_verification_failures_total"].GetMetric()); n != tokenReasons {
		t.Errorf("token_verification_failures_total has %d series, want one per token reason (%d)", n, tokenReasons)
	}
	durations := map[string]uint64{}
	for _, m := range mfs["mcp_extauthz_check_duration_seconds"].GetMetric() {
		durations[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
	}
	if len(durations) != 3 || durations["deny"] != 2 || durations["allow"] != 0 || durations["ask"] != 0 {
		t.Errorf("check_duration_seconds samples by decision = %v, want deny 2 and allow, ask at 0", durations)
	}
	if g := mfs["mcp_extauthz_checks_in_flight"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 0 {
		t.Errorf("checks_in_flight = %v, want 0 once the Checks returned", g)
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if strings.Contains(lp.GetValue(), testSubject) || strings.Contains(lp.GetValue(), "delete_repo") {
					t.Errorf("%s has a high-cardinality label %s=%q", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
}

// startLifecycle serves srv and grpc.health.v1 through lc on 127.0.0.1:0,
// health following r for "" and HealthService.
func startLifecycle(t *testing.T, srv *Server, r *lifecycle.Readiness, lc lifecycle.Lifecycle) *testkit.Serving {
	t.Helper()
	lc.GRPC = grpc.NewServer()
	lc.Health = health.NewServer()
	lc.Readiness = r
	lc.Services = []string{HealthService}
	authv3.RegisterAuthorizationServer(lc.GRPC, srv)
	healthpb.RegisterHealthServer(lc.GRPC, lc.Health)
	return testkit.Serve(t, lc.Serve, lc.GRPC.Stop)
}

// blockingVerifier holds every Verify until release is closed (or the
// RPC's context ends), counting the callers waiting.
type blockingVerifier struct {
	entered atomic.Int64
	signal  chan struct{} // fires after each entry (coalescing)
	release chan struct{}
}

func newBlockingVerifier() *blockingVerifier {
	return &blockingVerifier{signal: make(chan struct{}, 1), release: make(chan struct{})}
}

func (v *blockingVerifier) Audiences() []string { return []string{testAudience} }

func (v *blockingVerifier) Verify(ctx context.Context, _ string) (*bearer.Principal, error) {
	v.entered.Add(1)
	testkit.Notify(v.signal)
	select {
	case <-v.release:
		return &bearer.Principal{Issuer: "https://idp.example.com", Subject: testSubject, Audience: testAudience,
			Claims: map[string]any{"sub": testSubject}}, nil
	case <-ctx.Done():
		return nil, &bearer.TokenError{Kind: bearer.KindInvalid, Err: ctx.Err()}
	}
}

// TestLifecycleShutdownDrains: when Serve's context ends, health turns
// NOT_SERVING while Checks are still in flight, every in-flight Check is
// answered with a CheckResponse, Serve returns nil, and afterwards the
// server accepts nothing.
func TestLifecycleShutdownDrains(t *testing.T) {
	const n = 20
	v := newBlockingVerifier()
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(v.release) }) }
	t.Cleanup(release)

	srv := newTestServer(referencePolicy(t), v, nil)
	rig := startLifecycle(t, srv, readiness(srv.Decider.Config().Policies, nil),
		lifecycle.Lifecycle{PollInterval: 20 * time.Millisecond, DrainPeriod: 200 * time.Millisecond, ShutdownTimeout: 10 * time.Second})
	rig.WaitHealth(t, healthpb.HealthCheckResponse_SERVING, "", HealthService)

	// Watch health before shutdown starts: the stream delivers the
	// NOT_SERVING of the drain however briefly it lasts.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watches := map[string]healthpb.Health_WatchClient{}
	for _, svc := range []string{"", HealthService} {
		w, err := healthpb.NewHealthClient(rig.Conn).Watch(watchCtx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := w.Recv(); err != nil || st.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Watch(%q) first status = %v, %v; want SERVING", svc, st, err)
		}
		watches[svc] = w
	}

	client := authv3.NewAuthorizationClient(rig.Conn)
	req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`).CheckRequest(true)
	type result struct {
		resp *authv3.CheckResponse
		err  error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*testkit.WaitTimeout)
			defer cancel()
			resp, err := client.Check(ctx, req)
			results <- result{resp, err}
		}()
	}
	testkit.WaitSignal(t, "every Check in flight", v.signal, func() bool { return v.entered.Load() == n })

	rig.Cancel() // SIGTERM
	for svc, w := range watches {
		st, err := w.Recv()
		if err != nil || st.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("Watch(%q) after shutdown began = %v, %v; want NOT_SERVING", svc, st, err)
		}
	}
	stopWatch() // a Watch stream is in flight too: it would hold GracefulStop
	// During the drain the server still answers, so probes see NOT_SERVING
	// rather than a refused connection.
	for _, svc := range []string{"", HealthService} {
		if got := rig.HealthStatus(t, svc); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health(%q) during the drain = %v, want NOT_SERVING", svc, got)
		}
	}
	// Release only once the drain is over and the stop has begun (the
	// listener is closed), so the Checks must outlive the stop itself.
	// Nothing signals the close, so this one polls.
	testkit.PollUntil(t, "the listener to close after the drain", func() bool { return !rig.Reachable() })
	select {
	case <-rig.Done():
		t.Fatalf("Serve returned %v while %d Checks were in flight", rig.Err(), n)
	case r := <-results:
		t.Fatalf("a Check returned before its verifier was released: %v, %v", r.resp, r.err)
	default:
	}

	release()
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("in-flight Check dropped by shutdown: %v", r.err)
			continue
		}
		okHeaders(t, r.resp)
	}
	if err := rig.Wait(t, "after the in-flight Checks finished"); err != nil {
		t.Errorf("Serve = %v, want nil after a clean drain", err)
	}

	conn, err := grpc.NewClient(rig.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := authv3.NewAuthorizationClient(conn).Check(ctx, req); err == nil {
		t.Errorf("Check after shutdown = %v, want a connection error", resp)
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Check after shutdown hung until its deadline instead of failing to connect: %v", err)
	}
}

// TestLifecycleShutdownTimeout: a Check that never finishes cannot hold
// shutdown past ShutdownTimeout; the server is stopped hard and Serve
// still returns nil.
func TestLifecycleShutdownTimeout(t *testing.T) {
	v := newBlockingVerifier() // never released
	srv := newTestServer(referencePolicy(t), v, nil)
	rig := startLifecycle(t, srv, readiness(srv.Decider.Config().Policies, nil),
		lifecycle.Lifecycle{PollInterval: 20 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond})

	req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`).CheckRequest(true)
	checked := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*testkit.WaitTimeout)
		defer cancel()
		_, err := authv3.NewAuthorizationClient(rig.Conn).Check(ctx, req)
		checked <- err
	}()
	testkit.WaitSignal(t, "the Check in flight", v.signal, func() bool { return v.entered.Load() == 1 })

	if err := rig.Stop(t, "GracefulStop not bounded by ShutdownTimeout"); err != nil {
		t.Errorf("Serve = %v, want nil after a forced stop", err)
	}
	if err := <-checked; err == nil {
		t.Error("the Check cut off by the forced stop returned no error")
	}
}
