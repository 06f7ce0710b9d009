package bearer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// SigningAlgorithms is the JWS algorithm allowlist (RFC 7518 section 3): asymmetric
// only. "none" and the HMAC family are never accepted, so a public key can
// never be used as a shared secret.
var SigningAlgorithms = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.EdDSA,
}

// Principal is who a verified bearer token speaks for.
type Principal struct {
	Issuer    string         // iss
	Subject   string         // sub
	Audience  string         // the configured audience (RFC 8707 resource) the token carries; the first in configured order
	Audiences []string       // every aud of the token
	Expiry    time.Time      // exp
	Claims    map[string]any // every claim of the payload, as JSON decodes them (numbers float64)
}

// Kind is why a token or a DPoP proof did not verify: a closed set whose
// String forms are the snake_case words extauthz answers with
// ("token_expired", "dpop_proof_stale", ...). extauthz maps each kind to its
// Reason in one table.
type Kind int

// The kinds of TokenError and DPoPError.
const (
	KindMalformed     Kind = iota + 1 // not a compact JWS, or a payload that is not a JSON object
	KindInvalid                       // bad signature, unknown key, algorithm not allowed, nbf in the future, no sub
	KindExpired                       // exp in the past
	KindWrongIssuer                   // iss is not the configured issuer
	KindWrongAudience                 // aud holds none of the configured audiences (RFC 8707)
	KindUnavailable                   // discovery document or key set not fetched (yet)
	KindDeadline                      // the caller's context ended during verification
	KindProofInvalid                  // DPoP proof malformed or not signed by its jwk (RFC 9449 section 4.3)
	KindProofMismatch                 // htm, htu, ath or jwk thumbprint disagree with the request, token or cnf.jkt
	KindProofStale                    // iat outside the accepted window
	KindProofReplayed                 // jti already seen within the window
	KindInternal                      // the verifier failed (the jti cache is full)
)

var kindNames = [...]string{
	KindMalformed: "token_malformed", KindInvalid: "token_invalid", KindExpired: "token_expired",
	KindWrongIssuer: "token_wrong_issuer", KindWrongAudience: "token_wrong_audience",
	KindUnavailable: "idp_unavailable", KindDeadline: "deadline_exceeded",
	KindProofInvalid: "dpop_proof_invalid", KindProofMismatch: "dpop_proof_mismatch",
	KindProofStale: "dpop_proof_stale", KindProofReplayed: "dpop_proof_replayed",
	KindInternal: "internal_error",
}

// Kinds returns every kind, in order.
func Kinds() []Kind {
	ks := make([]Kind, 0, len(kindNames)-1)
	for k := KindMalformed; int(k) < len(kindNames); k++ {
		ks = append(ks, k)
	}
	return ks
}

// String returns k's snake_case word, or "Kind(n)" outside the set.
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// TokenError is a bearer token that did not verify, and why.
type TokenError struct {
	Kind Kind
	Err  error
}

func (e *TokenError) Error() string {
	if e.Err == nil {
		return e.Kind.String()
	}
	return e.Kind.String() + ": " + e.Err.Error()
}

func (e *TokenError) Unwrap() error { return e.Err }

// TokenVerifier verifies a raw compact JWS (without the "Bearer " prefix).
// Errors are always *TokenError.
type TokenVerifier interface {
	Verify(ctx context.Context, rawToken string) (*Principal, error)
}

// OIDCConfig configures NewOIDCVerifier.
type OIDCConfig struct {
	Issuer    string   // required: the exact iss every token must carry
	Audiences []string // required: RFC 8707 resource URIs of the guarded MCP server; a token must carry one
	// KeySet verifies signatures. Nil means OIDC discovery (OpenID Connect
	// Discovery 1.0 section 4): the issuer's openid-configuration is fetched
	// by Warm, or in the background on first use, retried at most once per
	// DiscoveryRetry while it fails, and its jwks_uri becomes a KeySet.
	KeySet         oidc.KeySet
	HTTPClient     *http.Client     // for discovery and keys; nil means http.DefaultClient
	Now            func() time.Time // nil means time.Now
	DiscoveryRetry time.Duration    // zero means 5s
	// OnKeySetRefresh, if set, is called after every key-set fetch of a
	// discovered KeySet with its error (nil on success).
	OnKeySetRefresh func(error)
	// OnIgnoredKeys, if set, is a discovered KeySet's OnIgnoredKeys.
	OnIgnoredKeys func([]IgnoredKey)
	// OnDiscovery, if set, is called after every discovery attempt (Warm's
	// or one started in the background by Verify) with its error.
	OnDiscovery func(error)
}

// OIDCVerifier verifies bearer tokens: issuer, audience and exp from the
// unverified payload first, then with go-oidc the signature against the key
// set, the algorithm allowlist, issuer, exp and nbf (go-oidc's leeway of 5
// minutes for nbf), then the audience against the configured set. It does
// not check nonce, azp or at_hash (access tokens carry none). Until discovery
// has succeeded, Verify fails with idp_unavailable at once rather than
// waiting for the identity provider.
type OIDCVerifier struct {
	cfg OIDCConfig

	// Background discovery runs under ctx; Close cancels it and waits.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	keys         oidc.KeySet
	verifier     *oidc.IDTokenVerifier
	discovering  bool
	lastAttempt  time.Time
	lastDiscover error
}

var _ Service = (*OIDCVerifier)(nil)

// Service is a TokenVerifier the server runs: it reports whether tokens can
// be verified now, and owns any background work (discovery), which Close
// stops and waits for. After Close, Verify may only fail with
// idp_unavailable where it would have had to start work.
type Service interface {
	TokenVerifier
	Ready() bool
	Close()
}

// errClosed is returned by a closed verifier that would need discovery.
var errClosed = errors.New("verifier closed")

// errDiscovering is returned while discovery is under way.
var errDiscovering = errors.New("oidc discovery in progress")

// NewOIDCVerifier returns a verifier for cfg. It does no I/O.
func NewOIDCVerifier(cfg OIDCConfig) (*OIDCVerifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("issuer is required")
	}
	if len(cfg.Audiences) == 0 {
		return nil, errors.New("at least one audience is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DiscoveryRetry == 0 {
		cfg.DiscoveryRetry = 5 * time.Second
	}
	v := &OIDCVerifier{cfg: cfg}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	if cfg.KeySet != nil {
		v.keys = cfg.KeySet
		v.verifier = oidc.NewVerifier(cfg.Issuer, cfg.KeySet, v.oidcConfig())
	}
	return v, nil
}

func (v *OIDCVerifier) oidcConfig() *oidc.Config {
	return &oidc.Config{
		// The audience is checked below against the whole configured set;
		// go-oidc's ClientID check takes only one value.
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: SigningAlgorithms,
		Now:                  v.cfg.Now,
	}
}

// Audiences returns the configured audiences.
func (v *OIDCVerifier) Audiences() []string { return v.cfg.Audiences }

// Ready reports whether tokens can be verified now: discovery done and
// signing keys fetched at least once (always true for a static key set).
func (v *OIDCVerifier) Ready() bool {
	v.mu.Lock()
	keys := v.keys
	v.mu.Unlock()
	if keys == nil {
		return false
	}
	if ks, ok := keys.(*KeySet); ok {
		return ks.Ready()
	}
	return true
}

// KeyGeneration changes whenever the signing keys change; a token cache
// drops entries of another generation.
func (v *OIDCVerifier) KeyGeneration() uint64 {
	v.mu.Lock()
	keys := v.keys
	v.mu.Unlock()
	if ks, ok := keys.(*KeySet); ok {
		return ks.Generation()
	}
	return 0
}

// Warm runs discovery and fetches the signing keys now, ignoring the retry
// interval. It is what serve calls at start and until it succeeds.
func (v *OIDCVerifier) Warm(ctx context.Context) error {
	v.mu.Lock()
	ok := v.verifier != nil
	v.mu.Unlock()
	if !ok {
		err := v.discover(ctx)
		if v.cfg.OnDiscovery != nil {
			v.cfg.OnDiscovery(err)
		}
		if err != nil {
			return err
		}
	}
	v.mu.Lock()
	keys := v.keys
	v.mu.Unlock()
	if ks, ok := keys.(*KeySet); ok && ks.URL != "" && !ks.Ready() {
		return ks.Refresh(ctx)
	}
	return nil
}

// RefreshKeys fetches a discovered key set again now (a static one is left
// alone). A failure keeps the last good keys.
func (v *OIDCVerifier) RefreshKeys(ctx context.Context) error {
	v.mu.Lock()
	keys := v.keys
	v.mu.Unlock()
	if ks, ok := keys.(*KeySet); ok && ks.URL != "" {
		return ks.Refresh(ctx)
	}
	return nil
}

// discover fetches the discovery document and installs the verifier.
func (v *OIDCVerifier) discover(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, v.httpClient()), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, v.cfg.Issuer)
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err == nil {
		if cerr := p.Claims(&meta); cerr != nil || meta.JWKSURI == "" {
			err = errors.New("no jwks_uri")
		}
	}
	if err != nil {
		err = fmt.Errorf("oidc discovery: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.lastDiscover = err
		return err
	}
	if v.verifier == nil {
		v.keys = &KeySet{URL: meta.JWKSURI, Client: v.httpClient(), Now: v.cfg.Now, OnRefresh: v.cfg.OnKeySetRefresh, OnIgnoredKeys: v.cfg.OnIgnoredKeys}
		v.verifier = oidc.NewVerifier(v.cfg.Issuer, v.keys, v.oidcConfig())
	}
	return nil
}

// idTokenVerifier returns the go-oidc verifier, or starts discovery in the
// background (at most once per DiscoveryRetry) and fails at once.
func (v *OIDCVerifier) idTokenVerifier() (*oidc.IDTokenVerifier, oidc.KeySet, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, v.keys, nil
	}
	if v.discovering {
		return nil, nil, errDiscovering
	}
	if v.ctx.Err() != nil {
		return nil, nil, errClosed
	}
	now := v.cfg.Now()
	if !v.lastAttempt.IsZero() && now.Sub(v.lastAttempt) < v.cfg.DiscoveryRetry {
		return nil, nil, v.lastDiscover
	}
	v.lastAttempt, v.discovering = now, true
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		err := v.discover(v.ctx)
		v.mu.Lock()
		v.discovering = false
		v.mu.Unlock()
		if v.cfg.OnDiscovery != nil {
			v.cfg.OnDiscovery(err)
		}
	}()
	return nil, nil, errDiscovering
}

// Close stops background discovery and waits for it to end. It does not
// wait for Verify calls in flight.
func (v *OIDCVerifier) Close() {
	v.mu.Lock()
	v.cancel()
	v.mu.Unlock()
	v.wg.Wait()
}

func (v *OIDCVerifier) httpClient() *http.Client {
	if v.cfg.HTTPClient != nil {
		return v.cfg.HTTPClient
	}
	return http.DefaultClient
}

// Verify checks rawToken and returns its principal. The checks that need no
// signature come first, as go-oidc advises (its Verify checks the signature
// before the claims): shape, issuer, audience, expiry, read from the
// unverified payload; then the signature, and the claims again from the
// verified payload. So a token for another issuer or resource, or an expired
// one, costs no key-set lookup and no signature check.
func (v *OIDCVerifier) Verify(ctx context.Context, rawToken string) (*Principal, error) {
	c, err := unverifiedClaims(rawToken)
	if err != nil {
		return nil, &TokenError{Kind: KindMalformed, Err: err}
	}
	if c.Iss != v.cfg.Issuer {
		return nil, &TokenError{Kind: KindWrongIssuer, Err: fmt.Errorf("token iss %s, want %q", clip(c.Iss), v.cfg.Issuer)}
	}
	if auds, ok := c.audiences(); ok && !slices.ContainsFunc(v.cfg.Audiences, func(a string) bool { return slices.Contains(auds, a) }) {
		return nil, &TokenError{Kind: KindWrongAudience, Err: fmt.Errorf("token aud %s holds none of %q", ClipList(auds), v.cfg.Audiences)}
	}
	if exp, err := c.Exp.Float64(); err == nil && c.Exp != "" && time.Unix(int64(exp), 0).Before(v.cfg.Now()) {
		return nil, &TokenError{Kind: KindExpired, Err: fmt.Errorf("token exp %s is past", time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))}
	}
	verifier, keys, err := v.idTokenVerifier()
	if err != nil {
		return nil, &TokenError{Kind: KindUnavailable, Err: err}
	}
	tok, err := verifier.Verify(ctx, rawToken)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, &TokenError{Kind: KindExpired, Err: fmt.Errorf("token exp %s is past", expired.Expiry.UTC().Format(time.RFC3339))}
		}
		if ctx.Err() != nil {
			return nil, &TokenError{Kind: KindDeadline, Err: ctx.Err()}
		}
		if ks, ok := keys.(*KeySet); ok && !ks.Ready() {
			return nil, &TokenError{Kind: KindUnavailable, Err: err}
		}
		return nil, &TokenError{Kind: KindInvalid, Err: err}
	}
	aud := ""
	for _, want := range v.cfg.Audiences {
		if slices.Contains(tok.Audience, want) {
			aud = want
			break
		}
	}
	if aud == "" {
		return nil, &TokenError{Kind: KindWrongAudience, Err: fmt.Errorf("token aud %s holds none of %q", ClipList(tok.Audience), v.cfg.Audiences)}
	}
	if tok.Subject == "" {
		return nil, &TokenError{Kind: KindInvalid, Err: errors.New("no sub claim")}
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, &TokenError{Kind: KindMalformed, Err: err}
	}
	return &Principal{Issuer: tok.Issuer, Subject: tok.Subject, Audience: aud, Audiences: tok.Audience, Expiry: tok.Expiry, Claims: claims}, nil
}

// clip quotes a value a token carried for the log, at most 200 bytes of it:
// enough to see a wrong issuer or audience, never a way to fill the log.
func clip(s string) string {
	const max = 200
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// ClipList is clip for a list, at most its first 5 values: [a b ...].
func ClipList(l []string) string {
	q := make([]string, 0, 6)
	for i, s := range l {
		if i == 5 {
			q = append(q, "...")
			break
		}
		q = append(q, clip(s))
	}
	return "[" + strings.Join(q, " ") + "]"
}

// payloadClaims are the claims Verify checks before the signature.
type payloadClaims struct {
	Iss string          `json:"iss"`
	Aud json.RawMessage `json:"aud"` // a string or an array of strings (RFC 7519 section 4.1.3)
	Exp json.Number     `json:"exp"`
}

// audiences returns aud as a list, and false when it is absent or neither a
// string nor an array of strings (left to go-oidc to refuse).
func (c *payloadClaims) audiences() ([]string, bool) {
	var one string
	if err := json.Unmarshal(c.Aud, &one); err == nil {
		return []string{one}, true
	}
	var many []string
	if err := json.Unmarshal(c.Aud, &many); err == nil && many != nil {
		return many, true
	}
	return nil, false
}

// unverifiedClaims reads iss, aud and exp from a compact JWS payload without
// checking the signature, only to pick the cheap rejections first.
func unverifiedClaims(raw string) (*payloadClaims, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWS")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	var c payloadClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return &c, nil
}

// LoadJWKS reads a JSON Web Key Set (RFC 7517 section 5) from path into a
// fixed KeySet of its signature-verification keys; members that cannot
// verify (encryption, X25519, symmetric or private keys…) are left out and
// listed by the set's Ignored. A set with no usable key is an error naming
// why each member was ignored.
func LoadJWKS(path string) (*KeySet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys, ignored, err := ParseJWKS(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ks := NewStaticKeySet(keys)
	ks.ignored = ignored
	return ks, nil
}
