package mcpparse

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// foldKeys returns two case-fold keys of a member name. Two names are case
// variants when either key is equal:
//
//   - f1 is simple case folding as strings.EqualFold and encoding/json's
//     field matching use it (each rune maps to one representative of its
//     unicode.SimpleFold orbit), so "K" (U+212A KELVIN SIGN) and "k" and
//     "ſ" (U+017F) and "s" collide;
//   - f2 is full Unicode case folding (golang.org/x/text/cases.Fold), so
//     "ß" and "ss" collide as well.
//
// For names of lowercase ASCII both keys are the name itself and nothing is
// allocated.
func foldKeys(s string) (f1, f2 string) {
	ascii, lower := true, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	if ascii {
		if lower {
			return s, s
		}
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		f := string(b)
		return f, f
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = utf8.AppendRune(b, foldRune(r))
	}
	return string(b), cases.Fold().String(s)
}

// foldRune maps r to the smallest rune of its simple-folding orbit, with
// ASCII upper case then mapped to lower case so that the ASCII fast path in
// foldKeys agrees with it.
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
