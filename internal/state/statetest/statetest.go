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
	"strconv"
	"strings"
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
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server not found and CI is set: .ci/run must install it (apt-get install -y redis-server)")
		}
		t.Skip("redis-server not installed (apt-get install -y redis-server); set " + EnvRedis + " or install it")
	}
	port := freePort(t)
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--dir", t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "Ready to accept connections") {
				close(ready)
				signalled = true
			}
		}
		if !signalled {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("redis-server did not become ready in 10s")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("redis-server on %s: %v", addr, err)
	} else {
		c.Close()
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	return "redis://" + addr, stop
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
