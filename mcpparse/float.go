// Portions of this file (eiselLemire, dragonbox and their helpers) are
// adapted from the Go standard library's internal/strconv (atofeisel.go,
// ftoadbox.go, math.go, pow10gen.go), Go 1.26:
//
// Copyright 2020, 2025 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style license that can be
// found at https://go.dev/LICENSE (the Go license: redistributions keep
// this notice).

package mcpparse

import (
	"math"
	"math/big"
	"math/bits"
	"sync"
	"sync/atomic"
)

// The slow path of the number rule converts a literal of 16 or 17
// significant digits to its nearest double and back to the shortest
// decimal that round-trips it. strconv does both (Eisel-Lemire, then
// Dragonbox) but only through text: ParseFloat scans the literal again and
// AppendFloat writes digits that would be read back. The two algorithms
// below are strconv's, float64 only, on the integer significand and power
// of ten the scanner already has; where Eisel-Lemire cannot decide (a
// halfway case, a subnormal, out of range) the caller falls back to
// strconv.ParseFloat. TestEiselLemire and TestShortestDigits compare both
// with strconv on random inputs; the number fuzz targets compare the
// whole rule with the tree parser.

// uint128 is a 128-bit unsigned integer.
type uint128 struct{ hi, lo uint64 }

const (
	pow10Min = -348
	pow10Max = 347
)

// pow10Tab returns the 128-bit mantissas of 10^e for pow10Min <= e <=
// pow10Max, truncated, scaled so that the high bit is set: strconv's
// pow10tab.go, computed on first use (math/big, about 2 ms) rather than
// stored. After the first use it is one atomic load (inlined), not a call
// through sync.OnceValue (about a tenth of a 17-digit number's check).
func pow10Tab() *[pow10Max - pow10Min + 1]uint128 {
	if t := pow10Loaded.Load(); t != nil {
		return t
	}
	return pow10Compute()
}

// pow10Loaded is pow10Compute's table once computed.
var pow10Loaded atomic.Pointer[[pow10Max - pow10Min + 1]uint128]

var pow10Compute = sync.OnceValue(func() *[pow10Max - pow10Min + 1]uint128 {
	var t [pow10Max - pow10Min + 1]uint128
	ten := big.NewInt(10)
	mask := new(big.Int).SetUint64(math.MaxUint64)
	var x, q, lo big.Int
	for e := pow10Min; e <= pow10Max; e++ {
		if e >= 0 {
			x.Exp(ten, big.NewInt(int64(e)), nil)
			if n := x.BitLen(); n > 128 {
				x.Rsh(&x, uint(n-128))
			} else {
				x.Lsh(&x, uint(128-n))
			}
		} else {
			// floor(2^(127+L) / 10^-e), L the bit length of 10^-e: in
			// [2^127, 2^128), as 10^-e is no power of two.
			q.Exp(ten, big.NewInt(int64(-e)), nil)
			x.Lsh(big.NewInt(1), uint(127+q.BitLen()))
			x.Quo(&x, &q)
		}
		lo.And(&x, mask)
		t[e-pow10Min] = uint128{new(big.Int).Rsh(&x, 64).Uint64(), lo.Uint64()}
	}
	pow10Loaded.Store(&t)
	return &t
})

// pow10 returns the 128-bit mantissa and binary exponent of 10^e:
// 10^e = mant/2^128 * 2^exp.
func pow10(e int) (mant uint128, exp int, ok bool) {
	if e < pow10Min || e > pow10Max {
		return
	}
	return pow10Tab()[e-pow10Min], 1 + mulLog2_10(e), true
}

// mulLog10_2 is floor(x * log10(2)) for -1600 <= x <= 1600.
func mulLog10_2(x int) int { return (x * 78913) >> 18 }

// mulLog2_10 is floor(x * log2(10)) for -500 <= x <= 500.
func mulLog2_10(x int) int { return (x * 108853) >> 15 }

// mulLog10_2MinusLog10_4Over3 is floor(e*log10(2) - log10(4/3)).
func mulLog10_2MinusLog10_4Over3(e int) int { return (e*631305 - 261663) >> 21 }

// eiselLemire returns the double nearest man × 10^exp10 (man not zero),
// negated when neg; ok false when the algorithm cannot decide or the
// result is subnormal or out of range.
func eiselLemire(man uint64, exp10 int, neg bool) (f float64, ok bool) {
	const bias = -1023
	pow, exp2, ok := pow10(exp10)
	if !ok || man == 0 {
		return 0, false
	}
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64(exp2+63-bias) - uint64(clz)
	xHi, xLo := bits.Mul64(man, pow.hi)
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pow.lo)
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false // halfway
	}
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	if retExp2-1 >= 0x7FF-1 {
		return 0, false // subnormal, or out of range
	}
	b := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		b |= 1 << 63
	}
	return math.Float64frombits(b), true
}

// shortestDigits returns the shortest decimal q × 10^e that round-trips
// f (finite, not zero; its sign ignored), q without trailing zeros, as
// strconv.AppendFloat(f, 'e', -1) chooses it (Dragonbox).
func shortestDigits(f float64) (q uint64, e int) {
	b := math.Float64bits(f)
	exp := int(b>>52) & 0x7FF
	mant := b & (1<<52 - 1)
	denorm := exp == 0
	if denorm {
		exp++
	} else {
		mant |= 1 << 52
	}
	q, e = dragonbox(mant, exp-1023-52, denorm)
	z := 0
	q, z = trimZeros(q)
	return q, e + z
}

// dragonbox is strconv's dboxFtoa64: the shortest decimal q × 10^e in the
// rounding interval of mant × 2^exp.
func dragonbox(mant uint64, exp int, denorm bool) (q uint64, e int) {
	if mant == 1<<52 && !denorm {
		k0 := -mulLog10_2MinusLog10_4Over3(exp)
		φ, β := dboxPow(k0, exp)
		xi, zi := dboxRange(φ, β)
		if exp != 2 && exp != 3 {
			xi++
		}
		q := zi / 10
		if xi <= q*10 {
			q, zeros := trimZeros(q)
			return q, -k0 + 1 + zeros
		}
		yru := dboxRoundUp(φ, β)
		if exp == -77 && yru%2 != 0 {
			yru--
		} else if yru < xi {
			yru++
		}
		return yru, -k0
	}
	const (
		κ     = 2
		p10κ  = 100
		p10κ1 = p10κ * 10
	)
	k0 := -mulLog10_2(exp)
	φ, β := dboxPow(κ+k0, exp)
	zi, exact := dboxMulPow((mant*2+1)<<β, φ)
	s, r := zi/p10κ1, uint32(zi%p10κ1)
	δi := uint32(φ.hi >> (64 - 1 - β))
	if r < δi {
		if r != 0 || !exact || mant%2 == 0 {
			s, zeros := trimZeros(s)
			return s, -k0 + 1 + zeros
		}
		s--
		r = p10κ * 10
	} else if r == δi {
		parity, exact := dboxParity(mant*2-1, φ, β)
		if parity || (exact && mant%2 == 0) {
			s, zeros := trimZeros(s)
			return s, -k0 + 1 + zeros
		}
	}
	D := r + p10κ/2 - δi/2
	t, ρ := D/p10κ, D%p10κ
	yru := 10*s + uint64(t)
	if ρ == 0 {
		parity, exact := dboxParity(mant*2, φ, β)
		if parity != ((D-p10κ/2)%2 != 0) || exact && yru%2 != 0 {
			yru--
		}
	}
	return yru, -k0
}

func dboxPow(k, e int) (φ uint128, β int) {
	φ, e1, _ := pow10(k)
	if k < 0 || k > 55 {
		φ.lo++
	}
	return φ, e + e1 - 1
}

func dboxRange(φ uint128, β int) (left, right uint64) {
	left = (φ.hi - (φ.hi >> (52 + 2))) >> (64 - 52 - 1 - β)
	right = (φ.hi + (φ.hi >> (52 + 1))) >> (64 - 52 - 1 - β)
	return left, right
}

func dboxRoundUp(φ uint128, β int) uint64 {
	return (φ.hi>>(128/2-52-2-β) + 1) / 2
}

func dboxMulPow(u uint64, φ uint128) (intPart uint64, isInt bool) {
	// The upper 128 bits of the 192-bit u × φ.
	hi, lo := bits.Mul64(u, φ.hi)
	t, _ := bits.Mul64(u, φ.lo)
	lo, c := bits.Add64(lo, t, 0)
	return hi + c, lo == 0
}

func dboxParity(mant2 uint64, φ uint128, β int) (parity, isInt bool) {
	// The lower 128 bits of the 192-bit mant2 × φ.
	high := mant2 * φ.hi
	hl, ll := bits.Mul64(mant2, φ.lo)
	rHi, rLo := high+hl, ll
	parity = (rHi>>(64-β))&1 != 0
	isInt = (rHi<<β)|(rLo>>(64-β)) == 0
	return parity, isInt
}

// trimZeros returns x without its trailing decimal zeros and how many
// there were (exact division by multiplicative inverses).
func trimZeros(x uint64) (uint64, int) {
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
	if x == 0 || bits.RotateLeft64(x*div1e1m, -1) > div1e1le {
		return x, 0 // the usual significand: its last digit is not zero
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

// pow10u are the powers of ten a uint64 holds.
var pow10u = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// digitCount returns the number of decimal digits of x (x > 0).
func digitCount(x uint64) int {
	n := (bits.Len64(x) * 1233) >> 12 // floor(log10(2^len)), at most one short
	if n < len(pow10u) && x >= pow10u[n] {
		n++
	}
	return max(n, 1)
}
