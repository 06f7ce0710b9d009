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

// looseURI is loose for URIs: percent-encoded octets are decoded first when
// the result is valid UTF-8, so "geheim%C3%A9" and "geheimé" (and
// "%EF%BC%A4ELETE" and "ＤELETE") share one loose form. NormalizeURI has
// already refused encoded '/', '.', '\' and control characters.
func looseURI(s string) string {
	if d, ok := percentDecode(s); ok {
		s = d
	}
	return loose(s)
}

// percentDecode decodes every %XX in s; ok is false when s has none, an
// escape is malformed, or the result is not valid UTF-8.
func percentDecode(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, false
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	if !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}
