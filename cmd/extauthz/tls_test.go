package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
)

// testCA is a throw-away certificate authority for mTLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for 127.0.0.1, usable for
// servers and clients.
func (ca *testCA) issue(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// writeFiles writes name → content into dir, each by rename.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// healthOver dials addr with mTLS as a client of ca's (trusting serverCA)
// and returns the health check's error.
func healthOver(t *testing.T, addr string, serverCA, clientCA *testCA, withClientCert bool) error {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.pem)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if withClientCert {
		c, k := clientCA.issue(t, "envoy")
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
	ca1 := newTestCA(t, "ca1")
	c, k := ca1.issue(t, "extauthz")
	writeFiles(t, dir, map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": ca1.pem})
	files := tlsFiles{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")}
	tr, err := newTLSReloader(files)
	if err != nil {
		t.Fatal(err)
	}
	gs, hs := newGRPCServer(&Config{MaxBodyBytes: 1 << 20}, &extauthz.Server{}, credentials.NewTLS(tr.config()))
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	if err := healthOver(t, addr, ca1, newTestCA(t, "rogue"), true); err == nil {
		t.Fatal("a client certificate from another CA was served")
	}

	// Rotate to a new CA: server certificate and client CA together.
	ca2 := newTestCA(t, "ca2")
	c2, k2 := ca2.issue(t, "extauthz")
	writeFiles(t, dir, map[string][]byte{"tls.crt": c2, "tls.key": k2, "ca.crt": ca2.pem})
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
	missing := filepath.Join(t.TempDir(), "missing.pem")
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
	if last := lines[len(lines)-1]; !strings.Contains(last, `"level":"error"`) || !strings.Contains(last, "missing.pem") {
		t.Errorf("last line %q, want the JSON error naming the file", last)
	}
	var ee *exitError
	if !errors.As(err, &ee) || !ee.logged {
		t.Errorf("error %v is not marked logged: main would print it again as plain text", err)
	}
}
