// Package lifecycle runs the service's gRPC server with grpc.health.v1
// following readiness, drains it on shutdown (NOT_SERVING, a drain period,
// GracefulStop with a deadline, then Stop), and serves /healthz, /readyz and
// /metrics. Readiness is a list of functions (Ready() error style): it knows
// neither the policy store nor the token verifier.
package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Readiness says whether the service can decide.
type Readiness struct {
	// Checks each return nil when their part is ready, else why not (e.g.
	// "no policy compiled"); the service is ready when all return nil.
	Checks []func() error
	// OnReady, if set, is called with the result of every evaluation (the
	// ready gauge).
	OnReady func(ready bool)

	draining atomic.Bool
}

// Drain makes the service report not ready from now on (shutdown).
func (r *Readiness) Drain() { r.draining.Store(true) }

// Ready reports readiness and, when not ready, why.
func (r *Readiness) Ready() (bool, string) {
	ok, why := true, ""
	if r.draining.Load() {
		ok, why = false, "shutting down"
	} else {
		for _, c := range r.Checks {
			if err := c(); err != nil {
				ok, why = false, err.Error()
				break
			}
		}
	}
	if r.OnReady != nil {
		r.OnReady(ok)
	}
	return ok, why
}

// HTTPHandler serves /metrics (Prometheus text format from g), /healthz
// (200 while the process runs) and /readyz (200 when ready, else 503 with
// the reason).
func HTTPHandler(r *Readiness, g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := r.Ready(); !ok {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	return mux
}

// Lifecycle runs a gRPC server whose health follows Readiness, and stops it
// without dropping in-flight Checks.
type Lifecycle struct {
	GRPC      *grpc.Server
	Health    *health.Server
	Readiness *Readiness
	// DrainPeriod: after ctx ends, NOT_SERVING is reported for this long
	// before GracefulStop, so Envoy and the kubelet stop sending Checks.
	DrainPeriod time.Duration
	// ShutdownTimeout bounds GracefulStop (zero means 10s); past it the server is stopped
	// hard.
	ShutdownTimeout time.Duration
	// PollInterval is how often health follows readiness; zero means 500ms.
	PollInterval time.Duration
	// OnShutdown, if set, is called when the drain starts.
	OnShutdown func()
	// Services are the grpc.health.v1 service names that follow readiness
	// besides "" (the whole server).
	Services []string
}

// Serve serves lis until ctx ends, then drains and stops. It returns nil
// after a clean stop, or the error that stopped the server.
func (l *Lifecycle) Serve(ctx context.Context, lis net.Listener) error {
	poll := l.PollInterval
	if poll == 0 {
		poll = 500 * time.Millisecond
	}
	l.syncHealth()
	errc := make(chan error, 1)
	go func() { errc <- l.GRPC.Serve(lis) }()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return err
		case <-tick.C:
			l.syncHealth()
			continue
		case <-ctx.Done():
		}
		break
	}
	if l.OnShutdown != nil {
		l.OnShutdown()
	}
	l.Readiness.Drain() // /readyz answers 503 during the drain
	l.Health.Shutdown() // NOT_SERVING for every service, and it stays so
	time.Sleep(l.DrainPeriod)
	stopped := make(chan struct{})
	go func() { l.GRPC.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(cmp.Or(l.ShutdownTimeout, 10*time.Second)):
		l.GRPC.Stop()
		<-stopped
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

func (l *Lifecycle) syncHealth() {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok, _ := l.Readiness.Ready(); ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	l.Health.SetServingStatus("", st)
	for _, svc := range l.Services {
		l.Health.SetServingStatus(svc, st)
	}
}
