package mcpparse

import (
	"runtime"
	"strings"
	"testing"
)

func TestDefaultLimits(t *testing.T) {
	want := Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxKeys: 10000, MaxElements: 100000, MaxStringLen: 256 << 10, MaxBatch: 100}
	if got := DefaultLimits(); got != want {
		t.Errorf("DefaultLimits() = %+v, want %+v", got, want)
	}
	if got := (Limits{}).withDefaults(); got != want {
		t.Errorf("Limits{}.withDefaults() = %+v, want %+v", got, want)
	}
	if got := (Limits{MaxDepth: -1}).withDefaults(); got != want {
		t.Errorf("negative fields: %+v, want %+v", got, want)
	}
}

func TestLimits(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	big := Limits{MaxBytes: 64 << 20}
	tests := []struct {
		name string
		give string
		lim  Limits
		want ErrorKind // 0: accepted
	}{
		{"size at limit", `"` + strings.Repeat("a", 8) + `"`, Limits{MaxBytes: 10}, 0},
		{"size over limit", `"` + strings.Repeat("a", 9) + `"`, Limits{MaxBytes: 10}, ErrTooLarge},
		{"depth at limit", nest(3), Limits{MaxDepth: 3}, 0},
		{"depth over limit", nest(4), Limits{MaxDepth: 3}, ErrTooDeep},
		{"object depth over limit", `{"a":{"b":{"c":{}}}}`, Limits{MaxDepth: 3}, ErrTooDeep},
		{"default depth 64", nest(64), Limits{}, 0},
		{"default depth 65", nest(65), Limits{}, ErrTooDeep},
		{"10k brackets", strings.Repeat("[", 10000), Limits{}, ErrTooDeep},
		{"keys at limit", `{"a":1,"b":{"c":2}}`, Limits{MaxKeys: 3}, 0},
		{"keys over limit", `{"a":1,"b":{"c":2,"d":3}}`, Limits{MaxKeys: 3}, ErrTooManyKeys},
		{"values at limit", `[1,[2]]`, Limits{MaxElements: 4}, 0},
		{"values over limit", `[1,[2,3]]`, Limits{MaxElements: 4}, ErrTooManyElements},
		{"default values 100001", "[" + strings.Repeat("0,", 100000) + "0]", Limits{}, ErrTooManyElements},
		{"string at limit", `"aaaa"`, Limits{MaxStringLen: 4}, 0},
		{"string over limit", `"aaaaa"`, Limits{MaxStringLen: 4}, ErrStringTooLong},
		{"escaped string at limit", `"a\u0062\n\\"`, Limits{MaxStringLen: 4}, 0},
		{"escaped string over limit", `"a\u0062\n\\c"`, Limits{MaxStringLen: 4}, ErrStringTooLong},
		{"escape decoding counts bytes", `"\u00e9\u00e9\u00e9"`, Limits{MaxStringLen: 5}, ErrStringTooLong},
		{"key over limit", `{"aaaaa":1}`, Limits{MaxStringLen: 4}, ErrStringTooLong},
		{"1 MiB body", `"` + strings.Repeat("a", 1<<20) + `"`, big, ErrStringTooLong},
		{"over 1 MiB body", strings.Repeat(" ", 1<<20) + "1", Limits{}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Canonicalize([]byte(tt.give), tt.lim)
			if tt.want == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			wantKind(t, err, tt.want)
		})
	}
}

func TestLimitsBatch(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name string
		give int
		want ErrorKind
	}{
		{"at limit", 3, 0},
		{"over limit", 4, ErrTooManyElements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := "[" + strings.TrimSuffix(strings.Repeat(ok+",", tt.give), ",") + "]"
			_, err := Parse([]byte(body), ParseOptions{AllowBatch: true, Limits: Limits{MaxBatch: 3}})
			if tt.want == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantKind(t, err, tt.want)
		})
	}
}

// allocated returns the bytes f allocates. Tests here are not parallel, so
// the figure is f's own, give or take the runtime's background noise.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Hostile bodies must fail with the right kind after bounded work: the
// parser stops at the limit instead of reading (or allocating) the rest.
func TestLimitsHostileBodies(t *testing.T) {
	// A failing parse may allocate in proportion to the limits, never to
	// the body: 1 MiB plus 256 bytes per value or key it was allowed.
	budget := func(lim Limits) uint64 {
		lim = lim.withDefaults()
		return 1<<20 + 256*uint64(max(lim.MaxElements, lim.MaxKeys))
	}
	fiftyMB := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"s":"` +
		strings.Repeat("A", 50<<20) + `"}}}`
	fiftyMBEscaped := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"s":"` +
		strings.Repeat(`\u0041`, 9<<20) + `"}}}`
	var keys strings.Builder
	keys.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{`)
	for i := range 1_000_000 {
		if i > 0 {
			keys.WriteByte(',')
		}
		keys.WriteString(`"k`)
		keys.WriteString(itoa36(i))
		keys.WriteString(`":0`)
	}
	keys.WriteString(`}}}`)
	million := keys.String()
	deep := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":` +
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}}`
	wide := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[` + strings.Repeat("0,", 1_000_000) + `0]}}`
	huge := Limits{MaxBytes: 128 << 20}
	tests := []struct {
		name string
		give string
		lim  Limits
		want ErrorKind
	}{
		{"50 MB string, default limits", fiftyMB, Limits{}, ErrTooLarge},
		{"50 MB string, large MaxBytes", fiftyMB, huge, ErrStringTooLong},
		{"54 MB escaped string, large MaxBytes", fiftyMBEscaped, huge, ErrStringTooLong},
		{"million keys, default limits", million, Limits{}, ErrTooLarge},
		{"million keys, large MaxBytes", million, huge, ErrTooManyKeys},
		{"10k nested arrays", deep, Limits{}, ErrTooDeep},
		{"million elements, large MaxBytes", wide, huge, ErrTooManyElements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Parse([]byte(tt.give), ParseOptions{Limits: tt.lim}) })
			// []byte(tt.give) copies the body itself; count only the rest.
			if b := budget(tt.lim); n > uint64(len(tt.give))+b {
				t.Errorf("allocated %d bytes beyond the body, want at most %d", n-uint64(len(tt.give)), b)
			}
			wantKind(t, err, tt.want)
		})
	}
}

func itoa36(i int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 36 {
		b = append([]byte{digits[i%36]}, b...)
	}
	return string(b)
}
