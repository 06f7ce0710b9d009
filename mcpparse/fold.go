package mcpparse

import (
	"unicode"
	"unicode/utf8"
)

// Two member names of one object are case variants when their case-fold
// keys (scanner.addName computes them) are equal. The key folds as the
// most lenient decoder that real MCP servers use matches member names, and
// no further:
//
//   - simple case folding as strings.EqualFold and Go's encoding/json
//     field matching use it (each rune maps to one representative of its
//     unicode.SimpleFold orbit, foldRune), so "K" (U+212A KELVIN SIGN), "K"
//     and "k", or "ſ" (U+017F), "S" and "s", or "ß" and "ẞ" collide;
//   - and "ı" (U+0131 DOTLESS I) joins "i" and "I": .NET's
//     StringComparer.OrdinalIgnoreCase (System.Text.Json's case-insensitive
//     property matching) upper-cases it to "I".
//
// Full case folding is not applied: no decoder matches "Maße" to "Masse"
// or "ﬁle" to "file", so such names are distinct members (servers whose
// SDK matches names case-sensitively can have case variants admitted too:
// ParseOptions.CaseSensitiveKeys).
//
// For names of lowercase ASCII the key is the name itself.

// dotlessI is folded to 'i' beyond simple case folding.
const dotlessI = '\u0131' // LATIN SMALL LETTER DOTLESS I

// foldRune maps r to the smallest rune of its simple-folding orbit, with
// ASCII upper case then mapped to lower case so that the ASCII fast path
// agrees with it, and ı mapped to 'i'.
func foldRune(r rune) rune {
	if r == dotlessI {
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

// appendFold appends the case-fold key of key (valid UTF-8) to dst:
// foldRune of each rune.
func appendFold(dst, key []byte) []byte {
	for i := 0; i < len(key); {
		r, n := utf8.DecodeRune(key[i:])
		i += n
		dst = utf8.AppendRune(dst, foldRune(r))
	}
	return dst
}
