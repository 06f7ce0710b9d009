package mcpparse

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// The number rule as it was before issue 31 reworked its shortcuts, kept
// verbatim (renamed: numberOracle, with its digitAcc.add, trim, trimZeros
// and appendCanonical) as the oracle of sameAsOracle
// (TestNumberAgainstOracle, FuzzNumberForms): number must give every
// literal the same answer, end and bytes. Shared with number: digitsEnd,
// Eisel-Lemire, Dragonbox (shortestDigits, with today's trimZeros) and
// appendES6; TestEiselLemire and TestShortestDigits check those against
// strconv, TestDigitAcc the digit reading against a loop, and
// FuzzNumberForms the whole rule against the tree parser.

func (p *scanner) numberOracle(exempt, w bool) *ParseError {
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
		acc.addOracle(in, intStart, intEnd)
	}
	if fracEnd > intEnd {
		acc.addOracle(in, fracSig, fracEnd)
	}
	if acc.m == 0 && !acc.over { // zero: its RFC 8785 form is 0
		if w {
			p.out = append(p.out, '0')
		}
		return nil
	}
	d.m, d.k = acc.trimOracle()
	d.n = intDigits - lead + exp
	ok := !acc.over && d.k <= maxDigits && !bigExp
	if ok && d.k <= exactDigits && d.n > -290 && d.n < 290 {
		// With at most 15 significant digits (DBL_DIG) in that range, the
		// shortest decimal that round-trips the nearest double is lit's own
		// digits: lit is exactly the value of its RFC 8785 form, and only
		// the layout of the digits can change.
		if w {
			p.out = d.appendCanonicalOracle(p.out, lit, intEnd-off, fracEnd-off, expOff-off, lead)
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
		p.out = d.appendCanonicalOracle(p.out, lit, intEnd-off, fracEnd-off, expOff-off, lead)
	}
	return nil
}

func (d *decimal) es6LayoutOracle(lit []byte, intEnd, fracEnd, expOff int) bool {
	return expOff == len(lit) && (fracEnd == intEnd || lit[fracEnd-1] != '0') &&
		d.k > 0 && d.n > -6 && d.n <= 21
}

// appendCanonical appends d, read from lit (its integer part ending at
// intEnd, its fraction at fracEnd after lead zeros, its exponent at
// expOff), in its RFC 8785 form: lit itself when es6Layout says so, else
// appendES6 of lit's digits.
func (d *decimal) appendCanonicalOracle(dst, lit []byte, intEnd, fracEnd, expOff, lead int) []byte {
	if d.es6LayoutOracle(lit, intEnd, fracEnd, expOff) {
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

func (acc *digitAcc) addOracle(in []byte, a, b int) {
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
func (acc *digitAcc) trimOracle() (m uint64, k int) {
	if acc.m%10 != 0 {
		return acc.m, min(acc.nsig, accDigits)
	}
	m, z := trimZerosOracle(acc.m)
	return m, min(acc.nsig, accDigits) - z
}
func trimZerosOracle(x uint64) (uint64, int) {
	const (
		div1e8m  = 0xc767074b22e90e21
		div1e8le = math.MaxUint64 / 100000000
		div1e4m  = 0xd288ce703afb7e91
		div1e4le = math.MaxUint64 / 10000
		div1e2m  = 0x8f5c28f5c28f5c29
		div1e2le = math.MaxUint64 / 100
		div1e1m  = 0xcccccccccccccccd
		div1e1le = math.MaxUint64 / 10
	)
	if x == 0 {
		return 0, 0
	}
	p := 0
	for d := bits.RotateLeft64(x*div1e8m, -8); d <= div1e8le; d = bits.RotateLeft64(x*div1e8m, -8) {
		x = d
		p += 8
	}
	if d := bits.RotateLeft64(x*div1e4m, -4); d <= div1e4le {
		x = d
		p += 4
	}
	if d := bits.RotateLeft64(x*div1e2m, -2); d <= div1e2le {
		x = d
		p += 2
	}
	if d := bits.RotateLeft64(x*div1e1m, -1); d <= div1e1le {
		x = d
		p++
	}
	return x, p
}
