package mcpparse

import (
	"strconv"
	"strings"
	"testing"
)

// benchArgs returns a tools/call arguments object of about n bytes, mixed
// like real traffic: non-ASCII strings, integers, floats, nested arrays and
// a few objects, within the default key and value limits.
func benchArgs(n int) string {
	var b strings.Builder
	b.WriteString(`{"query":"refund policy Zürich 🧾","limit":10,"filters":{"region":"eu","dateRange":{"from":"2025-01-01","to":"2025-12-31"}},"items":[`)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`["sku-` + strconv.Itoa(i) + `",` + strconv.Itoa(i%7) + `,12.5,"Kunde aus Zürich 😀 – doppelte Belastung \"x\"\n",true,null]`)
	}
	b.WriteString(`]}`)
	return b.String()
}

func BenchmarkParse(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1<<20 - 256}}
	for _, s := range sizes {
		body := []byte(call(benchArgs(s.n)))
		if _, err := Parse(body, ParseOptions{}); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(body, ParseOptions{}); err != nil {
					b.Fatal(err)
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
