package mcpparse

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the scanner's strings: UTF-8 validation (runeLen,
// skipRunes, invalidUTF8At), the eight-bytes-at-a-time masks for '"', '\\'
// and control bytes, and scanString with its escape decoding.

// invalidUTF8At returns the offset of the first invalid UTF-8 sequence.
func invalidUTF8At(in []byte) int {
	for i := 0; i < len(in); {
		if in[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(in)
}

// Bit masks for scanning eight string bytes at once.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special has the top bit set of each byte of x (little-endian) that is
// '"', '\\' or below 0x20, and possibly of bytes above the first such one
// (a borrow), never below it.
func special(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	// A byte is zero in q or b, or below 0x20 in x: (v - 0x01..) & ^v & 0x80..
	// finds zero bytes; x - 0x20.. & ^x finds bytes below 0x20 (bytes of
	// 0x80 and above never match, since ^x clears their top bit).
	return ((q-lsb)&^q | (b-lsb)&^b | (x-lsb*0x20)&^x) & msb
}

// hasSpecial reports whether s has a '"', '\\' or control byte.
func hasSpecial(s []byte) bool {
	for _, c := range s {
		if c == '"' || c == '\\' || c < 0x20 {
			return true
		}
	}
	return false
}

// specialMask has the top bit set of each byte of x (little-endian) that
// is '"', '\\', below 0x20 or above 0x7F, and possibly of bytes above the
// first such one (a borrow), never below it: the lowest set bit locates
// the first.
func specialMask(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b | (x - lsb*0x20) | x) & msb
}

// runeLen returns the length of the valid UTF-8 sequence that starts at
// in[i] (a byte above 0x7F), or 0 when it is invalid or truncated: no
// overlong form, no surrogate, nothing above U+10FFFF (RFC 3629).
func runeLen(in []byte, i int) int {
	c := in[i]
	switch {
	case c < 0xC2:
		return 0
	case c < 0xE0:
		if i+1 < len(in) && in[i+1]&0xC0 == 0x80 {
			return 2
		}
	case c < 0xF0:
		if i+2 < len(in) {
			lo, hi := byte(0x80), byte(0xBF)
			if c == 0xE0 {
				lo = 0xA0
			} else if c == 0xED {
				hi = 0x9F
			}
			if b := in[i+1]; b >= lo && b <= hi && in[i+2]&0xC0 == 0x80 {
				return 3
			}
		}
	case c < 0xF5:
		if i+3 < len(in) {
			lo, hi := byte(0x80), byte(0xBF)
			if c == 0xF0 {
				lo = 0x90
			} else if c == 0xF4 {
				hi = 0x8F
			}
			if b := in[i+1]; b >= lo && b <= hi && in[i+2]&0xC0 == 0x80 && in[i+3]&0xC0 == 0x80 {
				return 4
			}
		}
	}
	return 0
}

// skipRunes moves past the valid multi-byte UTF-8 sequences from in[i] on
// and returns where they stop: at an ASCII byte, at the end, or at an
// invalid sequence. Two- and three-byte sequences (Latin, Cyrillic, CJK)
// are matched four bytes at a time.
func skipRunes(in []byte, i int) int {
	for i+4 <= len(in) {
		x := binary.LittleEndian.Uint32(in[i:])
		switch {
		case x&0xC0C0F0 == 0x8080E0: // 1110xxxx 10xxxxxx 10xxxxxx
			if c, b := byte(x), byte(x>>8); c == 0xE0 && b < 0xA0 || c == 0xED && b > 0x9F {
				return i // overlong or surrogate
			}
			i += 3
		case x&0xC0E0 == 0x80C0 && byte(x) >= 0xC2: // 110xxxxx 10xxxxxx
			i += 2
		case byte(x) < 0x80:
			return i
		default:
			n := runeLen(in, i)
			if n == 0 {
				return i
			}
			i += n
		}
	}
	for i < len(in) && in[i] >= 0x80 {
		n := runeLen(in, i)
		if n == 0 {
			return i
		}
		i += n
	}
	return i
}

// scanString scans the string at p.pos (the opening quote) and returns it
// decoded, aliasing the input when it has no escapes (esc false), else
// p.str. It must be UTF-8; control characters must be escaped; a \u
// escape must not leave a lone surrogate; the decoded length is bounded by
// MaxStringLen. ASCII is read eight bytes at a time, other text a
// sequence at a time, each byte once.
func (p *scanner) scanString() (s []byte, esc bool, err *ParseError) {
	return p.scanStringKeep(true)
}

// scanStringKeep is scanString; keep false checks a string with escapes
// without decoding it (s is then nil), for a value that is only written
// out when its source text is already its RFC 8785 form (p.rawJCS).
func (p *scanner) scanStringKeep(keep bool) (s []byte, esc bool, err *ParseError) {
	if p.valid {
		return p.scanValidString(keep)
	}
	start := p.pos
	in := p.in
	i := start + 1
	max := p.lim.MaxStringLen
	for i < len(in) {
		if i+8 <= len(in) {
			m := specialMask(binary.LittleEndian.Uint64(in[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first byte to look at
		}
		if i-start-1 > max {
			return nil, false, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		c := in[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.rawJCS = true
			return in[start+1 : i], false, nil
		case c >= 0x80:
			j := skipRunes(in, i)
			if j == i {
				return nil, false, p.fail(ErrInvalidUTF8, i, "invalid UTF-8")
			}
			i = j
		case c == '\\':
			s, err := p.scanEscaped(start, i, keep)
			return s, true, err
		case c < 0x20:
			return nil, false, p.fail(ErrSyntax, i, "unescaped control character in string")
		default:
			i++
		}
	}
	if len(in)-start-1 > max {
		return nil, false, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
	}
	return nil, false, p.fail(ErrSyntax, len(in), "unterminated string")
}

// scanValidString is scanStringKeep on input that stage 1 found valid
// UTF-8 (p.valid, simd.go): it stops only at '"', '\\' and control
// bytes, and so checks the length limit at fewer points than the scalar
// pass, with the same result: the limit's fault is reported at the
// string's start, whichever byte past the limit finds it.
func (p *scanner) scanValidString(keep bool) (s []byte, esc bool, err *ParseError) {
	start := p.pos
	in := p.in
	i := start + 1
	max := p.lim.MaxStringLen
	for i < len(in) {
		if i+8 <= len(in) {
			m := special(binary.LittleEndian.Uint64(in[i:]))
			if m == 0 {
				// Sixteen plain bytes: a long string, searched 32 bytes
				// a step (AVX2, simd_amd64.s).
				if i += 8; i-start >= 17 && len(in)-i >= 32 {
					i += indexSpecialAVX2(in[i:])
				}
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		if i-start-1 > max {
			return nil, false, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		switch c := in[i]; {
		case c == '"':
			p.pos = i + 1
			p.rawJCS = true
			return in[start+1 : i], false, nil
		case c == '\\':
			s, err := p.scanEscaped(start, i, keep)
			return s, true, err
		case c < 0x20:
			return nil, false, p.fail(ErrSyntax, i, "unescaped control character in string")
		default: // the tail, below eight bytes
			i++
		}
	}
	if len(in)-start-1 > max {
		return nil, false, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
	}
	return nil, false, p.fail(ErrSyntax, len(in), "unterminated string")
}

// scanEscaped continues scanString from the first backslash at i; keep:
// decode into p.str (else only n, the decoded length, is kept, for the
// same limit checks at the same points).
func (p *scanner) scanEscaped(start, i int, keep bool) ([]byte, *ParseError) {
	max := p.lim.MaxStringLen
	in := p.in
	var buf []byte
	if keep {
		buf = append(p.str[:0], in[start+1:i]...)
	}
	n := i - start - 1 // decoded length so far
	raw := true        // every escape so far is the one RFC 8785 writes
	put := func(b ...byte) {
		if keep {
			buf = append(buf, b...)
		}
		n += len(b)
	}
	for i < len(in) {
		if n > max {
			return nil, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		// Copy a run of up to eight plain ASCII bytes at once while it
		// stays within the limit, so the check above sees the same
		// lengths; on input stage 1 found valid (p.valid), non-ASCII
		// bytes too.
		if i+8 <= len(in) {
			x := binary.LittleEndian.Uint64(in[i:])
			var m uint64
			if p.valid {
				m = special(x)
			} else {
				m = specialMask(x)
			}
			if l := bits.TrailingZeros64(m) >> 3; l > 0 && n+l <= max {
				put(in[i : i+l]...)
				i += l
				continue
			}
		}
		c := in[i]
		switch {
		case c == '"':
			p.pos = i + 1
			if keep {
				p.str = buf[:0]
			}
			p.rawJCS = raw
			return buf, nil
		case c >= 0x80 && p.valid:
			// Valid UTF-8 (stage 1), perhaps in the middle of a sequence
			// the run copy above split: byte by byte, near the limit or at
			// the end, checked as below.
			put(c)
			i++
			continue
		case c >= 0x80:
			if j := skipRunes(in, i); j > i && n+j-i <= max {
				put(in[i:j]...)
				i = j
				continue
			}
			r := runeLen(in, i)
			if r == 0 {
				return nil, p.fail(ErrInvalidUTF8, i, "invalid UTF-8")
			}
			for k := range r { // byte by byte near the limit, checked as above
				if k > 0 && n > max {
					return nil, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
				}
				put(in[i+k])
			}
			i += r
			continue
		case c < 0x20:
			return nil, p.fail(ErrSyntax, i, "unescaped control character in string")
		case c != '\\':
			put(c)
			i++
			continue
		}
		if i+1 >= len(in) {
			return nil, p.fail(ErrSyntax, i, "unterminated escape")
		}
		e := in[i+1]
		switch e {
		case '"', '\\':
			put(e)
		case '/':
			put(e)
			raw = false
		case 'b':
			put('\b')
		case 'f':
			put('\f')
		case 'n':
			put('\n')
		case 'r':
			put('\r')
		case 't':
			put('\t')
		case 'u':
			r, ok := hex4(in, i+2)
			if !ok {
				return nil, p.fail(ErrSyntax, i, "invalid \\u escape")
			}
			w := 6
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00: // high surrogate
				r2, ok2 := rune(0), false
				if i+12 <= len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
					r2, ok2 = hex4(in, i+8)
				}
				if !ok2 || r2 < 0xDC00 || r2 > 0xDFFF {
					return nil, p.fail(ErrInvalidUTF8, i, "lone high surrogate in \\u escape")
				}
				r = utf16.DecodeRune(r, r2)
				w = 12
			case utf16.IsSurrogate(r):
				return nil, p.fail(ErrInvalidUTF8, i, "lone low surrogate in \\u escape")
			}
			// RFC 8785 writes \u00xx, lowercase, only for the controls
			// that have no short escape.
			raw = raw && r < 0x20 && r != '\b' && r != '\t' && r != '\n' && r != '\f' && r != '\r' &&
				in[i+2] == '0' && in[i+3] == '0' && (in[i+5] < 'A' || in[i+5] > 'F')
			if keep {
				buf = utf8.AppendRune(buf, r)
			}
			n += utf8.RuneLen(r)
			i += w
			continue
		default:
			return nil, p.fail(ErrSyntax, i, "invalid escape")
		}
		i += 2
	}
	return nil, p.fail(ErrSyntax, len(in), "unterminated string")
}

// hex4 decodes the four hex digits at in[i:i+4].
func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
