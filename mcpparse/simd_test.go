package mcpparse

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// pathScanners are the scanners samePaths parses on: the vectorized path
// (where the machine has it, simdPath) and the scalar one, each fresh and
// reused across inputs, as a pooled scanner is.
type pathScanners struct{ simd, scalar *scanner }

func newPathScanners() *pathScanners {
	return &pathScanners{simd: new(scanner), scalar: &scanner{scalar: true}}
}

// samePaths fails t unless the vectorized and the scalar path give body
// the same result, on fresh scanners and on the reused ones in r: for
// Parse (with opt) the same error kind, offset and batch index, or equal
// bodies (messages, canonical arguments, digests); for Canonicalize (with
// opt.Limits) the same error or the same bytes. The scalar path is the
// oracle. Where the machine has no vectorized path both are scalar.
func samePaths(t *testing.T, r *pathScanners, body []byte, opt ParseOptions) {
	t.Helper()
	want, werr := parseOn(&scanner{scalar: true}, body, opt)
	for _, c := range []struct {
		name string
		p    *scanner
	}{{"simd fresh", new(scanner)}, {"simd reused", r.simd}, {"scalar reused", r.scalar}} {
		got, err := parseOn(c.p, body, opt)
		c.p.truncate()
		sameError(t, "Parse/"+c.name, err, werr)
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse/%s: %+v\nscalar %+v", c.name, got, want)
		}
	}
	lim := opt.Limits.withDefaults()
	wantC, werrC := canonOn(&scanner{scalar: true}, body, lim)
	for _, c := range []struct {
		name string
		p    *scanner
	}{{"simd fresh", new(scanner)}, {"simd reused", r.simd}, {"scalar reused", r.scalar}} {
		got, err := canonOn(c.p, body, lim)
		sameError(t, "Canonicalize/"+c.name, err, werrC)
		if !bytes.Equal(got, wantC) {
			t.Fatalf("Canonicalize/%s: %q\nscalar %q", c.name, got, wantC)
		}
	}
}

// canonOn is canonicalize on p (nil error as a nil error interface).
func canonOn(p *scanner, in []byte, lim Limits) ([]byte, error) {
	p.reset(in, lim)
	out, err := p.canonicalize(false)
	p.truncate()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// smallStringLimit is a MaxStringLen of 1 to 24 bytes taken from body, so
// that fuzzed strings reach the limit: the paths check it at different
// points (scanValidString) and must report it alike.
func smallStringLimit(body []byte) Limits {
	n := 1
	if len(body) > 0 {
		n += int(body[len(body)/2]) % 24
	}
	return Limits{MaxStringLen: n}
}

// TestPathsAgree compares the two paths on bodies at their boundaries:
// strings that reach the length limit inside a multi-byte sequence, with
// escapes before and after it, long runs of ASCII and of non-ASCII, and
// invalid UTF-8 before and after other faults; every body at several
// string limits.
func TestPathsAgree(t *testing.T) {
	bad := "\xe2\x82"
	tests := []string{
		call(`{"s":"` + strings.Repeat("é", 40) + `"}`),
		call(`{"s":"a\"` + strings.Repeat("東", 30) + `\n"}`),
		call(`{"s":"\u00e9` + strings.Repeat("😀", 9) + `x\\"}`),
		call(`{"s":"` + strings.Repeat("abcdefg", 30) + `\t` + strings.Repeat("жж", 30) + `"}`),
		call(`{"s":"` + strings.Repeat("жж", 30) + "\x01" + `"}`),
		call(`{"s":"` + strings.Repeat("жж", 30)),
		call(`{"s":"` + strings.Repeat("жж", 30) + `\`),
		call(`{"s":"` + strings.Repeat("жж", 30) + `\u00`),
		call(`{"` + strings.Repeat("ключ", 8) + `":1,"` + strings.Repeat("ключ", 8) + `":2}`),
		call(`{"a":1,"a":2,"b":"` + bad + `"}`),
		call(`{"s":"` + strings.Repeat("é", 40) + bad + `"}`),
		call(`{"s":"` + strings.Repeat("é", 40) + `\n` + bad + `"}`),
		call(`{"a":1}`) + bad,
		`"` + strings.Repeat("東", 20) + `"`,
		`"` + strings.Repeat("a", 20) + "\x7f" + `"`,
		`["` + strings.Repeat("é", 5) + `\ud83d\ude00` + strings.Repeat("é", 5) + `"]`,
	}
	r := newPathScanners()
	for _, body := range tests {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 59, 60, 61, 62, 80, 120, 121} {
			samePaths(t, r, []byte(body), ParseOptions{Limits: Limits{MaxStringLen: n + 1}})
		}
		samePaths(t, r, []byte(body), ParseOptions{})
	}
}

// TestVectorizedPathRuns: where the machine has the vectorized path, a
// pass on a pooled scanner takes it (stage 1 marks the input valid), and
// a scalar scanner never does; the purego build tag and other GOARCHes
// have it nowhere.
func TestVectorizedPathRuns(t *testing.T) {
	body := []byte(call(`{"s":"Zürich"}`))
	p := getScanner(body, DefaultLimits())
	defer putScanner(p)
	if err := p.begin(); err != nil || p.valid != simdPath {
		t.Fatalf("pooled scanner: begin %v, valid %v, want %v", err, p.valid, simdPath)
	}
	q := &scanner{scalar: true}
	q.reset(body, DefaultLimits())
	if err := q.begin(); err != nil || q.valid {
		t.Fatalf("scalar scanner: begin %v, valid %v", err, q.valid)
	}
	p.reset([]byte(`"a`+"\xff"+`"`), DefaultLimits())
	if ok := p.prevalidate(); ok == simdPath || p.valid {
		t.Fatalf("stage 1 on invalid UTF-8: %v, valid %v (vectorized path %v)", ok, p.valid, simdPath)
	}
}

// TestIndexSpecial: the vectorized search for '"', '\\' and control bytes
// finds the first one a byte loop finds, for every length from 32 to 200,
// every position of one special byte, and random bytes of every value
// around it (0x7F, 0x80 and 0xFF, which are not special, included).
func TestIndexSpecial(t *testing.T) {
	if !simdPath {
		t.Skip("no vectorized path on this machine or build")
	}
	want := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	plain := []byte{' ', '!', '#', '[', ']', 'a', 0x7F, 0x80, 0xBF, 0xC3, 0xFF, '~'}
	special := []byte{'"', '\\', 0x00, 0x01, 0x0A, 0x1F}
	for n := 32; n <= 200; n++ {
		b := make([]byte, n)
		for at := -1; at < n; at++ {
			for i := range b {
				b[i] = plain[rng.IntN(len(plain))]
			}
			if at >= 0 {
				b[at] = special[rng.IntN(len(special))]
				if rng.IntN(2) == 0 && at+1 < n { // a second one after it
					b[at+1+rng.IntN(n-at-1)] = special[rng.IntN(len(special))]
				}
			}
			if got, w := indexSpecialAVX2(b), want(b); got != w {
				t.Fatalf("len %d, special at %d: got %d, want %d (%q)", n, at, got, w, b)
			}
		}
	}
	for range 20000 { // every byte value
		b := make([]byte, 32+rng.IntN(100))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(4) != 0 && b[i] < 0x20 || b[i] == '"' || b[i] == '\\' {
				b[i] |= 0x40
			}
		}
		if got, w := indexSpecialAVX2(b), want(b); got != w {
			t.Fatalf("got %d, want %d (%q)", got, w, b)
		}
	}
}
