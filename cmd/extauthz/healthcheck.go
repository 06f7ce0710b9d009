package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// runHealthcheck asks a running service's grpc.health.v1 for SERVING: exit 0
// when it is, 1 otherwise. For exec probes in images without a shell.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz healthcheck [flags]")
		fmt.Fprintln(stderr, "Asks a running service's gRPC health for SERVING: exit 0 when it is, 1 otherwise.")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:9191", "gRPC address of the service")
	service := fs.String("service", "", `health service name ("" for the whole server)`)
	timeout := fs.Duration("timeout", 2*time.Second, "deadline for the probe")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		return fmt.Errorf("health %s: %w", *addr, err)
	}
	fmt.Fprintln(stdout, resp.GetStatus())
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return &exitError{code: 1}
	}
	return nil
}
