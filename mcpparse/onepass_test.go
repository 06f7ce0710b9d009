package mcpparse

import (
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestOnePassDigest(t *testing.T) {
	for _, tt := range []struct {
		give     string
		wantKind ErrorKind // 0: accepted
	}{
		{`{"b":[1,2.50,{"z":null,"a":"\u00e9"}],"a":"x\"y","€":-0,"é":1e2}`, 0},
		{`{"a":1,"a":2}`, ErrDuplicateKey},
		{`{"a":1,"A":2}`, ErrCaseVariantKey},
		{`{"a":0.1000000000000000055511151231257827}`, ErrNonCanonicalNumber},
		{`{"a":"\ud800"}`, ErrInvalidUTF8},
		{`{"a":1} x`, ErrTrailingData},
		{"\"\xff\"", ErrInvalidUTF8},
		{`[0.5,-0.0,0.000001,0.0000001,100.250,123456789012345.6,12345678901234.56,0.1,1.10e2,-12.5000]`, 0},
		{benchArgs(64 << 10), 0},
	} {
		got, err := canonicalDigestOnePass([]byte(tt.give), Limits{})
		want, werr := Canonicalize([]byte(tt.give), Limits{})
		var pe, wpe *ParseError
		switch {
		case tt.wantKind == 0 && (err != nil || werr != nil):
			t.Errorf("%.40s: one pass %v, Canonicalize %v", tt.give, err, werr)
		case tt.wantKind == 0 && got != sha256.Sum256(want):
			t.Errorf("%.40s: digests differ", tt.give)
		case tt.wantKind != 0 && (!errors.As(err, &pe) || !errors.As(werr, &wpe) || pe.Kind != tt.wantKind || wpe.Kind != tt.wantKind):
			t.Errorf("%.40s: one pass %v, Canonicalize %v, want kind %v", tt.give, err, werr, tt.wantKind)
		}
	}
}

// FuzzOnePassDigest: the one-pass prototype accepts exactly what
// Canonicalize accepts, with the same error kind, and hashes the same
// canonical form.
func FuzzOnePassDigest(f *testing.F) {
	f.Add([]byte(`{"b":[1,2.50,{"z":null,"a":"\u00e9"}],"a":"x\"y","€":-0}`))
	f.Add([]byte(benchArgs(2 << 10)))
	f.Add([]byte(`{"a":1,"A":2}`))
	f.Add([]byte(`[0.5,-0.0,0.000001,0.0000001,100.250,123456789012345.6,0.1e1,00.5]`))
	lim := Limits{MaxDepth: 8, MaxKeys: 64, MaxElements: 256, MaxStringLen: 64}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := canonicalDigestOnePass(in, lim)
		want, werr := Canonicalize(in, lim)
		if (err == nil) != (werr == nil) {
			t.Fatalf("one pass: %v; Canonicalize: %v", err, werr)
		}
		if werr != nil {
			var pe, wpe *ParseError
			if !errors.As(err, &pe) || !errors.As(werr, &wpe) || pe.Kind != wpe.Kind {
				t.Fatalf("error kinds differ: one pass %v; Canonicalize %v", err, werr)
			}
			return
		}
		if got != sha256.Sum256(want) {
			t.Fatalf("digests differ; canonical form %s", want)
		}
	})
}

// BenchmarkOnePassDigest: validate + canonicalize + SHA-256 of the 64 KiB
// arguments, by the one-pass prototype and by Canonicalize + SHA-256.
func BenchmarkOnePassDigest(b *testing.B) {
	in := []byte(benchArgs(64 << 10))
	b.Run("onepass", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonicalDigestOnePass(in, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("canonicalize+sha256", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			c, err := Canonicalize(in, Limits{})
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(c)
		}
	})
}

// TestShortDecimalAgreesWithCanonicalize: generated decimals of 1 to 17
// significant digits, with leading and trailing zeros, canonicalize the
// same through the fast path and through ParseFloat and NumberToJSON.
func TestShortDecimalAgreesWithCanonicalize(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	for range 20000 {
		intPart := digits(rng.IntN(16))
		if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
			intPart = "0"
		}
		lit := intPart + "." + strings.Repeat("0", rng.IntN(8)) + digits(1+rng.IntN(16)) + strings.Repeat("0", rng.IntN(3))
		if rng.IntN(2) == 0 {
			lit = "-" + lit
		}
		in := []byte("[" + lit + "]")
		got, err := canonicalDigestOnePass(in, Limits{})
		want, werr := Canonicalize(in, Limits{})
		if (err == nil) != (werr == nil) || (err == nil && got != sha256.Sum256(want)) {
			t.Fatalf("%s: one pass %v, Canonicalize %s %v", lit, err, want, werr)
		}
	}
}
