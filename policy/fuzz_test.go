package policy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
// *CompileError with problems; a compiled policy evaluates without
// panicking, and decides list items (Visible, its cache cold or warm) as
// visibleReference does.
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
		// Visible, its cache warm or cold, is visibleReference.
		for round := 0; round < 2; round++ {
			for _, name := range []string{"delete_x", "x", "p", "search"} {
				for _, claims := range []map[string]any{nil, {"role": "admin", "sub": "a"}} {
					for _, in := range []*Input{toolCall("s", name, nil), promptGet("s", name)} {
						in.Claims = claims
						if got, want := p.Visible(in), p.visibleReference(in); got != want {
							t.Fatalf("round %d %+v: %+v, reference %+v", round, in, got, want)
						}
					}
				}
			}
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
		"file:///data/secret.txt::$DATA", "file:///data/SECRET~1.TXT", "file:///data/nul.txt", "file:////server/share",
		"file:///C:/x", "file:///data/C|/x", "https://files.test/a:b/c. /%20", "file://C:/x",
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
		if msg := windowsAlias(u); msg != "" {
			t.Fatalf("normal form %q keeps a Windows alias: %s", n, msg)
		}
	})
}

// Independent readings of the Windows aliases ParseURI refuses, for
// FuzzNormalizeURI: regular expressions over each segment of a file or web
// path as a server decodes it (percent-decoding, then NFKC).
var (
	reDotsSpaces = regexp.MustCompile(`^[. ]+$`)
	reShortName  = regexp.MustCompile(`^([^.]{1,8})(\.[^.]{0,3})?$`) // base ends in ~digits: checked below
	reShortBase  = regexp.MustCompile(`^.+~[0-9]+$`)
	reDevice     = regexp.MustCompile(`(?i)^(con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$) *(\..*)?$`)
	reDrive      = regexp.MustCompile(`^/[A-Za-z]:(/|$)`)
)

// windowsAlias says which Windows alias the path of u (a normal form)
// still holds, or "".
func windowsAlias(u URI) string {
	if !winScheme(u.Scheme) {
		return ""
	}
	file := u.Scheme == "file"
	if file && strings.HasPrefix(u.Path, "//") {
		return "a UNC prefix"
	}
	p := u.Path
	if file && reDrive.MatchString(p) {
		p = p[3:]
	}
	for _, seg := range strings.Split(p, "/") {
		if d, ok := percentDecode(seg); ok {
			seg = d
		}
		seg = norm.NFKC.String(seg)
		if file && strings.ContainsAny(seg, ":|") {
			return "a stream or drive separator"
		}
		if seg == "" {
			continue
		}
		if reDotsSpaces.MatchString(seg) {
			return "a segment of dots and spaces"
		}
		name := strings.TrimRight(seg, ". ")
		if i := strings.IndexByte(name, ':'); i >= 0 {
			name = strings.TrimRight(name[:i], ". ")
		}
		if m := reShortName.FindStringSubmatch(name); m != nil && utf8.RuneCountInString(m[1]) <= 8 &&
			utf8.RuneCountInString(m[2]) <= 4 && reShortBase.MatchString(m[1]) {
			return "an 8.3 short name"
		}
		if file && reDevice.MatchString(name) {
			return "a device name"
		}
	}
	return ""
}

// FuzzURIPattern: compiling a resource pattern never panics, and a pattern
// without '*' that compiles matches every spelling of the URI it names,
// exactly and loosely.
func FuzzURIPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"file:///etc/**", "file:////etc/passwd"},
		{"file:///0//**", "file:///0/"}, // a globstar beside an empty segment (CI, 2026-12-02)
		{"http://169.254.169.254/latest", "http://2852039166:80/latest"},
		{"https://*.example.com/**", "https://evil.test?.example.com/x"},
		{"https://Example.com./a?q#f", "HTTPS://example.COM:443/a?q#f"},
		{"urn:isbn:1", "URN:isbn:1"},
		{"**", "x:y"},
		{"file:///data/**/keys/**", "file:///data/keys"},
		{"https://files.test/a/**/b", "https://files.test/a/b?q"},
		{"file:///data/secret.txt", "file:///data/secret.txt. ."},
		{"https://files.test/secret.txt", "https://files.test/secret.txt::$DATA"},
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
			if self == u {
				checkWindowsAliases(t, p, u)
			}
		}
		checkGlobstarVariants(t, pattern)
	})
}

// checkWindowsAliases: a pattern without '*' that matches u (a file or
// web URI) matches, when loose, every spelling of u a Windows server opens
// as u that ParseURI accepts, and, when exact, none of them; a stream
// suffix on a file path is refused.
func checkWindowsAliases(t *testing.T, p *uriPattern, u URI) {
	if !winScheme(u.Scheme) || strings.HasSuffix(u.Path, "/") {
		return
	}
	for _, suffix := range []string{".", "%20", ". .", "%20.", "%C2%A0", "::$DATA", "::$data", "%3A%3A%24DATA", ":s:$DATA", "/"} {
		v := u
		v.Path += suffix
		w, ok := ParseURI(v.String())
		if strings.Contains(suffix, ":") || strings.Contains(suffix, "%3A") {
			if u.Scheme == "file" && ok {
				t.Fatalf("%q: a stream in a file path parses", v.String())
			}
		}
		if !ok {
			continue
		}
		if got := p.match(&resourceTarget{u: w}); got != p.loose {
			t.Fatalf("pattern %q (loose %v) matches %q = %v, an alias of %q", p.src, p.loose, v.String(), got, u.String())
		}
	}
}

// checkGlobstarVariants: for a URI pattern whose only wildcards are '**'
// path segments, the URI with each of them taken as zero segments matches
// the loose pattern and not the exact one, and with each as one segment
// matches both (where that URI is already in normal form).
func checkGlobstarVariants(t *testing.T, pattern string) {
	zero, one, ok := globstarVariants(pattern)
	if !ok {
		return
	}
	for _, loose := range []bool{false, true} {
		p, problem := compileURIPattern(pattern, loose)
		if problem != "" {
			return
		}
		for _, tt := range []struct {
			give string
			want bool
		}{{zero, loose}, {one, true}} {
			u, ok := ParseURI(tt.give)
			if !ok || u.String() != tt.give {
				continue
			}
			if got := p.match(&resourceTarget{u: u}); got != tt.want {
				t.Fatalf("pattern %q (loose %v) matches %q = %v, want %v", pattern, loose, tt.give, got, tt.want)
			}
		}
	}
}

// globstarVariants returns pattern with each '**' segment of its path
// removed (zero) and replaced by "x" (one), when those are its only '*'.
func globstarVariants(pattern string) (zero, one string, ok bool) {
	i := strings.IndexByte(pattern, ':')
	if i < 0 {
		return "", "", false
	}
	prefix, rest := pattern[:i+1], pattern[i+1:]
	if strings.HasPrefix(rest, "//") {
		j := strings.IndexByte(rest[2:], '/')
		if j < 0 {
			return "", "", false
		}
		prefix, rest = prefix+rest[:2+j], rest[2+j:]
	}
	path, tail := rest, ""
	if k := strings.IndexAny(rest, "?#"); k >= 0 {
		path, tail = rest[:k], rest[k:]
	}
	if strings.Contains(prefix, "*") || strings.Contains(tail, "*") {
		return "", "", false
	}
	if strings.Contains(path, "//") {
		// Patterns read repeated slashes as one (package doc): removing
		// "**" beside an empty segment ("/0//**" → "/0/") gives the
		// directory with its trailing slash, which "/0/**" allows, not
		// the zero-segment URI.
		return "", "", false
	}
	var z, o []string
	n := 0
	for idx, s := range strings.Split(path, "/") {
		switch {
		case s == "**" && idx > 0:
			n++
			o = append(o, "x")
		case strings.Contains(s, "*"):
			return "", "", false
		default:
			z, o = append(z, s), append(o, s)
		}
	}
	if n == 0 {
		return "", "", false
	}
	return prefix + strings.Join(z, "/") + tail, prefix + strings.Join(o, "/") + tail, true
}
