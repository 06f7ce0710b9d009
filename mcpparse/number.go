package mcpparse

import (
	"encoding/binary"
	"math/bits"
	"strconv"

	"github.com/gowebpki/jcs"
)

// This file holds the scanner's numbers: the RFC 8259 grammar, the number
// rule (a literal's exact value must be that of its RFC 8785 form), the
// SWAR digit reading, and the ES6 layout RFC 8785 prints. The slow path's
// Eisel-Lemire and shortest-digits algorithms are in float.go.

// number scans a number by the RFC 8259 grammar
//
//	-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
//
// and, unless exempt, rejects it when its exact decimal value differs from
// the value of its RFC 8785 serialization; w: append that serialization.
// The one pass over the literal also reads its significant digits into an
// integer (decimal), so that the usual number, already in its RFC 8785
// form, is copied as it is, and the others are compared as integers.
func (p *scanner) number(exempt, w bool) *ParseError {
	in := p.in
	off := p.pos
	i := off
	var d decimal
	if in[i] == '-' {
		d.neg = true
		i++
	}
	if i >= len(in) || in[i] < '0' || in[i] > '9' {
		return p.fail(ErrSyntax, i, "invalid number")
	}
	intStart := i
	intDigits := 0 // digits of the integer part, unless it is "0"
	if in[i] == '0' {
		i++
	} else {
		j := digitsEnd(in, i)
		intDigits, i = j-i, j
	}
	intEnd := i
	fracEnd := i
	fracSig := i // the fraction's digits from its first significant one (after lead zeros)
	lead := 0    // fraction zeros before the first significant digit
	if i < len(in) && in[i] == '.' {
		i++
		j := digitsEnd(in, i)
		if j == i {
			return p.fail(ErrSyntax, i, "invalid number: no digits after '.'")
		}
		a := i
		if intDigits == 0 {
			for a < j && in[a] == '0' {
				a++
			}
			lead = a - i
		}
		i, fracEnd, fracSig = j, j, a
	}
	expOff := i
	exp, bigExp := 0, false
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		negExp := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			negExp = in[i] == '-'
			i++
		}
		s := i
		for ; i < len(in) && in[i] >= '0' && in[i] <= '9'; i++ {
			if exp = exp*10 + int(in[i]-'0'); exp > 1000 {
				exp, bigExp = 1000, true
			}
		}
		if i == s {
			return p.fail(ErrSyntax, i, "invalid number: no exponent digits")
		}
		if negExp {
			exp = -exp
		}
	}
	p.pos = i
	lit := in[off:i]
	if exempt {
		return nil // only used as an id, byte for byte
	}
	if expOff == i {
		if fracEnd == intEnd {
			if nsig := intDigits; nsig <= exactDigits || nsig == 16 && string(in[intEnd-16:intEnd]) <= "9007199254740992" {
				// Integers up to 2^53 are exact doubles and ES6 prints them
				// unchanged; only "-0" becomes "0".
				if w {
					if nsig == 0 {
						p.out = append(p.out, '0')
					} else {
						p.out = append(p.out, lit...)
					}
				}
				return nil
			}
		} else if frac := fracEnd - intEnd - 1; in[fracEnd-1] != '0' && (intDigits > 0 && intDigits+frac <= exactDigits || intDigits == 0 && frac-lead <= exactDigits && lead < 6) {
			// A decimal of at most 15 significant digits, the last of its
			// fraction not zero, no exponent, and at least 1e-6: as below
			// (its value is that of its RFC 8785 form), and already laid
			// out as ES6 prints it (es6Layout), so copied as it is.
			if w {
				p.out = append(p.out, lit...)
			}
			return nil
		}
	}
	// The significant digits, read only now: the usual integer above
	// needs none of them.
	var acc digitAcc
	if intDigits > 0 {
		acc.add(in, intStart, intEnd)
	}
	if fracEnd > intEnd {
		acc.add(in, fracSig, fracEnd)
	}
	if acc.m == 0 && !acc.over { // zero: its RFC 8785 form is 0
		if w {
			p.out = append(p.out, '0')
		}
		return nil
	}
	d.m, d.k = acc.trim()
	d.n = intDigits - lead + exp
	ok := !acc.over && d.k <= maxDigits && !bigExp
	if ok && d.k <= exactDigits && d.n > -290 && d.n < 290 {
		// With at most 15 significant digits (DBL_DIG) in that range, the
		// shortest decimal that round-trips the nearest double is lit's own
		// digits: lit is exactly the value of its RFC 8785 form, and only
		// the layout of the digits can change.
		if w {
			p.out = d.appendCanonical(p.out, lit, intEnd-off, fracEnd-off, expOff-off, lead)
		}
		return nil
	}
	if p.lenient {
		return p.numberLenient(lit, off, w)
	}
	f, exact := 0.0, false
	if ok {
		if f, exact = d.float(); !exact {
			f, exact = eiselLemire(d.m, d.n-d.k, d.neg)
		}
	}
	if !exact {
		var err error
		if f, err = strconv.ParseFloat(string(lit), 64); err != nil { // out of range: ±Inf has no JSON form
			return p.fail(ErrNonCanonicalNumber, off, "number out of the IEEE 754 double range")
		}
	}
	// The RFC 8785 form of f has the shortest digits that round-trip f
	// (at most 17). lit denotes exactly that value only if it has the same
	// digits and exponent; a literal of more than 17 significant digits,
	// or one that rounded to zero, never does.
	var s decimal
	s.shortest(f)
	if !ok || d != s {
		return p.fail(ErrNonCanonicalNumber, off, "number is not exactly representable as an IEEE 754 double")
	}
	if w { // d is s: lit has its digits
		p.out = d.appendCanonical(p.out, lit, intEnd-off, fracEnd-off, expOff-off, lead)
	}
	return nil
}

// numberLenient is number's path for the RFC 8785 test vectors (lenient):
// any literal in the double range, written as RFC 8785 prints its nearest
// double.
func (p *scanner) numberLenient(lit []byte, off int, w bool) *ParseError {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil { // out of range: ±Inf has no JSON form
		return p.fail(ErrNonCanonicalNumber, off, "number out of the IEEE 754 double range")
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return p.fail(ErrNonCanonicalNumber, off, "number has no RFC 8785 form")
	}
	if w {
		p.out = append(p.out, text...)
	}
	return nil
}

// exactDigits is DBL_DIG: every decimal of at most 15 significant digits
// (within the normal range) survives a round trip through a double.
const exactDigits = 15

// maxDigits is the most significant digits the shortest round-trip form
// of a double has.
const maxDigits = 17

// decimal is a number literal of at most 17 significant digits (the most a
// shortest round-trip form of a double has), as ±0.d₁d₂…d_k × 10^n
// (ES6 Number::toString's s, k and n), the digits as the integer m.
type decimal struct {
	neg bool
	m   uint64 // the k significant digits, the last non-zero; 0 for zero
	k   int
	n   int
}

// digitAcc reads the significant digits of a literal, run by run: the
// first 19 into m (trailing zeros included), over when a non-zero digit
// lies past them.
type digitAcc struct {
	m    uint64
	nsig int // significant digits so far (m holds min(nsig, 19) of them)
	over bool
}

// accDigits is how many decimal digits a uint64 always holds.
const accDigits = 19

// add appends the digits in[a:b] (the first a significant one, unless
// nsig is 0 and in[a] is the integer part's first digit), eight at a time.
func (acc *digitAcc) add(in []byte, a, b int) {
	n := acc.nsig
	acc.nsig += b - a
	m := acc.m
	if l := b - a; l <= 8 && a+8 <= len(in) && n+l <= accDigits {
		// The usual run: one load, the bytes past it shifted out (they
		// read as leading zeros).
		x := binary.LittleEndian.Uint64(in[a:]) << (64 - 8*l)
		acc.m = m*pow10u[l] + eightDigitsWord(x)
		return
	}
	for ; a+8 <= b && n+8 <= accDigits; a, n = a+8, n+8 {
		m = m*1e8 + eightDigits(in[a:])
	}
	if l := min(b-a, accDigits-n); l > 0 && l < 8 && a+8 <= len(in) {
		// The rest of the run (or of the 19 digits), as above: one load.
		x := binary.LittleEndian.Uint64(in[a:]) << (64 - 8*l)
		m = m*pow10u[l] + eightDigitsWord(x)
		a, n = a+l, n+l
	}
	for ; a < b && n < accDigits; a, n = a+1, n+1 {
		m = m*10 + uint64(in[a]-'0')
	}
	acc.m = m
	for ; a < b; a++ { // past 19 digits: only zeros keep the value exact
		if in[a] != '0' {
			acc.over = true
			return
		}
	}
}

// trim returns m without its trailing zeros and its digit count (for
// nsig > 19, over false, the dropped digits were zeros).
func (acc *digitAcc) trim() (m uint64, k int) {
	if acc.m%10 != 0 {
		return acc.m, min(acc.nsig, accDigits)
	}
	m, z := trimZeros(acc.m)
	return m, min(acc.nsig, accDigits) - z
}

// digitsEnd returns the end of the run of ASCII digits at in[i:], eight
// bytes at a time.
func digitsEnd(in []byte, i int) int {
	for i+8 <= len(in) {
		x := binary.LittleEndian.Uint64(in[i:])
		t := x &^ msb
		// Top bit of each byte that is above '9' (t + 0x46 > 0x7F), below
		// '0' (0xAF - t > 0x7F) or not ASCII; no byte carries or borrows
		// into the next, since t <= 0x7F.
		m := ((t + lsb*0x46) | (lsb*0xAF - t) | x) & msb
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(in) && in[i] >= '0' && in[i] <= '9' {
		i++
	}
	return i
}

// eightDigits returns the value of the eight ASCII digits b[:8], the
// first the most significant, with three multiplications (SWAR).
func eightDigits(b []byte) uint64 { return eightDigitsWord(binary.LittleEndian.Uint64(b)) }

// eightDigitsWord is eightDigits of the bytes of v, little-endian; a zero
// byte reads as the digit 0.
func eightDigitsWord(v uint64) uint64 {
	v = (v & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
	v = (v & 0x00FF00FF00FF00FF) * 6553601 >> 16
	return (v & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
}

// pow10f are the powers of ten that doubles hold exactly.
var pow10f = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float returns the double nearest d when it can be had exactly with one
// IEEE 754 operation (Clinger's fast path, as strconv takes it: digits
// below 2^53 and a power of ten of at most 22); exact false otherwise.
func (d *decimal) float() (f float64, exact bool) {
	e := d.n - d.k
	if d.m > 1<<53 || e < -22 || e > 22 {
		return 0, false
	}
	f = float64(d.m)
	if e < 0 {
		f /= pow10f[-e]
	} else {
		f *= pow10f[e]
	}
	if d.neg {
		f = -f
	}
	return f, true
}

// shortest sets d to the shortest decimal that round-trips f (finite,
// nonzero or zero), as strconv and RFC 8785 choose it.
func (d *decimal) shortest(f float64) {
	*d = decimal{}
	if f == 0 {
		return
	}
	d.neg = f < 0
	q, e := shortestDigits(f)
	d.m, d.k = q, digitCount(q)
	d.n = d.k + e
}

// es6Layout reports whether lit (read by number into d, at most 17
// significant digits) is already laid out as appendES6 prints d (ECMA-262
// Number::toString): no exponent, no trailing zero in a fraction, not
// zero, and a magnitude ES6 prints without an exponent (1e-6 <= |lit| <
// 1e21). es6ExpLayout is the same for a literal with an exponent.
func (d *decimal) es6Layout(lit []byte, intEnd, fracEnd, expOff int) bool {
	return expOff == len(lit) && (fracEnd == intEnd || lit[fracEnd-1] != '0') &&
		d.k > 0 && d.n > -6 && d.n <= 21
}

// es6ExpLayout reports whether lit, with an exponent at expOff, is
// already in ES6's exponent form (for magnitudes below 1e-6 or from
// 1e21), as JavaScript writes it: one non-zero integer digit, no trailing
// zero in a fraction, a lowercase 'e', the exponent's sign always written,
// its digits without a leading zero (1.5e-7, 2e+21; not 1.5e-07, 15e-8,
// 1.50e-7 or 2E+21).
func (d *decimal) es6ExpLayout(lit []byte, intEnd, fracEnd, expOff int) bool {
	start := 0
	if d.neg {
		start = 1
	}
	// A sign is followed by a digit (the grammar): lit[expOff+2] exists.
	return d.k > 0 && intEnd-start == 1 && lit[start] != '0' && (fracEnd == intEnd || lit[fracEnd-1] != '0') &&
		lit[expOff] == 'e' && (d.n > 21 && lit[expOff+1] == '+' || d.n <= -6 && lit[expOff+1] == '-') &&
		lit[expOff+2] != '0'
}

// appendCanonical appends d, read from lit (its integer part ending at
// intEnd, its fraction at fracEnd after lead zeros, its exponent at
// expOff), in its RFC 8785 form: lit itself when es6Layout or
// es6ExpLayout says so, else appendES6 of lit's digits.
func (d *decimal) appendCanonical(dst, lit []byte, intEnd, fracEnd, expOff, lead int) []byte {
	if d.es6Layout(lit, intEnd, fracEnd, expOff) || expOff < len(lit) && d.es6ExpLayout(lit, intEnd, fracEnd, expOff) {
		return append(dst, lit...)
	}
	ip := lit[:intEnd]
	if d.neg {
		ip = ip[1:]
	}
	var digits []byte
	switch {
	case ip[0] == '0': // 0.000ddd
		digits = lit[intEnd+1+lead:][:d.k]
	case len(ip) >= d.k:
		digits = ip[:d.k]
	default:
		var buf [maxDigits]byte
		n := copy(buf[:], ip)
		copy(buf[n:d.k], lit[intEnd+1:])
		digits = buf[:d.k]
	}
	return d.appendES6(dst, digits)
}

// appendES6 appends d, whose k significant digits are s, as ECMAScript's
// Number::toString prints it (RFC 8785 section 3.2.2.3).
func (d *decimal) appendES6(dst, s []byte) []byte {
	if d.k == 0 {
		return append(dst, '0')
	}
	if d.neg {
		dst = append(dst, '-')
	}
	k, n := d.k, d.n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, s...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, s[:n]...)
		dst = append(dst, '.')
		dst = append(dst, s[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	default:
		dst = append(dst, s[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, s[1:]...)
		}
		e, sign := n-1, byte('+')
		if e < 0 {
			e, sign = -e, '-'
		}
		dst = append(dst, 'e', sign) // |e| <= 324
		switch {
		case e >= 100:
			dst = append(dst, byte('0'+e/100), byte('0'+e/10%10), byte('0'+e%10))
		case e >= 10:
			dst = append(dst, byte('0'+e/10), byte('0'+e%10))
		default:
			dst = append(dst, byte('0'+e))
		}
	}
	return dst
}
