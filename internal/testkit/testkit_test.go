package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
)

// TestCARoles: a server certificate verifies for 127.0.0.1 and its DNS
// names as a server's only; a client certificate as a client's only, so a
// test cannot pass by handing one role's certificate to the other.
func TestCARoles(t *testing.T) {
	ca := NewCA(t, "ca")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	parse := func(certPEM, keyPEM []byte) *x509.Certificate {
		t.Helper()
		if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
			t.Fatalf("certificate and key do not match: %v", err)
		}
		b, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	srv := parse(ca.IssueServer(t, "server", "redis.test"))
	cli := parse(ca.IssueClient(t, "client"))
	tests := []struct {
		name   string
		cert   *x509.Certificate
		usage  x509.ExtKeyUsage
		dns    string
		wantOK bool
	}{
		{"server as server for redis.test", srv, x509.ExtKeyUsageServerAuth, "redis.test", true},
		{"server as server for another name", srv, x509.ExtKeyUsageServerAuth, "other.test", false},
		{"server as client", srv, x509.ExtKeyUsageClientAuth, "", false},
		{"client as client", cli, x509.ExtKeyUsageClientAuth, "", true},
		{"client as server", cli, x509.ExtKeyUsageServerAuth, "", false},
	}
	for _, tt := range tests {
		_, err := tt.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.dns, KeyUsages: []x509.ExtKeyUsage{tt.usage}})
		if (err == nil) != tt.wantOK {
			t.Errorf("%s: %v, want ok %v", tt.name, err, tt.wantOK)
		}
	}
	if err := srv.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("server certificate lacks IP 127.0.0.1: %v", err)
	}
	if other := NewCA(t, "other"); srv.CheckSignatureFrom(other.Cert) == nil {
		t.Error("another CA's certificate verifies the server certificate")
	}
	if srv.SerialNumber.Cmp(cli.SerialNumber) == 0 {
		t.Error("two certificates of one CA share a serial number")
	}
}

// TestListenLoopback: Listen never listens beyond 127.0.0.1.
func TestListenLoopback(t *testing.T) {
	l := Listen(t)
	defer l.Close()
	if ip := l.Addr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("listening on %v", ip)
	}
}
