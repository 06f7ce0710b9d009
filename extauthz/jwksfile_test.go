package extauthz

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
)

// writeAtomic replaces path the way editors and kubelet do: write a
// temporary file, rename it over.
func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func jwksJSON(t *testing.T, keys ...*testKey) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, k.public())
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJWKSFileReload: a rotated --jwks-file is picked up without a
// restart; a broken one keeps the last good keys and is reported.
func TestJWKSFileReload(t *testing.T) {
	k1, k2 := newTestKey(t, "k1"), newTestKey(t, "k2")
	idp := newTestIdP(t, k1) // issuer and claims only; keys come from the file
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeAtomic(t, path, jwksJSON(t, k1))
	ks, err := bearer.LoadJWKS(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var results []error
	ks.OnRefresh = func(err error) { mu.Lock(); results = append(results, err); mu.Unlock() }
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.issuer(), Audiences: []string{testAudience}, KeySet: ks})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	go func() {
		_ = filewatch.WatchAll(ctx, []string{path}, filewatch.Options{Debounce: 10 * time.Millisecond}, func() { _ = ks.LoadFile(path) })
	}()

	verifies := func(k *testKey) bool {
		_, err := v.Verify(ctx, k.sign(t, idp.claims()))
		return err == nil
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	if !verifies(k1) || verifies(k2) {
		t.Fatal("before rotation: want k1 only")
	}
	gen := ks.Generation()
	writeAtomic(t, path, jwksJSON(t, k2))
	eventually("k2 to verify after rotation", func() bool { return verifies(k2) })
	if verifies(k1) {
		t.Error("k1 still verifies after it left the file")
	}
	if ks.Generation() == gen {
		t.Error("key generation unchanged: cached verifications would survive the rotation")
	}

	writeAtomic(t, path, []byte(`{"keys":[]}`))
	eventually("the refused reload to be reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) > 0 && results[len(results)-1] != nil
	})
	if !verifies(k2) {
		t.Error("a broken file dropped the last good keys")
	}
	if err := ks.LoadFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	if !verifies(k2) {
		t.Error("a missing file dropped the last good keys")
	}
}

// TestJWKSFileReloadUnchanged: the watcher's first load of the file serve
// started with changes nothing: same generation (so no "keys changed" log
// line and no token-cache flush at every start).
func TestJWKSFileReloadUnchanged(t *testing.T) {
	ks, err := bearer.LoadJWKS("../examples/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	gen := ks.Generation()
	if err := ks.LoadFile("../examples/jwks.json"); err != nil {
		t.Fatal(err)
	}
	if g := ks.Generation(); g != gen {
		t.Errorf("generation %d after reloading the same file, want %d", g, gen)
	}
}
