// Package statetest gives tests a real Redis server on 127.0.0.1.
//
// RedisURL returns the server named by EXTAUTHZ_TEST_REDIS (host:port or a
// redis:// URL; .ci/run starts one and sets it). Without it, StartRedis
// starts a private redis-server (Debian's package) for the test. When no
// redis-server binary exists the test is skipped on a developer machine and
// fails when CI is set (CI=true in .ci/run): the Redis suite never silently
// disappears from CI.
package statetest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvRedis names the environment variable with the CI Redis address.
const EnvRedis = "EXTAUTHZ_TEST_REDIS"

// RedisURL returns a redis:// URL of a live server for t: the shared CI
// server, or a private one stopped when t ends.
func RedisURL(t testing.TB) string {
	t.Helper()
	if v := strings.TrimSpace(os.Getenv(EnvRedis)); v != "" {
		if !strings.Contains(v, "://") {
			v = "redis://" + v
		}
		return v
	}
	url, _ := StartRedis(t)
	return url
}

// Prefix returns a key prefix unique to this call, so tests sharing one
// server never see each other's keys.
func Prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:]) + ":"
}

// StartRedis starts a private redis-server on a free 127.0.0.1 port, without
// persistence, and returns its URL and a stop function (also run when t
// ends). Stopping it simulates an outage.
func StartRedis(t testing.TB) (url string, stop func()) {
	t.Helper()
	s := StartServer(t)
	return "redis://" + s.Addr, s.Stop
}

// Server is a redis-server process of one test, on 127.0.0.1.
type Server struct {
	// Addr is 127.0.0.1:Port, the port the test asked for (the TLS port
	// when the arguments name --tls-port with --port 0).
	Addr string
	Port int
	// Dir is the server's working directory (t.TempDir).
	Dir string

	cmd     *exec.Cmd
	stopped bool
}

// Binary returns the path of redis-server, skipping t when it is missing
// (failing it when CI is set).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server not found and CI is set: .ci/run must install it (apt-get install -y redis-server)")
		}
		t.Skip("redis-server not installed (apt-get install -y redis-server); set " + EnvRedis + " or install it")
	}
	return bin
}

// StartServer starts redis-server on a free port with persistence off and
// args appended (later arguments win over earlier ones, as in a config
// file), waits until it accepts connections and stops it when t ends.
// Ports in args may come from FreePort.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	port := FreePort(t)
	return startProcess(t, port, "Ready to accept connections", append([]string{"--port", strconv.Itoa(port)}, args...)...)
}

// StartTLSServer is StartServer with the plaintext port off and TLS on
// Addr (--port 0 --tls-port); args add the certificate settings.
func StartTLSServer(t testing.TB, args ...string) *Server {
	t.Helper()
	port := FreePort(t)
	return startProcess(t, port, "Ready to accept connections", append([]string{"--port", "0", "--tls-port", strconv.Itoa(port)}, args...)...)
}

// StartSentinel starts redis-server in Sentinel mode (Debian's
// redis-server binary is Sentinel too: `redis-server FILE --sentinel`)
// from a config file it writes with lines, monitoring nothing until lines
// say so, and waits until it accepts connections.
func StartSentinel(t testing.TB, lines ...string) *Server {
	t.Helper()
	port := FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf") // Sentinel rewrites it
	body := "port " + strconv.Itoa(port) + "\nbind 127.0.0.1\ndir " + dir + "\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return startProcess(t, port, "Sentinel ID is", conf, "--sentinel")
}

// startProcess runs redis-server with args, waits for ready on its output
// and for port to accept TCP connections.
func startProcess(t testing.TB, port int, ready string, args ...string) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	if len(args) == 0 || !strings.HasSuffix(args[0], ".conf") {
		// A replica syncs at once (diskless, no 5s delay waiting for others).
		args = append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes", "--dir", dir, "--repl-diskless-sync-delay", "0"}, args...)
	}
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir, cmd: cmd}
	readyc := make(chan struct{})
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			logMu.Lock()
			if log.Len() < 1<<16 {
				log.WriteString(sc.Text() + "\n")
			}
			logMu.Unlock()
			if !signalled && strings.Contains(sc.Text(), ready) {
				close(readyc)
				signalled = true
			}
		}
		if !signalled {
			close(readyc)
		}
	}()
	fail := func(format string, a ...any) {
		t.Helper()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf(format+"\nredis-server %s:\n%s", append(a, strings.Join(args, " "), log.String())...)
	}
	select {
	case <-readyc:
	case <-time.After(10 * time.Second):
		fail("redis-server did not become ready in 10s")
	}
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err != nil {
		fail("redis-server on %s: %v", s.Addr, err)
	} else {
		c.Close()
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the server (SIGKILL: no shutdown save, as in a crash) and
// waits for it. Later calls do nothing.
func (s *Server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused process dies too
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Pause stops the process (SIGSTOP): its connections stay open and
// nothing answers, as when a host hangs or is cut off.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// FreePort returns a port on 127.0.0.1 that nothing listened on a moment
// ago.
func FreePort(t testing.TB) int { return freePort(t) }

func freePort(t testing.TB) int {
	t.Helper()
	given.mu.Lock()
	defer given.mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// The kernel may hand a just-closed port out again: a cluster
		// node's --port and --cluster-port were once the same.
		if !given.ports[port] {
			given.ports[port] = true
			return port
		}
	}
}

// given are the ports freePort handed out in this process, never twice.
var given = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}
