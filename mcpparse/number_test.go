package mcpparse

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// numberForms returns literals for f as JSON writers spell numbers:
// shortest ('g', 'e', 'E', 'f'), fixed precision (15, 16, 17 digits, which
// may not be canonical or exact), and with a trailing fraction zero.
func numberForms(f float64) []string {
	var out []string
	for _, fm := range []byte{'g', 'e', 'E', 'f'} {
		out = append(out, strconv.FormatFloat(f, fm, -1, 64))
	}
	for _, prec := range []int{15, 16, 17} {
		out = append(out, strconv.FormatFloat(f, 'g', prec, 64), strconv.FormatFloat(f, 'e', prec-1, 64))
	}
	if s := strconv.FormatFloat(f, 'f', -1, 64); strings.Contains(s, ".") && len(s) < 400 {
		out = append(out, s+"0")
	}
	return out
}

// TestNumberDifferential: for doubles across the whole range (random bit
// patterns, measurements of 16 and 17 digits, short decimals, integers
// near 2^53 and powers of ten) in every spelling numberForms makes,
// Canonicalize accepts, rejects and writes each literal exactly as the
// tree parser (ref_test.go, strconv and gowebpki/jcs) does.
func TestNumberDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var fs []float64
	for range 3000 {
		fs = append(fs,
			math.Float64frombits(rng.Uint64()&^(0x7FF<<52)|uint64(rng.IntN(2046)+1)<<52), // any finite
			rng.Float64()*2000-1000,
			rng.NormFloat64()*1e-6,
			float64(rng.IntN(100000))/float64(int(1)<<rng.IntN(12)),
			float64(1<<53-rng.IntN(1000)),
			math.Pow(10, float64(rng.IntN(600)-300)),
		)
	}
	extra := []string{"-0", "0.0", "1E400", "-1e-400", "9007199254740993", "12345678901234567890",
		"1.00000000000000000000001", "0.000001000", "1e21", "1e-7", "100000000000000000000000"}
	check := func(lit string) {
		got, err := Canonicalize([]byte(lit), Limits{})
		want, werr := refCanonicalize([]byte(lit), Limits{})
		sameError(t, lit, err, werr)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: canonical %q, tree parser %q", lit, got, want)
		}
	}
	for _, lit := range extra {
		check(lit)
	}
	for _, f := range fs {
		for _, lit := range numberForms(f) {
			check(lit)
		}
	}
}

// FuzzNumberForms is TestNumberDifferential on fuzzed doubles (any bit
// pattern; NaN and the infinities have no literal and are skipped) and on
// fuzzed literals: Canonicalize and the tree parser agree on each, and so
// do the vectorized and the scalar path (samePaths), and number and the
// rule as it was before issue 31 (sameAsOracle).
func FuzzNumberForms(f *testing.F) {
	f.Add(math.Float64bits(0.1), "1.5e10")
	f.Add(math.Float64bits(-123.45678901234567), "333333333.33333329")
	f.Add(uint64(1), "5e-324")
	for i, lit := range oracleSeeds {
		f.Add(uint64(i), lit)
	}
	paths := newPathScanners()
	reused := new(scanner)
	f.Fuzz(func(t *testing.T, b uint64, lit string) {
		check := func(lit string) {
			sameAsOracle(t, reused, lit, byte(b))
			samePaths(t, paths, []byte(lit), ParseOptions{})
			got, err := Canonicalize([]byte(lit), Limits{})
			want, werr := refCanonicalize([]byte(lit), Limits{})
			sameError(t, lit, err, werr)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: canonical %q, tree parser %q", lit, got, want)
			}
		}
		check(lit)
		if v := math.Float64frombits(b); !math.IsNaN(v) && !math.IsInf(v, 0) {
			for _, l := range numberForms(v) {
				check(l)
			}
		}
	})
}

// TestDigitAcc: digitAcc.add and trim read the significant digits of runs
// of every length (1 to 40, at every offset from the end of the input, in
// one or two runs, zeros past the 19th or not) as a digit-by-digit loop
// does, and trimZeros strips what a division loop strips.
func TestDigitAcc(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	naive := func(runs ...string) (m uint64, k int, over bool) {
		n := 0
		for _, r := range runs {
			for _, c := range []byte(r) {
				if n < accDigits {
					m = m*10 + uint64(c-'0')
				} else if c != '0' {
					over = true
				}
				n++
			}
		}
		k = min(n, accDigits)
		for m != 0 && m%10 == 0 {
			m, k = m/10, k-1
		}
		return m, k, over
	}
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
			if rng.IntN(4) == 0 {
				b[i] = '0'
			}
		}
		if n > 0 && b[0] == '0' {
			b[0] = '1'
		}
		return string(b)
	}
	for range 20000 {
		runs := []string{digits(rng.IntN(41) + 1)}
		if rng.IntN(2) == 0 {
			runs = append(runs, digits(rng.IntN(25)+1))
		}
		tail := strings.Repeat("x", rng.IntN(10)) // bytes past the literal, if any
		in := []byte(strings.Join(runs, ".") + tail)
		var acc digitAcc
		acc.add(in, 0, len(runs[0]))
		if len(runs) > 1 {
			acc.add(in, len(runs[0])+1, len(runs[0])+1+len(runs[1]))
		}
		m, k := acc.trim()
		wm, wk, wover := naive(runs...)
		if acc.over != wover || !wover && (m != wm || k != wk) {
			t.Fatalf("%q: m %d k %d over %v, want %d %d %v", in, m, k, acc.over, wm, wk, wover)
		}
	}
	for range 20000 {
		x := rng.Uint64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			x = x / pow10u[rng.IntN(10)] * pow10u[rng.IntN(10)]
		}
		wx, wz := x, 0
		for wx != 0 && wx%10 == 0 {
			wx, wz = wx/10, wz+1
		}
		if gx, gz := trimZeros(x); gx != wx || gz != wz {
			t.Fatalf("trimZeros(%d) = %d, %d; want %d, %d", x, gx, gz, wx, wz)
		}
	}
}

// oracleSeeds are literals at the edges of number's shortcuts (2^53 and
// its neighbours, 15 to 17 digits, 1e-6 and 1e-7, 1e21, the double range,
// ES6's exponent form and the forms next to it) and of the grammar.
var oracleSeeds = []string{
	"0", "-0", "7", "-7", "100", "1E2", "1e2", "1.0", "1.50", "0.1", "-0.5", "0.125", "0e0", "0E-0", "-0.0",
	"9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740993", "10000000000000000",
	"123456789012345", "1234567890123456", "12345678901234567", "100000000000000000000", "1e21", "1e20",
	"999999999999999", "0.000001", "0.0000001", "0.0000012", "1e-7", "1e-6", "5e-324", "4.9e-324",
	"1.7976931348623157e308", "1.7976931348623159e308", "2.2250738585072014e-308", "123456789012345.6",
	"12345678901234.5", "0.123456789012345", "0.1234567890123456", "1.5e+10", "2.5E-7", "1e+21",
	"1e400", "1e-400", "1e0000000000000000000021", "01", "00", "-01", "-", "1.", "1.e5", ".5", "1e", "1e+",
	"-a", "1.5x", "9007199254740992.5", "352.9113193356502", "7.473804659119398e-08",
	"0.30000000000000004", "3.0000000000000004", "12345678901234567890123", "1.00000000000000000000001",
	"1.5e-7", "-2.5e-7", "2e+21", "1.5e+21", "1e-07", "15e-8", "2E+21", "1.0e-7", "1.50e-7", "0.5e-7",
	"-0e-7", "1e+0", "1e+20", "1e+22", "1e-5", "1.234567890123456e-7", "1.2345678901234567e+30",
	"5e-0324", "4.940656458412465e-324", "1e+308", "1e+309", "9.999999999999999e+22",
}

// sameAsOracle fails t unless number and numberOracle (the rule as it was
// before issue 31, number_oracle_test.go) agree on lit, followed by the
// end of input or by next, exempt or not, written or not, lenient or not
// (the 16 modes), on a fresh scanner and on reused (its output buffer
// holding earlier numbers): the same error (kind, offset, message), the
// same end, the same bytes appended. value() calls number only at a '-'
// or a digit; other literals are skipped.
func sameAsOracle(t *testing.T, reused *scanner, lit string, next byte) {
	t.Helper()
	if lit == "" || lit[0] != '-' && (lit[0] < '0' || lit[0] > '9') {
		return
	}
	for mode := range 16 {
		in := []byte(lit)
		if mode&1 != 0 {
			in = append(in, next)
		}
		exempt, w, lenient := mode&2 != 0, mode&4 == 0, mode&8 != 0
		run := func(p *scanner, oracle bool) (int, []byte, *ParseError) {
			prior := len(p.out)
			p.reset(in, Limits{}.withDefaults())
			p.lenient = lenient
			var err *ParseError
			if oracle {
				err = p.numberOracle(exempt, w)
			} else {
				err = p.number(exempt, w)
			}
			return p.pos, bytes.Clone(p.out[prior:]), err
		}
		wantPos, want, werr := run(new(scanner), true)
		for _, c := range []struct {
			name string
			p    *scanner
		}{{"fresh", new(scanner)}, {"reused", reused}} {
			pos, got, err := run(c.p, false)
			if (err == nil) != (werr == nil) || err != nil && *err != *werr {
				t.Fatalf("%q (mode %d, %s): error %v, oracle %v", in, mode, c.name, err, werr)
			}
			if err == nil && (pos != wantPos || !bytes.Equal(got, want)) {
				t.Fatalf("%q (mode %d, %s): end %d, %q; oracle %d, %q", in, mode, c.name, pos, got, wantPos, want)
			}
		}
	}
	if len(reused.out) > 1<<16 {
		reused.out = reused.out[:0]
	}
}

// TestNumberAgainstOracle: sameAsOracle on oracleSeeds, each followed by
// the end of input, ',', ']', 'e', '.', '0' and a space; FuzzNumberForms
// does the same on fuzzed literals and doubles.
func TestNumberAgainstOracle(t *testing.T) {
	reused := new(scanner)
	for _, lit := range oracleSeeds {
		for _, next := range []byte(",]e.0 ") {
			sameAsOracle(t, reused, lit, next)
		}
	}
}

// BenchmarkNumberKinds measures the number rule per kind of literal the
// numbers payload holds (benchdata.Numbers): Canonicalize of an array of
// 1,000 copies of one literal, on a reused scanner, reported as CPU
// nanoseconds per number (cpu-ns/number: the array's own work included;
// the "7" row is about that). Issue 31's number work is measured here,
// beside BenchmarkParse's numbers payload.
func BenchmarkNumberKinds(b *testing.B) {
	for _, k := range []struct{ name, lit string }{
		{"small", "7"}, {"int13", "1700000000250"}, {"int16", "9007199254740987"},
		{"frac", "0.125"}, {"dec16", "-672.2491699572555"}, {"dec17", "437.63673227163645"},
		{"exp-es6", "5.5e-10"}, {"exp-other", "6.02E23"}, {"exp17", "-1.1253144115495104e-06"},
		{"int21", "100000000000000000000"},
	} {
		body := []byte("[" + strings.Repeat(k.lit+",", 999) + k.lit + "]")
		lim := Limits{MaxElements: 1 << 20}.withDefaults()
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			p := new(scanner)
			start := cpuTime(b)
			for b.Loop() {
				if _, err := canonOn(p, body, lim); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N)/1000, "cpu-ns/number")
		})
	}
}
