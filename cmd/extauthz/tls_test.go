package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// writeFiles writes name → content into dir, each by rename.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		testkit.WriteAtomic(t, filepath.Join(dir, name), b)
	}
}

// healthOver dials addr with mTLS as a client of ca's (trusting serverCA)
// and returns the health check's error.
func healthOver(t *testing.T, addr string, serverCA, clientCA *testkit.CA, withClientCert bool) error {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.PEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if withClientCert {
		c, k := clientCA.IssueClient(t, "envoy")
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// TestGRPCMutualTLS: with --tls-cert-file, --tls-key-file and
// --client-ca-file the gRPC port admits only callers with a client
// certificate from the CA, and a rotation of all three files applies to
// new connections without a restart; a broken rotation keeps the old set.
func TestGRPCMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca1 := testkit.NewCA(t, "ca1")
	c, k := ca1.IssueServer(t, "extauthz")
	writeFiles(t, dir, map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": ca1.PEM})
	files := tlsFiles{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")}
	tr, err := newTLSReloader(files)
	if err != nil {
		t.Fatal(err)
	}
	gs, hs := newGRPCServer(&Config{MaxBodyBytes: 1 << 20}, &extauthz.Server{}, credentials.NewTLS(tr.config()))
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	lis := testkit.Listen(t)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	ctx := t.Context()
	go func() {
		_ = filewatch.WatchAll(ctx, []string{files.cert, files.key, files.clientCA}, filewatch.Options{Debounce: 10 * time.Millisecond}, func() { _ = tr.load() })
	}()
	addr := lis.Addr().String()

	if err := healthOver(t, addr, ca1, ca1, true); err != nil {
		t.Fatalf("client certificate from the CA: %v", err)
	}
	if err := healthOver(t, addr, ca1, ca1, false); err == nil {
		t.Fatal("a caller without a client certificate was served")
	}
	if err := healthOver(t, addr, ca1, testkit.NewCA(t, "rogue"), true); err == nil {
		t.Fatal("a client certificate from another CA was served")
	}

	// Rotate to a new CA: server certificate and client CA together.
	ca2 := testkit.NewCA(t, "ca2")
	c2, k2 := ca2.IssueServer(t, "extauthz")
	writeFiles(t, dir, map[string][]byte{"tls.crt": c2, "tls.key": k2, "ca.crt": ca2.PEM})
	deadline := time.Now().Add(5 * time.Second)
	for healthOver(t, addr, ca2, ca2, true) != nil {
		if time.Now().After(deadline) {
			t.Fatal("rotated certificates not in use after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := healthOver(t, addr, ca1, ca1, true); err == nil {
		t.Error("the old CA's client still served after the rotation")
	}
	// A key that does not match the certificate is refused; ca2 stays.
	writeFiles(t, dir, map[string][]byte{"tls.key": k})
	time.Sleep(200 * time.Millisecond)
	if err := tr.load(); err == nil || !strings.Contains(err.Error(), "--tls-cert-file") {
		t.Errorf("mismatched key: %v", err)
	}
	if err := healthOver(t, addr, ca2, ca2, true); err != nil {
		t.Errorf("after a broken rotation: %v, want the last good set", err)
	}
}

func TestTLSFlagsGoTogether(t *testing.T) {
	var out syncBuffer
	_, err := parseServeConfig([]string{"--policy", "p", "--issuer", "https://i", "--audience", "https://mcp.example.com/mcp", "--tls-cert-file", "c"}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("cert without key and CA: %v", err)
	}
}

// TestBadTLSFileLogsJSON: a TLS file that cannot be read stops serve with
// exit 1 and one JSON error line on stderr, like every other start-up
// failure, never a plain-text line among the JSON ones.
func TestBadTLSFileLogsJSON(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.PEM")
	var stderr syncBuffer
	err := run(t.Context(), []string{"serve", "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "",
		"--tls-cert-file", missing, "--tls-key-file", missing, "--client-ca-file", missing}, io.Discard, &stderr)
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %d (%v), want 1", code, err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("stderr line is not JSON: %q", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"level":"error"`) || !strings.Contains(last, "missing.PEM") {
		t.Errorf("last line %q, want the JSON error naming the file", last)
	}
	var ee *exitError
	if !errors.As(err, &ee) || !ee.logged {
		t.Errorf("error %v is not marked logged: main would print it again as plain text", err)
	}
}
