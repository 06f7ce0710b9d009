package bearer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

const (
	introAudience = "https://mcp.example.com/mcp"
	introClient   = "mcp-extauthz"
	introSecret   = "s3cret/with:odd&chars"
)

// introspectionServer is a loopback RFC 7662 endpoint (and RFC 8414
// metadata at its issuer, its own URL). answer decides the reply for a
// token; calls counts introspection requests; it refuses a request without
// the client's credentials (client_secret_basic, or a private_key_jwt
// assertion signed by key).
type introspectionServer struct {
	*httptest.Server
	calls  atomic.Int64
	answer func(w http.ResponseWriter, token string)
	key    *ecdsa.PublicKey // nil: client_secret_basic
	tokens sync.Map         // tokens seen, for the never-logged check
}

func newIntrospectionServer(t testing.TB, answer func(w http.ResponseWriter, token string)) *introspectionServer {
	t.Helper()
	s := &introspectionServer{answer: answer}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": s.URL, "introspection_endpoint": s.URL + "/introspect"})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("token_type_hint") != "access_token" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if !s.authenticated(r) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		tok := r.PostForm.Get("token")
		s.tokens.Store(tok, true)
		s.answer(w, tok)
	})
	s.Server = httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(s.Close)
	return s
}

func (s *introspectionServer) authenticated(r *http.Request) bool {
	if s.key == nil {
		id, secret, ok := r.BasicAuth() // form-encoded first (RFC 6749 section 2.3.1)
		id, err1 := url.QueryUnescape(id)
		secret, err2 := url.QueryUnescape(secret)
		return ok && err1 == nil && err2 == nil && id == introClient && secret == introSecret
	}
	if r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return false
	}
	jws, err := jose.ParseSigned(r.PostForm.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return false
	}
	payload, err := jws.Verify(s.key)
	if err != nil {
		return false
	}
	var c struct {
		Iss, Sub, Aud, Jti string
		Exp, Iat           int64
	}
	return json.Unmarshal(payload, &c) == nil && c.Iss == introClient && c.Sub == introClient && c.Aud == s.URL &&
		c.Jti != "" && c.Exp > time.Now().Unix() && c.Exp-c.Iat <= 60
}

// activeAnswer is an introspection response for an active token.
func activeAnswer(iss string, over map[string]any) func(w http.ResponseWriter, token string) {
	return func(w http.ResponseWriter, _ string) {
		m := map[string]any{"active": true, "iss": iss, "sub": "alice", "aud": introAudience,
			"exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:tools refunds:write", "client_id": "app-1", "token_type": "Bearer"}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m)
	}
}

func raw(ct, body string, status int) func(w http.ResponseWriter, token string) {
	return func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func newIntrospector(t *testing.T, s *introspectionServer, mod func(*bearer.IntrospectionConfig)) *bearer.IntrospectionVerifier {
	t.Helper()
	cfg := bearer.IntrospectionConfig{Issuer: s.URL, Audiences: []string{"https://other.example.com/mcp", introAudience},
		ClientID: introClient, ClientSecret: introSecret, Timeout: 300 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	v, err := bearer.NewIntrospectionVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const opaqueToken = "opaque-7f3a9c1e2b4d6f8a0c1e3b5d7f9a2c4e"

// TestIntrospection: each answer of a loopback endpoint, through RFC 8414
// discovery, checked as a JWT's claims would be.
func TestIntrospection(t *testing.T) {
	tests := []struct {
		name     string
		give     func(iss string) func(http.ResponseWriter, string)
		wantKind bearer.Kind // 0: verified
	}{
		{"active", func(iss string) func(http.ResponseWriter, string) { return activeAnswer(iss, nil) }, 0},
		{"active, aud a list", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"aud": []string{"x", introAudience}})
		}, 0},
		{"inactive", func(string) func(http.ResponseWriter, string) {
			return raw("application/json", `{"active":false}`, 200)
		}, bearer.KindInvalid},
		{"wrong audience", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"aud": "https://evil.example.com/mcp"})
		}, bearer.KindWrongAudience},
		{"no audience", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"aud": nil})
		}, bearer.KindWrongAudience},
		{"wrong issuer", func(string) func(http.ResponseWriter, string) {
			return activeAnswer("https://evil.example.com", nil)
		}, bearer.KindWrongIssuer},
		{"no issuer", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"iss": nil})
		}, bearer.KindWrongIssuer},
		{"expired", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
		}, bearer.KindExpired},
		{"no exp", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"exp": nil})
		}, bearer.KindInvalid},
		{"no sub", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"sub": nil})
		}, bearer.KindInvalid},
		{"sub not a string", func(iss string) func(http.ResponseWriter, string) { return activeAnswer(iss, map[string]any{"sub": 7}) }, bearer.KindMalformed},
		{"nbf ahead", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})
		}, bearer.KindInvalid},
		{"a refresh token", func(iss string) func(http.ResponseWriter, string) {
			return activeAnswer(iss, map[string]any{"token_type": "refresh_token"})
		}, bearer.KindInvalid},
		{"garbage: not JSON", func(string) func(http.ResponseWriter, string) { return raw("application/json", `<html>`, 200) }, bearer.KindUnavailable},
		{"garbage: no active", func(string) func(http.ResponseWriter, string) { return raw("application/json", `{"sub":"alice"}`, 200) }, bearer.KindUnavailable},
		{"garbage: active a string", func(string) func(http.ResponseWriter, string) {
			return raw("application/json", `{"active":"true"}`, 200)
		}, bearer.KindUnavailable},
		{"garbage: active twice", func(string) func(http.ResponseWriter, string) {
			return raw("application/json", `{"active":false,"active":true}`, 200)
		}, bearer.KindUnavailable},
		{"garbage: trailing data", func(string) func(http.ResponseWriter, string) {
			return raw("application/json", `{"active":false} x`, 200)
		}, bearer.KindUnavailable},
		{"garbage: text/html", func(string) func(http.ResponseWriter, string) { return raw("text/html", `{"active":false}`, 200) }, bearer.KindUnavailable},
		{"garbage: too large", func(string) func(http.ResponseWriter, string) {
			return raw("application/json", `{"active":false,"x":"`+strings.Repeat("a", 70<<10)+`"}`, 200)
		}, bearer.KindUnavailable},
		{"endpoint error", func(string) func(http.ResponseWriter, string) { return raw("application/json", `{"active":true}`, 500) }, bearer.KindUnavailable},
		{"slow", func(iss string) func(http.ResponseWriter, string) {
			a := activeAnswer(iss, nil)
			return func(w http.ResponseWriter, tok string) { time.Sleep(600 * time.Millisecond); a(w, tok) }
		}, bearer.KindUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s *introspectionServer
			s = newIntrospectionServer(t, func(w http.ResponseWriter, tok string) { tt.give(s.URL)(w, tok) })
			v := newIntrospector(t, s, nil)
			p, err := v.Verify(context.Background(), opaqueToken)
			if tt.wantKind == 0 {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if p.Issuer != s.URL || p.Subject != "alice" || p.Audience != introAudience || p.Claims["scope"] != "mcp:tools refunds:write" || p.Expiry.IsZero() {
					t.Errorf("principal %+v", p)
				}
				return
			}
			var te *bearer.TokenError
			if !errors.As(err, &te) || te.Kind != tt.wantKind {
				t.Fatalf("Verify err = %v, want kind %v", err, tt.wantKind)
			}
			if strings.Contains(err.Error(), opaqueToken) {
				t.Errorf("the error names the token: %v", err)
			}
		})
	}
}

// TestIntrospectionDown: an endpoint that does not answer, and metadata
// naming another issuer, are KindUnavailable.
func TestIntrospectionDown(t *testing.T) {
	s := newIntrospectionServer(t, activeAnswer("", nil))
	v := newIntrospector(t, s, func(c *bearer.IntrospectionConfig) { c.Endpoint = s.URL + "/introspect" })
	s.Close()
	if _, err := v.Verify(context.Background(), opaqueToken); introKind(err) != bearer.KindUnavailable {
		t.Errorf("endpoint down: %v, want idp_unavailable", err)
	}
	s2 := newIntrospectionServer(t, activeAnswer("", nil))
	v2 := newIntrospector(t, s2, func(c *bearer.IntrospectionConfig) { c.Issuer = "https://idp.example.com" })
	if _, err := v2.Verify(context.Background(), opaqueToken); introKind(err) != bearer.KindUnavailable || v2.Ready() {
		t.Errorf("metadata of another issuer: %v, ready %v; want idp_unavailable, not ready", err, v2.Ready())
	}
}

func introKind(err error) bearer.Kind {
	var te *bearer.TokenError
	if errors.As(err, &te) {
		return te.Kind
	}
	return 0
}

// TestIntrospectionCache: an answer is reused until the earlier of exp
// and the bound, by a hash of the token, without a second call; an
// inactive answer too; concurrent Verifies of one token make one call.
func TestIntrospectionCache(t *testing.T) {
	var s *introspectionServer
	exp := time.Now().Add(90 * time.Second)
	slow := make(chan struct{})
	s = newIntrospectionServer(t, func(w http.ResponseWriter, tok string) {
		switch tok {
		case "inactive-token":
			raw("application/json", `{"active":false}`, 200)(w, tok)
		case "concurrent-token":
			<-slow
			activeAnswer(s.URL, nil)(w, tok)
		default:
			activeAnswer(s.URL, map[string]any{"exp": exp.Unix()})(w, tok)
		}
	})
	var mu sync.Mutex
	now := time.Now()
	var results []string
	v := newIntrospector(t, s, func(c *bearer.IntrospectionConfig) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c.CacheTTL = time.Minute
		c.OnResult = func(r string) { mu.Lock(); results = append(results, r); mu.Unlock() }
	})
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	ctx := context.Background()
	for range 3 {
		if _, err := v.Verify(ctx, opaqueToken); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Fatalf("%d calls for three Verifies within the bound, want 1", n)
	}
	setNow(now.Add(61 * time.Second)) // past the bound, before exp
	if _, err := v.Verify(ctx, opaqueToken); err != nil || s.calls.Load() != 2 {
		t.Fatalf("after the bound: %v, %d calls; want a second call", err, s.calls.Load())
	}
	setNow(exp.Add(time.Second)) // the entry lives until exp, the earlier
	if _, err := v.Verify(ctx, opaqueToken); introKind(err) != bearer.KindExpired || s.calls.Load() != 3 {
		t.Errorf("after exp: %v, %d calls; want token_expired after asking again", err, s.calls.Load())
	}
	for range 2 {
		if _, err := v.Verify(ctx, "inactive-token"); introKind(err) != bearer.KindInvalid {
			t.Fatalf("inactive: %v", err)
		}
	}
	if n := s.calls.Load(); n != 4 {
		t.Errorf("%d calls, want 4 (the inactive answer cached)", n)
	}
	mu.Lock()
	if got := strings.Join(results, ","); got != "active,hit,hit,active,refused,refused,hit" {
		t.Errorf("results %s", got)
	}
	mu.Unlock()

	// Concurrent Verifies of a new token: one call.
	setNow(time.Now())
	before := s.calls.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.Verify(ctx, "concurrent-token"); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	close(slow)
	wg.Wait()
	if n := s.calls.Load() - before; n != 1 {
		t.Errorf("%d calls for 8 concurrent Verifies of one token, want 1", n)
	}
	if _, ok := s.tokens.Load(opaqueToken); !ok {
		t.Error("the endpoint never saw the token")
	}
}

// TestIntrospectionBreaker: BreakerFailures failures in a row open the
// circuit: then a Verify fails at once without a call, and once the open
// period passed one call goes through and its success closes it.
func TestIntrospectionBreaker(t *testing.T) {
	var s *introspectionServer
	var failing atomic.Bool
	failing.Store(true)
	s = newIntrospectionServer(t, func(w http.ResponseWriter, tok string) {
		if failing.Load() {
			raw("application/json", `{}`, 503)(w, tok)
			return
		}
		activeAnswer(s.URL, nil)(w, tok)
	})
	var results []string
	var mu sync.Mutex
	v := newIntrospector(t, s, func(c *bearer.IntrospectionConfig) {
		c.BreakerOpen = 300 * time.Millisecond
		c.OnResult = func(r string) { mu.Lock(); results = append(results, r); mu.Unlock() }
	})
	ctx := context.Background()
	for i := range bearer.BreakerFailures {
		if _, err := v.Verify(ctx, "t"+string(rune('a'+i))); introKind(err) != bearer.KindUnavailable {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	if v.BreakerState() != "open" {
		t.Fatalf("breaker %s after %d failures, want open", v.BreakerState(), bearer.BreakerFailures)
	}
	calls := s.calls.Load()
	start := time.Now()
	_, err := v.Verify(ctx, "another")
	if introKind(err) != bearer.KindUnavailable || s.calls.Load() != calls || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("open: %v, %d calls (was %d), took %v; want idp_unavailable at once, no call", err, s.calls.Load(), calls, time.Since(start))
	}
	failing.Store(false)
	time.Sleep(350 * time.Millisecond)
	if _, err := v.Verify(ctx, "after"); err != nil || v.BreakerState() != "closed" {
		t.Fatalf("after the open period: %v, breaker %s; want verified, closed", err, v.BreakerState())
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(results, ","); got != "error,error,error,error,error,open,active" {
		t.Errorf("results %s", got)
	}
}

// TestIntrospectionPrivateKeyJWT: the client authenticates with a signed
// assertion (RFC 7523) instead of a secret; a wrong key is refused by the
// endpoint, which is idp_unavailable here (the service is misconfigured).
func TestIntrospectionPrivateKeyJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var s *introspectionServer
	s = newIntrospectionServer(t, func(w http.ResponseWriter, tok string) { activeAnswer(s.URL, nil)(w, tok) })
	s.key = &key.PublicKey
	v := newIntrospector(t, s, func(c *bearer.IntrospectionConfig) {
		c.ClientSecret, c.ClientKey = "", &jose.JSONWebKey{Key: key, KeyID: "k1"}
	})
	if _, err := v.Verify(context.Background(), opaqueToken); err != nil {
		t.Fatalf("private_key_jwt: %v", err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	w := newIntrospector(t, s, func(c *bearer.IntrospectionConfig) {
		c.ClientSecret, c.ClientKey = "", &jose.JSONWebKey{Key: other, KeyID: "k2"}
	})
	if _, err := w.Verify(context.Background(), opaqueToken); introKind(err) != bearer.KindUnavailable {
		t.Errorf("wrong key: %v, want idp_unavailable", err)
	}
	c := newIntrospector(t, s, nil) // a secret the endpoint does not take
	if _, err := c.Verify(context.Background(), opaqueToken); introKind(err) != bearer.KindUnavailable {
		t.Errorf("secret where a key is wanted: %v, want idp_unavailable", err)
	}
}

func TestNewIntrospectionVerifierRefuses(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	base := bearer.IntrospectionConfig{Issuer: "https://idp.example.com", Audiences: []string{introAudience}, ClientID: "c", ClientSecret: "s"}
	tests := []struct {
		name string
		give func(c *bearer.IntrospectionConfig)
	}{
		{"no issuer", func(c *bearer.IntrospectionConfig) { c.Issuer = "" }},
		{"no audience", func(c *bearer.IntrospectionConfig) { c.Audiences = nil }},
		{"no client", func(c *bearer.IntrospectionConfig) { c.ClientID = "" }},
		{"no credentials", func(c *bearer.IntrospectionConfig) { c.ClientSecret = "" }},
		{"both credentials", func(c *bearer.IntrospectionConfig) { c.ClientKey = &jose.JSONWebKey{Key: key} }},
		{"a public key", func(c *bearer.IntrospectionConfig) {
			c.ClientSecret, c.ClientKey = "", &jose.JSONWebKey{Key: &key.PublicKey}
		}},
		{"http endpoint", func(c *bearer.IntrospectionConfig) { c.Endpoint = "http://idp.example.com/introspect" }},
		{"relative endpoint", func(c *bearer.IntrospectionConfig) { c.Endpoint = "/introspect" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.give(&c)
			if _, err := bearer.NewIntrospectionVerifier(c); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestLooksLikeJWT tells a JWS compact serialization from opaque tokens.
func TestLooksLikeJWT(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", true},
		{"eyJhbGciOiJSUzI1NiJ9..", true}, // JWT-shaped: the JWT verifier refuses it (token_malformed)
		{opaqueToken, false},
		{"abc.def.ghi", false}, // three parts, no JSON header
		{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0", false},
		{"eyJhbGciOiJSUzI1NiJ9.a.b.c", false},
		{"2YotnFZFEjr1zCsicMWpAA", false}, // RFC 6749's example
		{"", false},
	}
	for _, tt := range tests {
		if got := bearer.LooksLikeJWT(tt.give); got != tt.want {
			t.Errorf("LooksLikeJWT(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// BenchmarkIntrospectionHit is Verify of an opaque token answered from the
// cache (the steady state) next to the JWT verifier's cache hit
// (CachingVerifier, the baseline); "dual" adds DualVerifier's shape test.
func BenchmarkIntrospectionHit(b *testing.B) {
	var s *introspectionServer
	s = newIntrospectionServer(b, func(w http.ResponseWriter, tok string) { activeAnswer(s.URL, nil)(w, tok) })
	v, err := bearer.NewIntrospectionVerifier(bearer.IntrospectionConfig{Issuer: s.URL, Audiences: []string{introAudience},
		ClientID: introClient, ClientSecret: introSecret})
	if err != nil {
		b.Fatal(err)
	}
	jwt, err := bearer.NewCachingVerifier(fixedVerifier{}, 16, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const jwtTok = "eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJhIn0.c2ln"
	for name, run := range map[string]func() error{
		"baseline-jwt-cache": func() error { _, err := jwt.Verify(ctx, jwtTok); return err },
		"introspection":      func() error { _, err := v.Verify(ctx, opaqueToken); return err },
		"dual-introspection": func() error { _, err := bearer.DualVerifier{JWT: jwt, Opaque: v}.Verify(ctx, opaqueToken); return err },
	} {
		b.Run(name, func(b *testing.B) {
			if err := run(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = run()
			}
		})
	}
	if s.calls.Load() != 1 {
		b.Errorf("%d introspection calls, want 1", s.calls.Load())
	}
}

// fixedVerifier verifies every token as alice's, for an hour.
type fixedVerifier struct{}

func (fixedVerifier) Audiences() []string { return []string{introAudience} }
func (fixedVerifier) Verify(context.Context, string) (*bearer.Principal, error) {
	return &bearer.Principal{Issuer: "https://idp.example.com", Subject: "alice", Audience: introAudience, Expiry: time.Now().Add(time.Hour)}, nil
}

// TestIntrospectionNoRedirect: a redirect from the endpoint is a failure
// (idp_unavailable), never followed: the token and the client's
// credentials go nowhere else.
func TestIntrospectionNoRedirect(t *testing.T) {
	var followed atomic.Int64
	var s *introspectionServer
	s = newIntrospectionServer(t, func(w http.ResponseWriter, _ string) {
		w.Header().Set("Location", s.URL+"/elsewhere")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { followed.Add(1) }))
	defer elsewhere.Close()
	v := newIntrospector(t, s, nil)
	if _, err := v.Verify(context.Background(), opaqueToken); introKind(err) != bearer.KindUnavailable || followed.Load() != 0 {
		t.Errorf("redirect: %v, followed %d times; want idp_unavailable, never followed", err, followed.Load())
	}
}

// TestIntrospectionSecretFileRotation: the client secret file is read at
// every call: a rotated secret applies without a new verifier.
func TestIntrospectionSecretFileRotation(t *testing.T) {
	var want atomic.Value
	want.Store("old-secret")
	var iss string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, secret, ok := r.BasicAuth(); !ok || secret != want.Load().(string) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		activeAnswer(iss, nil)(w, "")
	}))
	defer ts.Close()
	iss = ts.URL
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("old-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := bearer.NewIntrospectionVerifier(bearer.IntrospectionConfig{Issuer: iss, Audiences: []string{introAudience}, Endpoint: ts.URL,
		ClientID: introClient, ClientSecretFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), "token-1"); err != nil {
		t.Fatalf("old secret: %v", err)
	}
	want.Store("new-secret")
	if err := os.WriteFile(file, []byte("new-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), "token-2"); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if _, err := bearer.NewIntrospectionVerifier(bearer.IntrospectionConfig{Issuer: iss, Audiences: []string{introAudience}, Endpoint: ts.URL,
		ClientID: introClient, ClientSecretFile: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Error("a missing secret file accepted at start")
	}
}
