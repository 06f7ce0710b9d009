package bearer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeySetStatus: the kids in use, sorted, the last success, and the
// error of a refused reload, which keeps the kids.
func TestKeySetStatus(t *testing.T) {
	ks, err := LoadJWKS(filepath.Join("..", "..", "examples", "jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := ks.Status()
	if !slices.Equal(st.Kids, []string{"example-test-key-1"}) || st.LastSuccess.IsZero() || st.LastError != "" {
		t.Errorf("status %+v", st)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if ks.LoadFile(bad) == nil {
		t.Fatal("an empty key set loaded")
	}
	if st2 := ks.Status(); !slices.Equal(st2.Kids, st.Kids) || st2.LastError == "" || !st2.LastSuccess.Equal(st.LastSuccess) {
		t.Errorf("after a refused load: %+v", st2)
	}
}
