package mcpparse

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"unicode/utf8"
)

// Canonicalize returns the RFC 8785 (JCS) form of one JSON value, after the
// same strict checks as Parse: size and nesting limits, invalid UTF-8, lone
// surrogates, duplicate and case-variant member names, trailing data, and
// numbers whose exact value differs from their RFC 8785 serialization. No
// member of value is exempt from the number rule (Parse exempts only the
// envelope's "id"). Errors are *ParseError, with Index -1.
//
// Because of the case-variant and number rules, some inputs that RFC 8785
// itself would canonicalize are rejected (an object with both "a" and "A";
// 333333333.33333329, which RFC 8785 rounds to 333333333.3333333).
func Canonicalize(value []byte, lim Limits) ([]byte, error) {
	v, err := parseDocument(value, lim.withDefaults(), false, false)
	if err != nil {
		return nil, err
	}
	return appendCanonical(make([]byte, 0, len(value)), value, &v), nil
}

// Digest returns "sha256:" followed by the lowercase hex SHA-256 of b
// (71 bytes in all).
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	out := make([]byte, 0, len("sha256:")+2*len(sum))
	out = append(out, "sha256:"...)
	out = hex.AppendEncode(out, sum[:])
	return string(out)
}

// appendCanonical appends the RFC 8785 serialization of v (parsed from in)
// to dst. Object members are sorted by the UTF-16 code units of their
// names, in place.
func appendCanonical(dst, in []byte, v *value) []byte {
	switch v.kind {
	case vNull:
		return append(dst, "null"...)
	case vTrue:
		return append(dst, "true"...)
	case vFalse:
		return append(dst, "false"...)
	case vNumber:
		if v.canonText {
			return append(dst, in[v.off:v.end]...)
		}
		return append(dst, v.s...)
	case vString:
		return appendJCSString(dst, v.s)
	case vArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, in, &v.elems[i])
		}
		return append(dst, ']')
	case vObject:
		slices.SortFunc(v.mems, func(a, b member) int { return compareUTF16(a.key, b.key) })
		dst = append(dst, '{')
		for i := range v.mems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJCSString(dst, v.mems[i].key)
			dst = append(dst, ':')
			dst = appendCanonical(dst, in, &v.mems[i].val)
		}
		return append(dst, '}')
	}
	panic("mcpparse: unknown value kind") // unreachable: the parser sets every kind
}

// appendJCSString appends s as an RFC 8785 string: '"' and '\' escaped,
// \b \t \n \f \r for those controls, \u00xx (lowercase hex) for the other
// controls below U+0020, everything else as raw UTF-8. Bytes of s that are
// not UTF-8 (possible only for strings not from the parser) are written as
// U+FFFD.
func appendJCSString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			} else {
				dst = append(dst, c)
			}
		}
		i++
	}
	return append(dst, '"')
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// as RFC 8785 section 3.2.3 sorts member names. UTF-8 byte order equals
// code point order, which differs from UTF-16 order only between U+E000..
// U+FFFF and the supplementary planes (encoded as surrogates D800..DFFF).
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	// Back up to the start of the rune that differs.
	for i > 0 && a[i]&0xC0 == 0x80 {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if (ra >= 0x10000) == (rb >= 0x10000) {
		return int(ra) - int(rb) // same plane kind: code point order is UTF-16 order
	}
	return int(utf16First(ra)) - int(utf16First(rb))
}

// utf16First returns the first UTF-16 code unit of r: r itself in the BMP,
// the high surrogate above it. It never equals a BMP rune of valid UTF-8.
func utf16First(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}
