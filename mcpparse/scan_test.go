package mcpparse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
)

// nest wraps v in n objects {"a":…}: v sits at depth n+1.
func nest(n int, v string) string {
	return strings.Repeat(`{"a":`, n) + v + strings.Repeat(`}`, n)
}

// siblingsAt is an object at depth d+1 (d wrapping objects) whose members
// x1, x2 and x3 are three sibling objects at depth d+2: first, then
// {mid: …} holding a chain of objects e levels deep (which grows the
// scanner's per-depth shape cache while the sibling objects are open),
// then last.
func siblingsAt(d, e int, first, mid, last string) string {
	return nest(d, `{"x1":`+first+`,"x2":{"`+mid+`":`+nest(e, `1`)+`},"x3":`+last+`}`)
}

// scannerStates returns the scanners a pass can meet: fresh (empty shape
// cache, which every nested object grows) and grown (a pass over the
// deepest input already made room for every depth).
func scannerStates(t *testing.T) map[string]func() *scanner {
	t.Helper()
	deepest := []byte(nest(DefaultLimits().MaxDepth-1, `{"b":1,"a":2}`))
	return map[string]func() *scanner{
		"fresh": func() *scanner { return new(scanner) },
		"grown": func() *scanner {
			p := new(scanner)
			p.reset(deepest, DefaultLimits())
			if _, err := p.canonicalize(false); err != nil {
				t.Fatal(err)
			}
			p.truncate()
			return p
		},
	}
}

// TestSiblingObjectsEveryDepth drives sibling objects at every depth up to
// the limit, with a deeper object between them that grows the shape cache
// (cases-3 E01), on fresh and grown scanners, through Canonicalize and
// through Parse's arguments: a duplicate or case-variant member of the
// last sibling is refused whatever the first sibling's shape, and an
// accepted value's canonical form is the independent RFC 8785 form.
func TestSiblingObjectsEveryDepth(t *testing.T) {
	maxDepth := DefaultLimits().MaxDepth
	tests := []struct {
		name             string
		first, mid, last string
		want             ErrorKind // 0: accepted
	}{
		// E01: the middle object's name overwrites the first one's in a
		// stale shape, which then reads "amountMinor","amountMinor".
		{"duplicate", `{"xxxxxxxxxxx":1,"amountMinor":1}`, "amountMinor", `{"amountMinor":100,"amountMinor":999999}`, ErrDuplicateKey},
		{"duplicate, other middle", `{"xxxxxxxxxxx":1,"amountMinor":1}`, "k", `{"amountMinor":100,"amountMinor":999999}`, ErrDuplicateKey},
		{"duplicate after the shape", `{"xxxxxxxxxxx":1,"amountMinor":1}`, "xxxxxxxxxxx", `{"xxxxxxxxxxx":1,"amountMinor":1,"amountMinor":2}`, ErrDuplicateKey},
		{"duplicate of the shape's first", `{"b":1,"a":2}`, "b", `{"b":1,"a":2,"b":3}`, ErrDuplicateKey},
		{"duplicate of the middle's name", `{"ab":1,"cd":2}`, "cd", `{"cd":1,"cd":2}`, ErrDuplicateKey},
		{"case variant", `{"xxxxxxxxxxx":1,"AmountMinor":1}`, "amountMinor", `{"amountMinor":100,"AmountMinor":9}`, ErrCaseVariantKey},
		{"case variant of the shape", `{"b":1,"a":2}`, "b", `{"b":1,"a":2,"A":3}`, ErrCaseVariantKey},
		{"same shape", `{"b":1,"a":2}`, "b", `{"b":3,"a":4}`, 0},
		{"other shape", `{"xxxxxxxxxxx":1,"amountMinor":1}`, "amountMinor", `{"payee":"p2","amountMinor":100,"currency":"EUR"}`, 0},
		{"longer shape", `{"b":1}`, "b", `{"b":1,"a":2,"c":3}`, 0},
		{"middle's shape", `{"xxxxxxxxxxx":1,"amountMinor":1}`, "amountMinor", `{"amountMinor":{"a":1}}`, 0},
	}
	for state, newScanner := range scannerStates(t) {
		for _, tt := range tests {
			t.Run(state+"/"+tt.name, func(t *testing.T) {
				for d := 0; d+2 < maxDepth; d++ {
					for _, e := range chainDepths(maxDepth - d - 2) {
						in := []byte(siblingsAt(d, e, tt.first, tt.mid, tt.last))
						p := newScanner()
						p.reset(in, DefaultLimits())
						got, cerr := p.canonicalize(false)
						var err error
						if cerr != nil {
							err = cerr
						}
						checkSiblings(t, "Canonicalize", d, e, in, got, err, tt.want)

						if d+3+2+e > maxDepth { // envelope, params, arguments
							continue
						}
						body := []byte(call(siblingsAt(d, e, tt.first, tt.mid, tt.last)))
						p = newScanner()
						b, perr := parseOn(p, body, ParseOptions{})
						var args []byte
						if perr == nil {
							args = b.Messages[0].Arguments()
						}
						checkSiblings(t, "Parse", d, e, in, args, perr, tt.want)
					}
				}
			})
		}
	}
}

// chainDepths returns the chain depths worth trying up to max: every depth
// next to a power of two (where an append reallocates the shape cache) and
// max itself.
func chainDepths(max int) []int {
	var out []int
	for e := 1; e <= max; e++ {
		if e == max || e&(e-1) == 0 || (e-1)&(e-2) == 0 {
			out = append(out, e)
		}
	}
	return out
}

func checkSiblings(t *testing.T, what string, d, e int, in, got []byte, err error, want ErrorKind) {
	t.Helper()
	if want != 0 {
		if err == nil {
			t.Fatalf("%s d=%d e=%d: accepted, want %v", what, d, e, want)
		}
		if pe, ok := err.(*ParseError); !ok || pe.Kind != want {
			t.Fatalf("%s d=%d e=%d: %v, want %v", what, d, e, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s d=%d e=%d: %v", what, d, e, err)
	}
	oracle, oerr := jcsoracle.Transform(in)
	if oerr != nil {
		t.Fatal(oerr)
	}
	if !bytes.Equal(got, oracle) {
		t.Fatalf("%s d=%d e=%d:\n got %s\nwant %s", what, d, e, got, oracle)
	}
}

// TestScannerReuse: a scanner reused after any pass, successful or not,
// parses the next input exactly as a fresh one does.
func TestScannerReuse(t *testing.T) {
	inputs := [][]byte{
		[]byte(call(nest(40, `{"b":1,"a":[{"y":1,"x":2},{"y":1,"x":2}]}`))),
		[]byte(call(`{"b":1,"a":2}`)),
		[]byte(call(`{"a":{"b":1,"a":2},"b":{"b":1,"a":2,"a":3}}`)),
		[]byte(call(`[{"b":1,"a":2},{"b":1,"c":3,"a":2},{"b":1,"a":2}]`)),
		[]byte(call(siblingsAt(0, 58, `{"xxxxxxxxxxx":1,"amountMinor":1}`, "amountMinor", `{"amountMinor":100,"amountMinor":999999}`))),
		[]byte(call(`{"é":1,"e":2}`)),
		[]byte(call(`{"b":1,"a":2`)), // truncated
	}
	reused := new(scanner)
	for round := 0; round < 3; round++ {
		for i, in := range inputs {
			want, werr := parseOn(new(scanner), in, ParseOptions{})
			got, gerr := parseOn(reused, in, ParseOptions{})
			reused.truncate()
			sameError(t, "reused", gerr, werr)
			if gerr == nil && !bytes.Equal(got.Messages[0].Arguments(), want.Messages[0].Arguments()) {
				t.Fatalf("round %d input %d: reused %s, fresh %s", round, i, got.Messages[0].Arguments(), want.Messages[0].Arguments())
			}
		}
	}
}

// TestInvalidUTF8FirstAfterAnyFault: the pass validates UTF-8 only inside
// the strings it reaches, yet invalid UTF-8 anywhere in a body is still
// the error, at the first invalid byte, whatever other fault comes before
// or after it (as when the whole body was checked first).
func TestInvalidUTF8FirstAfterAnyFault(t *testing.T) {
	bad := "\xe2\x82" // a truncated three-byte sequence
	tests := []struct {
		name string
		give string
	}{
		{"after a syntax error", `{"jsonrpc":"2.0",,"x":"` + bad + `"}`},
		{"after trailing data", call(`{}`) + ` x "` + bad},
		{"after a duplicate member", call(`{"a":1,"a":2,"b":"` + bad + `"}`)},
		{"after a case variant", call(`{"a":1,"A":2,"b":"` + bad + `"}`)},
		{"after a non-canonical number", call(`{"n":9007199254740993,"b":"` + bad + `"}`)},
		{"after an unescaped control", call(`{"s":"a` + "\x01" + `","b":"` + bad + `"}`)},
		{"after a lone surrogate escape", call(`{"s":"\ud800","b":"` + bad + `"}`)},
		{"after a string too long", call(`{"s":"` + strings.Repeat("é", DefaultMaxStringLen) + `","b":"` + bad + `"}`)},
		{"after nesting too deep", call(nest(DefaultMaxDepth+1, `1`)) + `"` + bad},
		{"in a name after an error", call(`{"a":1,"a":2,"` + bad + `":3}`)},
		{"outside strings", call(`{"a":1}`) + bad},
		{"inside a long run of CJK", call(`{"s":"` + strings.Repeat("東", 100) + bad + strings.Repeat("東", 100) + `"}`)},
		{"surrogate as raw UTF-8 after CJK", call(`{"s":"東東東` + "\xed\xa0\x80" + `"}`)},
		{"overlong after Cyrillic", call(`{"s":"жжж` + "\xe0\x80\xaf" + `"}`)},
		{"beyond U+10FFFF after emoji", call(`{"s":"😀😀` + "\xf4\x90\x80\x80" + `"}`)},
		{"in an escaped string", call(`{"s":"\n東` + bad + `"}`)},
		{"at the very end of a string", call(`{"s":"东`) + "\xe4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.give)
			want := invalidUTF8At(body)
			if want == len(body) {
				t.Fatal("test body is valid UTF-8")
			}
			for _, batch := range []bool{false, true} {
				_, err := Parse(body, ParseOptions{AllowBatch: batch})
				pe := wantKind(t, err, ErrInvalidUTF8)
				if pe.Offset != int64(want) || pe.Index != -1 {
					t.Errorf("Parse: offset %d index %d, want %d, -1", pe.Offset, pe.Index, want)
				}
			}
			_, err := Canonicalize(body, Limits{})
			if pe := wantKind(t, err, ErrInvalidUTF8); pe.Offset != int64(want) {
				t.Errorf("Canonicalize: offset %d, want %d", pe.Offset, want)
			}
		})
	}
}

// TestSpecialMasks: the word-at-a-time classifiers find the same first
// byte as a byte loop, on random words biased towards the boundary bytes
// (0x1F, 0x20, '"', '\\', 0x7F, 0x80, 0xFF) and their borrows.
func TestSpecialMasks(t *testing.T) {
	edge := []byte{0x00, 0x01, 0x1F, 0x20, 0x21, '"', '#', '\\', ']', 0x7F, 0x80, 0x81, 0xC2, 0xE2, 0xFF, 'a'}
	rng := rand.New(rand.NewPCG(3, 4))
	first := func(w [8]byte, is func(byte) bool) int {
		for i, c := range w {
			if is(c) {
				return i
			}
		}
		return 8
	}
	at := func(m uint64) int { return bits.TrailingZeros64(m) >> 3 }
	for range 200_000 {
		var w [8]byte
		for i := range w {
			if rng.IntN(2) == 0 {
				w[i] = edge[rng.IntN(len(edge))]
			} else {
				w[i] = byte(rng.IntN(256))
			}
		}
		x := binary.LittleEndian.Uint64(w[:])
		low := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
		if got, want := at(special(x)), first(w, low); got != want {
			t.Fatalf("special(% x): first at %d, want %d", w, got, want)
		}
		if got, want := at(specialMask(x)), first(w, func(c byte) bool { return low(c) || c >= 0x80 }); got != want {
			t.Fatalf("specialMask(% x): first at %d, want %d", w, got, want)
		}
	}
}

// TestDigitsEnd: the eight-at-a-time digit run ends where a byte loop's
// does, on random runs of digits followed by any byte, at every alignment
// and near the end of the input.
func TestDigitsEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	edge := []byte{'/', '0', '9', ':', 0x00, 0x7F, 0x80, 0xB0, 0xB9, 0xFF, '.', 'e', '-'}
	for range 100_000 {
		in := make([]byte, rng.IntN(24))
		for i := range in {
			switch rng.IntN(3) {
			case 0, 1:
				in[i] = byte('0' + rng.IntN(10))
			default:
				in[i] = edge[rng.IntN(len(edge))]
			}
		}
		start := 0
		if len(in) > 0 {
			start = rng.IntN(len(in) + 1)
		}
		want := start
		for want < len(in) && in[want] >= '0' && in[want] <= '9' {
			want++
		}
		if got := digitsEnd(in, start); got != want {
			t.Fatalf("digitsEnd(% x, %d) = %d, want %d", in, start, got, want)
		}
	}
}

// TestStringLimitAgainstReference: with a small MaxStringLen, strings of
// ASCII, multi-byte text, escapes (canonical or not), controls, invalid
// UTF-8 and truncation give the tree parser's result, error kind and
// offset: the word- and run-at-a-time paths check the decoded length at
// the same points as its byte loop.
func TestStringLimitAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pieces := []string{"a", "abcdefgh", "é", "東", "😀", "жжжжжж", "東京都渋谷", `\n`, `\"`, `\\`, `\/`, `\u0041`, `\u001f`,
		`\ud83d\ude00`, `\ud800`, "\x01", "\xe2\x82", "\xff", `\`, `\u12`}
	for range 30_000 {
		var sb strings.Builder
		sb.WriteByte('"')
		for range rng.IntN(12) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if rng.IntN(8) > 0 {
			sb.WriteByte('"')
		}
		str := sb.String()
		lim := Limits{MaxStringLen: 1 + rng.IntN(40)}
		for _, doc := range []string{str, `{` + str + `:` + str + `}`, `[` + str + `,1]`} {
			got, err := Canonicalize([]byte(doc), lim)
			want, werr := refCanonicalize([]byte(doc), lim.withDefaults())
			if unterminatedPastLimit(err, werr) {
				continue
			}
			sameError(t, "Canonicalize "+strconv.Quote(doc)+" max "+strconv.Itoa(lim.MaxStringLen), err, werr)
			if !bytes.Equal(got, want) {
				t.Fatalf("%q: got %q, reference %q", doc, got, want)
			}
			body := []byte(call(`{"s":` + doc + `}`))
			_, err = Parse(body, ParseOptions{Limits: lim})
			_, werr = refParse(body, ParseOptions{Limits: lim})
			if !unterminatedPastLimit(err, werr) {
				sameError(t, "Parse "+strconv.Quote(doc), err, werr)
			}
		}
	}
}

// unterminatedPastLimit reports the one place where the scanner and the
// tree parser disagree, as they did before the scanner read strings a word
// at a time: a string that runs to the end of the body with more than
// MaxStringLen bytes, but not more before its last byte, is
// string_too_long to the scanner and an unterminated string to the tree
// parser. Both refuse it.
func unterminatedPastLimit(err, want error) bool {
	var pe, we *ParseError
	return errors.As(err, &pe) && errors.As(want, &we) &&
		pe.Kind == ErrStringTooLong && we.Kind == ErrSyntax && strings.Contains(we.Msg, "unterminated string")
}

// TestShapeKeysAgainstReference: in arrays of objects of one shape, later
// objects spell the names otherwise (escaped, longer, shorter, a raw
// control, a name whose decoded form has a backslash or quote, a case
// variant, a duplicate); Parse and Canonicalize agree with the tree parser
// (the shape's spelling is taken without a scan only when it is exact).
func TestShapeKeysAgainstReference(t *testing.T) {
	firsts := []string{`{"sku":1,"qty":2}`, `{"a\\":1,"b":2}`, `{"a\"":1,"b":2}`, `{"\n":1,"b":2}`, `{"":1,"b":2}`, `{"é":1,"b":2}`}
	laters := []string{`{"sku":1,"qty":2}`, `{"sk\u0075":1,"qty":2}`, `{"skux":1,"qty":2}`, `{"sk":1,"qty":2}`, `{"sku":1,"sku":2}`,
		`{"SKU":1,"qty":2}`, `{"a\\":1,"b":2}`, `{"a\":1,"b":2}`, `{"a\"":1,"b":2}`, "{\"\n\":1,\"b\":2}", `{"\n":1,"b":2}`,
		`{"":1,"b":2}`, `{"é":1,"b":2}`, `{"\u00e9":1,"b":2}`, `{"b":2,"sku":1}`, `{"sku"`, `{"sku":1,"qty"`, `{"a\`}
	for _, f := range firsts {
		for _, l := range laters {
			for _, doc := range []string{`[` + f + `,` + l + `]`, `[` + f + `,` + f + `,` + l + `,` + f + `]`} {
				got, err := Canonicalize([]byte(doc), Limits{})
				want, werr := refCanonicalize([]byte(doc), DefaultLimits())
				sameError(t, "Canonicalize "+doc, err, werr)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: got %s, reference %s", doc, got, want)
				}
				body := []byte(call(`{"items":` + doc + `}`))
				for _, exact := range []bool{false, true} {
					opt := ParseOptions{CaseSensitiveKeys: exact}
					b, err := Parse(body, opt)
					wb, werr := refParse(body, opt)
					sameError(t, "Parse "+doc, err, werr)
					if err == nil {
						sameBody(t, doc, b, wb, exact)
					}
				}
			}
		}
	}
}

func TestEightDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 100_000 {
		n := rng.Uint64N(100_000_000)
		s := []byte(strconv.FormatUint(100_000_000+n, 10)[1:]) // eight digits, leading zeros kept
		if got := eightDigits(s); got != n {
			t.Fatalf("eightDigits(%s) = %d", s, got)
		}
	}
}

// TestSkipRunes: skipRunes stops where a rune-by-rune walk with
// unicode/utf8 stops (at ASCII, at the end, or at the first invalid
// sequence) on random mixes of valid sequences of every length, ASCII,
// and invalid bytes (overlong forms, surrogates, stray continuation
// bytes, truncated sequences), at every start offset.
func TestSkipRunes(t *testing.T) {
	pieces := []string{"ж", "é", "東", "😀", "ऩ", "\uFFFF", "\U0010FFFF", "a", " ",
		"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xED\xBF\xBF", "\xF0\x80\x80\x80",
		"\xF4\x90\x80\x80", "\x80", "\xBF", "\xE2\x82", "\xF0\x9F\x98", "\xFF"}
	rng := rand.New(rand.NewPCG(9, 9))
	ref := func(in []byte, i int) int {
		for i < len(in) && in[i] >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return i
	}
	for range 20000 {
		var b []byte
		for range rng.IntN(24) {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(4) > 0 { // mostly valid, often the same script
				p = pieces[rng.IntN(5)]
			}
			b = append(b, p...)
		}
		for i := range b {
			if b[i] < utf8.RuneSelf {
				continue
			}
			if got, want := skipRunes(b, i), ref(b, i); got != want {
				t.Fatalf("skipRunes(%q, %d) = %d, want %d", b, i, got, want)
			}
		}
	}
}
