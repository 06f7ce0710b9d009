package argschema

import (
	"math/big"
	"testing"
)

// FuzzDecimal: decimal's order, integer test and multipleOf agree with
// math/big's exact rationals (the independent oracle) for any two JSON
// number literals, and so do small's (the fast form) whenever parseSmall
// takes the literal (it must read the same value as parseDecimal).
func FuzzDecimal(f *testing.F) {
	for _, p := range [][2]string{{"1", "1.0"}, {"0.1", "0.10000000000000001"}, {"-0", "0"}, {"1e2", "100"}, {"12.25", "0.25"},
		{"9007199254740993", "9007199254740992"}, {"1E-3", "0.001"}, {"-2.5", "0.5"}, {"123456789012345678", "3"}, {"5e-324", "1e308"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, okx := parseDecimal([]byte(a))
		y, oky := parseDecimal([]byte(b))
		if okx != isNumber(a, 9) || oky != isNumber(b, 9) {
			t.Fatalf("parseDecimal(%q) %v, (%q) %v; the grammar says %v, %v", a, okx, b, oky, isNumber(a, 9), isNumber(b, 9))
		}
		ra, oka := ratOf(a)
		rb, okb := ratOf(b)
		if !okx || !oky || !oka || !okb {
			return
		}
		xs, okxs := parseSmall([]byte(a))
		ys, okys := parseSmall([]byte(b))
		for _, c := range []struct {
			lit string
			d   *decimal
			s   small
			ok  bool
		}{{a, &x, xs, okxs}, {b, &y, ys, okys}} {
			if want, ok := c.d.small(); c.ok && (!ok || want != c.s) {
				t.Fatalf("parseSmall(%s) = %+v, want %+v (%v)", c.lit, c.s, want, ok)
			}
		}
		if okxs && okys {
			if got, want := xs.cmp(&ys), ra.Cmp(rb); got != want {
				t.Fatalf("small cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
			if got, want := xs.isInteger(), ra.IsInt(); got != want {
				t.Fatalf("small isInteger(%s) = %v, want %v", a, got, want)
			}
			if rb.Sign() > 0 {
				if m, ok := xs.multipleOf(&ys); ok {
					if want := new(big.Rat).Quo(ra, rb).IsInt(); m != want {
						t.Fatalf("small multipleOf(%s, %s) = %v, want %v", a, b, m, want)
					}
				}
			}
		}
		if got, want := x.cmp(&y), ra.Cmp(rb); got != want {
			t.Fatalf("cmp(%s, %s) = %d, want %d", a, b, got, want)
		}
		if got, want := x.isInteger(), ra.IsInt(); got != want {
			t.Fatalf("isInteger(%s) = %v, want %v", a, got, want)
		}
		if rb.Sign() > 0 {
			if m, ok := x.multipleOf(&y); ok {
				if want := new(big.Rat).Quo(ra, rb).IsInt(); m != want {
					t.Fatalf("multipleOf(%s, %s) = %v, want %v", a, b, m, want)
				}
			}
		}
	})
}

// TestParseSmall: the fast form takes the numbers arguments hold (up to
// 19 significant digits) and leaves longer ones to parseDecimal.
func TestParseSmall(t *testing.T) {
	tests := []struct {
		give string
		want small
		ok   bool
	}{
		{"0", small{}, true},
		{"-0.0e5", small{}, true},
		{"12.25", small{mant: 1225, exp: -2, digits: 4}, true},
		{"-1200", small{mant: 12, exp: 2, digits: 2, neg: true}, true},
		{"0.0050", small{mant: 5, exp: -3, digits: 1}, true},
		{"1E-3", small{mant: 1, exp: -3, digits: 1}, true},
		{"9007199254740993", small{mant: 9007199254740993, digits: 16}, true},
		{"1234567890123456789", small{mant: 1234567890123456789, digits: 19}, true},
		{"12345678901234567890", small{}, false}, // 20 digits
		{"01", small{}, false},
		{"1.", small{}, false},
		{"-", small{}, false},
		{"1e1234567890", small{}, false},
	}
	for _, tt := range tests {
		got, ok := parseSmall([]byte(tt.give))
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("parseSmall(%s) = %+v, %v; want %+v, %v", tt.give, got, ok, tt.want, tt.ok)
		}
	}
}

// ratOf reads s as the RFC 8259 number grammar allows, exactly; false
// for anything else or an exponent over 400 (the oracle's work bound).
func ratOf(s string) (*big.Rat, bool) {
	if !isNumber(s, 3) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// isNumber is the RFC 8259 number grammar with exponents of at most
// expDigits digits and at most 40 digits before the exponent, leading
// zeros of the fraction not counted.
func isNumber(s string, expDigits int) bool {
	i, n := 0, len(s)
	if i < n && s[i] == '-' {
		i++
	}
	start := i
	for i < n && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start || i-start > 1 && s[start] == '0' {
		return false
	}
	sig := i - start
	if i < n && s[i] == '.' {
		i++
		f := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == f {
			return false
		}
		frac := s[f:i]
		if s[start:f-1] == "0" { // 0.000ddd: the zeros are not significant
			for len(frac) > 0 && frac[0] == '0' {
				frac = frac[1:]
			}
			sig = 0
		}
		sig += len(frac)
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		e := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == e || i-e > expDigits {
			return false
		}
	}
	return i == n && sig <= 40
}
