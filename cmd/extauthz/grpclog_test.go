package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestCLIPrintsOneErrorLine: a tool that cannot reach the service prints
// its own error, one line, and none of gRPC's internal warnings before it
// (main routes grpclog to nowhere for every command but serve).
func TestCLIPrintsOneErrorLine(t *testing.T) {
	l := testkit.Listen(t)
	closed := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	tests := []struct {
		give     []string
		wantCode int
		want     string
	}{
		{[]string{"check", "--addr", closed, "--token", "t", "examples/requests/search-allowed.json"}, 2, "extauthz: check " + closed + ": rpc error: code = Unavailable"},
		{[]string{"healthcheck", "--addr", closed}, 1, "extauthz: health " + closed + ": rpc error: code = Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.give[0], func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tt.give...)
			cmd.Dir = "cmd/extauthz" // the child's init goes up two levels, as ours did
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if code := 0; err != nil {
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
				if code != tt.wantCode {
					t.Errorf("exit %d, want %d", code, tt.wantCode)
				}
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("stderr %q: want one line starting %q", stderr.String(), tt.want)
			}
		})
	}
}
