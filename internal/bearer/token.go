package bearer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
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
	// Audiences returns the audiences (RFC 8707 resource URIs) the verifier
	// accepts; a route's mcp_audience outside them is refused. A verifier
	// that returns none accepts no route audience.
	Audiences() []string
}

// ReadyVerifier is a TokenVerifier that knows whether its signing keys are
// available (the OIDC and JWKS-file verifiers); a readiness check asks it.
type ReadyVerifier interface {
	TokenVerifier
	Ready() bool
}

// ClosingVerifier is a TokenVerifier that holds resources (a key set
// refresher) Close releases.
type ClosingVerifier interface {
	TokenVerifier
	Close()
}

// OIDCConfig configures NewOIDCVerifier.
type OIDCConfig struct {
	Issuer    string   // required: the exact iss every token must carry
	Audiences []string // required: RFC 8707 resource URIs of the guarded MCP server; a token must carry one
	// Types are the JOSE typ values accepted (RFC 7515 section 4.1.9),
	// compared as media types (MediaType: "at+jwt" is
	// "application/AT+JWT"); "" accepts a header without typ. Nil means
	// AccessTokenTypes. Any other typ is refused (token_invalid): a JWT of
	// another kind signed by the issuer, such as an approval or a DPoP
	// proof, never passes for an access token (RFC 8725 section 3.11).
	Types []string
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

// NotBeforeLeeway is how far ahead of the clock a token's nbf may be, as
// go-oidc and most OpenID providers allow for clock skew.
const NotBeforeLeeway = 5 * time.Minute

// OIDCVerifier verifies bearer tokens (RFC 9068 JWT access tokens, or any
// JWS the issuer signs with these claims). Every claim check comes before
// the signature, so a token that fails one costs no key-set lookup: the
// compact form (at most MaxTokenBytes, three base64url parts, a strict
// header), typ against Types, iss exactly the issuer, aud holding a
// configured audience, exp a NumericDate in the future, nbf (if present)
// at most NotBeforeLeeway ahead, iat (if present) a NumericDate, a
// non-empty string sub. Then the signature, once, against the key set under
// the algorithm allowlist SigningAlgorithms; go-oidc provides discovery.
// It does not check nonce, azp or at_hash (access tokens carry none), nor
// jti. Until discovery has succeeded, Verify fails with idp_unavailable at
// once rather than waiting for the identity provider.
type OIDCVerifier struct {
	cfg   OIDCConfig
	types typeSet

	// Background discovery runs under ctx; Close cancels it and waits.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	keys         oidc.KeySet
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

// NewOIDCVerifier returns a verifier for cfg. It does no I/O. A Types
// member that is not a media type name is an error.
func NewOIDCVerifier(cfg OIDCConfig) (*OIDCVerifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("issuer is required")
	}
	if len(cfg.Audiences) == 0 {
		return nil, errors.New("at least one audience is required")
	}
	if cfg.Types == nil {
		cfg.Types = AccessTokenTypes
	}
	types, err := newTypeSet(cfg.Types)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DiscoveryRetry == 0 {
		cfg.DiscoveryRetry = 5 * time.Second
	}
	v := &OIDCVerifier{cfg: cfg, types: types}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	v.keys = cfg.KeySet
	return v, nil
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
	keys := v.keys
	v.mu.Unlock()
	if keys == nil {
		err := v.discover(ctx)
		if v.cfg.OnDiscovery != nil {
			v.cfg.OnDiscovery(err)
		}
		if err != nil {
			return err
		}
		v.mu.Lock()
		keys = v.keys
		v.mu.Unlock()
	}
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

// discover fetches the discovery document and installs its key set.
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
	if v.keys == nil {
		v.keys = &KeySet{URL: meta.JWKSURI, Client: v.httpClient(), Now: v.cfg.Now, OnRefresh: v.cfg.OnKeySetRefresh, OnIgnoredKeys: v.cfg.OnIgnoredKeys}
	}
	return nil
}

// keySet returns the key set, or starts discovery in the background (at
// most once per DiscoveryRetry) and fails at once.
func (v *OIDCVerifier) keySet() (oidc.KeySet, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys != nil {
		return v.keys, nil
	}
	if v.discovering {
		return nil, errDiscovering
	}
	if v.ctx.Err() != nil {
		return nil, errClosed
	}
	now := v.cfg.Now()
	if !v.lastAttempt.IsZero() && now.Sub(v.lastAttempt) < v.cfg.DiscoveryRetry {
		return nil, v.lastDiscover
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
	return nil, errDiscovering
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

// Verify checks rawToken and returns its principal; see OIDCVerifier for
// the checks and their order. Errors are *TokenError: KindMalformed (not a
// compact JWS of at most MaxTokenBytes, a claim of the wrong JSON type),
// KindInvalid (typ, signature, key, algorithm, nbf, no exp or sub),
// KindWrongIssuer, KindWrongAudience, KindExpired, KindUnavailable and
// KindDeadline.
func (v *OIDCVerifier) Verify(ctx context.Context, rawToken string) (*Principal, error) {
	j, err := parseCompact(rawToken)
	if err != nil {
		return nil, &TokenError{Kind: KindMalformed, Err: err}
	}
	if !v.types.accepts(j.header) {
		return nil, &TokenError{Kind: KindInvalid, Err: v.typeError(j.header)}
	}
	c, err := readClaims(j.payload)
	if err != nil {
		return nil, &TokenError{Kind: KindMalformed, Err: fmt.Errorf("payload: %w", err)}
	}
	switch {
	case c.iss != nil && c.iss[0] != '"':
		return nil, &TokenError{Kind: KindMalformed, Err: errors.New("iss is not a string")}
	case c.iss == nil:
		return nil, &TokenError{Kind: KindWrongIssuer, Err: fmt.Errorf("no iss, want %q", v.cfg.Issuer)}
	case !jsonscan.Equal(c.iss, v.cfg.Issuer):
		return nil, &TokenError{Kind: KindWrongIssuer, Err: fmt.Errorf("token iss %s, want %q", clipJSON(c.iss), v.cfg.Issuer)}
	}
	iss := v.cfg.Issuer
	aud, ok := audience(c.aud, v.cfg.Audiences)
	if !ok {
		return nil, &TokenError{Kind: KindMalformed, Err: errors.New("aud is neither a string nor an array of strings")}
	}
	if aud == "" {
		return nil, &TokenError{Kind: KindWrongAudience, Err: fmt.Errorf("token aud %s holds none of %q", ClipList(audiences(c.aud, 6)), v.cfg.Audiences)}
	}
	sub, isString := jsonscan.Unquote(c.sub)
	if c.sub != nil && !isString {
		return nil, &TokenError{Kind: KindMalformed, Err: errors.New("sub is not a string")}
	}
	now := v.cfg.Now()
	switch {
	case !c.exp.set:
		return nil, &TokenError{Kind: KindInvalid, Err: errors.New("no exp claim")}
	case !now.Before(c.exp.t):
		return nil, &TokenError{Kind: KindExpired, Err: fmt.Errorf("token exp %s is past", c.exp.t.UTC().Format(time.RFC3339))}
	case c.nbf.set && c.nbf.t.After(now.Add(NotBeforeLeeway)):
		return nil, &TokenError{Kind: KindInvalid, Err: fmt.Errorf("token nbf %s is ahead", c.nbf.t.UTC().Format(time.RFC3339))}
	case sub == "":
		return nil, &TokenError{Kind: KindInvalid, Err: errors.New("no sub claim")}
	}
	keys, err := v.keySet()
	if err != nil {
		return nil, &TokenError{Kind: KindUnavailable, Err: err}
	}
	if err := verifyJWS(ctx, keys, rawToken, j); err != nil {
		if ctx.Err() != nil {
			return nil, &TokenError{Kind: KindDeadline, Err: ctx.Err()}
		}
		if ks, ok := keys.(*KeySet); ok && (!ks.Ready() || errors.Is(err, ErrNoKeys)) {
			return nil, &TokenError{Kind: KindUnavailable, Err: err}
		}
		return nil, &TokenError{Kind: KindInvalid, Err: fmt.Errorf("signature: %w", err)}
	}
	var claims map[string]any
	if err := json.Unmarshal(j.payload, &claims); err != nil {
		return nil, &TokenError{Kind: KindMalformed, Err: err}
	}
	// The claims were read by readClaims; the map is what the policy
	// reads. Both must say one thing.
	if got, _ := claims["iss"].(string); got != iss {
		return nil, &TokenError{Kind: KindMalformed, Err: errors.New("iss read two ways")}
	}
	if got, _ := claims["sub"].(string); got != sub {
		return nil, &TokenError{Kind: KindMalformed, Err: errors.New("sub read two ways")}
	}
	return &Principal{Issuer: iss, Subject: sub, Audience: aud, Audiences: audiences(c.aud, 0), Expiry: c.exp.t, Claims: claims}, nil
}

// typeError says why h's typ is refused.
func (v *OIDCVerifier) typeError(h Header) error {
	switch {
	case !h.HasTyp:
		return errors.New("no typ, and a typ is required here")
	case IsOtherJWTType(h.Typ):
		return fmt.Errorf("typ %s is another kind of JWT, never an access token (RFC 8725 section 3.11)", clip(h.Typ))
	}
	return fmt.Errorf("typ %s is not an accepted type (%q; see --token-typ)", clip(h.Typ), v.cfg.Types)
}

// verifyJWS checks j's signature: with our KeySet directly (one pass over
// the token, no copy); with any other oidc.KeySet through VerifySignature,
// whose payload must then be the one the claims were read from.
func verifyJWS(ctx context.Context, keys oidc.KeySet, raw string, j *compactJWS) error {
	if ks, ok := keys.(*KeySet); ok {
		return ks.verify(ctx, j)
	}
	payload, err := keys.VerifySignature(ctx, raw)
	if err != nil {
		return err
	}
	if !bytes.Equal(payload, j.payload) {
		return errors.New("the key set verified another payload")
	}
	return nil
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

// clipJSON is clip for a JSON string as written, decoding only its first
// 200 bytes, so a long value costs nothing to report.
func clipJSON(q []byte) string {
	q = q[1 : len(q)-1]
	more := ""
	if len(q) > 200 {
		q, more = q[:200], "..."
	}
	s, ok := jsonscan.Unquote(append(append([]byte{'"'}, q...), '"'))
	if !ok { // cut inside an escape
		s = string(q)
	}
	return strconv.Quote(s) + more
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

// payloadClaims are the registered claims Verify checks, read from the
// payload's top-level members without decoding the rest: the raw values of
// iss, sub and aud (nil when absent), and the NumericDates.
type payloadClaims struct {
	iss, sub, aud []byte
	exp, nbf, iat numericDate
}

// readClaims reads the registered claims of payload, a JSON object (RFC
// 7519 section 7.2) that checkJSON accepts. Member names are matched
// exactly, after unescaping, as a map decodes them; each claim may appear
// once. It allocates nothing but an error.
func readClaims(payload []byte) (*payloadClaims, error) {
	if err := checkJSON(payload); err != nil {
		return nil, err
	}
	var c payloadClaims
	it := jsonscan.Members(payload, jsonscan.SkipSpace(payload, 0))
	for it.Next() {
		name, v := it.Name(), it.Value()
		var raw *[]byte
		var date *numericDate
		switch {
		case jsonscan.Equal(name, "iss"):
			raw = &c.iss
		case jsonscan.Equal(name, "sub"):
			raw = &c.sub
		case jsonscan.Equal(name, "aud"):
			raw = &c.aud
		case jsonscan.Equal(name, "exp"):
			date = &c.exp
		case jsonscan.Equal(name, "nbf"):
			date = &c.nbf
		case jsonscan.Equal(name, "iat"):
			date = &c.iat
		default:
			continue
		}
		switch {
		case raw != nil && *raw != nil || date != nil && date.set:
			return &c, fmt.Errorf("claim %s twice", name)
		case raw != nil:
			*raw = v
		default:
			if err := date.UnmarshalJSON(v); err != nil {
				return &c, fmt.Errorf("claim %s: %w", name, err)
			}
		}
	}
	if it.End() < 0 {
		return nil, errors.New("not a JSON object")
	}
	return &c, nil
}

// audience returns the first of want (in want's order) that aud holds, ""
// when none does, and false when aud is neither a string nor an array of
// strings (RFC 7519 section 4.1.3). It allocates only to decode strings
// written with escapes.
func audience(aud []byte, want []string) (string, bool) {
	if aud == nil {
		return "", true
	}
	best := len(want)
	match := func(q []byte) bool {
		if len(q) == 0 || q[0] != '"' {
			return false
		}
		for i := 0; i < best; i++ {
			if jsonscan.Equal(q, want[i]) {
				best = i
				break
			}
		}
		return true
	}
	ok := true
	if aud[0] == '[' {
		it := jsonscan.Elements(aud, 0)
		for ok && it.Next() {
			ok = match(it.Value())
		}
	} else {
		ok = match(aud)
	}
	if !ok {
		return "", false
	}
	if best == len(want) {
		return "", true
	}
	return want[best], true
}

// audiences decodes aud (absent, a string or an array of strings) as a
// list: at most max members when max > 0, for a message.
func audiences(aud []byte, max int) []string {
	var out []string
	if aud == nil {
		return nil
	}
	if s, ok := jsonscan.Unquote(aud); ok {
		return []string{s}
	}
	it := jsonscan.Elements(aud, jsonscan.SkipSpace(aud, 0))
	for it.Next() && (max <= 0 || len(out) < max) {
		s, _ := jsonscan.Unquote(it.Value())
		out = append(out, s)
	}
	return out
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
