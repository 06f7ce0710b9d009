package testkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Line is one line of a JSON Lines file (the corpus, the cases, observed
// answers): the file, its 1-based line number and its text.
type Line struct {
	File string
	N    int
	Text []byte
}

// Decode unmarshals the line into v (encoding/json); an error fails the
// test naming file:line.
func (l Line) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(l.Text, v); err != nil {
		t.Fatalf("%s:%d: %v", l.File, l.N, err)
	}
}

// JSONLines returns every line of the files that pattern (filepath.Glob)
// matches, files in sorted order. No file matching, a file that cannot be
// read, a blank line, a line over 16 MiB or no line at all fails the test:
// a missing corpus is a failure, never a skip.
func JSONLines(t testing.TB, pattern string) []Line {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no file matches %s (err %v)", pattern, err)
	}
	sort.Strings(files)
	var out []Line
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				t.Fatalf("%s:%d: blank line", f, n)
			}
			out = append(out, Line{File: f, N: n, Text: append([]byte(nil), sc.Bytes()...)})
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no lines", pattern)
	}
	return out
}

// CaseLine returns the line of the JSON Lines file whose member "id" is
// id (the shape of testdata/shared/cases/*.jsonl); no such line fails the
// test, as JSONLines does.
func CaseLine(t testing.TB, file, id string) []byte {
	t.Helper()
	for _, l := range JSONLines(t, file) {
		var c struct {
			ID string `json:"id"`
		}
		l.Decode(t, &c)
		if c.ID == id {
			return l.Text
		}
	}
	t.Fatalf("case %s not in %s", id, file)
	return nil
}
