package mcpdecision

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// ErrUnknownKey is the error of a KeySet that has no key of a kid.
var ErrUnknownKey = errors.New("unknown kid")

// KeySet gives the public key of a kid: the published key set of the
// service (its HTTP port's /decision-jwks.json, or the file it writes).
// Errors other than ErrUnknownKey mean the set cannot be read.
type KeySet interface {
	Key(ctx context.Context, kid string) (*jose.JSONWebKey, error)
}

// parsePublic reads a JWK Set of public Ed25519 and P-256 keys; members of
// another type are left out, a private member is refused.
func parsePublic(b []byte) (map[string]*jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("JWK Set: %w", err)
	}
	out := map[string]*jose.JSONWebKey{}
	for i := range set.Keys {
		k := &set.Keys[i]
		if !k.IsPublic() {
			return nil, fmt.Errorf("key %q: a private key in a published key set", k.KeyID)
		}
		switch p := k.Key.(type) {
		case ed25519.PublicKey:
		case *ecdsa.PublicKey:
			if p.Curve != elliptic.P256() {
				continue
			}
		default:
			continue
		}
		if k.KeyID != "" {
			out[k.KeyID] = k
		}
	}
	return out, nil
}

// staticKeys is a fixed key set.
type staticKeys map[string]*jose.JSONWebKey

func (s staticKeys) Key(_ context.Context, kid string) (*jose.JSONWebKey, error) {
	if k := s[kid]; k != nil {
		return k, nil
	}
	return nil, ErrUnknownKey
}

// StaticKeys returns the key set of jwks, a JWK Set (JSON) of public
// Ed25519 and P-256 keys (others are left out; a private key is an error).
func StaticKeys(jwks []byte) (KeySet, error) {
	m, err := parsePublic(jwks)
	if err != nil {
		return nil, err
	}
	return staticKeys(m), nil
}

// FileKeys returns the key set in the file at path (the service's
// --decision-jwks-out), read again whenever its size or modification time
// changes, so a rotation written by the service is seen at the next call.
// A file that cannot be read or parsed is an error (decision_unavailable),
// never an empty set; a rewrite that does not parse keeps no old keys
// either.
func FileKeys(path string) KeySet { return &fileKeys{path: path} }

type fileKeys struct {
	path string
	mu   sync.Mutex
	mod  time.Time
	size int64
	keys staticKeys
	err  error
}

func (f *fileKeys) Key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil && f.err == nil || !fi.ModTime().Equal(f.mod) || fi.Size() != f.size {
		f.mod, f.size = fi.ModTime(), fi.Size()
		b, err := os.ReadFile(f.path)
		if err == nil {
			var m map[string]*jose.JSONWebKey
			m, err = parsePublic(b)
			f.keys = m
		}
		f.err = err
	}
	if f.err != nil {
		return nil, f.err
	}
	return f.keys.Key(ctx, kid)
}

// RemoteKeys returns the key set served at url (the service's HTTP port,
// /decision-jwks.json), fetched on first use and again when a kid is
// unknown, at most once per minInterval (0: 10 s), so a rotated key is
// picked up at its first statement. client nil means http.DefaultClient.
func RemoteKeys(url string, client *http.Client, minInterval time.Duration) KeySet {
	if client == nil {
		client = http.DefaultClient
	}
	if minInterval <= 0 {
		minInterval = 10 * time.Second
	}
	return &remoteKeys{url: url, client: client, every: minInterval}
}

type remoteKeys struct {
	url     string
	client  *http.Client
	every   time.Duration
	mu      sync.Mutex
	keys    staticKeys
	fetched time.Time
}

func (r *remoteKeys) Key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := r.keys[kid]; k != nil {
		return k, nil
	}
	if r.keys != nil && time.Since(r.fetched) < r.every {
		return nil, ErrUnknownKey
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", r.url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	m, err := parsePublic(b)
	if err != nil {
		return nil, err
	}
	r.keys, r.fetched = m, time.Now()
	return r.keys.Key(ctx, kid)
}

// ReplayStore records used decision ids: Claim reports whether id was
// fresh, recording it until until (after which the statement has expired
// anyway). A store shared by replicas makes a statement single use across
// them (e.g. Redis SET id 1 NX PXAT until).
type ReplayStore interface {
	Claim(ctx context.Context, id string, until time.Time) (fresh bool, err error)
}

// MemoryReplay is a ReplayStore in this process. The zero value is ready.
type MemoryReplay struct {
	mu    sync.Mutex
	used  map[string]time.Time
	sweep time.Time
	Now   func() time.Time // nil: time.Now
}

// Claim implements ReplayStore; expired ids are dropped at most once a
// second.
func (m *MemoryReplay) Claim(_ context.Context, id string, until time.Time) (bool, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	t := now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used == nil {
		m.used = map[string]time.Time{}
	}
	if t.Sub(m.sweep) > time.Second {
		for k, u := range m.used {
			if !t.Before(u) {
				delete(m.used, k)
			}
		}
		m.sweep = t
	}
	if u, ok := m.used[id]; ok && t.Before(u) {
		return false, nil
	}
	m.used[id] = until
	return true, nil
}

// memoryOnce is a Verifier's own MemoryReplay, made on first use.
type memoryOnce struct {
	once sync.Once
	m    *MemoryReplay
}

func (o *memoryOnce) get(now func() time.Time) *MemoryReplay {
	o.once.Do(func() { o.m = &MemoryReplay{Now: now} })
	return o.m
}
