package argschema

import (
	"math/bits"
	"unsafe"
)

// decimal is an exact decimal read from a JSON number literal: the value
// is ±0.d[0]d[1]…d[n-1] × 10^exp, with no leading or trailing zero digit
// (n == 0 for zero). It holds up to 40 significant digits: every number
// mcpparse accepts has at most 17 (it refuses those that change value in
// RFC 8785 form), and so does every bound Canonicalize accepts.
type decimal struct {
	neg bool
	n   int
	d   [40]byte
	exp int
}

// parseDecimal reads lit, an RFC 8259 number; false when it is not one or
// has more than 40 significant digits or an exponent over 9 digits.
func parseDecimal(lit []byte) (decimal, bool) {
	var x decimal
	ok := x.parse(lit)
	return x, ok
}

// parse is parseDecimal into x, which must be zero.
func (x *decimal) parse(lit []byte) bool {
	i, n := 0, len(lit)
	if i < n && lit[i] == '-' {
		x.neg = true
		i++
	}
	if i+1 < n && lit[i] == '0' && lit[i+1] >= '0' && lit[i+1] <= '9' {
		return false // a leading zero
	}
	start := i
	lead := true // still in leading zeros
	for ; i < n && lit[i] >= '0' && lit[i] <= '9'; i++ {
		if lead && lit[i] == '0' {
			continue
		}
		lead = false
		if x.n == len(x.d) {
			return false
		}
		x.d[x.n] = lit[i]
		x.n++
	}
	if i == start {
		return false
	}
	x.exp = x.n // digits before the point
	if i < n && lit[i] == '.' {
		i++
		f := i
		for ; i < n && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if lead && lit[i] == '0' {
				x.exp--
				continue
			}
			lead = false
			if x.n == len(x.d) {
				return false
			}
			x.d[x.n] = lit[i]
			x.n++
		}
		if i == f {
			return false
		}
	}
	if i < n && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < n && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		e, f := 0, i
		for ; i < n && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if i-f >= 9 {
				return false
			}
			e = e*10 + int(lit[i]-'0')
		}
		if i == f {
			return false
		}
		if eneg {
			e = -e
		}
		x.exp += e
	}
	if i != n {
		return false
	}
	for x.n > 0 && x.d[x.n-1] == '0' {
		x.n--
	}
	if x.n == 0 {
		x.neg, x.exp = false, 0
	}
	return true
}

// isInteger reports whether x has no fractional part.
func (x *decimal) isInteger() bool { return x.n == 0 || x.exp >= x.n }

// cmp returns -1, 0 or +1 as x is less than, equal to or greater than y.
func (x *decimal) cmp(y *decimal) int {
	sx, sy := x.sign(), y.sign()
	if sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	if sx == 0 {
		return 0
	}
	m := x.cmpAbs(y)
	if sx < 0 {
		return -m
	}
	return m
}

func (x *decimal) sign() int {
	switch {
	case x.n == 0:
		return 0
	case x.neg:
		return -1
	}
	return 1
}

// cmpAbs compares |x| and |y|, both nonzero.
func (x *decimal) cmpAbs(y *decimal) int {
	if x.exp != y.exp {
		if x.exp < y.exp {
			return -1
		}
		return 1
	}
	for i := 0; i < x.n || i < y.n; i++ {
		var a, b byte = '0', '0'
		if i < x.n {
			a = x.d[i]
		}
		if i < y.n {
			b = y.d[i]
		}
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}

// unsafeString views b as a string without copying; the caller must not
// keep it past b's life or change b meanwhile.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// mantissa returns x as X × 10^e with X an integer of x's digits; ok is
// false when X does not fit in a uint64 (more than 19 digits).
func (x *decimal) mantissa() (mant uint64, e int, ok bool) {
	if x.n > 19 {
		return 0, 0, false
	}
	for i := 0; i < x.n; i++ {
		mant = mant*10 + uint64(x.d[i]-'0')
	}
	return mant, x.exp - x.n, true
}

// multipleOf reports whether x is an integer multiple of m (m > 0), by
// exact integer arithmetic; ok is false when the digits do not fit in 64
// bits (then the caller must use big.Rat).
func (x *decimal) multipleOf(m *decimal) (multiple, ok bool) {
	if x.n == 0 {
		return true, true
	}
	X, a, ok1 := x.mantissa()
	M, b, ok2 := m.mantissa()
	if !ok1 || !ok2 || M == 0 {
		return false, false
	}
	return multipleOfMant(X, a, M, b)
}

// multipleOfMant reports whether X × 10^a is an integer multiple of
// M × 10^b (X, M > 0); ok is false past 64 bits.
func multipleOfMant(X uint64, a int, M uint64, b int) (multiple, ok bool) {
	if k := a - b; k >= 0 {
		// X × 10^k mod M, one decimal digit of shift at a time.
		r := X % M
		for ; k > 0 && r != 0; k-- {
			hi, lo := bits.Mul64(r, 10)
			if hi >= M {
				return false, false
			}
			_, r = bits.Div64(hi, lo, M)
		}
		return r == 0, true
	} else {
		// X mod (M × 10^-k); a divisor past X (nonzero) divides nothing.
		d := M
		for ; k < 0; k++ {
			hi, lo := bits.Mul64(d, 10)
			if hi != 0 {
				return false, true // d > 2^64 > X
			}
			d = lo
		}
		return X%d == 0, true
	}
}

// small is an exact decimal of at most 19 significant digits, the fast
// form of decimal: ±mant × 10^exp with mant free of trailing zeros
// (mant 0, exp 0 and neg false for zero), and digits the number of
// mant's decimal digits. Every number mcpparse accepts fits (at most 17
// significant digits).
type small struct {
	mant   uint64
	exp    int
	digits int
	neg    bool
}

// pow10 are the powers of ten a uint64 holds.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// parseSmall reads lit, an RFC 8259 number, in one pass; false when it is
// not one, has more than 19 digits once leading zeros are dropped
// (trailing ones count), or an exponent of more than 9 digits (then
// parseDecimal decides).
func parseSmall(lit []byte) (x small, ok bool) {
	x, end, ok := parseSmallAt(lit, 0)
	return x, ok && end == len(lit)
}

// parseSmallAt is parseSmall of the number at lit[i:], which ends at
// end: the first byte past the grammar (the caller checks what follows).
func parseSmallAt(lit []byte, i int) (x small, end int, ok bool) {
	n := len(lit)
	if i < n && lit[i] == '-' {
		x.neg = true
		i++
	}
	nd := 0 // digits in mant
	switch {
	case i < n && lit[i] == '0':
		i++
	case i < n && lit[i] >= '1' && lit[i] <= '9':
		for ; i < n && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if nd == 19 {
				return x, i, false
			}
			x.mant = x.mant*10 + uint64(lit[i]-'0')
			nd++
		}
	default:
		return x, i, false
	}
	if i < n && lit[i] == '.' {
		i++
		f := i
		for ; i < n && lit[i] >= '0' && lit[i] <= '9'; i++ {
			x.exp--
			if x.mant == 0 && lit[i] == '0' {
				continue
			}
			if nd == 19 {
				return x, i, false
			}
			x.mant = x.mant*10 + uint64(lit[i]-'0')
			nd++
		}
		if i == f {
			return x, i, false
		}
	}
	if i < n && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < n && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		e, f := 0, i
		for ; i < n && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if i-f >= 9 {
				return x, i, false
			}
			e = e*10 + int(lit[i]-'0')
		}
		if i == f {
			return x, i, false
		}
		if eneg {
			e = -e
		}
		x.exp += e
	}
	if x.mant == 0 {
		return small{}, i, true
	}
	for x.mant%10 == 0 {
		x.mant /= 10
		x.exp++
		nd--
	}
	x.digits = nd
	return x, i, true
}

// small returns x in the fast form; false when it has more than 19
// significant digits.
func (x *decimal) small() (small, bool) {
	m, e, ok := x.mantissa()
	if !ok {
		return small{}, false
	}
	if m == 0 {
		return small{}, true
	}
	return small{mant: m, exp: e, digits: x.n, neg: x.neg}, true
}

// isInteger reports whether x has no fractional part.
func (x *small) isInteger() bool { return x.exp >= 0 || x.mant == 0 }

// cmp returns -1, 0 or +1 as x is less than, equal to or greater than y.
func (x *small) cmp(y *small) int {
	sx, sy := x.sign(), y.sign()
	if sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	if sx == 0 {
		return 0
	}
	var m int
	// |x| is in [10^(digits+exp-1), 10^(digits+exp)).
	if ax, ay := x.digits+x.exp, y.digits+y.exp; ax != ay {
		m = 1
		if ax < ay {
			m = -1
		}
	} else {
		// The same magnitude: shifting the shorter mantissa to the
		// longer's digits (at most 19) compares them exactly.
		a, b := x.mant, y.mant
		if x.exp > y.exp {
			a *= pow10[x.exp-y.exp]
		} else {
			b *= pow10[y.exp-x.exp]
		}
		switch {
		case a < b:
			m = -1
		case a > b:
			m = 1
		}
	}
	if sx < 0 {
		return -m
	}
	return m
}

func (x *small) sign() int {
	switch {
	case x.mant == 0:
		return 0
	case x.neg:
		return -1
	}
	return 1
}

// multipleOf reports whether x is an integer multiple of m (m > 0); ok
// is false when that takes more than 64 bits (then big.Rat must say).
func (x *small) multipleOf(m *small) (multiple, ok bool) {
	if x.mant == 0 {
		return true, true
	}
	if m.mant == 1 {
		// m is a power of ten and x's mantissa has no trailing zero: x is
		// a multiple when its last digit is at m's place or above.
		return x.exp >= m.exp, true
	}
	return multipleOfMant(x.mant, x.exp, m.mant, m.exp)
}
