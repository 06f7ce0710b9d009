package mcpparse

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/benchdata"
)

// cpuTime is the process's user+system CPU time so far (all threads, the
// garbage collector's included).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU runs loop (the b.Loop loop) and reports CPU time per
// iteration (cpu-ns/op) and bytes per CPU second (cpu-MB/s): on a shared
// machine ns/op also counts the time other processes hold the CPU.
func measureCPU(b *testing.B, size int, loop func()) {
	start := cpuTime(b)
	loop()
	if b.N > 0 {
		ns := float64(cpuTime(b)-start) / float64(b.N)
		b.ReportMetric(ns, "cpu-ns/op")
		if ns > 0 {
			b.ReportMetric(float64(size)*1e3/ns, "cpu-MB/s")
		}
	}
}

// benchArgs returns a tools/call arguments object of about n bytes shaped
// like issue 9's 64 KiB payload: a few top-level members, then an array of
// small objects (about 1,000 at 64 KiB) with non-ASCII strings, escapes,
// integers, decimals, booleans and a camelCase name.
func benchArgs(n int) string {
	var b strings.Builder
	b.WriteString(`{"query":"refund policy Zürich 🧾","limit":10,"filters":{"region":"eu","dateRange":{"from":"2025-01-01","to":"2025-12-31"}},"items":[`)
	for i := 0; b.Len() < n-100; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"sku":"A-` + strconv.Itoa(i) + `","qty":` + strconv.Itoa(i%7) + `,"unitPrice":12.5,"note":"Zürich 😀 – \"x\"","paid":true}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// benchLimits lifts the whole-body key and value counts, so that every size
// has the same shape (1 MiB of small objects holds about 80,000 members,
// past the default MaxKeys); per-value limits stay the defaults.
var benchLimits = Limits{MaxKeys: 1 << 20, MaxElements: 1 << 20}

// benchBodies are BenchmarkParse's tools/call bodies: payload × size.
func benchBodies(tb testing.TB) []struct {
	name string
	body []byte
} {
	var out []struct {
		name string
		body []byte
	}
	for _, p := range []struct {
		name string
		gen  func(int) string
	}{{"mixed", benchArgs}, {"numbers", benchdata.Numbers}, {"text", benchdata.Text}} {
		for _, s := range []struct {
			name string
			n    int
		}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1<<20 - 256}} {
			body := []byte(call(p.gen(s.n)))
			if _, err := Parse(body, ParseOptions{Limits: benchLimits}); err != nil {
				tb.Fatalf("%s/%s: %v", p.name, s.name, err)
			}
			out = append(out, struct {
				name string
				body []byte
			}{p.name + "/" + s.name, body})
		}
	}
	return out
}

// TestBenchBodies: BenchmarkParse's bodies are what they claim: accepted,
// of their size, and the numbers payload mostly numbers and the text one
// mostly non-ASCII (a body Parse rejects would benchmark the error path).
func TestBenchBodies(t *testing.T) {
	for _, bb := range benchBodies(t) {
		if out, ok := floorPass(bb.body, nil); !ok || !bytes.Equal(out, bb.body) {
			t.Errorf("%s: floorPass %v, %d of %d bytes copied", bb.name, ok, len(out), len(bb.body))
		}
		var digits, nonASCII int
		for _, c := range bb.body {
			switch {
			case c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+':
				digits++
			case c >= 0x80:
				nonASCII++
			}
		}
		want := map[string]int{"1KiB": 1 << 10, "64KiB": 64 << 10, "1MiB": 1 << 20}[bb.name[strings.IndexByte(bb.name, '/')+1:]]
		if len(bb.body) < want*9/10 || len(bb.body) > want+256 {
			t.Errorf("%s: %d bytes, want about %d", bb.name, len(bb.body), want)
		}
		switch {
		case strings.HasPrefix(bb.name, "numbers/") && strings.HasSuffix(bb.name, "iB") && !strings.HasSuffix(bb.name, "/1KiB"):
			if digits < len(bb.body)/2 {
				t.Errorf("%s: %d of %d bytes are number characters", bb.name, digits, len(bb.body))
			}
		case strings.HasPrefix(bb.name, "text/") && !strings.HasSuffix(bb.name, "/1KiB"):
			if nonASCII < len(bb.body)/2 {
				t.Errorf("%s: %d of %d bytes are non-ASCII", bb.name, nonASCII, len(bb.body))
			}
		}
	}
}

// BenchmarkParse measures Parse of a tools/call (strict parse, targets,
// canonical arguments and their SHA-256) for three payloads (mixed,
// numbers, text) at three sizes, each beside encoding/json.Valid of the
// same body in the same run (the reference issue 20 sets: strict ≥ 1.0×
// Valid's throughput) and the floor (floorPass and SHA-256: the grammar,
// a copy and the hash, without the strict work), with CPU time per op
// beside wall time. strict is the path the machine runs (vectorized with
// AVX2, simd.go), strict-scalar the scalar path on the same body.
// bench/parse.sh prints the ratios. ns/op should grow linearly with the
// size.
func BenchmarkParse(b *testing.B) {
	opt := ParseOptions{Limits: benchLimits}
	for _, bb := range benchBodies(b) {
		body := bb.body
		b.Run(bb.name+"/strict", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			measureCPU(b, len(body), func() {
				for b.Loop() {
					if _, err := Parse(body, opt); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(bb.name+"/strict-scalar", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			p := &scanner{scalar: true} // reused, as the pool's are
			measureCPU(b, len(body), func() {
				for b.Loop() {
					if _, err := parseOn(p, body, opt); err != nil {
						b.Fatal(err)
					}
					p.truncate()
				}
			})
		})
		b.Run(bb.name+"/floor", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			out := make([]byte, 0, len(body))
			measureCPU(b, len(body), func() {
				for b.Loop() {
					var ok bool
					if out, ok = floorPass(body, out[:0]); !ok {
						b.Fatal("floor rejects the body")
					}
					_ = sha256.Sum256(out)
				}
			})
		})
		b.Run(bb.name+"/json.Valid", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			measureCPU(b, len(body), func() {
				for b.Loop() {
					if !json.Valid(body) {
						b.Fatal("invalid")
					}
				}
			})
		})
	}
}

// floorPass is BenchmarkParse's floor: the least a scalar pass that
// copies a body can do. It follows the JSON grammar with one loop and an
// explicit stack, skips strings eight bytes at a time, and appends every
// value to out as it is, in input order: no limit, no UTF-8 validation,
// no number rule, no duplicate, case-variant or ordering work, no
// envelope. Followed by SHA-256 of out, it is what Parse's strict canonical
// digest costs before any of the checks that make it strict; ok is false
// on what it cannot follow (it is no validator).
func floorPass(in, out []byte) (_ []byte, ok bool) {
	var stack [64]byte // '{' or '[' of each open container
	sp, i, n := 0, 0, len(in)
	ws := func() {
		for i < n && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r') {
			i++
		}
	}
	str := func() bool { // in[i] is the opening quote
		s := i
		for i++; ; {
			for i+8 <= n {
				if m := specialMask(binary.LittleEndian.Uint64(in[i:])); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
			switch {
			case i >= n || in[i] < 0x20:
				return false
			case in[i] == '"':
				i++
				out = append(out, in[s:i]...)
				return true
			case in[i] == '\\':
				i += 2
			default:
				i++
			}
		}
	}
	key := func() bool { // `"name":`
		ws()
		if i >= n || in[i] != '"' || !str() {
			return false
		}
		ws()
		if i >= n || in[i] != ':' {
			return false
		}
		i++
		out = append(out, ':')
		return true
	}
	for {
		ws()
		if i >= n {
			return out, false
		}
		switch c := in[i]; {
		case c == '{' || c == '[':
			out = append(out, c)
			i++
			ws()
			if i < n && in[i] == c+2 { // '}' or ']'
				out = append(out, c+2)
				i++
				break
			}
			if sp == len(stack) {
				return out, false
			}
			stack[sp] = c
			sp++
			if c == '{' && !key() {
				return out, false
			}
			continue
		case c == '"':
			if !str() {
				return out, false
			}
		case c == '-' || c >= '0' && c <= '9':
			s := i
			for i++; i < n && (in[i] >= '0' && in[i] <= '9' || in[i] == '.' || in[i] == 'e' || in[i] == 'E' || in[i] == '+' || in[i] == '-'); i++ {
			}
			out = append(out, in[s:i]...)
		case c == 't' || c == 'n':
			out = append(out, in[i:min(i+4, n)]...)
			i += 4
		case c == 'f':
			out = append(out, in[i:min(i+5, n)]...)
			i += 5
		default:
			return out, false
		}
		// After a value: close containers, or a comma and the next.
		for {
			ws()
			if sp == 0 {
				return out, i == n
			}
			if i >= n {
				return out, false
			}
			if c := in[i]; c == stack[sp-1]+2 {
				out = append(out, c)
				i++
				sp--
				continue
			} else if c != ',' {
				return out, false
			}
			out = append(out, ',')
			i++
			if stack[sp-1] == '{' && !key() {
				return out, false
			}
			break
		}
	}
}

func BenchmarkCanonicalize(b *testing.B) {
	inputs := []struct {
		name string
		give string
	}{
		{"refund", `{"orderId":"ord_Zürich_🚀_001","amountMinor":1250,"currency":"CHF","reason":"Kunde aus Zürich 😀 – doppelte Belastung","metadata":{"customer":{"id":"cus_42","tags":["vip","ü"]},"lines":[{"sku":"A-1","qty":2}]},"price":12.50}`},
		{"64KiB", benchArgs(64 << 10)},
		{"numbers-64KiB", benchdata.Numbers(64 << 10)},
		{"text-64KiB", benchdata.Text(64 << 10)},
	}
	for _, in := range inputs {
		v := []byte(in.give)
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				if _, err := Canonicalize(v, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
