// Command extauthz is the MCP authorization service for Envoy's ext_authz
// filter, and its tools.
//
//	extauthz [serve] [flags]   run the gRPC Authorization service
//	extauthz check [flags] REQUEST.json
//	                           decide one captured HTTP request offline
//	extauthz token [flags]     mint a test bearer token (quick-start only)
//	extauthz healthcheck       gRPC health probe for exec probes
//
// Every serve flag can also be set as EXTAUTHZ_<FLAG> (upper snake case) or
// in a --config YAML file; a flag beats the environment, which beats the file.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitError carries a process exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "extauthz:", err)
	}
	os.Exit(code)
}

// run dispatches to a subcommand; serve is the default.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stderr)
	case "check":
		return runCheck(ctx, args, stdout, stderr)
	case "token":
		return runToken(args, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, "usage: extauthz [serve|check|token|healthcheck] [flags]; extauthz CMD -h for flags")
		return nil
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown command %q (want serve, check, token or healthcheck)", cmd)}
}
