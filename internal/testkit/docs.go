package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DocFiles are the repository's documentation files, relative to its root,
// in the order Docs joins them: README.md (the front door) first, then the
// reference under docs/. A new file under docs/ must be added here;
// TestDocFilesComplete fails until it is.
var DocFiles = []string{
	"README.md",
	"docs/deploy.md",
	"docs/operations.md",
	"docs/policy.md",
	"docs/identity.md",
	"docs/seam.md",
	"docs/configuration.md",
	"docs/reasons.md",
	"docs/digests.md",
	"docs/performance.md",
	"docs/development.md",
}

// Docs returns the documentation text: the files of DocFiles under root
// (the repository root, e.g. ".."), joined in that order with a newline
// between them. Tests that check what the documentation says (a reason's
// row, a flag, a command) read this rather than README.md alone, so a
// section may sit in README or in docs/ without the test changing. A file
// that cannot be read fails the test.
func Docs(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range DocFiles {
		s, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(s)
		if !strings.HasSuffix(string(s), "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
