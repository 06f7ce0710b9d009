package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSkip(t *testing.T) {
	for _, tt := range []struct {
		give string
		at   int
		want int
	}{
		{give: `"abc"`, want: 5},
		{give: `"a\"b"`, want: 6},
		{give: `"a\\"b"`, want: 5},
		{give: `"a\\\"b"`, want: 8},
		{give: `"\u0022"`, want: 8},
		{give: `"é☃😀"`, want: len(`"é☃😀"`)},
		{give: `123,`, want: 3},
		{give: `-1.5e+3}`, want: 7},
		{give: `true]`, want: 4},
		{give: `null `, want: 4},
		{give: `false`, want: 5},
		{give: `{}`, want: 2},
		{give: `[]`, want: 2},
		{give: `{"a":[1,{"b":"}]"}],"c":"\\"} tail`, want: 29},
		{give: `[[[[[[[[[[]]]]]]]]]]`, want: 20},
		{give: `[1, 2 , "x" ]  `, want: 13},
		{give: `  1`, at: 2, want: 3},
		// Brackets are counted, not matched by kind.
		{give: `[}`, want: 2},
		// What cannot be walked.
		{give: ``, want: -1},
		{give: `1`, at: 1, want: -1},
		{give: `1`, at: -1, want: -1},
		{give: `"abc`, want: -1},
		{give: `"abc\"`, want: -1},
		{give: `{"a":1`, want: -1},
		{give: `[[]`, want: -1},
		{give: `{"a":"}`, want: -1},
		{give: `,`, want: -1},
		{give: `}`, want: -1},
		{give: ` 1`, want: -1},
	} {
		if got := Skip([]byte(tt.give), tt.at); got != tt.want {
			t.Errorf("Skip(%q, %d) = %d, want %d", tt.give, tt.at, got, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, tt := range []struct {
		give string
		want int
	}{
		{give: `""`, want: 2},
		{give: `"\\"`, want: 4},
		{give: `"\\\\" "`, want: 6},
		{give: `"\""`, want: 4},
		{give: `"x"y"`, want: 3},
		{give: `x"`, want: -1},
		{give: `"`, want: -1},
		{give: `"\"`, want: -1},
	} {
		if got := String([]byte(tt.give), 0); got != tt.want {
			t.Errorf("String(%q) = %d, want %d", tt.give, got, tt.want)
		}
	}
}

// TestStringByteByByte: the IndexByte walk ends each string literal where
// a byte by byte reading of its escapes does, on runs of backslashes of
// every length before a quote and on escaped quotes.
func TestStringByteByByte(t *testing.T) {
	slow := func(in []byte, i int) int {
		for j := i + 1; j < len(in); j++ {
			switch in[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	}
	lits := []string{`""`, `"a"`, `"\""`, `"\\"`, `"\\\""`, `"\\\\"`, `"a\\\\\"b\\"`, `"\u0022\"x"`, `"é\"\\\\\\"`, `"\/"`}
	// Escapes on each side of the 8-byte words String reads first.
	for p := range 20 {
		pad := strings.Repeat("a", p)
		lits = append(lits, `"`+pad+`"`, `"`+pad+`\""`, `"`+pad+`\\"`, `"`+pad+`\\\"x"`, `"x\"`+pad+`\\"`)
	}
	for _, lit := range lits {
		if !json.Valid([]byte(lit)) {
			t.Fatalf("%s is not a JSON string", lit)
		}
		for _, tail := range []string{`,"x":"\\"}`, ``, `\`, `\"`} {
			in := []byte(`{"k":` + lit + tail)
			i := len(`{"k":`)
			if got, want := String(in, i), slow(in, i); got != want || got != i+len(lit) {
				t.Errorf("%s%s: %d, byte by byte %d, want %d", lit, tail, got, want, i+len(lit))
			}
		}
	}
	for _, unclosed := range []string{`"`, `"\"`, `"\\\"`, `"a\\\"\`} {
		if got, want := String([]byte(unclosed), 0), slow([]byte(unclosed), 0); got != want || got != -1 {
			t.Errorf("%s: %d, byte by byte %d, want -1", unclosed, got, want)
		}
	}
}

func TestSkipSpace(t *testing.T) {
	for _, tt := range []struct {
		give string
		want int
	}{
		{give: ``, want: 0},
		{give: " \t\r\n", want: 4},
		{give: " \t\r\nx ", want: 4},
		{give: "\v1", want: 0}, // not JSON white space
		{give: "\u00a01", want: 0},
	} {
		if got := SkipSpace([]byte(tt.give), 0); got != tt.want {
			t.Errorf("SkipSpace(%q) = %d, want %d", tt.give, got, tt.want)
		}
	}
}

// walk lists what an Iter yields: "name=value" per member, "value" per
// element, then "end=N".
func walk(it Iter) []string {
	var out []string
	for it.Next() {
		v := it.Value()
		if v == nil {
			out = append(out, "<unskippable>")
			continue
		}
		if n := it.Name(); n != nil {
			out = append(out, string(n)+"="+string(v))
		} else {
			out = append(out, string(v))
		}
	}
	return append(out, "end="+itoa(it.End()))
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestMembers(t *testing.T) {
	for _, tt := range []struct {
		give string
		want []string
	}{
		{give: `{}`, want: []string{"end=2"}},
		{give: ` { } `, want: []string{"end=4"}},
		{give: `{"a":1}`, want: []string{`"a"=1`, "end=7"}},
		{give: `{ "a" : [1,2] , "\u0062":{"c":"}"} }x`, want: []string{`"a"=[1,2]`, `"\u0062"={"c":"}"}`, "end=36"}},
		{give: `{"a":1,"a":2}`, want: []string{`"a"=1`, `"a"=2`, "end=13"}},
		// Malformed: each stops with End -1 where it stops fitting.
		{give: `{"a":1,}`, want: []string{`"a"=1`, "end=-1"}},
		{give: `{"a" 1}`, want: []string{"end=-1"}},
		{give: `{"a":1 "b":2}`, want: []string{`"a"=1`, "end=-1"}},
		{give: `{a:1}`, want: []string{"end=-1"}},
		{give: `{"a":}`, want: []string{"<unskippable>", "end=-1"}},
		{give: `{"a":1`, want: []string{`"a"=1`, "end=-1"}},
		{give: `{"a`, want: []string{"end=-1"}},
		{give: `{`, want: []string{"end=-1"}},
		{give: `[1]`, want: []string{"end=-1"}},
		{give: ``, want: []string{"end=-1"}},
	} {
		b := []byte(tt.give)
		got := walk(Members(b, SkipSpace(b, 0)))
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Members(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestElements(t *testing.T) {
	for _, tt := range []struct {
		give string
		want []string
	}{
		{give: `[]`, want: []string{"end=2"}},
		{give: `[ 1 , "a,]" ,{"b":[2]}, [] ,null]`, want: []string{"1", `"a,]"`, `{"b":[2]}`, "[]", "null", "end=33"}},
		{give: `[1,]`, want: []string{"1", "<unskippable>", "end=-1"}},
		{give: `[1 2]`, want: []string{"1", "end=-1"}},
		{give: `[1`, want: []string{"1", "end=-1"}},
		{give: `{}`, want: []string{"end=-1"}},
	} {
		b := []byte(tt.give)
		got := walk(Elements(b, 0))
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Elements(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestSetValueEnd walks a value with a second Iter and hands its end back.
func TestSetValueEnd(t *testing.T) {
	b := []byte(`{"list":[{"k":1},{"k":2}],"after":true}`)
	var got []string
	it := Members(b, 0)
	for it.Next() {
		if Equal(it.Name(), "list") {
			el := Elements(b, it.ValueOff())
			for el.Next() {
				got = append(got, string(el.Value()))
			}
			it.SetValueEnd(el.End())
			continue
		}
		got = append(got, string(it.Name())+"="+string(it.Value()))
	}
	want := `{"k":1} {"k":2} "after"=true`
	if strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	it = Members(b, 0)
	it.Next()
	if it.SetValueEnd(-1); it.Next() || it.End() != -1 {
		t.Errorf("after SetValueEnd(-1): Next goes on, End %d", it.End())
	}
}

func TestMember(t *testing.T) {
	obj := `{"name":"a","\u0063ursor":"c","Tools":[1],"tools":[2],"x":{"name":"inner"}}`
	for _, tt := range []struct {
		give string
		fold bool
		want string // "" for none
	}{
		{give: "name", want: `"a"`},
		{give: "cursor", want: `"c"`}, // written with an escape: compared decoded
		{give: "Cursor"},
		{give: "Cursor", fold: true, want: `"c"`},
		{give: "tools", want: `[2]`},
		{give: "Tools", want: `[1]`},
		{give: "TOOLS", fold: true, want: `[2]`}, // the last that folds
		{give: "toolſ", fold: true, want: `[2]`}, // U+017F folds to s
		{give: "inner"},
		{give: "nam"},
		{give: ""},
	} {
		v, ok := Member([]byte(obj), 0, tt.give, tt.fold)
		if string(v) != tt.want || ok != (tt.want != "") {
			t.Errorf("Member(%q, fold %v) = %q, %v; want %q", tt.give, tt.fold, v, ok, tt.want)
		}
	}
	if v, ok := Member([]byte(`[{"a":1}]`), 0, "a", false); ok || v != nil {
		t.Errorf("Member of an array = %q, %v", v, ok)
	}
}

func TestUnquote(t *testing.T) {
	for _, tt := range []struct {
		give   string
		want   string
		wantOK bool
	}{
		{give: `""`, want: "", wantOK: true},
		{give: `"abc"`, want: "abc", wantOK: true},
		{give: `"\"\\\/\b\f\n\r\t"`, want: "\"\\/\b\f\n\r\t", wantOK: true},
		{give: `"\u0061\u00e9\u2603"`, want: "aé☃", wantOK: true},
		{give: `"\ud83d\ude00"`, want: "😀", wantOK: true},
		{give: `"\uD83D\uDE00"`, want: "😀", wantOK: true},
		{give: `"\ud83d"`, want: "\ufffd", wantOK: true},        // lone high surrogate
		{give: `"\ude00x"`, want: "\ufffdx", wantOK: true},      // lone low surrogate
		{give: `"\ud83d\u0061"`, want: "\ufffda", wantOK: true}, // not a pair: both kept apart
		{give: `"\ud83d\ud83d\ude00"`, want: "\ufffd😀", wantOK: true},
		{give: "\"\xff\"", want: "\ufffd", wantOK: true},
		{give: "\"\xe2\x98\"", want: "\ufffd\ufffd", wantOK: true},
		{give: `"\x"`},
		{give: `"\u12"`},
		{give: `"\u12g4"`},
		{give: `"\"`},
		{give: `abc`},
		{give: `"`},
	} {
		got, ok := Unquote([]byte(tt.give))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Unquote(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
		if tt.wantOK {
			var j string
			if err := json.Unmarshal([]byte(tt.give), &j); err != nil || j != got {
				t.Errorf("Unquote(%q) = %q; encoding/json: %q, %v", tt.give, got, j, err)
			}
			if !Equal([]byte(tt.give), tt.want) || Equal([]byte(tt.give), tt.want+"x") {
				t.Errorf("Equal(%q, %q) disagrees with Unquote", tt.give, tt.want)
			}
		}
	}
}

func TestEqual(t *testing.T) {
	for _, tt := range []struct {
		give string
		s    string
		want bool
	}{
		{give: `"iss"`, s: "iss", want: true},
		{give: `"\u0069ss"`, s: "iss", want: true},
		{give: `"\u0069ss"`, s: `\u0069ss`},
		{give: `"iss"`, s: "is"},
		{give: `"is"`, s: "iss"},
		{give: `"ISS"`, s: "iss"},
		{give: "\"\xff\"", s: "\ufffd", want: true},
		{give: "\"\xff\"", s: "\xff"},
		{give: `"\ud800"`, s: "\ufffd", want: true},
		{give: `iss`, s: "iss"},
	} {
		if got := Equal([]byte(tt.give), tt.s); got != tt.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", tt.give, tt.s, got, tt.want)
		}
	}
}

func TestEqualFold(t *testing.T) {
	long := strings.Repeat(`\u0041`, 70) // decodes past the stack buffer
	for _, tt := range []struct {
		give string
		s    string
		want bool
	}{
		{give: `"tools"`, s: "tools", want: true},
		{give: `"TOOLS"`, s: "tools", want: true},
		{give: `"toolſ"`, s: "tools", want: true},
		{give: `"\u0054ools"`, s: "tools", want: true},
		{give: `"\u212Aey"`, s: "key", want: true}, // KELVIN SIGN
		{give: `"tool"`, s: "tools"},
		{give: `"` + long + `"`, s: strings.Repeat("a", 70), want: true},
		{give: `"\x"`, s: "x"},
		{give: `tools`, s: "tools"},
	} {
		if got := EqualFold([]byte(tt.give), tt.s); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.give, tt.s, got, tt.want)
		}
	}
}

// TestNoAllocs holds the walks of the hot paths to no allocation.
func TestNoAllocs(t *testing.T) {
	b := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"n\u0061me":"b"}],"nextCursor":"x"}}`)
	n := testing.AllocsPerRun(100, func() {
		it := Members(b, 0)
		for it.Next() {
			if EqualFold(it.Name(), "result") {
				if v, ok := Member(b, it.ValueOff(), "tools", true); ok {
					el := Elements(v, 0)
					for el.Next() {
						Member(v, el.ValueOff(), "name", true)
					}
				}
			}
			Equal(it.Name(), "id")
		}
		Skip(b, 0)
	})
	if n != 0 {
		t.Errorf("%v allocations per walk, want 0", n)
	}
}

// FuzzJSONScan checks the walker against encoding/json. For a text
// json.Valid accepts: Skip covers exactly its value, and for every value
// inside it, objects yield exactly the members a json.Decoder reads (names
// decoded as encoding/json decodes them, values as written), arrays
// exactly its elements, strings exactly json.Unmarshal's string: Unquote
// decodes it, Equal matches it and not other (unless they are one string)
// nor a neighbour, EqualFold agrees with bytes.EqualFold. For any other
// input: no panic, and no offset reported past the input.
func FuzzJSONScan(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-1.5e+10`, `true`, `null`,
		` {"a" : 1 , "b":[true,false,null] } `,
		`{"\u0061":"\ud83d\ude00","\ud800":"\\\"\/\b\f\n\r\t","é":"☃"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"deep":[[[[]]]]}]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"a":{"b":{"c":{"d":[1,[2,[3,{"e":"}]\""}]]]}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}],"nextCursor":"c"}}`,
		"\"\xff\xfe\"", `"\uDBFF\uDFFF"`, `{"a":1,"a":2}`,
		`{"a":1,}`, `[1,]`, `{"a" 1}`, `"abc`, `[}`, `{"a":"\`, `"\u12"`, `{"a":[1,2}`,
	} {
		f.Add([]byte(s), "a")
	}
	f.Add([]byte(`"\u0069ss"`), "iss")
	f.Add([]byte(`"\ud83d\ude00"`), "😀")
	f.Add([]byte(`"toolſ"`), "TOOLS")
	f.Fuzz(func(t *testing.T, data []byte, other string) {
		i := SkipSpace(data, 0)
		end := Skip(data, i)
		if end < -1 || end > len(data) {
			t.Fatalf("Skip = %d, past the input (%d bytes)", end, len(data))
		}
		if !json.Valid(data) {
			for _, it := range []Iter{Members(data, i), Elements(data, i)} {
				for it.Next() {
					checkIn(t, data, it)
				}
				if it.End() < -1 || it.End() > len(data) {
					t.Fatalf("End = %d, past the input (%d bytes)", it.End(), len(data))
				}
			}
			Unquote(data) // no panic
			Equal(data, other)
			EqualFold(data, other)
			return
		}
		if want := len(bytes.TrimRight(data, " \t\r\n")); end != want {
			t.Fatalf("Skip = %d, want %d", end, want)
		}
		checkValue(t, data[i:end], other, 0)
	})
}

// checkIn checks that the current member or element of it lies inside b.
func checkIn(t *testing.T, b []byte, it Iter) {
	if it.ValueOff() < 0 || it.ValueOff() >= len(b) || it.ValueEnd() > len(b) || len(it.Name()) > len(b) {
		t.Fatalf("an Iter reports offsets past the input: %d %d", it.ValueOff(), it.ValueEnd())
	}
}

// checkValue checks v, one JSON value as written, and the values inside it
// down to depth 64.
func checkValue(t *testing.T, v []byte, other string, depth int) {
	t.Helper()
	if Skip(v, 0) != len(v) {
		t.Fatalf("Skip(%q) = %d, want %d", v, Skip(v, 0), len(v))
	}
	if depth > 64 {
		return
	}
	switch v[0] {
	case '"':
		var want string
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("json.Unmarshal(%q): %v", v, err)
		}
		if got, ok := Unquote(v); !ok || got != want {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q", v, got, ok, want)
		}
		if !Equal(v, want) || Equal(v, want+"x") || len(want) > 0 && Equal(v, want[:len(want)-1]) || !EqualFold(v, want) {
			t.Fatalf("Equal(%q, %q) disagrees with encoding/json", v, want)
		}
		if Equal(v, other) != (other == want) {
			t.Fatalf("Equal(%q, %q) = %v; it decodes to %q", v, other, !(other == want), want)
		}
		if EqualFold(v, other) != bytes.EqualFold([]byte(want), []byte(other)) {
			t.Fatalf("EqualFold(%q, %q) = %v; it decodes to %q", v, other, !bytes.EqualFold([]byte(want), []byte(other)), want)
		}
	case '{':
		dec := json.NewDecoder(bytes.NewReader(v))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		it := Members(v, 0)
		last := map[string]string{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			if !it.Next() {
				t.Fatalf("Members(%q) stops before member %q (End %d)", v, tok, it.End())
			}
			name := tok.(string)
			if got, ok := Unquote(it.Name()); !ok || got != name || !Equal(it.Name(), name) {
				t.Fatalf("Members(%q): name %s decodes to %q, encoding/json: %q", v, it.Name(), got, name)
			}
			if !bytes.Equal(it.Value(), raw) {
				t.Fatalf("Members(%q): member %q = %s, encoding/json: %s", v, name, it.Value(), raw)
			}
			last[name] = string(raw)
			checkValue(t, it.Value(), other, depth+1)
		}
		if it.Next() || it.End() != len(v) {
			t.Fatalf("Members(%q) goes on past the members encoding/json reads (End %d)", v, it.End())
		}
		for name, raw := range last {
			if got, ok := Member(v, 0, name, false); !ok || string(got) != raw {
				t.Fatalf("Member(%q, %q) = %s, %v; want %s (the last)", v, name, got, ok, raw)
			}
		}
	case '[':
		dec := json.NewDecoder(bytes.NewReader(v))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		it := Elements(v, 0)
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			if !it.Next() || !bytes.Equal(it.Value(), raw) {
				t.Fatalf("Elements(%q): %s, encoding/json: %s", v, it.Value(), raw)
			}
			checkValue(t, it.Value(), other, depth+1)
		}
		if it.Next() || it.End() != len(v) {
			t.Fatalf("Elements(%q) goes on past the elements encoding/json reads (End %d)", v, it.End())
		}
		if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	}
}
