package mcpparse

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/transform"
)

// Two member names of one object are case variants when either of their
// case-fold keys is equal (scanner.addName computes both):
//
//   - simple case folding as strings.EqualFold and encoding/json's field
//     matching use it (each rune maps to one representative of its
//     unicode.SimpleFold orbit, foldRune), so "K" (U+212A KELVIN SIGN) and
//     "k" and "ſ" (U+017F) and "s" collide;
//   - full Unicode case folding (golang.org/x/text/cases.Fold, foldFull),
//     so "ß", "ẞ", "SS" and "ss" collide as well (JavaScript's and
//     Python's toUpperCase/upper() map "ß" to "SS").
//
// Both keys also equate what Unicode case folding leaves apart but other
// languages' case mappings join (SpecialCasing.txt, UnicodeData.txt):
// "ı" (U+0131 DOTLESS I) upper-cases to "I" in Java, JavaScript and
// Python, and "İ" (U+0130) lower-cases to "i" in Java's
// Character.toLowerCase and to "i̇" (i, U+0307) in String.toLowerCase.
// So ı, İ and "i" followed by U+0307 COMBINING DOT ABOVE all fold to "i".
// Every other code point's simple and full upper, lower and title case
// mappings fold as the code point does (a test checks every rune).
//
// For names of lowercase ASCII both keys are the name itself.

// Code points folded to 'i' beyond Unicode case folding.
const (
	dotlessI       = '\u0131' // LATIN SMALL LETTER DOTLESS I
	dottedCapitalI = '\u0130' // LATIN CAPITAL LETTER I WITH DOT ABOVE
	combiningDot   = '\u0307' // COMBINING DOT ABOVE
)

// foldRune maps r to the smallest rune of its simple-folding orbit, with
// ASCII upper case then mapped to lower case so that the ASCII fast path
// agrees with it, and ı and İ mapped to 'i'.
func foldRune(r rune) rune {
	if r == dotlessI || r == dottedCapitalI {
		return 'i'
	}
	min := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < min {
			min = f
		}
	}
	if 'A' <= min && min <= 'Z' {
		min += 'a' - 'A'
	}
	return min
}

// appendFoldSimple appends the simple case-fold key of key (valid UTF-8)
// to dst: foldRune of each rune, with a U+0307 that follows an 'i' or 'I'
// (or ı, İ) dropped.
func appendFoldSimple(dst, key []byte) []byte {
	prevI := false
	for i := 0; i < len(key); {
		r, n := utf8.DecodeRune(key[i:])
		i += n
		if r == combiningDot && prevI {
			continue
		}
		f := foldRune(r)
		prevI = f == 'i'
		dst = utf8.AppendRune(dst, f)
	}
	return dst
}

// appendFoldFull appends the full case-fold key of key (valid UTF-8) to
// dst: ı and İ mapped to 'i' and a U+0307 after an i dropped (as
// appendFoldSimple does), then full Unicode case folding by c.
func appendFoldFull(dst, key []byte, c *cases.Caser) []byte {
	if hasDotI(key) {
		key = appendFoldI(make([]byte, 0, len(key)), key)
	}
	c.Reset()
	dst, _, _ = transform.Append(c, dst, key)
	return dst
}

// hasDotI reports whether key holds ı, İ or U+0307 (UTF-8 C4 B1, C4 B0,
// CC 87).
func hasDotI(key []byte) bool {
	for i := 0; i+1 < len(key); i++ {
		if (key[i] == 0xC4 && (key[i+1] == 0xB1 || key[i+1] == 0xB0)) || (key[i] == 0xCC && key[i+1] == 0x87) {
			return true
		}
	}
	return false
}

// appendFoldI appends key with ı and İ mapped to 'i' and a U+0307 after
// an 'i' or 'I' dropped.
func appendFoldI(dst, key []byte) []byte {
	prevI := false
	for i := 0; i < len(key); {
		r, n := utf8.DecodeRune(key[i:])
		i += n
		switch {
		case r == combiningDot && prevI:
			continue
		case r == dotlessI || r == dottedCapitalI:
			r = 'i'
		}
		prevI = r == 'i' || r == 'I'
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}
