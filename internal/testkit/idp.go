package testkit

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// IdP is an OpenID provider on 127.0.0.1: a discovery document (OpenID
// Connect Discovery 1.0 section 4) and a JWKS, with keys that can be
// rotated and switches that take it down, make it answer garbage or slow
// it. It signs nothing itself: tests sign with a Key and the provider
// publishes it.
type IdP struct {
	srv   *httptest.Server
	mu    sync.Mutex
	keys  []jose.JSONWebKey
	extra []json.RawMessage // served after keys as they are: members go-jose cannot encode (X25519…)

	// Down makes every answer a 503; Garbage makes it a 200 that is not
	// JSON; Delay (nanoseconds) is added before every answer.
	Down, Garbage atomic.Bool
	Delay         atomic.Int64
	// JWKSGets counts JWKS requests (also while down); Discovered counts
	// discovery documents served.
	JWKSGets, Discovered atomic.Int64
}

// NewIdP starts a provider publishing keys until the test ends.
func NewIdP(t testing.TB, keys ...*Key) *IdP {
	t.Helper()
	idp := &IdP{}
	idp.SetKeys(keys...)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if !idp.serve(w) {
			return
		}
		idp.Discovered.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                idp.srv.URL,
			"jwks_uri":                              idp.srv.URL + "/jwks",
			"authorization_endpoint":                idp.srv.URL + "/authorize",
			"token_endpoint":                        idp.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		idp.JWKSGets.Add(1)
		if !idp.serve(w) {
			return
		}
		idp.mu.Lock()
		set := struct {
			Keys []any `json:"keys"`
		}{}
		for _, k := range idp.keys {
			set.Keys = append(set.Keys, k)
		}
		for _, k := range idp.extra {
			set.Keys = append(set.Keys, k)
		}
		idp.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	idp.srv = startServer(t, mux)
	return idp
}

// serve applies the fault switches; it reports whether to answer normally.
func (idp *IdP) serve(w http.ResponseWriter) bool {
	if d := idp.Delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if idp.Down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return false
	}
	if idp.Garbage.Load() {
		_, _ = w.Write([]byte("<html>not json"))
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	return true
}

// SetKeys replaces the published signing keys by the public keys of keys.
func (idp *IdP) SetKeys(keys ...*Key) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.keys = nil
	for _, k := range keys {
		idp.keys = append(idp.keys, k.Public())
	}
}

// SetExtraKeys sets the raw JWK Set members served, verbatim, after the
// signing keys.
func (idp *IdP) SetExtraKeys(extra ...json.RawMessage) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.extra = extra
}

// Issuer is the provider's issuer identifier: its http://127.0.0.1:port URL.
func (idp *IdP) Issuer() string { return idp.srv.URL }

// Claims returns fresh valid access-token claims of the provider for
// Audience and Subject (ClaimsFor its issuer).
func (idp *IdP) Claims() map[string]any { return ClaimsFor(idp.Issuer()) }

// ClaimsFor returns fresh valid access-token claims of issuer for Audience
// and Subject: issued now, valid from a minute ago for an hour, scope
// mcp:tools.
func ClaimsFor(issuer string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": issuer, "sub": Subject, "aud": []string{Audience},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": "mcp:tools",
	}
}

// StartHTTP serves h on 127.0.0.1 until the test ends and returns its URL.
func StartHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	return startServer(t, h).URL
}

func startServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := &httptest.Server{Listener: Listen(t), Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Listen listens on a free TCP port of 127.0.0.1 (never another
// interface). The caller closes the listener, or hands it to a server
// that does.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Get fetches url and returns the status code and body; a transport error
// fails the test.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
