package bearer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/singleflight"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
)

// Defaults of an IntrospectionVerifier.
const (
	// DefaultIntrospectionTimeout stays below the 1s ext_authz timeout of
	// the shipped Envoy configs, so a slow endpoint is answered as such
	// (idp_unavailable) before Envoy gives up on the Check.
	DefaultIntrospectionTimeout  = 500 * time.Millisecond
	DefaultIntrospectionCacheTTL = time.Minute
	DefaultIntrospectionCache    = 10_000
	// BreakerFailures consecutive failures of the endpoint (unreachable,
	// slow, an error status, an answer that is not an introspection
	// response) open the circuit: for BreakerOpen every token not in the
	// cache is refused at once (idp_unavailable) without a call; then one
	// call is let through, and its success closes the circuit again.
	BreakerFailures = 5
	BreakerOpen     = 10 * time.Second
	// maxIntrospectionResponse bounds the answer read.
	maxIntrospectionResponse = 64 << 10
)

// IntrospectionConfig configures NewIntrospectionVerifier.
type IntrospectionConfig struct {
	Issuer    string   // required: the exact iss every introspection response must carry
	Audiences []string // required: RFC 8707 resource URIs; a response's aud must hold one
	// Endpoint is the RFC 7662 introspection endpoint. Empty: the
	// introspection_endpoint of the issuer's RFC 8414 authorization server
	// metadata (/.well-known/oauth-authorization-server inserted into the
	// issuer URL, section 3.1), else of its OpenID Connect discovery
	// document; the document's issuer must be Issuer (RFC 8414 section 3.3).
	Endpoint string
	// ClientID authenticates this service to the endpoint (RFC 7662
	// section 2.1 requires some authorization): with ClientSecret as
	// client_secret_basic (RFC 6749 section 2.3.1), or with ClientKey as
	// private_key_jwt (RFC 7523 section 2.2, OpenID Connect Core section 9:
	// a client assertion signed with the key, iss and sub the client id,
	// aud the issuer identifier, a 60s lifetime and a fresh jti).
	// Exactly one of ClientSecret and ClientKey.
	ClientID     string
	ClientSecret string
	ClientKey    *jose.JSONWebKey // a private key: RSA, ECDSA or Ed25519
	// ClientSecretFile, instead of ClientSecret, names a file holding it
	// (surrounding whitespace trimmed), read at every call, so a rotated
	// Kubernetes Secret applies without a restart.
	ClientSecretFile string
	// HTTPClient makes the calls; nil: a client with Go's defaults. Its
	// redirects are never followed (a redirect is an endpoint failure).
	HTTPClient *http.Client
	// Timeout bounds one call (discovery or introspection); zero means
	// DefaultIntrospectionTimeout. A call the caller's context ends first
	// is KindDeadline.
	Timeout time.Duration
	// CacheTTL bounds how long an answer is reused: an active token's
	// until the earlier of its exp and CacheTTL after the answer, an
	// inactive one's for CacheTTL. Zero means DefaultIntrospectionCacheTTL;
	// negative caches nothing. Entries are keyed by SHA-256 of the token.
	CacheTTL  time.Duration
	CacheSize int              // answers kept (LRU); zero means DefaultIntrospectionCache
	Now       func() time.Time // nil means time.Now
	// BreakerOpen is how long the circuit stays open; zero means
	// BreakerOpen.
	BreakerOpen time.Duration
	// OnResult, if set, is told each Verify's outcome: "hit" (answered
	// from the cache), "active" (the endpoint's answer verified),
	// "refused" (inactive, or a claim check failed), "error" (the endpoint
	// failed) or "open" (the circuit is open).
	OnResult func(result string)
}

// IntrospectionVerifier verifies opaque access tokens by asking the
// issuer's RFC 7662 introspection endpoint, then checks the answer as
// OIDCVerifier checks a JWT's claims: active true, iss the issuer, aud
// holding a configured audience, exp (required) in the future, nbf at most
// NotBeforeLeeway ahead, a non-empty string sub, and a token_type other
// than refresh_token when present. The answer's members are the
// Principal's claims, so scope and cnf (RFC 7800; a cnf.jkt makes the
// token DPoP-bound, RFC 9449 section 6.2) are read as a JWT's are. It
// caches answers by SHA-256 of the token, never the token; concurrent
// Verifies of one token make one call. Every failure of the endpoint
// (unreachable, slower than Timeout, a status other than 200, an answer
// that is not a JSON object of at most 64 KiB with a boolean active) is
// KindUnavailable, and BreakerFailures of them in a row open a circuit
// breaker (sony/gobreaker). The token is never logged nor put in an error.
// It does not check the introspection response's signature (RFC 9701 JWT
// responses are not supported: the answer must be application/json).
type IntrospectionVerifier struct {
	cfg     IntrospectionConfig
	cache   *lru.Cache[[sha256.Size]byte, introspected]
	calls   singleflight.Group
	breaker *gobreaker.CircuitBreaker[*introspected]

	mu          sync.Mutex
	endpoint    string
	lastAttempt time.Time
	lastErr     error
}

// introspected is one answer: p for an active token, else why it is not.
type introspected struct {
	p     *Principal
	err   *TokenError
	until time.Time // cache deadline
}

var _ Service = (*IntrospectionVerifier)(nil)

// NewIntrospectionVerifier returns a verifier for cfg. It does no I/O
// (Warm discovers the endpoint).
func NewIntrospectionVerifier(cfg IntrospectionConfig) (*IntrospectionVerifier, error) {
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("introspection: issuer is required")
	case len(cfg.Audiences) == 0:
		return nil, errors.New("introspection: at least one audience is required")
	case cfg.ClientID == "":
		return nil, errors.New("introspection: a client id is required (RFC 7662 section 2.1: the endpoint authenticates its callers)")
	case btoi(cfg.ClientSecret != "")+btoi(cfg.ClientSecretFile != "")+btoi(cfg.ClientKey != nil) != 1:
		return nil, errors.New("introspection: give a client secret or its file (client_secret_basic) or a client key (private_key_jwt), one of them")
	case cfg.ClientKey != nil && (cfg.ClientKey.IsPublic() || !cfg.ClientKey.Valid()):
		return nil, errors.New("introspection: the client key must be a private JWK")
	}
	if cfg.Endpoint != "" {
		if err := checkEndpoint(cfg.Endpoint); err != nil {
			return nil, err
		}
	}
	if cfg.ClientSecretFile != "" {
		if _, err := ReadClientSecretFile(cfg.ClientSecretFile); err != nil {
			return nil, err
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultIntrospectionTimeout
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultIntrospectionCacheTTL
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultIntrospectionCache
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.BreakerOpen == 0 {
		cfg.BreakerOpen = BreakerOpen
	}
	// Never follow a redirect: a 307 would send the token, and the
	// client's credentials, wherever the answer points.
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cfg.HTTPClient = &hc
	c, err := lru.New[[sha256.Size]byte, introspected](cfg.CacheSize)
	if err != nil {
		return nil, err
	}
	v := &IntrospectionVerifier{cfg: cfg, cache: c, endpoint: cfg.Endpoint}
	v.breaker = gobreaker.NewCircuitBreaker[*introspected](gobreaker.Settings{
		Name:        "introspection",
		MaxRequests: 1,
		Timeout:     cfg.BreakerOpen,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= BreakerFailures },
	})
	return v, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CheckIntrospectionEndpoint is the check NewIntrospectionVerifier makes
// of IntrospectionConfig.Endpoint, for a configuration to report before
// it builds the verifier: an error unless s is an absolute https URL
// (http only on a loopback host) with no fragment or user.
func CheckIntrospectionEndpoint(s string) error { return checkEndpoint(s) }

// checkEndpoint requires an absolute https URL (http only on a loopback
// host), with no fragment.
func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("introspection endpoint %q: want an absolute https URL", s)
	}
	switch h := u.Hostname(); {
	case u.Scheme == "https":
	case u.Scheme == "http" && (h == "127.0.0.1" || h == "::1" || h == "localhost"):
	default:
		return fmt.Errorf("introspection endpoint %q: want https (http only on a loopback host)", s)
	}
	return nil
}

// Audiences returns the configured audiences.
func (v *IntrospectionVerifier) Audiences() []string { return v.cfg.Audiences }

// Ready reports whether the endpoint is known (configured or discovered).
func (v *IntrospectionVerifier) Ready() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.endpoint != ""
}

// Endpoint returns the introspection endpoint, "" until discovered.
func (v *IntrospectionVerifier) Endpoint() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.endpoint
}

// Close implements Service; the verifier holds no background work.
func (v *IntrospectionVerifier) Close() {}

// Warm discovers the endpoint now when it is not configured.
func (v *IntrospectionVerifier) Warm(ctx context.Context) error {
	_, err := v.discover(ctx, true)
	return err
}

// BreakerState returns the circuit breaker's state: "closed", "half-open"
// or "open".
func (v *IntrospectionVerifier) BreakerState() string { return v.breaker.State().String() }

// Verify introspects rawToken, or answers from the cache; see
// IntrospectionVerifier. Errors are *TokenError: KindInvalid (inactive, no
// sub or exp, nbf ahead, a refresh token), KindWrongIssuer,
// KindWrongAudience, KindExpired, KindMalformed (a member of the wrong
// JSON type), KindUnavailable (the endpoint failed or the circuit is open)
// and KindDeadline.
func (v *IntrospectionVerifier) Verify(ctx context.Context, rawToken string) (*Principal, error) {
	if len(rawToken) > MaxTokenBytes {
		return nil, &TokenError{Kind: KindMalformed, Err: fmt.Errorf("token longer than %d bytes", MaxTokenBytes)}
	}
	key := sha256.Sum256(unsafe.Slice(unsafe.StringData(rawToken), len(rawToken)))
	now := v.cfg.Now()
	if e, ok := v.cache.Get(key); ok {
		if now.Before(e.until) {
			v.result("hit")
			return v.answer(e, now)
		}
		v.cache.Remove(key)
	}
	ch := v.calls.DoChan(string(key[:]), func() (any, error) {
		// Not the caller's context: the call serves every caller
		// waiting on it, and ends at Timeout.
		return v.introspect(context.WithoutCancel(ctx), rawToken)
	})
	var r singleflight.Result
	select {
	case r = <-ch:
	case <-ctx.Done():
		return nil, &TokenError{Kind: KindDeadline, Err: ctx.Err()}
	}
	if r.Err != nil {
		var te *TokenError
		if errors.As(r.Err, &te) {
			return nil, te
		}
		return nil, &TokenError{Kind: KindUnavailable, Err: r.Err}
	}
	e := r.Val.(*introspected)
	if v.cfg.CacheTTL > 0 {
		v.cache.Add(key, *e)
	}
	if e.p != nil {
		v.result("active")
	} else {
		v.result("refused")
	}
	return v.answer(*e, now)
}

// answer is e's outcome at now: its error, or its principal while its
// token has not expired.
func (v *IntrospectionVerifier) answer(e introspected, now time.Time) (*Principal, error) {
	if e.err != nil {
		return nil, e.err
	}
	if !now.Before(e.p.Expiry) {
		return nil, &TokenError{Kind: KindExpired, Err: fmt.Errorf("token exp %s is past", e.p.Expiry.UTC().Format(time.RFC3339))}
	}
	return e.p, nil
}

func (v *IntrospectionVerifier) result(r string) {
	if v.cfg.OnResult != nil {
		v.cfg.OnResult(r)
	}
}

// introspect asks the endpoint about tok through the breaker and checks
// the answer. The error is a *TokenError of KindUnavailable for a failure
// of the endpoint; an inactive or refused token is an introspected with
// err set.
func (v *IntrospectionVerifier) introspect(ctx context.Context, tok string) (*introspected, error) {
	endpoint, err := v.discover(ctx, false)
	if err != nil {
		v.result("error")
		return nil, &TokenError{Kind: KindUnavailable, Err: err}
	}
	e, err := v.breaker.Execute(func() (*introspected, error) {
		body, err := v.call(ctx, endpoint, tok)
		if err != nil {
			return nil, err
		}
		return v.check(body)
	})
	switch {
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		v.result("open")
		return nil, &TokenError{Kind: KindUnavailable, Err: fmt.Errorf("introspection endpoint failing: circuit breaker %s", v.breaker.State())}
	case err != nil:
		v.result("error")
		return nil, &TokenError{Kind: KindUnavailable, Err: err}
	}
	return e, nil
}

// call POSTs the introspection request (RFC 7662 section 2.1) and returns
// the body of a 200 application/json answer.
func (v *IntrospectionVerifier) call(ctx context.Context, endpoint, tok string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	if v.cfg.ClientKey != nil {
		assertion, err := v.clientAssertion()
		if err != nil {
			return nil, err
		}
		form.Set("client_id", v.cfg.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("introspection request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret := v.cfg.ClientSecret; secret != "" || v.cfg.ClientSecretFile != "" {
		if v.cfg.ClientSecretFile != "" {
			var err error
			if secret, err = ReadClientSecretFile(v.cfg.ClientSecretFile); err != nil {
				return nil, err
			}
		}
		req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(secret)) // RFC 6749 section 2.3.1
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // the URL is the endpoint's, but say it once
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("introspection endpoint slower than %v", v.cfg.Timeout)
		}
		return nil, fmt.Errorf("introspection endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionResponse+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("introspection endpoint: reading the answer: %w", err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("introspection endpoint answered HTTP %d", resp.StatusCode)
	case len(body) > maxIntrospectionResponse:
		return nil, fmt.Errorf("introspection answer larger than %d bytes", maxIntrospectionResponse)
	case !isJSONMediaType(resp.Header.Get("Content-Type")):
		return nil, fmt.Errorf("introspection answer of type %q, want application/json", clip(resp.Header.Get("Content-Type")))
	}
	return body, nil
}

// isJSONMediaType reports whether ct is application/json, parameters
// aside.
func isJSONMediaType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// clientAssertion signs a private_key_jwt client assertion.
func (v *IntrospectionVerifier) clientAssertion() (string, error) {
	alg, err := signingAlgorithm(v.cfg.ClientKey)
	if err != nil {
		return "", err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: v.cfg.ClientKey}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("client assertion: %w", err)
	}
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	now := v.cfg.Now()
	claims, _ := json.Marshal(map[string]any{
		"iss": v.cfg.ClientID, "sub": v.cfg.ClientID, "aud": v.cfg.Issuer,
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": hex.EncodeToString(jti[:]),
	})
	jws, err := s.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("client assertion: %w", err)
	}
	return jws.CompactSerialize()
}

// signingAlgorithm is the JWK's alg, else the usual one for its key type.
func signingAlgorithm(k *jose.JSONWebKey) (jose.SignatureAlgorithm, error) {
	if k.Algorithm != "" {
		return jose.SignatureAlgorithm(k.Algorithm), nil
	}
	switch k.Key.(type) {
	case *rsa.PrivateKey:
		return jose.RS256, nil
	case *ecdsa.PrivateKey:
		return jose.ES256, nil
	case ed25519.PrivateKey:
		return jose.EdDSA, nil
	}
	return "", fmt.Errorf("client key of type %T: give its alg", k.Key)
}

// check reads an introspection response (RFC 7662 section 2.2).
func (v *IntrospectionVerifier) check(body []byte) (*introspected, error) {
	c, err := readClaims(body) // strict JSON: one object; the registered claims once
	if err != nil {
		return nil, fmt.Errorf("introspection answer: %w", err)
	}
	if err := uniqueMembers(body); err != nil { // active, scope, cnf… once too
		return nil, fmt.Errorf("introspection answer: %w", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, fmt.Errorf("introspection answer: %w", err)
	}
	active, ok := claims["active"].(bool)
	if !ok {
		return nil, errors.New("introspection answer without a boolean active")
	}
	now := v.cfg.Now()
	refuse := func(k Kind, err error) (*introspected, error) {
		return &introspected{err: &TokenError{Kind: k, Err: err}, until: now.Add(v.cfg.CacheTTL)}, nil
	}
	if !active {
		return refuse(KindInvalid, errors.New("the introspection endpoint says the token is not active"))
	}
	switch {
	case c.iss != nil && c.iss[0] != '"':
		return refuse(KindMalformed, errors.New("iss is not a string"))
	case c.iss == nil:
		return refuse(KindWrongIssuer, fmt.Errorf("no iss, want %q", v.cfg.Issuer))
	case !jsonscan.Equal(c.iss, v.cfg.Issuer):
		return refuse(KindWrongIssuer, fmt.Errorf("token iss %s, want %q", clipJSON(c.iss), v.cfg.Issuer))
	}
	aud, ok := audience(c.aud, v.cfg.Audiences)
	switch {
	case !ok:
		return refuse(KindMalformed, errors.New("aud is neither a string nor an array of strings"))
	case aud == "":
		return refuse(KindWrongAudience, fmt.Errorf("token aud %s holds none of %q", ClipList(audiences(c.aud, 6)), v.cfg.Audiences))
	}
	sub, isString := jsonscan.Unquote(c.sub)
	tt, _ := claims["token_type"].(string)
	switch {
	case c.sub != nil && !isString:
		return refuse(KindMalformed, errors.New("sub is not a string"))
	case !c.exp.set:
		return refuse(KindInvalid, errors.New("no exp in the introspection answer"))
	case !now.Before(c.exp.t):
		return refuse(KindExpired, fmt.Errorf("token exp %s is past", c.exp.t.UTC().Format(time.RFC3339)))
	case c.nbf.set && c.nbf.t.After(now.Add(NotBeforeLeeway)):
		return refuse(KindInvalid, fmt.Errorf("token nbf %s is ahead", c.nbf.t.UTC().Format(time.RFC3339)))
	case sub == "":
		return refuse(KindInvalid, errors.New("no sub in the introspection answer"))
	case strings.EqualFold(tt, "refresh_token"):
		return refuse(KindInvalid, errors.New("a refresh token, not an access token"))
	}
	until := now.Add(v.cfg.CacheTTL)
	if c.exp.t.Before(until) {
		until = c.exp.t
	}
	return &introspected{p: &Principal{Issuer: v.cfg.Issuer, Subject: sub, Audience: aud, Audiences: audiences(c.aud, 0), Expiry: c.exp.t, Claims: claims}, until: until}, nil
}

// uniqueMembers refuses an object with a top-level member twice (after
// unescaping): a decoder keeps one of them, and which one differs.
func uniqueMembers(obj []byte) error {
	seen := map[string]bool{}
	it := jsonscan.Members(obj, jsonscan.SkipSpace(obj, 0))
	for it.Next() {
		n, _ := jsonscan.Unquote(it.Name())
		if seen[n] {
			return fmt.Errorf("member %s twice", clip(n))
		}
		seen[n] = true
	}
	return nil
}

// discover returns the endpoint: configured, discovered before, or
// discovered now (at most once per 5s while it fails; force ignores that).
func (v *IntrospectionVerifier) discover(ctx context.Context, force bool) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.endpoint != "" {
		return v.endpoint, nil
	}
	now := v.cfg.Now()
	if !force && !v.lastAttempt.IsZero() && now.Sub(v.lastAttempt) < 5*time.Second {
		return "", v.lastErr
	}
	v.lastAttempt = now
	ep, err := v.fetchMetadata(ctx)
	if err != nil {
		v.lastErr = err
		return "", err
	}
	v.endpoint = ep
	return ep, nil
}

// fetchMetadata reads introspection_endpoint from the issuer's RFC 8414
// metadata, else its OpenID Connect discovery document.
func (v *IntrospectionVerifier) fetchMetadata(ctx context.Context) (string, error) {
	u, err := url.Parse(v.cfg.Issuer)
	if err != nil {
		return "", fmt.Errorf("issuer: %w", err)
	}
	rfc8414 := *u
	rfc8414.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	var errs []error
	for _, doc := range []string{rfc8414.String(), strings.TrimSuffix(v.cfg.Issuer, "/") + "/.well-known/openid-configuration"} {
		ep, err := v.metadataEndpoint(ctx, doc)
		if err == nil {
			return ep, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("introspection endpoint discovery: %w", errors.Join(errs...))
}

// metadataEndpoint fetches one metadata document and returns its
// introspection_endpoint.
func (v *IntrospectionVerifier) metadataEndpoint(ctx context.Context, doc string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, doc, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionResponse))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", doc, resp.StatusCode)
	}
	var m struct {
		Issuer   string `json:"issuer"`
		Endpoint string `json:"introspection_endpoint"`
	}
	if err := checkJSON(b); err != nil {
		return "", fmt.Errorf("%s: %w", doc, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", doc, err)
	}
	switch {
	case m.Issuer != v.cfg.Issuer:
		return "", fmt.Errorf("%s: issuer %s, want %q (RFC 8414 section 3.3)", doc, clip(m.Issuer), v.cfg.Issuer)
	case m.Endpoint == "":
		return "", fmt.Errorf("%s: no introspection_endpoint", doc)
	}
	if err := checkEndpoint(m.Endpoint); err != nil {
		return "", err
	}
	return m.Endpoint, nil
}

// LooksLikeJWT reports whether tok has a JWS compact serialization's shape
// (RFC 7515 section 7.1): three base64url parts whose first decodes to a
// JSON object. It tells the JWT access tokens of an issuer that also
// issues opaque ones (DualVerifier); it verifies nothing.
func LooksLikeJWT(tok string) bool {
	h, rest, ok := strings.Cut(tok, ".")
	if !ok || h == "" || strings.Count(rest, ".") != 1 {
		return false
	}
	// The first 3 bytes of a JSON object's header hold its '{' unless it
	// starts with whitespace: decode 4 characters at a time until a byte
	// that is not whitespace, at most 64 characters.
	var buf [3]byte
	for i := 0; i+4 <= len(h) && i < 64; i += 4 {
		if _, err := base64.RawURLEncoding.Decode(buf[:], []byte(h[i:i+4])); err != nil {
			return false
		}
		if b := bytes.TrimLeft(buf[:], " \t\r\n"); len(b) > 0 {
			return b[0] == '{'
		}
	}
	return false
}

// DualVerifier verifies a token of JWT shape (LooksLikeJWT) with JWT and
// any other with Opaque: an issuer that sends both kinds. A JWT that fails
// is refused; it never falls through to introspection.
type DualVerifier struct {
	JWT, Opaque TokenVerifier
}

var _ Service = DualVerifier{}

// Verify implements TokenVerifier.
func (d DualVerifier) Verify(ctx context.Context, tok string) (*Principal, error) {
	if LooksLikeJWT(tok) {
		return d.JWT.Verify(ctx, tok)
	}
	return d.Opaque.Verify(ctx, tok)
}

// Audiences returns the JWT verifier's audiences (both are configured
// with the same).
func (d DualVerifier) Audiences() []string { return d.JWT.Audiences() }

// Ready reports whether both verifiers are ready.
func (d DualVerifier) Ready() bool { return ready(d.JWT) && ready(d.Opaque) }

// Close closes both.
func (d DualVerifier) Close() {
	for _, v := range []TokenVerifier{d.JWT, d.Opaque} {
		if c, ok := v.(ClosingVerifier); ok {
			c.Close()
		}
	}
}

func ready(v TokenVerifier) bool {
	if r, ok := v.(ReadyVerifier); ok {
		return r.Ready()
	}
	return true
}

// ReadClientSecretFile reads a client secret file, trimming surrounding
// whitespace; an empty secret is an error.
func ReadClientSecretFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("client secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("client secret file %s is empty", name)
	}
	return s, nil
}

// ReadClientKeyFile reads a private JWK (RFC 7517) for private_key_jwt.
func ReadClientKeyFile(name string) (*jose.JSONWebKey, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("client key file: %w", err)
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("client key file %s: %w", name, err)
	}
	if k.IsPublic() {
		return nil, fmt.Errorf("client key file %s holds a public key; private_key_jwt signs with the private one", name)
	}
	return &k, nil
}
