package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// tlsFiles are the gRPC port's mTLS files: the server certificate chain and
// key (PEM) and the CA bundle (PEM) that client certificates must chain to.
type tlsFiles struct{ cert, key, clientCA string }

// tlsReloader holds the gRPC port's TLS settings, re-read from tlsFiles by
// load (on start and whenever the files change). Handshakes use the last
// set that loaded completely: a half-written or mismatched rotation keeps
// the previous one.
type tlsReloader struct {
	files tlsFiles
	cur   atomic.Pointer[tls.Config]
}

// newTLSReloader loads files once; an error names the file at fault.
func newTLSReloader(files tlsFiles) (*tlsReloader, error) {
	r := &tlsReloader{files: files}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads the three files and publishes them for new handshakes. On
// error the published settings are unchanged.
func (r *tlsReloader) load() error {
	cert, err := tls.LoadX509KeyPair(r.files.cert, r.files.key)
	if err != nil {
		return fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
	}
	pem, err := os.ReadFile(r.files.clientCA)
	if err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("--client-ca-file %s: no PEM certificate", r.files.clientCA)
	}
	r.cur.Store(&tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		NextProtos:   []string{"h2"}, // gRPC is HTTP/2; grpc-go requires ALPN
	})
	return nil
}

// config returns the listener's TLS config: every handshake takes the
// settings current at that moment.
func (r *tlsReloader) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load(), nil
		},
	}
}

// checkTLSFlags requires the three mTLS flags together or not at all.
func checkTLSFlags(f tlsFiles) error {
	n := 0
	for _, s := range []string{f.cert, f.key, f.clientCA} {
		if s != "" {
			n++
		}
	}
	if n != 0 && n != 3 {
		return errors.New("--tls-cert-file, --tls-key-file and --client-ca-file go together (mTLS on the gRPC port)")
	}
	return nil
}
