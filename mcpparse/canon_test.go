package mcpparse

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
)

var jcsVectors = []string{"arrays", "french", "structures", "unicode", "values", "weird"}

func readVector(t *testing.T, name string) (in, out []byte) {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", "jcs", name+".input.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = os.ReadFile(filepath.Join("testdata", "jcs", name+".output.json"))
	if err != nil {
		t.Fatal(err)
	}
	return in, out
}

// TestCanonicalizeRFC8785Vectors runs the RFC 8785 examples through
// Canonicalize. Two are rejected by our stricter rules (see
// testdata/jcs/README.md); TestRFC8785VectorsLenient checks their bytes.
func TestCanonicalizeRFC8785Vectors(t *testing.T) {
	rejected := map[string]ErrorKind{
		"structures": ErrCaseVariantKey,     // "f"/"F", "e"/"E", "a"/"A"
		"values":     ErrNonCanonicalNumber, // 333333333.33333329
	}
	for _, name := range jcsVectors {
		t.Run(name, func(t *testing.T) {
			in, want := readVector(t, name)
			got, err := Canonicalize(in, Limits{})
			if k, ok := rejected[name]; ok {
				wantKind(t, err, k)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestRFC8785VectorsLenient checks the serializer itself on every vector,
// with the two checks beyond RFC 8785 switched off.
func TestRFC8785VectorsLenient(t *testing.T) {
	for _, name := range jcsVectors {
		t.Run(name, func(t *testing.T) {
			in, want := readVector(t, name)
			got, err := canonicalize(in, DefaultLimits(), true)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestValuesVectorWithoutTheInexactNumber(t *testing.T) {
	in, want := readVector(t, "values")
	in = bytes.Replace(in, []byte("333333333.33333329"), []byte("333333333.3333333"), 1)
	got, err := Canonicalize(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{` { "b" : 1 , "a" : [ true , false , null ] } `, `{"a":[true,false,null],"b":1}`},
		{`"\u0000\u001f\u007f\u2028\/\b\f\n\r\t"`, `"\u0000\u001f` + "\x7f\u2028" + `/\b\f\n\r\t"`},
		{`"\u00e9"`, `"é"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`{"\ue000":1,"\ud83d\ude00":2}`, `{"😀":2,"` + "\ue000" + `":1}`},    // UTF-16 order: D83D < E000
		{`{"\ud83d\ude01":1,"\ud83d\ude00":2}`, `{"😀":2,"😁":1}`},             // same high surrogate
		{`{"b":1,"a":{"d":1,"c":2},"":0}`, `{"":0,"a":{"c":2,"d":1},"b":1}`}, // nested and empty name
		{`{"aa":1,"a":2}`, `{"a":2,"aa":1}`},                                 // prefix sorts first
		// Repeated shapes: the second object starts like the first, then
		// differs; the third is the first again; the fourth a prefix.
		{`[{"b":1,"a":2},{"b":1,"c":3,"a":2},{"b":1,"a":2},{"b":1}]`, `[{"a":2,"b":1},{"a":2,"b":1,"c":3},{"a":2,"b":1},{"b":1}]`},
		{`[{"b":1,"a":{"y":1,"x":2}},{"b":2,"a":{"y":3,"x":4,"w":5}}]`, `[{"a":{"x":2,"y":1},"b":1},{"a":{"w":5,"x":4,"y":3},"b":2}]`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`-0`, `0`},
		{`1E2`, `100`},
		{`"é"`, `"é"`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.give), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			// Cross-check with an independent RFC 8785 implementation.
			ref, err := jcsoracle.Transform([]byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, ref) {
				t.Errorf("the RFC 8785 oracle gives %s", ref)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct {
		give string
		want ErrorKind
	}{
		{`{"id":9007199254740993}`, ErrNonCanonicalNumber}, // no id exemption here
		{`{"a":1,"A":2}`, ErrCaseVariantKey},
		{`{"a":1,"\u0061":2}`, ErrDuplicateKey},
		{`[{"b":1,"a":2},{"b":1,"a":2,"b":3}]`, ErrDuplicateKey},   // after names that match the previous shape
		{`[{"b":1,"a":2},{"b":1,"a":2,"A":3}]`, ErrCaseVariantKey}, // same
		{`"\udfff"`, ErrInvalidUTF8},
		{`1 2`, ErrTrailingData},
		{"\xEF\xBB\xBF1", ErrSyntax},
		{``, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := Canonicalize([]byte(tt.give), Limits{})
			pe := wantKind(t, err, tt.want)
			if pe.Index != -1 {
				t.Errorf("Index = %d, want -1", pe.Index)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{``, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{`{}`, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	}
	for _, tt := range tests {
		if got := Digest([]byte(tt.give)); got != tt.want {
			t.Errorf("Digest(%q) = %s, want %s", tt.give, got, tt.want)
		}
	}
}

// TestNumberFastPathAgainstReference compares the canonical form (or the
// error) of random number literals, many of them short decimals that take
// the fast path (at most 15 significant digits), with the tree parser's,
// which formats every non-integer through strconv and jcs.NumberToJSON.
func TestNumberFastPathAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	for range n {
		sameNumber(t, randomNumber(rng))
	}
}

// TestShortestNumbersAgainstReference does the same for the literals the
// fast path leaves to strconv: random doubles of every magnitude (subnormals
// included) in their shortest round-trip digits, laid out as Go, JavaScript
// and Python print them, with trailing zeros added, and with the last digit
// moved or one more digit appended (which must be refused as not the
// double's exact value).
func TestShortestNumbersAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 20))
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	var accepted int
	for range n {
		var f float64
		switch rng.IntN(3) {
		case 0:
			f = math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7ff))<<52) // any finite
		case 1:
			f = (rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(40)-20))
		default:
			f = float64(rng.Int64N(1<<54) - 1<<53) // integers around 2^53
		}
		lits := [][]byte{
			strconv.AppendFloat(nil, f, 'g', -1, 64),
			strconv.AppendFloat(nil, f, 'e', -1, 64),
			strconv.AppendFloat(nil, f, 'E', -1, 64),
			strconv.AppendFloat(nil, f, 'f', -1, 64),
		}
		e := strconv.AppendFloat(nil, f, 'e', -1, 64)
		i := bytes.IndexByte(e, 'e')
		lits = append(lits,
			append(append(append([]byte(nil), e[:i]...), '0', '0'), e[i:]...), // trailing zeros
			append(append(append([]byte(nil), e[:i]...), '1'), e[i:]...),      // one more digit
		)
		if d := e[i-1]; d > '0' && d < '9' { // the last digit moved by one
			up := append([]byte(nil), e...)
			up[i-1]++
			lits = append(lits, up)
		}
		for _, lit := range lits {
			if sameNumber(t, lit) {
				accepted++
			}
		}
	}
	if accepted < n { // the shortest forms themselves are always accepted
		t.Fatalf("only %d literals accepted", accepted)
	}
}

// sameNumber fails t unless Canonicalize gives lit the canonical form, or
// the error kind and offset, that the tree parser gives it; it reports
// whether lit was accepted.
func sameNumber(t *testing.T, lit []byte) bool {
	t.Helper()
	got, err := Canonicalize(lit, Limits{})
	want, werr := refCanonicalize(lit, Limits{})
	if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%s: got %s (%v), reference %s (%v)", lit, got, err, want, werr)
	}
	if err != nil {
		var pe, we *ParseError
		if !errors.As(err, &pe) || !errors.As(werr, &we) || pe.Kind != we.Kind || pe.Offset != we.Offset {
			t.Fatalf("%s: got %v, reference %v", lit, err, werr)
		}
	}
	return err == nil
}

// randomNumber returns a random RFC 8259 number literal.
func randomNumber(rng *rand.Rand) []byte {
	var b []byte
	if rng.IntN(2) == 0 {
		b = append(b, '-')
	}
	digits := func(n int, lead bool) {
		for i := range n {
			c := byte('0' + rng.IntN(10))
			if i == 0 && lead && c == '0' {
				c = '1'
			}
			if rng.IntN(3) == 0 {
				c = '0' // trailing and inner zeros are the interesting cases
			}
			if i == 0 && lead && c == '0' {
				c = '9'
			}
			b = append(b, c)
		}
	}
	if rng.IntN(4) == 0 {
		b = append(b, '0')
	} else {
		digits(1+rng.IntN(18), true)
	}
	if rng.IntN(2) == 0 {
		b = append(b, '.')
		digits(1+rng.IntN(20), false)
	}
	if rng.IntN(2) == 0 {
		b = append(b, "eE"[rng.IntN(2)])
		if s := rng.IntN(3); s > 0 {
			b = append(b, "+-"[s-1])
		}
		b = strconv.AppendInt(b, int64(rng.IntN(340)), 10)
	}
	return b
}

// TestCompareUTF16 checks the member-name order against the tree parser's
// rune-decoding comparison, on names mixing ASCII, U+0080..U+D7FF,
// U+E000..U+FFFF and supplementary-plane runes.
func TestCompareUTF16(t *testing.T) {
	runes := []rune{'a', 'b', 'é', '\u2028', '\ud7ff', '\ue000', '\uffff', '😀', '\U0010ffff', 0x10000}
	rng := rand.New(rand.NewPCG(1, 2))
	name := func() string {
		var b []rune
		for range rng.IntN(4) {
			b = append(b, runes[rng.IntN(len(runes))])
		}
		return string(b)
	}
	sign := func(n int) int { return min(max(n, -1), 1) }
	for range 20_000 {
		a, b := name(), name()
		if got, want := sign(compareUTF16([]byte(a), []byte(b))), sign(refCompareUTF16(a, b)); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, reference %d", a, b, got, want)
		}
	}
}

// TestEscapesCopiedOnlyWhenCanonical: a string whose escapes are all the
// ones RFC 8785 writes is copied from the input; any other escape is
// decoded and written again. Each form, as a value and as a member name,
// against internal/jcsoracle.
func TestEscapesCopiedOnlyWhenCanonical(t *testing.T) {
	for _, give := range []string{
		`"plain"`, `"\""`, `"\\"`, `"\b\f\n\r\t"`, `"\u0000\u001f\u0001\u000b"`, // RFC 8785's own
		`"\/"`, `"\u0041"`, `"\u001F"`, `"\u001E"`, `"\u0008"`, `"\u0009"`, `"\u000a"`, `"\u000C"`, `"\u000d"`,
		`"\u0022"`, `"\u005c"`, `"\u007f"`, `"\u00e9"`, `"\u2028"`, `"\ud83d\ude00"`, `"a\/b\n"`, `"\n\u0041"`,
		`"\u0041\n"`, `"ж\t東\u001f😀"`, `"x\u00ff\b"`,
	} {
		for _, doc := range []string{`[` + give + `]`, `{` + give + `:1}`} {
			got, err := Canonicalize([]byte(doc), Limits{})
			want, oerr := jcsoracle.Transform([]byte(doc))
			if err != nil || oerr != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: got %s (%v), oracle %s (%v)", doc, got, err, want, oerr)
			}
		}
	}
}

// TestLargeObjectsReordered: objects past emitInPlace bytes, whose members
// RFC 8785 reorders with the largest anywhere (first, last, between), alone
// and as an array of one shape (the cached order), match jcsoracle.
func TestLargeObjectsReordered(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	member := func(name string, n int) string {
		return `"` + name + `":"` + strings.Repeat("x", n) + `"`
	}
	for range 300 {
		names := rng.Perm(2 + rng.IntN(6))
		var ms []string
		for _, k := range names {
			n := rng.IntN(200)
			if rng.IntN(3) == 0 {
				n = emitInPlace + rng.IntN(3*emitInPlace)
			}
			ms = append(ms, member(string(rune('a'+k)), n))
		}
		obj := `{` + strings.Join(ms, ",") + `}`
		for _, doc := range []string{obj, `[` + obj + `,` + obj + `,` + obj + `]`, `{"z":` + obj + `,"a":[` + obj + `]}`} {
			got, err := Canonicalize([]byte(doc), Limits{})
			want, oerr := jcsoracle.Transform([]byte(doc))
			if err != nil || oerr != nil || !bytes.Equal(got, want) {
				t.Fatalf("%.200s…: %v / %v, differs: %v", doc, err, oerr, !bytes.Equal(got, want))
			}
		}
	}
}

// TestLeafMembersCopied: objects of leaf members, in and out of RFC 8785
// order, with whitespace between members and around ':', values written
// otherwise (numbers laid out anew, escapes decoded), nested values, and
// repeated shapes (the cached order), match jcsoracle, alone and as arrays
// of the same object.
func TestLeafMembersCopied(t *testing.T) {
	for _, give := range []string{
		`{"a":1,"b":"x","c":true,"d":null,"e":false}`,        // identity, one run
		`{"e":1,"d":"x","c":true,"b":null,"a":false}`,        // reversed
		`{"a":1, "b":2,"c":3 ,"d":4}`,                        // whitespace breaks the run
		`{"a" :1,"b": 2,"c":3}`,                              // whitespace around ':'
		`{"b":1E2,"a":1}`, `{"a":1,"b":1.50,"c":-0,"d":0.0}`, // numbers written anew
		`{"b":"\u0041","a":"\/"}`, `{"a":"\n","b":"\u001f"}`, // escapes: copied, decoded
		`{"b":1,"a":[1,2]}`, `{"a":[1],"b":1}`, `{"c":1,"b":{"y":1,"x":2},"a":3}`, // nested
		`{"b":2,"a":1e1,"c":{"z":1}}`, `{"\u0062":1,"a":2}`, `{"é":1,"e":2,"z":3}`,
		`{"b":1,"a":2.5e-7,"c":"ж"}`, `{"a":1}`, `{"b":-1.5,"a":-0.0}`,
	} {
		for _, doc := range []string{give, `[` + give + `,` + give + `,` + give + `]`, `{"z":[` + give + `,` + give + `],"a":` + give + `}`} {
			got, err := Canonicalize([]byte(doc), Limits{})
			want, oerr := jcsoracle.Transform([]byte(doc))
			if err != nil || oerr != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: got %s (%v), oracle %s (%v)", doc, got, err, want, oerr)
			}
		}
	}
	// Shapes that alternate between all-leaf and nested members at one
	// depth.
	doc := `[{"b":1,"a":2},{"b":{"x":1},"a":2},{"b":1,"a":2},{"b":1,"a":[2]},{"b":"s","a":1E3},{"b":1,"a":2}]`
	got, err := Canonicalize([]byte(doc), Limits{})
	want, oerr := jcsoracle.Transform([]byte(doc))
	if err != nil || oerr != nil || !bytes.Equal(got, want) {
		t.Errorf("%s: got %s (%v), oracle %s (%v)", doc, got, err, want, oerr)
	}
}
