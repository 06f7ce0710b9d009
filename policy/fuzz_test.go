package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzGlobMatch: matching never panics, and a pattern without '*' matches
// exactly itself.
func FuzzGlobMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"*/delete_*", "payments/delete_repo"},
		{"a*b*c", "aXbYc"},
		{"file:///srv/docs/*", "file:///srv/docs/sub/a.md"},
		{"**/x", "a/b/x"},
		{"exact", "exact"},
		{"ü*", "üü/"},
		{"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		for _, o := range []globOptions{{}, {doubleStar: true}, {starCrossesSlash: true}, {doubleStar: true, fold: loose}} {
			g := parseGlob(pattern, o)
			got := g.match(s)
			if strings.Contains(pattern, "*") {
				if o.fold == nil && pattern == s && !got {
					t.Errorf("%q %+v does not match itself", pattern, o)
				}
				continue
			}
			lit := pattern
			if o.fold != nil {
				lit = loose(pattern)
			}
			if got != (s == lit) {
				t.Errorf("literal %q %+v match %q = %v", pattern, o, s, got)
			}
		}
	})
}

// FuzzCompile: Compile never panics, and an error is always a
// *CompileError with problems.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "compile", "*.yaml"))
	files = append(files, filepath.Join("..", "examples", "policy.yaml"))
	for _, name := range files {
		if src, err := os.ReadFile(name); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("allow: [{match: x, when: 'inside(args.p, \"/d\")'}]"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Compile("fuzz.yaml", src)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %T %v, want *CompileError with problems", err, err)
			}
			if p != nil {
				t.Fatal("policy and error both returned")
			}
			return
		}
		if d := p.Default(); d != Deny && d != Ask {
			t.Fatalf("Default() = %v", d)
		}
		// A compiled policy evaluates without panicking.
		for _, in := range []*Input{
			toolCall("s", "delete_x", map[string]any{"n": int64(1)}),
			resRead("s", "file:///a/b"),
			promptGet("s", "p"),
			method("ping"),
			{Op: OpHTTPGet},
		} {
			p.Evaluate(in)
		}
	})
}

// FuzzNormalizeURI: the normal form of a normal form is itself.
func FuzzNormalizeURI(f *testing.F) {
	for _, s := range []string{
		"file:///srv/docs/a.md", "FILE:///srv/docs/../../etc/passwd", "HTTPS://User@Ex%41mple.COM:8443/p?q#f",
		"file:///%c3%bc", "file:///a%2fb", "file:///a%2e", "urn:x:y", "%", "file:///a\\b", "//host/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		n, ok := NormalizeURI(uri)
		if !ok {
			if n != "" {
				t.Fatalf("NormalizeURI(%q) = %q, false; want \"\" with false", uri, n)
			}
			return
		}
		again, ok2 := NormalizeURI(n)
		if !ok2 || again != n {
			t.Fatalf("NormalizeURI(%q) = %q; NormalizeURI(that) = %q, %v", uri, n, again, ok2)
		}
	})
}
