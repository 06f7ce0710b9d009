package mcpparse

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestCaseVariants: names that a real decoder matches to one another
// (Go's encoding/json by simple case folding; .NET's OrdinalIgnoreCase for
// "ı") are case variants, in small objects (pairwise) and large ones (hash
// sets), and onto protocol members.
func TestCaseVariants(t *testing.T) {
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"ASCII", call(`{"amountMinor":100,"AmountMinor":999999}`), ErrCaseVariantKey},
		{"ASCII escaped", call(`{"amountMinor":100,"\u0041mountMinor":999999}`), ErrCaseVariantKey},
		{"Kelvin sign", call(`{"K":1,"\u212a":2}`), ErrCaseVariantKey},
		{"Kelvin sign lower", call(`{"kind":1,"\u212aind":2}`), ErrCaseVariantKey},
		{"long s", call(`{"S":1,"ſ":2}`), ErrCaseVariantKey},
		{"sharp s and capital sharp s", call(`{"Maße":1,"MAẞE":2}`), ErrCaseVariantKey},
		{"Greek sigmas", call(`{"σ":1,"ς":2}`), ErrCaseVariantKey},
		{"dotless i", call(`{"amountMinor":100,"amountMınor":999999}`), ErrCaseVariantKey},
		{"dotless i first", call(`{"amountMınor":1,"amountminor":2}`), ErrCaseVariantKey},
		{"dotless i escaped", call(`{"amountMinor":100,"amountM\u0131nor":999999}`), ErrCaseVariantKey},
		{"dotless i in large object", call(`{` + manyKeys(40) + `,"amountMinor":1,"amountMınor":2}`), ErrCaseVariantKey},
		{"Kelvin in large object", call(`{` + manyKeys(40) + `,"k":1,"\u212a":2}`), ErrCaseVariantKey},
		{"dotless i onto uri", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"ur\u0131":"x"}}`, ErrCaseVariantKey},
		{"Kelvin onto a protocol member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"tas\u212a":{}}}`, ErrCaseVariantKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			if tt.want == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantKind(t, err, tt.want)
		})
	}
}

// TestCaseVariantDistinct: names that only full case folding or other
// languages' case mappings equate, which no decoder matches to one
// another, stay distinct members.
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
		{"Masse and Maße", call(`{"Masse":1,"Maße":2}`)},
		{"STRASSE and straße", call(`{"STRASSE":1,"straße":2}`)},
		{"file and ligature", call(`{"file":1,"\ufb01le":2}`)},
		{"dotted capital I", call(`{"admin":1,"ADMİN":2}`)},
		{"i with combining dot", call(`{"admin":1,"admi\u0307n":2}`)},
		{"ligature in large object", call(`{` + manyKeys(40) + `,"file":1,"ﬁle":2}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.give), ParseOptions{}); err != nil {
				t.Fatalf("Parse: %v, want no error", err)
			}
		})
	}
}

// TestCaseSensitiveKeys: with ParseOptions.CaseSensitiveKeys, case
// variants are distinct members of arguments (and of any other
// non-protocol object), each in the digest; duplicates stay refused, and so
// does a protocol object's case variant of a protocol member.
func TestCaseSensitiveKeys(t *testing.T) {
	opt := ParseOptions{CaseSensitiveKeys: true}
	tests := []struct {
		name string
		give string
		want ErrorKind // 0: parsed
	}{
		{"ASCII", call(`{"amountMinor":100,"AmountMinor":999999}`), 0},
		{"Kelvin", call(`{"k":1,"\u212a":2}`), 0},
		{"nested", call(`{"a":{"x":1,"X":2}}`), 0},
		{"large object", call(`{` + manyKeys(40) + `,"amountMinor":1,"AmountMinor":2}`), 0},
		{"duplicate", call(`{"amountMinor":100,"amountMinor":999999}`), ErrDuplicateKey},
		{"duplicate in large object", call(`{` + manyKeys(40) + `,"amountMinor":1,"amountMinor":2}`), ErrDuplicateKey},
		{"params member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","Name":"delete_repo","arguments":{}}}`, ErrCaseVariantKey},
		{"envelope member", `{"jsonrpc":"2.0","id":1,"Method":"x","method":"tools/call","params":{"name":"search","arguments":{}}}`, ErrCaseVariantKey},
		{"ref member", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","Type":"ref/resource","name":"p"},"argument":{"name":"a","value":"v"}}}`, ErrCaseVariantKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Parse([]byte(tt.give), opt)
			if tt.want != 0 {
				wantKind(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse([]byte(tt.give), ParseOptions{}); err == nil {
				t.Error("parsed without CaseSensitiveKeys too")
			}
			args := string(b.Messages[0].Arguments())
			if strings.Count(args, ":") < 2 {
				t.Errorf("canonical arguments %s lost a member", args)
			}
		})
	}
}

// TestFoldKeyIsEqualFold checks every code point: two runes have one
// case-fold key exactly when refEqualFold (strings.EqualFold with "ı" as
// "i") equates them, so the key folds as decoders match names, no more
// and no less.
func TestFoldKeyIsEqualFold(t *testing.T) {
	first := map[string]rune{} // fold key → first rune with it
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xD800 <= r && r <= 0xDFFF {
			continue
		}
		key := string(appendFold(nil, []byte(string(r))))
		if f, ok := first[key]; !ok {
			first[key] = r
		} else if !refEqualFold(string(f), string(r)) {
			t.Errorf("%U and %U share the fold key %q but are not EqualFold", f, r, key)
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if k := string(appendFold(nil, utf8.AppendRune(nil, f))); k != key {
				t.Errorf("%U and %U (one SimpleFold orbit) have fold keys %q and %q", r, f, key, k)
			}
		}
	}
	if a, b := string(appendFold(nil, []byte("ı"))), string(appendFold(nil, []byte("I"))); a != b {
		t.Errorf("ı folds to %q, I to %q", a, b)
	}
}
