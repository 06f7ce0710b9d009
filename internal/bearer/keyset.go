package bearer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// KeySet verifies JWS signatures (RFC 7515) against a JSON Web Key Set
// (RFC 7517) that is either fixed or fetched from a jwks_uri. It implements
// go-oidc's oidc.KeySet.
//
// A remote set is fetched on first use and cached. A token whose kid is not
// in the cache triggers a refresh, at most one per MinRefreshInterval (so
// tokens with random kids cannot hammer the identity provider); concurrent
// refreshes are coalesced. A failed refresh keeps the last good keys.
type KeySet struct {
	URL                string        // jwks_uri; empty for a fixed set
	Client             *http.Client  // nil means http.DefaultClient
	MinRefreshInterval time.Duration // zero means 10s
	Now                func() time.Time
	// OnRefresh, if set, is called after every fetch with its error (nil on
	// success), for metrics.
	OnRefresh func(err error)
	// OnIgnoredKeys, if set, is called after a successful fetch whose
	// ignored keys differ from the previous fetch's (see ParseJWKS), so
	// they are logged once rather than on every refresh.
	OnIgnoredKeys func([]IgnoredKey)
	// Accept, if set, vets the keys of every LoadFile; an error refuses
	// them and the last good keys stay in use (the published test keys,
	// package testkeys; a key shared with the approver set). Fetches from
	// URL are not vetted.
	Accept func([]jose.JSONWebKey) error

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	ignored   []IgnoredKey // members of the last good set that cannot verify
	print     string       // thumbprints of keys, to notice a change
	gen       uint64       // incremented when the keys change
	fetched   bool
	lastFetch time.Time
	lastOK    time.Time // the last fetch or load that brought keys
	lastErr   error
	inflight  chan struct{}
}

var _ oidc.KeySet = (*KeySet)(nil)

// ErrNoKeys is returned while no key set has ever been fetched.
var ErrNoKeys = errors.New("no signing keys available")

// NewStaticKeySet returns a KeySet that never fetches.
func NewStaticKeySet(keys []jose.JSONWebKey) *KeySet {
	return &KeySet{keys: keys, fetched: true, print: thumbprints(keys), lastOK: time.Now()}
}

func (s *KeySet) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Ignored returns the members of the last good key set that were left out
// because they cannot verify signatures.
func (s *KeySet) Ignored() []IgnoredKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ignored)
}

// Generation changes whenever a fetch brings a different set of keys.
func (s *KeySet) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Ready reports whether keys are available (fetched at least once).
func (s *KeySet) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetched
}

// VerifySignature verifies jwt and returns its payload, for go-oidc's
// oidc.KeySet: jwt as parseCompact takes it (at most MaxTokenBytes, a
// strict header), an algorithm in SigningAlgorithms, and a key of the set
// (the kid's, when the header names one) that verifies the signature under
// that algorithm (verifySignature). Errors wrapping ErrNoKeys mean the
// identity provider has never answered.
func (s *KeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	j, err := parseCompact(jwt)
	if err != nil {
		return nil, fmt.Errorf("malformed jws: %w", err)
	}
	if err := s.verify(ctx, j); err != nil {
		return nil, err
	}
	return j.payload, nil
}

// verify checks j's signature against the keys, refreshing a remote set
// when j names an unknown kid (see KeySet).
func (s *KeySet) verify(ctx context.Context, j *compactJWS) error {
	if !slices.Contains(SigningAlgorithms, j.header.Alg) {
		return fmt.Errorf("alg %s not allowed", clip(j.header.Alg))
	}
	keys, err := s.current(ctx, j.header.Kid)
	if err != nil {
		return err
	}
	return verifyWith(keys, j)
}

// current returns the keys to try for kid, refreshing when kid is unknown
// and the rate limit allows.
func (s *KeySet) current(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	if s.URL == "" {
		defer s.mu.Unlock()
		return s.keys, nil
	}
	if s.fetched && (kid == "" || hasKid(s.keys, kid)) {
		defer s.mu.Unlock()
		return s.keys, nil
	}
	interval := s.MinRefreshInterval
	if interval == 0 {
		interval = 10 * time.Second
	}
	if !s.lastFetch.IsZero() && s.now().Sub(s.lastFetch) < interval && s.inflight == nil {
		keys, fetched, lastErr := s.keys, s.fetched, s.lastErr
		s.mu.Unlock()
		if !fetched {
			return nil, fmt.Errorf("%w: %v", ErrNoKeys, lastErr)
		}
		return keys, nil
	}
	wait := s.inflight
	if wait == nil {
		wait = make(chan struct{})
		s.inflight = wait
		s.lastFetch = s.now()
		go s.refresh(wait)
	}
	s.mu.Unlock()

	select {
	case <-wait:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fetched {
		return nil, fmt.Errorf("%w: %v", ErrNoKeys, s.lastErr)
	}
	return s.keys, nil
}

// Refresh fetches the key set now, ignoring the rate limit (for start-up and
// periodic refresh). A failure keeps the last good keys.
func (s *KeySet) Refresh(ctx context.Context) error {
	keys, ignored, err := s.fetch(ctx)
	s.mu.Lock()
	s.lastFetch = s.now()
	report := s.store(keys, ignored, err)
	s.mu.Unlock()
	s.report(err, ignored, report)
	return err
}

// report runs the hooks after a fetch, outside s.mu.
func (s *KeySet) report(err error, ignored []IgnoredKey, ignoredChanged bool) {
	if ignoredChanged && s.OnIgnoredKeys != nil {
		s.OnIgnoredKeys(ignored)
	}
	if s.OnRefresh != nil {
		s.OnRefresh(err)
	}
}

func (s *KeySet) refresh(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, ignored, err := s.fetch(ctx)
	s.mu.Lock()
	report := s.store(keys, ignored, err)
	s.inflight = nil
	s.mu.Unlock()
	close(done)
	s.report(err, ignored, report)
}

// store records a fetch result and reports whether the ignored keys
// changed; the caller holds s.mu.
func (s *KeySet) store(keys []jose.JSONWebKey, ignored []IgnoredKey, err error) bool {
	s.lastErr = err
	if err != nil {
		return false
	}
	if p := thumbprints(keys); p != s.print {
		s.print = p
		s.gen++
	}
	changed := !slices.Equal(ignored, s.ignored)
	s.keys, s.ignored, s.fetched, s.lastOK = keys, ignored, true, s.now()
	return changed
}

// thumbprints identifies a key set by its RFC 7638 thumbprints, in order.
func thumbprints(keys []jose.JSONWebKey) string {
	var b strings.Builder
	for _, k := range keys {
		tp, err := k.Thumbprint(crypto.SHA256)
		if err != nil {
			tp = []byte(k.KeyID) // Valid() keys always have one; fall back to the kid
		}
		b.Write(tp)
		b.WriteString(k.KeyID)
		b.WriteByte(0)
	}
	return b.String()
}

// maxJWKSBytes bounds the key set document.
const maxJWKSBytes = 1 << 20

func (s *KeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, []IgnoredKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch jwks: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("fetch jwks: %s", resp.Status)
	}
	return ParseJWKS(body)
}

func hasKid(keys []jose.JSONWebKey, kid string) bool {
	for _, k := range keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}

var allowedJOSEAlgs = func() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(SigningAlgorithms))
	for i, a := range SigningAlgorithms {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}()

// IgnoredKey is a member of a JSON Web Key Set that cannot verify a
// signature under SigningAlgorithms and was left out of the set (RFC 7517
// section 5: implementations SHOULD ignore keys they do not understand).
type IgnoredKey struct {
	Index  int    // position in the set's "keys" array, from 0
	KeyID  string // kid, "" when absent
	Reason string // e.g. `use "enc"`, `unsupported key type OKP (crv "X25519")`
}

func (k IgnoredKey) String() string {
	return fmt.Sprintf("key %d (kid %q): %s", k.Index, k.KeyID, k.Reason)
}

// jwkMembers are the members ParseJWKS reads before go-jose decodes a key.
type jwkMembers struct {
	Kty    string   `json:"kty"`
	Crv    string   `json:"crv"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	Alg    string   `json:"alg"`
	KeyOps []string `json:"key_ops"`
	D      *string  `json:"d"`
}

// ParseJWKS parses a JSON Web Key Set (RFC 7517 section 5) and keeps the
// public keys that can verify a signature under SigningAlgorithms: kty RSA,
// EC (P-256, P-384, P-521) or OKP Ed25519, with use absent or "sig", key_ops
// absent or holding "verify", and alg absent or allowed. Every other member
// (encryption keys, X25519, unknown kty or curve, symmetric or private keys,
// keys that do not decode) is returned in ignored with the reason. A set
// that is not JSON, or that keeps no usable key, is an error naming every
// ignored key.
func ParseJWKS(b []byte) (keys []jose.JSONWebKey, ignored []IgnoredKey, err error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, nil, fmt.Errorf("jwks: %w", err)
	}
	for i, raw := range set.Keys {
		k, reason := usableKey(raw)
		if reason != "" {
			var m jwkMembers
			_ = json.Unmarshal(raw, &m) // best effort, for the kid only
			ignored = append(ignored, IgnoredKey{Index: i, KeyID: m.Kid, Reason: reason})
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		if len(set.Keys) == 0 {
			return nil, nil, errors.New("jwks: no keys")
		}
		msgs := make([]string, len(ignored))
		for i, k := range ignored {
			msgs[i] = k.String()
		}
		return nil, ignored, fmt.Errorf("jwks: no key can verify signatures: %s", strings.Join(msgs, "; "))
	}
	return keys, ignored, nil
}

// usableKey decodes one JWK and returns it, or why it cannot verify
// signatures under SigningAlgorithms.
func usableKey(raw json.RawMessage) (jose.JSONWebKey, string) {
	var m jwkMembers
	if err := json.Unmarshal(raw, &m); err != nil {
		return jose.JSONWebKey{}, "not a JSON object with string members: " + err.Error()
	}
	switch {
	case m.Use != "" && m.Use != "sig":
		return jose.JSONWebKey{}, fmt.Sprintf("use %q", m.Use)
	case m.KeyOps != nil && !slices.Contains(m.KeyOps, "verify"):
		return jose.JSONWebKey{}, fmt.Sprintf("key_ops %q lack verify", m.KeyOps)
	case m.Alg != "" && !slices.Contains(SigningAlgorithms, m.Alg):
		return jose.JSONWebKey{}, fmt.Sprintf("alg %q is not an allowed signing algorithm", m.Alg)
	case m.Kty == "oct":
		return jose.JSONWebKey{}, "symmetric key (kty oct)"
	case m.Kty == "OKP" && m.Crv != "Ed25519":
		return jose.JSONWebKey{}, fmt.Sprintf("unsupported key type OKP (crv %q)", m.Crv)
	case m.Kty != "RSA" && m.Kty != "EC" && m.Kty != "OKP":
		return jose.JSONWebKey{}, fmt.Sprintf("unsupported key type %q", m.Kty)
	case m.D != nil:
		return jose.JSONWebKey{}, "private key material (publish only public keys)"
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(raw); err != nil {
		return jose.JSONWebKey{}, "does not decode: " + err.Error()
	}
	switch k.Key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return jose.JSONWebKey{}, fmt.Sprintf("key type %T cannot verify an allowed algorithm", k.Key)
	}
	if !k.Valid() {
		return jose.JSONWebKey{}, "not a valid public key"
	}
	return k, ""
}

// LoadFile replaces the keys of a fixed set with the JSON Web Key Set in
// path (RFC 7517 section 5; public signing keys only), for a rotated
// --jwks-file; on a zero KeySet it loads the first keys. On any error the
// last good keys stay in use and the error is returned. OnRefresh, if set,
// is called with the result. A changed set moves Generation, so cached
// token verifications are dropped.
//
// Members that cannot verify signatures are left out as in ParseJWKS, and
// reported through OnIgnoredKeys when they differ from the last set's.
func (s *KeySet) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	var keys []jose.JSONWebKey
	var ignored []IgnoredKey
	if err == nil {
		if keys, ignored, err = ParseJWKS(b); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err == nil && s.Accept != nil {
		if err = s.Accept(keys); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	s.mu.Lock()
	report := s.store(keys, ignored, err)
	s.mu.Unlock()
	s.report(err, ignored, report)
	return err
}

// Keys returns the current keys.
func (s *KeySet) Keys() []jose.JSONWebKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

// SharedKey returns the kid (or "#i", its index in a, without one) of the
// first key of a whose public key is also in b, compared by RFC 7638
// thumbprint, not kid; "" when a and b share none.
func SharedKey(a, b []jose.JSONWebKey) string {
	in := map[string]bool{}
	for _, k := range b {
		if tp, err := k.Thumbprint(crypto.SHA256); err == nil {
			in[string(tp)] = true
		}
	}
	for i, k := range a {
		tp, err := k.Thumbprint(crypto.SHA256)
		if err != nil || !in[string(tp)] {
			continue
		}
		if k.KeyID != "" {
			return k.KeyID
		}
		return fmt.Sprintf("#%d", i)
	}
	return ""
}
