package argschema

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// benchSchema and benchArgs: records {id, name, tags, amount} under items,
// about kib KiB of them (decision's BenchmarkArgumentsValidation uses the
// same shape through the whole Check).
const benchSchema = `{"type":"object","properties":{` +
	`"account":{"type":"string","pattern":"^[a-z0-9-]+$"},"dryRun":{"type":"boolean"},` +
	`"items":{"type":"array","maxItems":10000,"items":{"type":"object","properties":{` +
	`"id":{"type":"integer","minimum":0},"name":{"type":"string","maxLength":64},` +
	`"tags":{"type":"array","items":{"enum":["a","b","c"]}},"amount":{"type":"number","multipleOf":0.01}},` +
	`"required":["id","name"]}}},"required":["account","items"]}`

func benchArgs(kib int) []byte {
	var b strings.Builder
	b.WriteString(`{"account":"acct-42","dryRun":false,"items":[`)
	for i := 0; b.Len() < kib<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"record number %d","tags":["a","c"],"amount":%d.25}`, i, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkValidate: the fast path and the library (decoding included) on
// the same schema and arguments; ns/op per KiB is what a Check pays.
func BenchmarkValidate(b *testing.B) {
	s, err := Compile([]byte(benchSchema))
	if err != nil || !s.Fast() {
		b.Fatal(err, s.Fast())
	}
	for _, kib := range []int{1, 8} {
		args := benchArgs(kib)
		b.Run(fmt.Sprintf("fast/%dKiB", kib), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(args)))
			start := cpuTime(b)
			for b.Loop() {
				if f := s.ValidateRaw(args); f != nil {
					b.Fatal(f)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("library/%dKiB", kib), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(args)))
			start := cpuTime(b)
			for b.Loop() {
				if f := s.Validate(mcpparse.DecodeExact(args)); f != nil {
					b.Fatal(f)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompileCost: the work bound (checkCost) against the whole
// Compile it is part of, on the benchmark's schema, on a union of 40
// object variants (as zod writes), and on 200 allOf branches each naming
// a property that refers back to the root (the bound's own worst kind:
// every closure holds every branch); once per tool definition.
func BenchmarkCompileCost(b *testing.B) {
	var back []string
	for i := range 200 {
		back = append(back, `{"properties":{"p`+strconv.Itoa(i)+`":{"$ref":"#"}}}`)
	}
	recursive := `{"type":"object","allOf":[` + strings.Join(back, ",") + `]}`
	for _, tt := range []struct{ name, schema string }{{"records", benchSchema}, {"union40", unionOf(40)}, {"backrefs200", recursive}} {
		s, err := Compile([]byte(tt.schema))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tt.name+"/compile", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := Compile([]byte(tt.schema)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/checkCost", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := checkCost(s.s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
