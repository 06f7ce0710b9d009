package extauthz

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestJWKSFileReload: a rotated --jwks-file is picked up without a
// restart; a broken one keeps the last good keys and is reported.
func TestJWKSFileReload(t *testing.T) {
	k1, k2 := testkit.NewKey(t, "k1"), testkit.NewKey(t, "k2")
	idp := testkit.NewIdP(t, k1) // issuer and claims only; keys come from the file
	path := filepath.Join(t.TempDir(), "jwks.json")
	testkit.WriteAtomic(t, path, testkit.JWKS(t, k1))
	ks, err := bearer.LoadJWKS(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var results []error
	ks.OnRefresh = func(err error) { mu.Lock(); results = append(results, err); mu.Unlock() }
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}, KeySet: ks})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	go func() {
		_ = filewatch.WatchAll(ctx, []string{path}, filewatch.Options{Debounce: 10 * time.Millisecond}, func() { _ = ks.LoadFile(path) })
	}()

	verifies := func(k *testkit.Key) bool {
		_, err := v.Verify(ctx, k.Sign(t, idp.Claims()))
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
	testkit.WriteAtomic(t, path, testkit.JWKS(t, k2))
	eventually("k2 to verify after rotation", func() bool { return verifies(k2) })
	if verifies(k1) {
		t.Error("k1 still verifies after it left the file")
	}
	if ks.Generation() == gen {
		t.Error("key generation unchanged: cached verifications would survive the rotation")
	}

	testkit.WriteAtomic(t, path, []byte(`{"keys":[]}`))
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
