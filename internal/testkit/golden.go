package testkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of every test binary that imports testkit:
// Golden then rewrites the golden files instead of comparing them.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Golden compares got with the golden file at path and returns the file's
// content and whether it equals got byte for byte. With -update it first
// writes got to path (creating its folder), so it reports equal. A file
// that cannot be read fails the test, naming -update. Callers say what a
// difference means.
func Golden(t testing.TB, path string, got []byte) (want []byte, same bool) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	return want, bytes.Equal(got, want)
}
