package extproc

import (
	"regexp"
	"strings"
	"testing"
)

// The content-type npm package's grammar (v1.0.5 index.js), over a header
// as fetch holds it: one character per byte (latin1 below).
var (
	ctTypeRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	ctParamRE = regexp.MustCompile("^; *[!#$%&'*+.^_`|~0-9A-Za-z-]+ *= *(\"(?:[\\x{0b}\\x{20}\\x{21}\\x{23}-\\x{5b}\\x{5d}-\\x{7e}\\x{80}-\\x{ff}]|\\\\[\\x{0b}\\x{20}-\\x{ff}])*\"|[!#$%&'*+.^_`|~0-9A-Za-z-]+) *")
)

// latin1 maps each byte of s to the character of that code point.
func latin1(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

// jsEssence is mediaTypeEssence written from its source with the npm
// package's regular expressions: an independent oracle for tsEssence.
func jsEssence(h string) string {
	if h == "" {
		return ""
	}
	l := latin1(h)
	trim := func(s string) string { return strings.Trim(s, "\t\n\v\f\r \u00a0") }
	i := strings.IndexByte(l, ';')
	t := l
	if i >= 0 {
		t = l[:i]
	}
	if typ := trim(t); ctTypeRE.MatchString(typ) {
		ok := true
		if i >= 0 {
			rest := l[i:]
			for rest != "" {
				m := ctParamRE.FindString(rest)
				if m == "" {
					ok = false
					break
				}
				rest = rest[len(m):]
			}
		}
		if ok {
			return strings.ToLower(typ)
		}
	}
	e := strings.ToLower(trim(t))
	// header.slice(essence.length), in characters.
	if e == "" || strings.Contains(string([]rune(l)[len([]rune(e)):]), ",") {
		return ""
	}
	return e
}

// FuzzContentReading: tsEssence agrees with jsEssence (both read only
// ASCII essences as JSON or SSE), and contentReading never panics and
// calls a disagreement one.
func FuzzContentReading(f *testing.F) {
	for _, s := range []string{"application/json", "Text/Event-Stream; charset=UTF-8", `application/json; profile="text/event-stream"`,
		"application/json;", "application/json; charset", "\xa0application/json", "application/json, text/event-stream",
		"text/plain; a=application/json", `application/json; a="\"`, "application/json; a=b, c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		got, want := essenceKind(tsEssence(h)), essenceKind(jsEssence(h))
		if got != want {
			t.Fatalf("%q: tsEssence reads %v (%q), the oracle %v (%q)", h, got, tsEssence(h), want, jsEssence(h))
		}
		contentReading([]string{h})
	})
}
