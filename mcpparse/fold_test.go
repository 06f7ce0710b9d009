package mcpparse

import (
	"testing"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// TestCaseVariantOtherLanguages: names that Java's equalsIgnoreCase,
// JavaScript's and Python's upper/lower case mappings equate are case
// variants, in small objects (pairwise) and large ones (hash sets), and
// in protocol members.
func TestCaseVariantOtherLanguages(t *testing.T) {
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"dotless i", call(`{"amountMinor":100,"amountMınor":999999}`), ErrCaseVariantKey},
		{"dotless i first", call(`{"amountMınor":1,"amountminor":2}`), ErrCaseVariantKey},
		{"dotless i escaped", call(`{"amountMinor":100,"amountM\u0131nor":999999}`), ErrCaseVariantKey},
		{"dotted capital I", call(`{"admin":1,"ADMİN":2}`), ErrCaseVariantKey},
		{"dotted capital I vs I", call(`{"ADMIN":1,"ADMİN":2}`), ErrCaseVariantKey},
		{"i with combining dot", call(`{"admin":1,"admi\u0307n":2}`), ErrCaseVariantKey},
		{"dotted capital I vs i with combining dot", call(`{"İ":1,"i\u0307":2}`), ErrCaseVariantKey},
		{"dotless and dotted", call(`{"ı":1,"İ":2}`), ErrCaseVariantKey},
		{"dotless i with sharp s", call(`{"ıß":1,"ISS":2}`), ErrCaseVariantKey},
		{"dotless i in large object", call(`{` + manyKeys(40) + `,"amountMinor":1,"amountMınor":2}`), ErrCaseVariantKey},
		{"sharp s upper SS", call(`{"STRASSE":1,"straße":2}`), ErrCaseVariantKey},
		{"ligature fi", call(`{"fi":1,"\ufb01":2}`), ErrCaseVariantKey},
		{"long s upper", call(`{"S":1,"ſ":2}`), ErrCaseVariantKey},
		{"Kelvin upper", call(`{"K":1,"\u212a":2}`), ErrCaseVariantKey},
		{"dotless i onto uri", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"ur\u0131":"x"}}`, ErrCaseVariantKey},
		{"dotted I onto uri", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"URİ":"x"}}`, ErrCaseVariantKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			wantKind(t, err, tt.want)
		})
	}
}

// TestCaseVariantDistinct: names that no common case mapping equates stay
// distinct.
func TestCaseVariantDistinct(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"i and j", call(`{"i":1,"j":2}`)},
		{"dotless i and l", call(`{"ı":1,"l":2}`)},
		{"combining dot after a", call(`{"a":1,"a\u0307":2}`)},
		{"s and ss", call(`{"s":1,"ss":2}`)},
		{"e and é", call(`{"e":1,"é":2}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.give), ParseOptions{}); err != nil {
				t.Fatalf("Parse: %v, want no error", err)
			}
		})
	}
}

// TestFoldKeysCoverCaseMappings checks every code point: its simple and
// full upper, lower and title case mappings (as Go's unicode package and
// x/text/cases give them, which follow UnicodeData.txt and
// SpecialCasing.txt) are case variants of it.
func TestFoldKeysCoverCaseMappings(t *testing.T) {
	up, lo, ti := cases.Upper(language.Und), cases.Lower(language.Und), cases.Title(language.Und)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xD800 <= r && r <= 0xDFFF {
			continue
		}
		s := string(r)
		f1, f2 := foldKeys(s)
		for _, v := range []string{
			string(unicode.ToUpper(r)), string(unicode.ToLower(r)), string(unicode.ToTitle(r)),
			up.String(s), lo.String(s), ti.String(s),
		} {
			g1, g2 := foldKeys(v)
			if g1 != f1 && g2 != f2 {
				t.Errorf("%U %q and its case mapping %q have fold keys %q %q and %q %q", r, s, v, f1, f2, g1, g2)
			}
		}
	}
}
