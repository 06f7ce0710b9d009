package mcpparse

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeExact: for every value Canonicalize accepts, DecodeExact gives
// what encoding/json gives with UseNumber (the independent oracle):
// numbers as their literal json.Number, strings unescaped.
func FuzzDecodeExact(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.50,-0,1e2,"x\u00e9\n"],"b":{"c":null,"d":true}}`, `"\ud83d\ude00"`, `[[[]]]`, `12345678901234567`, ` {"k" : 1 } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Canonicalize(b, Limits{}); err != nil {
			return
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var want any
		if err := d.Decode(&want); err != nil {
			t.Fatalf("Canonicalize accepted %q, encoding/json did not: %v", b, err)
		}
		if got := DecodeExact(b); !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeExact(%q) = %#v, want %#v", b, got, want)
		}
	})
}

// TestExactArguments: absent arguments are the empty object.
func TestExactArguments(t *testing.T) {
	body, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := body.Messages[0].ExactArguments(); !reflect.DeepEqual(got, map[string]any{}) {
		t.Errorf("%#v, want an empty map", got)
	}
	body, err = Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"n":1.50}}}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := body.Messages[0].ExactArguments(); !reflect.DeepEqual(got, map[string]any{"n": json.Number("1.50")}) {
		t.Errorf("%#v, want the literal 1.50", got)
	}
}
