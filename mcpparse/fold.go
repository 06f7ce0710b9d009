package mcpparse

import "unicode"

// Two member names of one object are case variants when either of their
// case-fold keys is equal (scanner.addName computes both):
//
//   - simple case folding as strings.EqualFold and encoding/json's field
//     matching use it (each rune maps to one representative of its
//     unicode.SimpleFold orbit, foldRune), so "K" (U+212A KELVIN SIGN) and
//     "k" and "ſ" (U+017F) and "s" collide;
//   - full Unicode case folding (golang.org/x/text/cases.Fold), so "ß" and
//     "ss" collide as well.
//
// For names of lowercase ASCII both keys are the name itself.

// foldRune maps r to the smallest rune of its simple-folding orbit, with
// ASCII upper case then mapped to lower case so that the ASCII fast path
// agrees with it.
func foldRune(r rune) rune {
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
