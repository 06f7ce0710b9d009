package extauthz

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	print     string // thumbprints of keys, to notice a change
	gen       uint64 // incremented when the keys change
	fetched   bool
	lastFetch time.Time
	lastErr   error
	inflight  chan struct{}
}

var _ oidc.KeySet = (*KeySet)(nil)

// ErrNoKeys is returned while no key set has ever been fetched.
var ErrNoKeys = errors.New("no signing keys available")

// NewStaticKeySet returns a KeySet that never fetches.
func NewStaticKeySet(keys []jose.JSONWebKey) *KeySet {
	return &KeySet{keys: keys, fetched: true}
}

func (s *KeySet) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
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

// VerifySignature verifies jwt and returns its payload. The algorithm must be
// in SigningAlgorithms (go-oidc checks its own allowlist too). Errors wrapping
// ErrNoKeys mean the identity provider has never answered.
func (s *KeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, allowedJOSEAlgs)
	if err != nil {
		return nil, fmt.Errorf("malformed jws: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("jws must have exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := s.current(ctx, kid)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(k.Key); err == nil {
			return payload, nil
		}
	}
	return nil, errors.New("no key in the key set verifies the signature")
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
	keys, err := s.fetch(ctx)
	s.mu.Lock()
	s.lastFetch = s.now()
	s.store(keys, err)
	s.mu.Unlock()
	if s.OnRefresh != nil {
		s.OnRefresh(err)
	}
	return err
}

func (s *KeySet) refresh(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := s.fetch(ctx)
	s.mu.Lock()
	s.store(keys, err)
	s.inflight = nil
	s.mu.Unlock()
	close(done)
	if s.OnRefresh != nil {
		s.OnRefresh(err)
	}
}

// store records a fetch result; the caller holds s.mu.
func (s *KeySet) store(keys []jose.JSONWebKey, err error) {
	s.lastErr = err
	if err != nil {
		return
	}
	if p := thumbprints(keys); p != s.print {
		s.print = p
		s.gen++
	}
	s.keys, s.fetched = keys, true
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

func (s *KeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes))
	if err != nil {
		return nil, fmt.Errorf("fetch jwks: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jwks: %s", resp.Status)
	}
	return parseJWKS(body)
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

// parseJWKS parses a JSON Web Key Set of public signing keys (RFC 7517
// section 5). Private or symmetric keys, and an empty set, are errors.
func parseJWKS(b []byte) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("jwks: no keys")
	}
	for i, k := range set.Keys {
		if !k.Valid() || !k.IsPublic() {
			return nil, fmt.Errorf("jwks: key %d (kid %q) is not a valid public key", i, k.KeyID)
		}
		if k.Use != "" && k.Use != "sig" {
			return nil, fmt.Errorf("jwks: key %d (kid %q) has use %q, want sig", i, k.KeyID, k.Use)
		}
	}
	return set.Keys, nil
}

// LoadFile replaces the keys of a fixed set with the JSON Web Key Set in
// path (RFC 7517 section 5; public signing keys only), for a rotated
// --jwks-file. On any error the last good keys stay in use and the error
// is returned. OnRefresh, if set, is called with the result. A changed set
// moves Generation, so cached token verifications are dropped.
func (s *KeySet) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	var keys []jose.JSONWebKey
	if err == nil {
		if keys, err = parseJWKS(b); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	s.mu.Lock()
	s.store(keys, err)
	s.mu.Unlock()
	if s.OnRefresh != nil {
		s.OnRefresh(err)
	}
	return err
}
