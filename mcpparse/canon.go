package mcpparse

import (
	"crypto/sha256"
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
	out, err := canonicalize(value, lim.withDefaults(), false)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// canonicalize is Canonicalize; lenient switches off the checks beyond
// RFC 8785 (tests only). The result is a fresh slice.
func canonicalize(value []byte, lim Limits, lenient bool) ([]byte, *ParseError) {
	p := getScanner(value, lim)
	defer putScanner(p)
	return p.canonicalize(lenient)
}

// canonicalize is canonicalize on p, readied by reset for the value.
func (p *scanner) canonicalize(lenient bool) ([]byte, *ParseError) {
	p.lenient = lenient
	if err := p.begin(); err != nil {
		return nil, err
	}
	p.out = p.out[:0]
	if err := p.value(true); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(p.out)), p.out...), nil
}

// Digest returns "sha256:" followed by the lowercase hex SHA-256 of b
// (71 bytes in all).
func Digest(b []byte) string {
	return digestOf(sha256.Sum256(b))
}

// AppendJCSString appends s as an RFC 8785 string (section 3.2.2.2): '"'
// and '\' escaped, \b \t \n \f \r for those controls, \u00xx (lowercase
// hex) for the other controls below U+0020, everything else as raw UTF-8.
// Bytes of s that are not UTF-8 are written as U+FFFD, so such strings may
// collide; strings from Parse are always UTF-8.
func AppendJCSString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, s[last:i]...)
				dst = append(dst, "\uFFFD"...)
				last = i + 1
			}
			i += n
			continue
		}
		if c < 0x20 || c == '"' || c == '\\' {
			dst = append(dst, s[last:i]...)
			dst = appendJCSEscaped(dst, []byte{c})
			dst = dst[:len(dst)-1] // appendJCSEscaped closes the string
			last = i + 1
		}
		i++
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}

// compareUTF16 orders two valid UTF-8 names by their UTF-16 code units, as
// RFC 8785 section 3.2.3 sorts member names. UTF-8 byte order is code point
// order, which differs from UTF-16 order only between U+E000..U+FFFF (lead
// bytes EE, EF) and the supplementary planes (lead bytes F0..F4, surrogates
// D800..DBFF in UTF-16): where the first differing bytes are such lead
// bytes, the supplementary rune sorts first. A differing continuation byte
// follows equal lead bytes, so byte order holds there.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	ca, cb := a[i], b[i]
	if ca >= 0xEE && cb >= 0xEE && (ca >= 0xF0) != (cb >= 0xF0) {
		if ca >= 0xF0 {
			return -1
		}
		return 1
	}
	return int(ca) - int(cb)
}
