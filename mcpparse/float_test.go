package mcpparse

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// randomFloats returns finite doubles across the whole range: random bit
// patterns (subnormals included), and the usual measurements.
func randomFloats(n int) []float64 {
	rng := rand.New(rand.NewPCG(3, 5))
	var fs []float64
	for range n {
		fs = append(fs,
			math.Float64frombits(rng.Uint64()&^(1<<63|0x7FF<<52)|uint64(rng.IntN(2047))<<52),
			rng.Float64()*2000-1000,
			rng.NormFloat64()*1e-6,
			math.Ldexp(1, rng.IntN(2098)-1074), // powers of two: the asymmetric interval
		)
	}
	return append(fs, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64*3, 1, 0.1, 1e23, 9007199254740993)
}

// TestShortestDigits: shortestDigits gives the digits and exponent that
// strconv.AppendFloat(f, 'e', -1) prints, for every kind of double.
func TestShortestDigits(t *testing.T) {
	for _, f := range randomFloats(20000) {
		s := strconv.FormatFloat(math.Abs(f), 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		digits := strings.Replace(mant, ".", "", 1)
		e, _ := strconv.Atoi(exp)
		want, _ := strconv.ParseUint(digits, 10, 64)
		wantE := e - (len(digits) - 1)
		q, ge := shortestDigits(f)
		if q != want || ge != wantE {
			t.Fatalf("shortestDigits(%v) = %d e%d, strconv %s (%d e%d)", f, q, ge, s, want, wantE)
		}
		if k := digitCount(q); k != len(digits) {
			t.Fatalf("digitCount(%d) = %d", q, k)
		}
	}
}

// TestEiselLemire: where eiselLemire decides, it gives strconv.ParseFloat's
// double, for the shortest digits of random doubles and for those digits
// one unit above and below (not the shortest, often another double).
func TestEiselLemire(t *testing.T) {
	decided := 0
	for _, f := range randomFloats(20000) {
		q, e := shortestDigits(f)
		for _, m := range []uint64{q, q + 1, q - 1, q * 10, q*10 + 5} {
			ee := e
			if m >= q*10 && q < math.MaxUint64/10 {
				ee--
			}
			if m == 0 {
				continue
			}
			got, ok := eiselLemire(m, ee, f < 0)
			if !ok {
				continue
			}
			decided++
			lit := strconv.FormatUint(m, 10) + "e" + strconv.Itoa(ee)
			if f < 0 {
				lit = "-" + lit
			}
			want, err := strconv.ParseFloat(lit, 64)
			if err != nil || math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("eiselLemire(%s) = %v, ParseFloat %v (%v)", lit, got, want, err)
			}
		}
	}
	if decided < 300000 {
		t.Fatalf("eiselLemire decided only %d of 400000", decided)
	}
}
