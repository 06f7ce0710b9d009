package policy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzGlobMatch: the compiled matcher agrees with slowMatch, a direct
// recursive reading of the pattern (options without zeroSegments), and
// with globRegexp, a translation to RE2 segment by segment (every option
// set, on valid UTF-8), under every option set; a pattern without '*'
// matches exactly its (folded) self.
func FuzzGlobMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"*/delete_*", "payments/delete_repo"},
		{"a*b*c", "aXbYc"},
		{"file:///srv/docs/*", "file:///srv/docs/sub/a.md"},
		{"**/x", "a/b/x"},
		{"*.example.com", "evil.test?.example.com"},
		{"**.example.com", "a.b.example.com"},
		{"exact", "exact"},
		{"ü*", "üü/"},
		{"***", "a/b"},
		{"/data/**/keys/**", "/data/keys"},
		{"a/**/**/b", "a/b"},
		{"**/b/**", "b"},
		{"/**/", "/"},
		{"a**/b", "a/b"},
		{"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 256 || len(s) > 256 {
			return
		}
		valid := utf8.ValidString(pattern) && utf8.ValidString(s)
		for _, o := range []globOptions{
			{}, {doubleStar: true}, {starCrossesSlash: true}, {doubleStar: true, fold: loose},
			{doubleStar: true, sep: '.'}, {doubleStar: true, sep: '&'}, {starCrossesSlash: true, fold: loose},
			{doubleStar: true, zeroSegments: true}, {doubleStar: true, zeroSegments: true, fold: loose},
			{doubleStar: true, zeroSegments: true, sep: '.'}, {doubleStar: true, zeroSegments: true, sep: '&', fold: loose},
		} {
			g := parseGlob(pattern, o)
			got := g.match(s)
			if !o.zeroSegments {
				if want := slowMatch(pattern, s, o, map[[2]int]bool{}); got != want {
					t.Fatalf("glob %q %+v match %q = %v, slowMatch says %v", pattern, o, s, got, want)
				}
			}
			if valid {
				if want := globRegexp(pattern, o).MatchString(s); got != want {
					t.Fatalf("glob %q %+v match %q = %v, globRegexp %s says %v", pattern, o, s, got, globRegexp(pattern, o), want)
				}
			}
			if !strings.Contains(pattern, "*") {
				lit := pattern
				if o.fold != nil {
					lit = o.fold(pattern)
				}
				if got != (s == lit) {
					t.Fatalf("literal %q %+v match %q = %v", pattern, o, s, got)
				}
			}
		}
	})
}

// slowMatch is the oracle for glob matching: it reads pattern p from the
// left, trying every split of s at a wildcard. '**' (with doubleStar) and
// '*' (with starCrossesSlash) take any run; '*' takes a run without the
// separator; a literal run up to the next '*' must equal the subject's
// prefix after folding. memo caches (len(p), len(s)) of failed suffixes.
func slowMatch(p, s string, o globOptions, memo map[[2]int]bool) bool {
	key := [2]int{len(p), len(s)}
	if v, ok := memo[key]; ok {
		return v
	}
	sep := o.sep
	if sep == 0 {
		sep = '/'
	}
	var got bool
	switch {
	case p == "":
		got = s == ""
	case p[0] == '*':
		rest, crosses := p[1:], o.starCrossesSlash
		if o.doubleStar && strings.HasPrefix(p, "**") {
			rest, crosses = p[2:], true
		}
		for i := 0; i <= len(s); i++ {
			if slowMatch(rest, s[i:], o, memo) {
				got = true
				break
			}
			if i < len(s) && s[i] == sep && !crosses {
				break
			}
		}
	default:
		n := strings.IndexByte(p, '*')
		if n < 0 {
			n = len(p)
		}
		lit := p[:n]
		if o.fold != nil {
			lit = o.fold(lit)
		}
		got = strings.HasPrefix(s, lit) && slowMatch(p[n:], s[len(lit):], o, memo)
	}
	memo[key] = got
	return got
}

// globRegexp is the second oracle for glob matching: pattern p as an
// anchored RE2 expression. Under zeroSegments p is read segment by segment
// (consecutive globstar segments are one): a leading globstar segment is
// "(?:.*SEP)?", any later one "(?:SEP.*)?" in place of itself and the
// separator before it; elsewhere a run of two or more '*' (doubleStar) is
// ".*", one '*' is "[^SEP]*" (".*" with starCrossesSlash), and a literal
// run is folded, then quoted. p and subjects must be valid UTF-8.
func globRegexp(p string, o globOptions) *regexp.Regexp {
	sep := o.sep
	if sep == 0 {
		sep = '/'
	}
	S := regexp.QuoteMeta(string(sep))
	var re strings.Builder
	re.WriteString(`(?s)^`)
	run := func(seg string) {
		for seg != "" {
			if seg[0] != '*' {
				n := strings.IndexByte(seg, '*')
				if n < 0 {
					n = len(seg)
				}
				lit := seg[:n]
				if o.fold != nil {
					lit = o.fold(lit)
				}
				re.WriteString(regexp.QuoteMeta(lit))
				seg = seg[n:]
				continue
			}
			n := len(seg) - len(strings.TrimLeft(seg, "*"))
			switch {
			case n >= 2 && o.doubleStar, o.starCrossesSlash:
				re.WriteString(`.*`)
			default:
				re.WriteString(strings.Repeat(`[^`+S+`]*`, n))
			}
			seg = seg[n:]
		}
	}
	if !o.zeroSegments || !o.doubleStar || !strings.Contains(p, "*") {
		if !strings.Contains(p, "*") && o.fold != nil {
			p = o.fold(p) // an exact pattern is folded whole
			re.WriteString(regexp.QuoteMeta(p))
		} else {
			run(p)
		}
		re.WriteString(`$`)
		return regexp.MustCompile(re.String())
	}
	star := func(s string) bool { return len(s) >= 2 && strings.Trim(s, "*") == "" }
	var segs []string
	for _, s := range strings.Split(p, string(sep)) {
		if !(star(s) && len(segs) > 0 && star(segs[len(segs)-1])) {
			segs = append(segs, s)
		}
	}
	for i, s := range segs {
		switch {
		case star(s) && len(segs) == 1:
			re.WriteString(`.*`)
		case star(s) && i == 0:
			re.WriteString(`(?:.*` + S + `)?`)
		case star(s):
			re.WriteString(`(?:` + S + `.*)?`)
		default:
			if i > 0 && !(i == 1 && star(segs[0])) {
				re.WriteString(S)
			}
			run(s)
		}
	}
	re.WriteString(`$`)
	return regexp.MustCompile(re.String())
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

// FuzzNormalizeURI: the normal form of a normal form is itself, parses to
// the same components, and keeps no dot segment, no empty segment in file
// and web paths, no userinfo and no character NFKC turns into a delimiter.
func FuzzNormalizeURI(f *testing.F) {
	for _, s := range []string{
		"file:///srv/docs/a.md", "FILE:///srv/docs/../../etc/passwd", "HTTPS://User@Ex%41mple.COM:8443/p?q#f",
		"file:///%c3%bc", "file:///a%2fb", "file:///a%2e", "urn:x:y", "%", "file:///a\\b", "//host/x",
		"file:////etc/passwd", "http://0xa9.0xfe.0xa9.0xfe:80/", "http://[::ffff:1.2.3.4]/", "https://evil.test?.example.com/x",
		"file:///reports/a\uff0f..\uff0fetc", "http://127.1./", "http://[::1]:0080//a//b",
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
		u, _ := ParseURI(uri)
		v, _ := ParseURI(n)
		if u != v {
			t.Fatalf("ParseURI(%q) = %+v, of its normal form %+v", uri, u, v)
		}
		if hasDotSegment(u.Path) || strings.Contains(u.Host, "@") || !safeRunes(n) {
			t.Fatalf("normal form %q keeps a dot segment, userinfo or an NFKC delimiter", n)
		}
		if (u.Scheme == "file" || webScheme(u.Scheme)) && strings.Contains(u.Path, "//") {
			t.Fatalf("normal form %q keeps an empty segment", n)
		}
	})
}

// FuzzURIPattern: compiling a resource pattern never panics, and a pattern
// without '*' that compiles matches every spelling of the URI it names,
// exactly and loosely.
func FuzzURIPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"file:///etc/**", "file:////etc/passwd"},
		{"http://169.254.169.254/latest", "http://2852039166:80/latest"},
		{"https://*.example.com/**", "https://evil.test?.example.com/x"},
		{"https://Example.com./a?q#f", "HTTPS://example.COM:443/a?q#f"},
		{"urn:isbn:1", "URN:isbn:1"},
		{"**", "x:y"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, uri string) {
		for _, loose := range []bool{false, true} {
			p, problem := compileURIPattern(pattern, loose)
			if (p == nil) == (problem == "") {
				t.Fatalf("compileURIPattern(%q) = %v, %q", pattern, p, problem)
			}
			u, ok := ParseURI(uri)
			if p == nil || !ok {
				continue
			}
			got := p.match(&resourceTarget{u: u})
			if strings.Contains(pattern, "*") {
				continue
			}
			self, ok := ParseURI(pattern)
			if !ok {
				t.Fatalf("pattern %q compiles but does not parse as a URI", pattern)
			}
			if same := self == u; same && !got {
				t.Fatalf("pattern %q (loose %v) does not match %q, an equal URI", pattern, loose, uri)
			}
			if !loose && got && self != u {
				t.Fatalf("exact pattern %q matches %q, another URI", pattern, uri)
			}
		}
	})
}
