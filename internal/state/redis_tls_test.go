package state_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// issue writes a certificate of ca for name, a server's (IP 127.0.0.1 and
// DNS name redis.test) or a client's, and its key into dir; it returns the
// files.
func issue(t *testing.T, ca *testkit.CA, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	c, k := ca.IssueClient(t, name)
	if server {
		c, k = ca.IssueServer(t, name, "redis.test")
	}
	return testkit.WritePEMFiles(t, dir, name, c, k)
}

// TestRedisTLS: rediss:// to a real redis-server TLS port that requires
// client certificates (tls-auth-clients yes), with a private CA.
func TestRedisTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := testkit.NewCA(t, "ca"), testkit.NewCA(t, "other-ca")
	caFile, otherFile := ca.WriteCert(t, dir), other.WriteCert(t, dir)
	srvCert, srvKey := issue(t, ca, dir, "server", true)
	cliCert, cliKey := issue(t, ca, dir, "client", false)
	strangerCert, strangerKey := issue(t, other, dir, "stranger", false)
	srv := statetest.StartTLSServer(t, "--tls-cert-file", srvCert, "--tls-key-file", srvKey,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes")
	url := "rediss://" + srv.Addr

	tests := []struct {
		name    string
		giveURL string
		give    state.RedisOptions
		wantOK  bool
	}{
		{"private CA and client certificate", url, state.RedisOptions{TLSCAFile: caFile, TLSCertFile: cliCert, TLSKeyFile: cliKey}, true},
		{"server name the certificate carries", url, state.RedisOptions{TLSCAFile: caFile, TLSCertFile: cliCert, TLSKeyFile: cliKey, TLSServerName: "redis.test"}, true},
		{"no client certificate", url, state.RedisOptions{TLSCAFile: caFile}, false},
		{"client certificate of another CA", url, state.RedisOptions{TLSCAFile: caFile, TLSCertFile: strangerCert, TLSKeyFile: strangerKey}, false},
		{"server checked against another CA", url, state.RedisOptions{TLSCAFile: otherFile, TLSCertFile: cliCert, TLSKeyFile: cliKey}, false},
		{"system roots only", url, state.RedisOptions{TLSCertFile: cliCert, TLSKeyFile: cliKey}, false},
		{"server name the certificate lacks", url, state.RedisOptions{TLSCAFile: caFile, TLSCertFile: cliCert, TLSKeyFile: cliKey, TLSServerName: "other.test"}, false},
		{"plaintext to the TLS port", "redis://" + srv.Addr, state.RedisOptions{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.give.Prefix = statetest.Prefix()
			r, err := state.OpenRedis(tt.giveURL, tt.give)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, _, err = r.Claim(context.Background(), "k", "v", time.Minute)
			if tt.wantOK && err != nil {
				t.Fatalf("claim: %v", err)
			}
			if !tt.wantOK && !errors.Is(err, state.ErrUnavailable) {
				t.Fatalf("claim err = %v, want ErrUnavailable", err)
			}
		})
	}
}

// TestRedisTLSClientCertificateRotation: the client certificate files are
// read again for every new connection: replaced by one the server does
// not trust, new connections fail; put back, they succeed.
func TestRedisTLSClientCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	ca, other := testkit.NewCA(t, "ca"), testkit.NewCA(t, "other-ca")
	caFile := ca.WriteCert(t, dir)
	srvCert, srvKey := issue(t, ca, dir, "server", true)
	cliCert, cliKey := issue(t, ca, dir, "client", false)
	strangerCert, strangerKey := issue(t, other, dir, "stranger", false)
	srv := statetest.StartTLSServer(t, "--tls-cert-file", srvCert, "--tls-key-file", srvKey,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes")
	certFile, keyFile := filepath.Join(dir, "mounted.crt"), filepath.Join(dir, "mounted.key")
	mount := func(cert, key string) {
		t.Helper()
		for src, dst := range map[string]string{cert: certFile, key: keyFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	mount(cliCert, cliKey)
	r, err := state.OpenRedis("rediss://"+srv.Addr, state.RedisOptions{Prefix: statetest.Prefix(), TLSCAFile: caFile, TLSCertFile: certFile, TLSKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, TLSConfig: tlsClientConfig(t, caFile, cliCert, cliKey)})
	defer admin.Close()
	dropClients := func() { // every connection but admin's: the store dials anew
		t.Helper()
		if err := admin.Do(ctx, "client", "kill", "type", "normal", "skipme", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}

	mount(strangerCert, strangerKey)
	dropClients()
	_ = r.Ping(ctx) // may land on a dropped connection
	for range 3 {   // every new connection is refused
		if err := r.Ping(ctx); !errors.Is(err, state.ErrUnavailable) {
			t.Fatalf("with an untrusted certificate mounted: Ping = %v, want ErrUnavailable", err)
		}
	}
	mount(cliCert, cliKey)
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("with the trusted certificate mounted again: %v", err)
	}
}

func tlsClientConfig(t *testing.T, caFile, certFile, keyFile string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// redisACL is the README's ACL line for the service's user, with the test
// prefix's pattern added: the commands a store sends and nothing else.
const redisACL = "on >s3cret-pw ~mcp-extauthz:* ~test-* resetchannels -@all +ping +hello +set +get +del +eval +evalsha +wait"

// TestRedisACL: an ACL user with only the documented commands and key
// pattern; the password from the URL, a file or given apart; a wrong one
// is ErrUnavailable.
func TestRedisACL(t *testing.T) {
	srv := statetest.StartServer(t, append([]string{"--user", "default", "off", "--user", "extauthz"}, strings.Fields(redisACL)...)...)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil { // kubectl --from-file keeps the newline
		t.Fatal(err)
	}
	wrongFile := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrongFile, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		giveURL string
		give    state.RedisOptions
		wantOK  bool
	}{
		{"password in the URL", "redis://extauthz:s3cret-pw@" + srv.Addr, state.RedisOptions{}, true},
		{"password file", "redis://extauthz@" + srv.Addr, state.RedisOptions{PasswordFile: pwFile}, true},
		{"password given apart", "redis://extauthz@" + srv.Addr, state.RedisOptions{Password: "s3cret-pw"}, true},
		{"wrong password file", "redis://extauthz@" + srv.Addr, state.RedisOptions{PasswordFile: wrongFile}, false},
		{"default user (disabled)", "redis://" + srv.Addr, state.RedisOptions{Password: "s3cret-pw"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.give.Prefix = statetest.Prefix()
			r, err := state.OpenRedis(tt.giveURL, tt.give)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			claimed, _, err := r.Claim(ctx, "k", "v", time.Minute)
			if !tt.wantOK {
				if !errors.Is(err, state.ErrUnavailable) {
					t.Fatalf("claim err = %v, want ErrUnavailable", err)
				}
				return
			}
			if err != nil || !claimed {
				t.Fatalf("claim = %v, %v", claimed, err)
			}
			if err := r.Release(ctx, "k", "v"); err != nil { // EVALSHA, EVAL, GET, DEL
				t.Fatal(err)
			}
			if err := r.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}

	// WAIT is in the ACL too (no replica: it answers 0 at once after
	// the timeout, which the store reports as not replicated).
	r, err := state.OpenRedis("redis://extauthz@"+srv.Addr, state.RedisOptions{Prefix: statetest.Prefix(), PasswordFile: pwFile, WaitReplicas: 1, WaitTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.Claim(context.Background(), "k", "v", time.Minute); !errors.Is(err, state.ErrNotReplicated) || strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("claim with WAIT and no replica: %v, want ErrNotReplicated (not an ACL refusal)", err)
	}
}
