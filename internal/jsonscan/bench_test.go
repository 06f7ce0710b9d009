package jsonscan

import (
	"fmt"
	"strings"
	"testing"
)

// tools is a tools/list result's array of n tools, as BenchmarkFilter500
// (internal/listfilter) walks it.
func tools(n int) []byte {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"name":"tool_%d","description":"Tool number %d does something useful with its inputs and returns a result.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"the query"},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["q"]}}`, i, i)
	}
	sb.WriteByte(']')
	return []byte(sb.String())
}

// BenchmarkSkip skips a 500-tool array whole.
func BenchmarkSkip(b *testing.B) {
	in := tools(500)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if Skip(in, 0) != len(in) {
			b.Fatal("short")
		}
	}
}

// BenchmarkElementsMember walks a 500-tool array item by item and finds
// each item's name (under folding), as listfilter does.
func BenchmarkElementsMember(b *testing.B) {
	in := tools(500)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		el := Elements(in, 0)
		for el.Next() {
			m := Members(in, el.ValueOff())
			for m.Next() {
				if EqualFold(m.Name(), "name") {
					n++
				}
			}
			el.SetValueEnd(m.End())
		}
		if n != 500 {
			b.Fatal(n)
		}
	}
}

// BenchmarkMember finds two params members, as the decider does for
// cursor and taskId.
func BenchmarkMember(b *testing.B) {
	params := []byte(`{"cursor":"eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..abcdefghijklmnopqrstuvwxyz0123456789","_meta":{"progressToken":"abc"}}`)
	b.ReportAllocs()
	for b.Loop() {
		Member(params, 0, "cursor", false)
		Member(params, 0, "taskId", false)
	}
}
