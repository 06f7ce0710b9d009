package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mainEnv makes the test binary run main() instead of the tests, so a test
// can signal a real extauthz process.
const mainEnv = "MCP_EXTAUTHZ_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A first SIGTERM starts the graceful shutdown (here a 60s drain); a second
// one stops the process at once.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "serve", "--config", "examples/config.yaml",
				"--grpc-addr", "127.0.0.1:0", "--http-addr", "", "--drain-period", "60s")
			cmd.Dir = "cmd/extauthz" // the child's init goes up two levels, as ours did
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			waitLine := func(what string) {
				t.Helper()
				timeout := time.After(10 * time.Second)
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							t.Fatalf("stderr closed before %q", what)
						}
						if strings.Contains(l, what) {
							return
						}
					case <-timeout:
						t.Fatalf("no %q on stderr", what)
					}
				}
			}
			waitLine(`"grpc_addr"`)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitLine("shutting down")
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("exit 0 after a second %v, want the signal's exit", sig)
				}
				t.Logf("stopped %v after the second signal: %v", time.Since(start), err)
			case <-time.After(5 * time.Second):
				t.Fatalf("still running 5s after a second %v (drain is 60s)", sig)
			}
		})
	}
}

// version prints what -ldflags stamped, else what the toolchain recorded.
func TestVersion(t *testing.T) {
	defer func(v, c string) { buildVersion, buildCommit = v, c }(buildVersion, buildCommit)
	buildVersion, buildCommit = "v1.2.3", "0123456789abcdef"
	var out strings.Builder
	if err := run(t.Context(), []string{"version"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "extauthz v1.2.3 (commit 0123456789abcdef)\n"; got != want {
		t.Errorf("version = %q, want %q", got, want)
	}
	buildVersion, buildCommit = "", ""
	if got := version(); !strings.HasPrefix(got, "devel (commit ") && !strings.HasPrefix(got, "v") {
		t.Errorf("unstamped version = %q", got)
	}
}
