package mcpdecision

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

func newEdKey(t testing.TB, kid string) jose.JSONWebKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: priv, KeyID: kid}
}

func newSigner(t testing.TB, keys ...jose.JSONWebKey) *Signer {
	t.Helper()
	s, err := NewSigner(keys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keysOf(t testing.TB, s *Signer) KeySet {
	t.Helper()
	ks, err := StaticKeys(s.PublicKeySet())
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func reasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if err == nil {
		return "ok"
	}
	return "not an *Error: " + Reason(err.Error())
}

var searchCall = Call{Method: "tools/call", Target: "search", Arguments: map[string]any{"query": "refunds"}}

// TestSingleUse: a statement admits one call; a refused call (other
// arguments) does not use it up; the second use is refused.
func TestSingleUse(t *testing.T) {
	s := newSigner(t, newEdKey(t, "k1"))
	now := time.Unix(vectorNow, 0)
	v := &Verifier{Audience: vAud, Keys: keysOf(t, s), Now: func() time.Time { return now }}
	j, err := s.Sign(baseStatement(`{"query":"refunds"}`))
	if err != nil {
		t.Fatal(err)
	}
	other := Call{Method: "tools/call", Target: "search", Arguments: map[string]any{"query": "all"}}
	steps := []struct {
		give Call
		want Reason
	}{
		{other, ReasonMismatch},
		{searchCall, "ok"},
		{searchCall, ReasonReplayed},
	}
	for i, tt := range steps {
		if _, err := v.Verify(t.Context(), []string{j}, tt.give); reasonOf(err) != tt.want {
			t.Errorf("step %d: %v, want %s", i, err, tt.want)
		}
	}
}

// TestHeaderValues: no value, an empty one and two values are
// decision_missing.
func TestHeaderValues(t *testing.T) {
	s := newSigner(t, newEdKey(t, "k1"))
	v := &Verifier{Audience: vAud, Keys: keysOf(t, s), Now: func() time.Time { return time.Unix(vectorNow, 0) }}
	j, _ := s.Sign(baseStatement(`{"query":"refunds"}`))
	for _, give := range [][]string{nil, {""}, {j, j}} {
		if _, err := v.Verify(t.Context(), give, searchCall); reasonOf(err) != ReasonMissing {
			t.Errorf("%d values: %v, want %s", len(give), err, ReasonMissing)
		}
	}
}

// failingStore is a shared replay store that is down.
type failingStore struct{}

func (failingStore) Claim(context.Context, string, time.Time) (bool, error) {
	return false, errors.New("connection refused")
}

// countingStore records the ids it was asked to claim.
type countingStore struct {
	MemoryReplay
	ids []string
}

func (c *countingStore) Claim(ctx context.Context, id string, until time.Time) (bool, error) {
	c.ids = append(c.ids, id)
	return c.MemoryReplay.Claim(ctx, id, until)
}

// TestReplayStoreHook: a shared store is asked for the decision id, until
// the statement's exp; one that fails refuses (decision_unavailable).
func TestReplayStoreHook(t *testing.T) {
	s := newSigner(t, newEdKey(t, "k1"))
	st := baseStatement(`{"query":"refunds"}`)
	j, _ := s.Sign(st)
	now := func() time.Time { return time.Unix(vectorNow, 0) }
	cs := &countingStore{MemoryReplay: MemoryReplay{Now: now}}
	v := &Verifier{Audience: vAud, Keys: keysOf(t, s), Now: now, Replay: cs}
	if _, err := v.Verify(t.Context(), []string{j}, searchCall); err != nil {
		t.Fatal(err)
	}
	if len(cs.ids) != 1 || cs.ids[0] != st.ID {
		t.Errorf("claimed %v, want [%s]", cs.ids, st.ID)
	}
	down := &Verifier{Audience: vAud, Keys: keysOf(t, s), Now: now, Replay: failingStore{}}
	if _, err := down.Verify(t.Context(), []string{j}, searchCall); reasonOf(err) != ReasonUnavailable {
		t.Errorf("store down: %v, want %s", err, ReasonUnavailable)
	}
}

// TestMemoryReplayForgetsExpired: an id is refused until its until, then
// forgotten (the statement has expired by then anyway).
func TestMemoryReplayForgetsExpired(t *testing.T) {
	now := time.Unix(vectorNow, 0)
	m := &MemoryReplay{Now: func() time.Time { return now }}
	ctx := t.Context()
	if ok, _ := m.Claim(ctx, "a", now.Add(time.Minute)); !ok {
		t.Fatal("first claim refused")
	}
	if ok, _ := m.Claim(ctx, "a", now.Add(time.Minute)); ok {
		t.Fatal("second claim admitted")
	}
	now = now.Add(2 * time.Minute)
	if ok, _ := m.Claim(ctx, "b", now.Add(time.Minute)); !ok || len(m.used) != 1 {
		t.Errorf("after expiry: %d ids kept, want 1", len(m.used))
	}
}

// TestFileKeysRotation: the key set file is read again when it changes, so
// a statement of the new key verifies; a file that does not parse is
// decision_unavailable, never an empty set.
func TestFileKeysRotation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "decision-jwks.json")
	old := newSigner(t, newEdKey(t, "old"))
	if err := os.WriteFile(file, old.PublicKeySet(), 0o644); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Unix(vectorNow, 0) }
	v := &Verifier{Audience: vAud, Keys: FileKeys(file), Now: now}
	verify := func(s *Signer, id string) Reason {
		st := baseStatement(`{"query":"refunds"}`)
		st.ID = id
		j, _ := s.Sign(st)
		_, err := v.Verify(t.Context(), []string{j}, searchCall)
		return reasonOf(err)
	}
	if got := verify(old, "a"); got != "ok" {
		t.Fatalf("old key: %s", got)
	}
	rotated := newSigner(t, newEdKey(t, "new"), old.Keys()[0])
	if got := verify(rotated, "b"); got != ReasonUnverified {
		t.Errorf("new key before the file changed: %s, want %s", got, ReasonUnverified)
	}
	if err := os.WriteFile(file, rotated.PublicKeySet(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := verify(rotated, "c"); got != "ok" {
		t.Errorf("new key after rotation: %s", got)
	}
	if got := verify(old, "d"); got != "ok" {
		t.Errorf("old key still published: %s", got)
	}
	if err := os.WriteFile(file, []byte(`{"keys":[`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := verify(rotated, "e"); got != ReasonUnavailable {
		t.Errorf("broken file: %s, want %s", got, ReasonUnavailable)
	}
}

// TestRemoteKeys: the key set is fetched on first use and again for an
// unknown kid (a rotation), at most once per interval.
func TestRemoteKeys(t *testing.T) {
	var served atomic.Pointer[[]byte]
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(*served.Load())
	}))
	defer srv.Close()
	old := newSigner(t, newEdKey(t, "old"))
	b := old.PublicKeySet()
	served.Store(&b)
	now := func() time.Time { return time.Unix(vectorNow, 0) }
	v := &Verifier{Audience: vAud, Keys: RemoteKeys(srv.URL, srv.Client(), time.Nanosecond), Now: now}
	verify := func(s *Signer, id string) Reason {
		st := baseStatement(`{"query":"refunds"}`)
		st.ID = id
		j, _ := s.Sign(st)
		_, err := v.Verify(t.Context(), []string{j}, searchCall)
		return reasonOf(err)
	}
	if got := verify(old, "a"); got != "ok" || fetches.Load() != 1 {
		t.Fatalf("first: %s after %d fetches", got, fetches.Load())
	}
	if got := verify(old, "b"); got != "ok" || fetches.Load() != 1 {
		t.Errorf("known kid: %s after %d fetches, want 1", got, fetches.Load())
	}
	rotated := newSigner(t, newEdKey(t, "new"), old.Keys()[0])
	b2 := rotated.PublicKeySet()
	served.Store(&b2)
	if got := verify(rotated, "c"); got != "ok" || fetches.Load() != 2 {
		t.Errorf("rotated: %s after %d fetches, want 2", got, fetches.Load())
	}
	stranger := newSigner(t, newEdKey(t, "stranger"))
	if got := verify(stranger, "d"); got != ReasonUnverified {
		t.Errorf("unknown key: %s", got)
	}
}

// TestParseKeys: what a key file may hold.
func TestParseKeys(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	ed := newEdKey(t, "a")
	pub := ed.Public()
	tests := []struct {
		name string
		give []jose.JSONWebKey
		want string // "" accepts
	}{
		{"one Ed25519 key", []jose.JSONWebKey{ed}, ""},
		{"a public key", []jose.JSONWebKey{pub}, "want a private"},
		{"P-384", []jose.JSONWebKey{{Key: p384, KeyID: "p"}}, "P-256"},
		{"no kid", []jose.JSONWebKey{{Key: ed.Key}}, "no kid"},
		{"kid twice", []jose.JSONWebKey{ed, ed}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := jsonOf(jose.JSONWebKeySet{Keys: tt.give})
			if err != nil {
				if tt.want == "" {
					t.Fatal(err)
				}
				return
			}
			_, err = ParseKeys(b)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := ParseKeys(mustRead(t, "../examples/TEST-ONLY-decision-key.jwk.json")); err != nil {
		t.Errorf("the published test key (one JWK): %v", err)
	}
}

// TestNeverAnAccessToken: a statement presented as a bearer token to the
// service's own token verifier is refused for its typ, even by a verifier
// whose key set holds the decision key and whose issuer and audience are
// the statement's; and mcp-decision+jwt is one of bearer.OtherJWTTypes,
// which --token-typ refuses.
func TestNeverAnAccessToken(t *testing.T) {
	k := newEdKey(t, "k1")
	s := newSigner(t, k)
	st := baseStatement(`{"query":"refunds"}`)
	now := time.Unix(vectorNow, 0)
	j, _ := s.Sign(st)
	for _, types := range [][]string{nil, {"at+jwt"}, append(append([]string{}, bearer.AccessTokenTypes...), "application/okta-at+jwt")} {
		v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: st.Issuer, Audiences: []string{vAud}, Types: types,
			KeySet: bearer.NewStaticKeySet([]jose.JSONWebKey{k.Public()}), Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		p, err := v.Verify(t.Context(), j)
		if err == nil {
			t.Errorf("types %v: a statement verified as an access token: %+v", types, p)
		} else if !strings.Contains(err.Error(), "typ") {
			t.Errorf("types %v: refused for %v, want for its typ", types, err)
		}
	}
	if !bearer.IsOtherJWTType(Type) {
		t.Errorf("%s is not among bearer.OtherJWTTypes", Type)
	}
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
