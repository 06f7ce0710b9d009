package jcsoracle

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestNumberAppendixB: the IEEE 754 vectors of RFC 8785 Appendix B.
func TestNumberAppendixB(t *testing.T) {
	tests := []struct {
		give uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		if got := formatES(math.Float64frombits(tt.give)); got != tt.want {
			t.Errorf("%016x: got %s, want %s", tt.give, got, tt.want)
		}
	}
}

// TestNumberAgainstGowebpki cross-checks the formatter with another
// implementation on random doubles (the oracle must be right before it
// judges anything).
func TestNumberAgainstGowebpki(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, err := jcs.NumberToJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatES(f); got != want {
			t.Fatalf("%v (%016x): got %s, gowebpki/jcs %s", f, math.Float64bits(f), got, want)
		}
	}
}

// TestTransformRFCVectors: the RFC 8785 test inputs under
// mcpparse/testdata/jcs.
func TestTransformRFCVectors(t *testing.T) {
	dir := filepath.Join("..", "..", "mcpparse", "testdata", "jcs")
	inputs, err := filepath.Glob(filepath.Join(dir, "*.input.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no vectors in %s: %v", dir, err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			give, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.Replace(in, ".input.", ".output.", 1))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Transform(give)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != strings.TrimRight(string(want), "\n") {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestTransform(t *testing.T) {
	tests := []struct {
		give, want string // want "" means an error
	}{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{`{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}`, "{\"\u20ac\":1,\"\U0001F600\":2,\"\ufb33\":3}"}, // UTF-16 order: U+D83D < U+FB33
		{`"\u0001\u001f\u007f</>"`, "\"\\u0001\\u001f\u007f</>\""},
		{`-0.0`, `0`},
		{`1E400`, ``},
		{`{"a":1,"a":2}`, ``},
		{`{} x`, ``},
		{"\"\xff\"", ``},
	}
	for _, tt := range tests {
		got, err := Transform([]byte(tt.give))
		if tt.want == "" {
			if err == nil {
				t.Errorf("Transform(%s) = %s, want an error", tt.give, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("Transform(%s) = %s, %v; want %s", tt.give, got, err, tt.want)
		}
	}
	if d, err := Digest([]byte(`{}`)); err != nil || d != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("Digest({}) = %s, %v", d, err)
	}
}
