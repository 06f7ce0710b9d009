package mcpparse

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// upstreamShared is the project's shared folder beside the repository
// (absent in a clone made outside the project).
const upstreamShared = "../../shared"

// TestSharedCopy: testdata/shared holds, byte for byte, every file of
// ../shared's corpus, cases and mcp-schema folders, and nothing else, so
// the tests of a bare clone read what the project's do. Without ../shared
// beside the repository there is nothing to compare against.
func TestSharedCopy(t *testing.T) {
	if _, err := os.Stat(upstreamShared); err != nil {
		t.Skipf("no %s beside the repository: the copy in %s is all there is", upstreamShared, sharedDir)
	}
	for _, dir := range []string{filepath.Join("corpus", "mcp-real"), "cases", "mcp-schema"} {
		want := files(t, filepath.Join(upstreamShared, dir))
		got := files(t, filepath.Join(sharedDir, dir))
		for name, b := range want {
			if g, ok := got[name]; !ok {
				t.Errorf("%s is missing: cp %s %s", filepath.Join(sharedDir, dir, name), filepath.Join(upstreamShared, dir, name), filepath.Join(sharedDir, dir, name))
			} else if !bytes.Equal(g, b) {
				t.Errorf("%s differs from %s: copy it again", filepath.Join(sharedDir, dir, name), filepath.Join(upstreamShared, dir, name))
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s is not in %s", filepath.Join(sharedDir, dir, name), upstreamShared)
			}
		}
	}
}

// files returns the regular files below root by slash path relative to it.
func files(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no files below %s", root)
	}
	return out
}
