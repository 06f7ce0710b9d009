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
