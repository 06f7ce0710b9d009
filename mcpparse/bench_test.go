package mcpparse

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

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

// BenchmarkParse measures Parse of a tools/call (strict parse, targets,
// canonical arguments and their SHA-256) at three sizes; ns/op should grow
// linearly with the size.
func BenchmarkParse(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1<<20 - 256}}
	for _, s := range sizes {
		body := []byte(call(benchArgs(s.n)))
		opt := ParseOptions{Limits: benchLimits}
		if _, err := Parse(body, opt); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(body, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValid is the ceiling reference: encoding/json.Valid on the same
// bodies (no strictness, no canonical form, no hash).
func BenchmarkValid(b *testing.B) {
	for _, n := range []int{64 << 10} {
		body := []byte(call(benchArgs(n)))
		b.Run("64KiB", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkCanonicalize(b *testing.B) {
	inputs := []struct {
		name string
		give string
	}{
		{"refund", `{"orderId":"ord_Zürich_🚀_001","amountMinor":1250,"currency":"CHF","reason":"Kunde aus Zürich 😀 – doppelte Belastung","metadata":{"customer":{"id":"cus_42","tags":["vip","ü"]},"lines":[{"sku":"A-1","qty":2}]},"price":12.50}`},
		{"64KiB", benchArgs(64 << 10)},
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
