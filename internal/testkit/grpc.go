package testkit

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Serving is a server that serve runs on a listener of 127.0.0.1, with a
// plaintext gRPC client connection to it. Serve's context ends when the
// test calls Cancel or Stop, or at the latest when the test ends.
type Serving struct {
	Addr string           // host:port of the listener
	Conn *grpc.ClientConn // a client connection to Addr

	cancel context.CancelFunc
	done   chan struct{} // closed when serve has returned
	err    error         // serve's result, once done is closed
}

// Serve calls serve(ctx, lis) in a goroutine with a fresh listener of
// 127.0.0.1. At the end of the test it cancels ctx and waits for serve to
// return; if serve does not within WaitTimeout, the test fails and
// hardStop (if not nil) is called so the goroutine ends.
func Serve(t testing.TB, serve func(ctx context.Context, lis net.Listener) error, hardStop func()) *Serving {
	t.Helper()
	lis := Listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Serving{Addr: lis.Addr().String(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = serve(ctx, lis)
	}()
	conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s.Conn = conn
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		select {
		case <-s.done:
		case <-time.After(WaitTimeout):
			t.Error("serve did not return after its context ended")
			if hardStop != nil {
				hardStop()
			}
		}
	})
	return s
}

// Cancel ends serve's context (the SIGTERM path) without waiting.
func (s *Serving) Cancel() { s.cancel() }

// Done is closed once serve has returned.
func (s *Serving) Done() <-chan struct{} { return s.done }

// Err is serve's result; only meaningful once Done is closed.
func (s *Serving) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Stop ends serve's context and returns serve's result; what is waited
// for is named in the failure.
func (s *Serving) Stop(t testing.TB, what string) error {
	t.Helper()
	s.cancel()
	return s.Wait(t, what)
}

// Wait returns serve's result once it has returned, failing the test
// with what if it does not within WaitTimeout.
func (s *Serving) Wait(t testing.TB, what string) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(WaitTimeout):
		t.Fatalf("serve did not return within %v: %s", WaitTimeout, what)
		return nil
	}
}

// HealthStatus asks grpc.health.v1 for service over Conn; an RPC error
// fails the test.
func (s *Serving) HealthStatus(t testing.TB, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(s.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health Check(%q): %v", service, err)
	}
	return resp.GetStatus()
}

// Reachable reports whether a new connection to Addr can complete a
// health RPC.
func (s *Serving) Reachable() bool {
	conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err == nil
}

// WaitHealth follows grpc.health.v1 Watch streams (the server pushes every
// change) until each of services reports want; it fails the test when one
// does not within WaitTimeout.
func (s *Serving) WaitHealth(t testing.TB, want healthpb.HealthCheckResponse_ServingStatus, services ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	for _, svc := range services {
		w, err := healthpb.NewHealthClient(s.Conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("health Watch(%q): %v", svc, err)
		}
		for {
			st, err := w.Recv()
			if err != nil {
				t.Fatalf("waiting for health(%q) %v: %v", svc, want, err)
			}
			if st.GetStatus() == want {
				break
			}
		}
	}
}
