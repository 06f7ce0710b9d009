package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// runEnvoyDrain is the sidecar's preStop: it makes Envoy fail its readiness
// (admin POST /healthcheck/fail, so the Pod leaves the Service endpoints),
// starts a graceful drain of Envoy's listeners (POST
// /drain_listeners?graceful: connections are told to close, HTTP/1.1 with
// "Connection: close" and HTTP/2 with GOAWAY, for Envoy's --drain-time-s),
// then waits --drain-time so that the kubelet sends SIGTERM to this
// container only after Envoy's drain. A failed admin call is reported and
// the wait still happens: the shutdown goes on, less gracefully.
// https://www.envoyproxy.io/docs/envoy/latest/operations/admin#post--drain_listeners
func runEnvoyDrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("envoy-drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz envoy-drain [flags]")
		fmt.Fprintln(stderr, "preStop hook: fails the Envoy sidecar's readiness, drains its listeners, then waits --drain-time.")
		fs.PrintDefaults()
	}
	admin := fs.String("admin-addr", "127.0.0.1:9901", "Envoy admin address (host:port)")
	wait := fs.Duration("drain-time", 15*time.Second, "how long to wait after starting the drain; Envoy's --drain-time-s")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(*admin); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("envoy-drain: --admin-addr %q: %w", *admin, err)}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	var failed error
	for _, path := range []string{"/healthcheck/fail", "/drain_listeners?graceful"} {
		if err := adminPost(ctx, client, "http://"+*admin+path); err != nil {
			fmt.Fprintf(stderr, "extauthz: envoy-drain: %v\n", err)
			failed = err
		}
	}
	fmt.Fprintf(stdout, "extauthz: envoy-drain: Envoy draining; waiting %v\n", *wait)
	select {
	case <-ctx.Done():
	case <-time.After(*wait):
	}
	if failed != nil {
		return &exitError{code: 1, err: fmt.Errorf("envoy-drain: %w", failed)}
	}
	return nil
}

// adminPost sends an empty POST to an Envoy admin URL and wants 200.
func adminPost(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}
