package policy

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// looseSep is the one character '-', '.', '_' and the other dashes all
// become in loose form.
const looseSep = '_'

// loose returns the form deny and ask rules compare in: NFKC, then Unicode
// case folding, then NFKC again (folding can denormalize), then each rune
// r mapped to ToLower(ToUpper(r)) (Java's equalsIgnoreCase; this joins
// what case folding leaves apart but other languages' case mappings
// equate: "ı" (U+0131) becomes "i"), with U+0307 COMBINING DOT ABOVE after
// an 'i' dropped (so "İ" (U+0130), whose folding is "i̇", becomes "i"),
// format characters and other default-ignorable code points (soft hyphen,
// zero-width space, joiners, variation selectors, BOM) removed, and '-',
// '.', '_', every dash (category Pd: U+2010 HYPHEN, U+2011, U+2013 EN
// DASH, …) and the minus signs U+2212, U+02D7 and U+2796 all mapped to
// '_'. So "ＤＥＬＥＴＥ.Repo", "Delete-repo", "Delete‐repo",
// "DELETE_REPO" and "delete_repo" have one loose form, and so do
// "wıpe_disk", "WİPE_DISK" and "wipe_disk". Each separator maps to one:
// runs are not collapsed nor ends trimmed, in names and pattern literals
// alike, so "wipe__disk" and "wipe_disk_" are other names than
// "wipe_disk" (a server resolves them as other tools too). It never
// fails; invalid UTF-8 bytes pass through as U+FFFD.
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
	b := make([]byte, 0, len(s))
	prevI := false
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			r = looseASCII(r)
		case r == combiningDotAbove && prevI:
			continue
		case ignorable(r):
			continue
		case isDash(r):
			r = looseSep
		default:
			r = unicode.ToLower(unicode.ToUpper(r))
		}
		prevI = r == 'i'
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// combiningDotAbove is U+0307, which "İ" folds to after an 'i'.
const combiningDotAbove = '\u0307'

// isDash reports whether r is a dash or hyphen (category Pd) or a minus
// sign that reads as one.
func isDash(r rune) bool {
	switch r {
	case '\u2212', '\u02D7', '\u2796': // MINUS SIGN, MODIFIER LETTER MINUS SIGN, HEAVY MINUS SIGN
		return true
	}
	return unicode.Is(unicode.Pd, r)
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
