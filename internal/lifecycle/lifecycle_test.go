package lifecycle_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/lifecycle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// authorization is the grpc.health.v1 service name of Envoy's
// Authorization service, which serve's health reports besides "".
const authorization = "envoy.service.auth.v3.Authorization"

// toggle is a readiness check the test switches, failing as serve's does
// when the identity provider's signing keys are missing.
type toggle struct{ ready atomic.Bool }

func (v *toggle) check() error {
	if !v.ready.Load() {
		return errors.New("signing keys not available from the identity provider")
	}
	return nil
}

// referencePolicy compiles examples/policy.yaml into a PolicyStore's value.
func referencePolicy(t *testing.T) *decision.LoadedPolicy {
	t.Helper()
	file := filepath.Join("..", "..", "examples", "policy.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := decision.CompilePolicy(file, src)
	if err != nil {
		t.Fatal(err)
	}
	return lp
}

// TestHTTPHandlerProbes: /healthz is 200 while the process runs; /readyz
// follows serve's checks (a real policy store, signing keys) and says why
// it is not ready; the ready gauge of internal/metrics follows.
func TestHTTPHandlerProbes(t *testing.T) {
	store := &decision.PolicyStore{}
	v := &toggle{}
	m := metrics.New(prometheus.NewRegistry(), nil)
	r := &lifecycle.Readiness{Checks: []func() error{store.Ready, v.check}, OnReady: m.SetReady}
	url := testkit.StartHTTP(t, lifecycle.HTTPHandler(r, prometheus.NewRegistry()))

	if code, body := testkit.Get(t, url+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}

	steps := []struct {
		name      string
		give      func()
		wantCode  int
		wantBody  string
		wantReady float64
	}{
		{"no policy", func() { v.ready.Store(true) }, http.StatusServiceUnavailable, "no policy compiled", 0},
		{"policy and keys", func() { store.Store(referencePolicy(t)) }, http.StatusOK, "ready", 1},
		{"keys lost", func() { v.ready.Store(false) }, http.StatusServiceUnavailable, "signing keys not available", 0},
		{"keys back", func() { v.ready.Store(true) }, http.StatusOK, "ready", 1},
	}
	for _, tt := range steps {
		tt.give()
		code, body := testkit.Get(t, url+"/readyz")
		if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
			t.Errorf("%s: /readyz = %d %q, want %d containing %q", tt.name, code, body, tt.wantCode, tt.wantBody)
		}
		if got := gaugeValue(m.Ready); got != tt.wantReady {
			t.Errorf("%s: mcp_extauthz_ready = %v, want %v", tt.name, got, tt.wantReady)
		}
	}

	if code, _ := testkit.Get(t, url+"/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing = %d, want 404", code)
	}
}

// gaugeValue reads a gauge without the testutil helpers, so this file
// depends only on what it exposes.
func gaugeValue(g prometheus.Gauge) float64 {
	var pb dto.Metric
	if err := g.Write(&pb); err != nil {
		return -1
	}
	return pb.GetGauge().GetValue()
}

// TestLifecycleHealthFollowsReadiness: gRPC health for the server and for
// the Authorization service follows readiness both ways while serving, and
// Serve returns nil when its context ends. (Draining in-flight Checks:
// extauthz TestLifecycleShutdownDrains and TestLifecycleShutdownTimeout.)
func TestLifecycleHealthFollowsReadiness(t *testing.T) {
	v := &toggle{}
	lc := &lifecycle.Lifecycle{GRPC: grpc.NewServer(), Health: health.NewServer(),
		Readiness:    &lifecycle.Readiness{Checks: []func() error{v.check}},
		PollInterval: 20 * time.Millisecond, ShutdownTimeout: 10 * time.Second, Services: []string{authorization}}
	healthpb.RegisterHealthServer(lc.GRPC, lc.Health)
	rig := testkit.Serve(t, lc.Serve, lc.GRPC.Stop)

	// Health is synced before the first RPC can arrive: not a poll.
	for _, svc := range []string{"", authorization} {
		if got := rig.HealthStatus(t, svc); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health(%q) = %v before the keys are ready, want NOT_SERVING", svc, got)
		}
	}
	v.ready.Store(true)
	rig.WaitHealth(t, healthpb.HealthCheckResponse_SERVING, "", authorization)
	v.ready.Store(false)
	rig.WaitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING, "", authorization)
	v.ready.Store(true)
	rig.WaitHealth(t, healthpb.HealthCheckResponse_SERVING, "", authorization)

	if err := rig.Stop(t, "after its context ended"); err != nil {
		t.Errorf("Serve = %v, want nil after a clean stop", err)
	}
}
