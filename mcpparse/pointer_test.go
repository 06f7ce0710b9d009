package mcpparse

import (
	"strconv"
	"strings"
	"testing"
)

func TestPointerAt(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","filters":{"a/b~":[1,{"deep":{}}]}}}}`
	at := func(s string, nth int) int {
		i := -1
		for range nth {
			i += 1 + strings.Index(body[i+1:], s)
		}
		return i
	}
	for _, tt := range []struct {
		name string
		give int
		want string
	}{
		{"the top level", 0, ""},
		{"a member name", at(`"params"`, 1), "/params"},
		{"a value", at(`{"query"`, 1), "/params/arguments"},
		{"a name escaped", at(`[1,`, 1), "/params/arguments/filters/a~1b~0"},
		{"an array element", at(`{"deep"`, 1), "/params/arguments/filters/a~1b~0/1"},
		{"deeper", at(`{}`, 1), "/params/arguments/filters/a~1b~0/1/deep"},
		{"past the end", len(body) + 5, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PointerAt([]byte(body), tt.give); got != tt.want {
				t.Errorf("PointerAt(%d) = %q, want %q", tt.give, got, tt.want)
			}
		})
	}
	long := `{"` + strings.Repeat("ü", 20) + `":{"a":1}}`
	if got, want := PointerAt([]byte(long), strings.Index(long, `{"a"`)), "/"+strings.Repeat("ü", 16)+"…"; got != want {
		t.Errorf("a long name: %q, want %q", got, want)
	}
	deep := strings.Repeat(`{"abcdefghij":`, 40) + "1" + strings.Repeat("}", 40)
	if got := PointerAt([]byte(deep), strings.Index(deep, "1")); len(got) > maxPointerLen+len("/…") || !strings.HasSuffix(got, "/…") {
		t.Errorf("a deep pointer is not cut: %d bytes %q", len(got), got)
	}
}

// TestPointerAtParseErrors: the pointer of a limit's ParseError names the
// member whose value broke it.
func TestPointerAtParseErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		lim  Limits
		body string
		want string
	}{
		{"too deep", Limits{MaxDepth: 3}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"q":"x","filters":{"a":1}}}}`, "/params/arguments/filters"},
		{"string too long", Limits{MaxStringLen: 11}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"q":"xxxxxxxxxxxxxxx"}}}`, "/params/arguments/q"},
		{"too many keys", Limits{MaxKeys: 6}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"a":1,"b":2}}}`, "/params/arguments/a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body), ParseOptions{Limits: tt.lim})
			pe, ok := err.(*ParseError)
			if !ok {
				t.Fatalf("Parse: %v, want a ParseError", err)
			}
			if got := PointerAt([]byte(tt.body), int(pe.Offset)); got != tt.want {
				t.Errorf("%v: pointer %q, want %q", pe, got, tt.want)
			}
		})
	}
}

// FuzzPointerAt checks PointerAt against an independent oracle: a JSON
// document generated from the fuzz input, each value's offset and pointer
// recorded as it is written. Names are short ASCII, some with "~" and "/".
func FuzzPointerAt(f *testing.F) {
	f.Add([]byte{3, 1, 2, 0, 4, 5, 1, 0})
	f.Add([]byte("structure from bytes"))
	f.Fuzz(func(t *testing.T, seed []byte) {
		g := &pointerGen{seed: seed}
		g.value("", 0)
		doc := g.out.String()
		for i, off := range g.offs {
			if got := PointerAt([]byte(doc), off); got != g.ptrs[i] {
				t.Fatalf("%s: PointerAt(%d) = %q, want %q", doc, off, got, g.ptrs[i])
			}
		}
	})
}

// pointerGen writes a JSON document whose shape the seed bytes choose,
// recording where each value starts and its pointer.
type pointerGen struct {
	seed []byte
	out  strings.Builder
	offs []int
	ptrs []string
}

func (g *pointerGen) next() byte {
	if len(g.seed) == 0 {
		return 0
	}
	b := g.seed[0]
	g.seed = g.seed[1:]
	return b
}

func (g *pointerGen) value(ptr string, depth int) {
	if g.next()%2 == 0 {
		g.out.WriteString(" ")
	}
	g.offs, g.ptrs = append(g.offs, g.out.Len()), append(g.ptrs, ptr)
	kind := g.next() % 5
	if depth > 6 {
		kind = 0
	}
	switch kind {
	case 0:
		g.out.WriteString(strconv.Itoa(int(g.next())))
	case 1:
		g.out.WriteString(`"s,]}:\"{["`)
	case 2, 3:
		n := int(g.next() % 4)
		g.out.WriteByte('[')
		for i := range n {
			if i > 0 {
				g.out.WriteString(",")
			}
			g.value(ptr+"/"+strconv.Itoa(i), depth+1)
		}
		g.out.WriteByte(']')
	case 4:
		n := int(g.next() % 4)
		g.out.WriteByte('{')
		for i := range n {
			if i > 0 {
				g.out.WriteString(", ")
			}
			name := []string{"a", "b~", "c/d", `e\"`, "f"}[g.next()%5]
			seg := strings.NewReplacer("~", "~0", "/", "~1", `\"`, `"`).Replace(name)
			g.out.WriteString(`"` + name + `": `)
			g.value(ptr+"/"+seg, depth+1)
		}
		g.out.WriteByte('}')
	}
}

// BenchmarkPointerAt: the pointer of a fault at the end of a 1 MiB body,
// against Parse of the same body (what the refused request cost already).
func BenchmarkPointerAt(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"rows":[`)
	for i := 0; sb.Len() < 1<<20-64; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"k":"value","n":12345}`)
	}
	sb.WriteString(`]}}}`)
	body := []byte(sb.String())
	off := len(body) - 5
	b.Run("Parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := Parse(body, ParseOptions{Limits: Limits{MaxKeys: 1 << 20, MaxElements: 1 << 20}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PointerAt", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if PointerAt(body, off) == "" {
				b.Fatal("no pointer")
			}
		}
	})
}
