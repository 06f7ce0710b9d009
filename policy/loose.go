package policy

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// looseSep is the one character '-', '.' and '_' all become in loose form.
const looseSep = '_'

// loose returns the form deny and ask rules compare in: NFKC, then Unicode
// case folding, then NFKC again (folding can denormalize), with format
// characters and other default-ignorable code points (soft hyphen,
// zero-width space, joiners, variation selectors, BOM) removed and '-',
// '.' and '_' all mapped to '_'. So "ＤＥＬＥＴＥ.Repo", "Delete-repo" and
// "delete_repo" have one loose form. It never fails; invalid UTF-8 bytes
// pass through as U+FFFD.
func loose(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// NFKC is the identity on ASCII, and folding ASCII is lower-casing.
		return strings.Map(looseASCII, s)
	}
	s = norm.NFKC.String(s)
	s = cases.Fold().String(s) // a Caser is stateful: one per call
	s = norm.NFKC.String(s)
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf {
			return looseASCII(r)
		}
		if unicode.Is(unicode.Cf, r) ||
			unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
			unicode.Is(unicode.Variation_Selector, r) {
			return -1
		}
		return r
	}, s)
}

func looseASCII(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + ('a' - 'A')
	case r == '-' || r == '.' || r == '_':
		return looseSep
	}
	return r
}
