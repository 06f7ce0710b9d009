// Package jsonscan walks JSON text (RFC 8259) without building anything:
// where a value ends, the members of an object, the elements of an array,
// and what a string literal decodes to. It is the one walker of the code
// that reads JSON a strict parser has already validated (list results and
// params after mcpparse.Parse in internal/listfilter and the decider,
// arguments in mcpparse's Message.Arg and internal/argschema's fast path,
// JOSE headers and JWT claims after json.Valid in internal/bearer) or that
// must read untrusted bytes leniently but safely (mcpparse.PeekEnvelope).
//
// It is not a validator. It finds structure by quotes, backslashes,
// brackets and the bytes that end a literal: brackets are counted, not
// matched by kind; a literal (number, true, false, null) is any non-empty
// run of bytes up to , } ] or white space, unchecked; strings are not
// checked for control characters or UTF-8. On JSON that json.Valid accepts
// every answer is exact. On any other input nothing panics, no offset
// returned lies outside the input, and what cannot be walked is reported:
// -1 from Skip, String and Iter.End, false from Iter.Next.
//
// Offsets are byte offsets into the slice given; the end of a value or a
// string is the offset just past its last byte. Nothing allocates except
// AppendUnquote growing dst and Unquote's result.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// isSpace marks JSON white space (RFC 8259 section 2); stop the bytes a
// literal ends at (, } ] and white space).
var isSpace, stop [256]bool

func init() {
	for _, c := range []byte(" \t\n\r") {
		isSpace[c], stop[c] = true, true
	}
	for _, c := range []byte(",}]") {
		stop[c] = true
	}
}

// SkipSpace returns the offset of the first byte at or after i that is not
// JSON white space, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace[b[i]] {
		i++
	}
	return i
}

// String returns the end of the string literal whose opening quote is at
// b[i]: the offset just past its closing quote. A backslash escapes the
// byte after it, whatever it is. It returns -1 when b[i] is not a quote or
// the string does not close.
func String(b []byte, i int) int {
	if uint(i) >= uint(len(b)) || b[i] != '"' {
		return -1
	}
	return stringEnd(b, i)
}

// Bytes repeated in each of a word's 8 lanes.
const (
	lanes01    = 0x0101010101010101
	lanes80    = 0x8080808080808080
	lanesQuote = '"' * lanes01
	lanesSlash = '\\' * lanes01
)

// stringEnd is String for b[i] == '"'. It reads the first 16 bytes 8 at a
// time (most strings are short: names, small values), then looks for
// quotes with bytes.IndexByte, which is faster on long strings but costs
// a call.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for n := 0; n < 2 && j+8 <= len(b); n++ {
		x := binary.LittleEndian.Uint64(b[j:])
		// The lowest lane flagged holds a quote or a backslash (lanes
		// above it may be flagged wrongly, never below).
		if m := zeroLanes(x^lanesQuote) | zeroLanes(x^lanesSlash); m != 0 {
			if k := j + bits.TrailingZeros64(m)>>3; b[k] == '"' {
				return k + 1
			}
			break // an escape: the parity rule below reads it
		}
		j += 8
	}
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		// The quote is escaped when an odd run of backslashes precedes
		// it: the byte before the run is not a backslash, so the run
		// starts where no escape is pending and its backslashes pair
		// up, the last, when odd, escaping this quote. (So it holds for
		// a quote found from any offset past the opening one.)
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// zeroLanes has the high bit set in the lowest lane of x that is zero
// (and possibly in lanes above it; never below).
func zeroLanes(x uint64) uint64 { return (x - lanes01) &^ x & lanes80 }

// Skip returns the end of the value starting at b[i] (no white space
// before it): a string (String), an object or array up to the bracket
// that brings the count of open brackets back to zero (strings skipped),
// or a literal, the non-empty run of bytes up to the next , } ] or white
// space. It returns -1 when i is out of range, the string or container
// does not close, or the literal is empty (b[i] is , } ] or white space).
func Skip(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return String(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				// stringEnd's first word inline: most strings in a
				// container are short names and values.
				if j+9 <= len(b) {
					x := binary.LittleEndian.Uint64(b[j+1:])
					if m := zeroLanes(x^lanesQuote) | zeroLanes(x^lanesSlash); m != 0 {
						if k := j + 1 + bits.TrailingZeros64(m)>>3; b[k] == '"' {
							j = k
							continue
						}
					}
				}
				if j = stringEnd(b, j) - 1; j < 0 {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !stop[b[j]] {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Iter walks the members of an object (Members) or the elements of an
// array (Elements), one per Next:
//
//	it := jsonscan.Members(b, i)
//	for it.Next() {
//		name, value := it.Name(), it.Value()
//	}
//	if it.End() < 0 {
//		// not an object that closes
//	}
//
// It checks the punctuation it steps over (the ':' after a name, the ','
// between members, that a name is a string) and stops at the first
// byte that does not fit, with End -1. A value is skipped only when Next
// moves past it, unless Value or ValueEnd asked for it first or the caller
// walked it and said where it ends (SetValueEnd).
type Iter struct {
	b                []byte
	close            byte // '}' or ']'
	started          bool // Next has checked the opening bracket
	nameOff, nameEnd int
	valOff, valEnd   int // valEnd -1: not skipped yet; before Next, the opening bracket
	end              int // 0 while walking; past the close when done; -1 malformed
}

// Members returns an Iter over the members of the object whose '{' is at
// b[i]. When b[i] is not '{' (or i is out of range) its first Next
// returns false, End -1.
func Members(b []byte, i int) Iter { return Iter{b: b, close: '}', valEnd: i} }

// Elements returns an Iter over the elements of the array whose '[' is at
// b[i]. When b[i] is not '[' (or i is out of range) its first Next
// returns false, End -1.
func Elements(b []byte, i int) Iter { return Iter{b: b, close: ']', valEnd: i} }

// Next moves to the next member or element and reports whether there is
// one. After false, End says how the walk ended.
func (it *Iter) Next() bool {
	if it.end != 0 {
		return false
	}
	b := it.b
	i := it.valEnd
	first := !it.started
	if first {
		// '{' and '[' are '}' and ']' less 2.
		if it.started = true; uint(i) >= uint(len(b)) || b[i] != it.close-2 {
			return it.fail()
		}
		i++
	} else if i < 0 {
		if i = Skip(b, it.valOff); i < 0 {
			return it.fail()
		}
	}
	if i = SkipSpace(b, i); i >= len(b) {
		return it.fail()
	}
	switch {
	case b[i] == it.close:
		it.end = i + 1
		return false
	case first:
	case b[i] != ',':
		return it.fail()
	default:
		if i = SkipSpace(b, i+1); i >= len(b) {
			return it.fail()
		}
	}
	if it.close == '}' {
		if b[i] != '"' {
			return it.fail()
		}
		e := stringEnd(b, i)
		if e < 0 {
			return it.fail()
		}
		it.nameOff, it.nameEnd = i, e
		if i = SkipSpace(b, e); i >= len(b) || b[i] != ':' {
			return it.fail()
		}
		if i = SkipSpace(b, i+1); i >= len(b) {
			return it.fail()
		}
	}
	it.valOff, it.valEnd = i, -1
	return true
}

func (it *Iter) fail() bool {
	it.end = -1
	return false
}

// Name returns the current member's name as written: the string literal,
// quotes included, escapes not decoded (Equal, EqualFold and Unquote read
// it). It is nil for an array's element.
func (it *Iter) Name() []byte {
	if it.close != '}' || it.nameEnd == 0 {
		return nil
	}
	return it.b[it.nameOff:it.nameEnd]
}

// NameOff returns the offset of the current member name's opening quote.
func (it *Iter) NameOff() int { return it.nameOff }

// ValueOff returns the offset of the current value's first byte.
func (it *Iter) ValueOff() int { return it.valOff }

// ValueEnd returns the end of the current value (Skip), -1 when it cannot
// be skipped.
func (it *Iter) ValueEnd() int {
	if it.valEnd < 0 {
		it.valEnd = Skip(it.b, it.valOff)
	}
	return it.valEnd
}

// Value returns the current value as written, nil when it cannot be
// skipped.
func (it *Iter) Value() []byte {
	if e := it.ValueEnd(); e >= 0 {
		return it.b[it.valOff:e]
	}
	return nil
}

// SetValueEnd tells the Iter that the current value ends at end, for a
// caller that walked the value itself (say, an array with Elements): Next
// then resumes there instead of skipping the value again. end must be the
// value's end (ValueEnd); an end the caller could not find is -1, which
// makes the next Next fail.
func (it *Iter) SetValueEnd(end int) {
	if end < 0 {
		it.end = -1
		return
	}
	it.valEnd = end
}

// End returns, once Next has returned false, the offset just past the
// closing '}' or ']', or -1 when the walk found input it could not walk
// (or Members or Elements were not given an object or array). It is 0
// until then.
func (it *Iter) End() int { return it.end }

// Member returns the value, as written, of the last member of the object
// whose '{' is at b[i] whose decoded name is name (Equal), or under
// Unicode simple case folding (EqualFold) when fold is set; false when
// there is none. It reads JSON a parser has validated: on other input it
// answers from the members it could walk.
func Member(b []byte, i int, name string, fold bool) ([]byte, bool) {
	var out []byte
	found := false
	it := Members(b, i)
	for it.Next() {
		lit := it.Name()
		if fold && EqualFold(lit, name) || !fold && Equal(lit, name) {
			if v := it.Value(); v != nil {
				out, found = v, true
			}
		}
	}
	return out, found
}

// Equal reports whether the string literal lit (quotes included, as
// written in JSON) decodes to s as encoding/json decodes it: escapes
// resolved, a lone surrogate escape and each byte of invalid UTF-8 read as
// U+FFFD. It compares while decoding and never allocates; false when lit
// is not a string literal.
func Equal(lit []byte, s string) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	q := lit[1 : len(lit)-1]
	if plain(q) {
		return string(q) == s
	}
	k := 0
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(q); {
		var out []byte
		out, i = nextRune(q, i, &buf)
		if out == nil {
			return false
		}
		if k+len(out) > len(s) || string(out) != s[k:k+len(out)] {
			return false
		}
		k += len(out)
	}
	return k == len(s)
}

// EqualFold reports whether the string literal lit decodes (as Equal) to a
// string equal to s under Unicode simple case folding (bytes.EqualFold,
// as encoding/json matches member names to struct fields: "toolſ" is
// "tools"). It allocates only for a literal with escapes longer than 64
// bytes decoded.
func EqualFold(lit []byte, s string) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	q := lit[1 : len(lit)-1]
	if plain(q) && plain(unsafeBytes(s)) {
		// ASCII folds to ASCII only: compare lengths, then letters.
		if len(q) != len(s) {
			return false
		}
		for i := range len(q) {
			c, d := q[i], s[i]
			if c != d && (c|0x20 != d|0x20 || c|0x20 < 'a' || c|0x20 > 'z') {
				return false
			}
		}
		return true
	}
	if bytes.IndexByte(q, '\\') >= 0 {
		var buf [64]byte
		d, ok := AppendUnquote(buf[:0], lit)
		if !ok {
			return false
		}
		q = d
	}
	return bytes.EqualFold(q, []byte(s))
}

// plain reports whether q is ASCII without a backslash: a string
// literal's content that is its own decoding, and that folds (under
// Unicode simple folding) only to ASCII.
func plain(q []byte) bool {
	for _, c := range q {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// unsafeBytes is s as a byte slice, for reading only.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Unquote decodes the string literal lit (quotes included) as
// encoding/json does (see Equal); false when lit is not a string literal
// or holds an escape encoding/json refuses.
func Unquote(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	q := lit[1 : len(lit)-1]
	if plain(q) || bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q), true
	}
	var buf [64]byte
	d, ok := AppendUnquote(buf[:0], lit)
	return string(d), ok
}

// AppendUnquote appends what the string literal lit decodes to (see
// Unquote) to dst; false, and dst as given, when lit is not a string
// literal or holds an escape encoding/json refuses.
func AppendUnquote(dst, lit []byte) ([]byte, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return dst, false
	}
	q := lit[1 : len(lit)-1]
	n := len(dst)
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(q); {
		var out []byte
		out, i = nextRune(q, i, &buf)
		if out == nil {
			return dst[:n], false
		}
		dst = append(dst, out...)
	}
	return dst, true
}

// nextRune decodes the character at q[i] of a string literal's content
// as encoding/json does: an escape, a byte of ASCII, a rune of UTF-8, or
// U+FFFD for a byte of invalid UTF-8 or a lone surrogate escape. It
// returns its UTF-8 (in q or buf) and the offset after it; nil for an
// escape encoding/json refuses and for an unescaped quote or control
// byte, which no string literal holds.
func nextRune(q []byte, i int, buf *[utf8.UTFMax]byte) ([]byte, int) {
	switch c := q[i]; {
	case c == '\\':
		if i+1 >= len(q) {
			return nil, i
		}
		if q[i+1] != 'u' {
			e := bytes.IndexByte([]byte(`"\/bfnrt`), q[i+1])
			if e < 0 {
				return nil, i
			}
			buf[0] = "\"\\/\b\f\n\r\t"[e]
			return buf[:1], i + 2
		}
		r := hex4(q, i+2)
		if r < 0 {
			return nil, i
		}
		i += 6
		if utf16.IsSurrogate(r) {
			if r2 := hex4esc(q, i); r2 >= 0 {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					return buf[:utf8.EncodeRune(buf[:], d)], i + 6
				}
			}
			r = utf8.RuneError
		}
		return buf[:utf8.EncodeRune(buf[:], r)], i
	case c == '"' || c < 0x20:
		return nil, i
	case c < utf8.RuneSelf:
		return q[i : i+1], i + 1
	}
	r, size := utf8.DecodeRune(q[i:])
	if r == utf8.RuneError && size == 1 {
		return buf[:utf8.EncodeRune(buf[:], r)], i + 1
	}
	return q[i : i+size], i + size
}

// hex4 is the value of the four hex digits at q[i:], -1 when they are not.
func hex4(q []byte, i int) rune {
	if i+4 > len(q) {
		return -1
	}
	var r rune
	for _, c := range q[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// hex4esc is hex4 of a \uXXXX escape at q[i:], -1 when there is none.
func hex4esc(q []byte, i int) rune {
	if i+1 >= len(q) || q[i] != '\\' || q[i+1] != 'u' {
		return -1
	}
	return hex4(q, i+2)
}
