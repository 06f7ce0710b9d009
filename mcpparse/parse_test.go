package mcpparse

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// call wraps arguments JSON text in a tools/call envelope.
func call(args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + args + `}}`
}

func TestParseRejectsJSON(t *testing.T) {
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"empty", ``, ErrSyntax},
		{"whitespace only", " \n\t\r ", ErrSyntax},
		{"BOM", "\xEF\xBB\xBF" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ErrSyntax},
		{"invalid UTF-8 in string", call(`{"memo":"a` + "\xff" + `"}`), ErrInvalidUTF8},
		{"invalid UTF-8 byte 0xFE", call(`{"memo":"a` + "\xfe" + `"}`), ErrInvalidUTF8},
		{"invalid UTF-8 outside strings", `{"jsonrpc":"2.0"` + "\xc0\x80" + `}`, ErrInvalidUTF8},
		{"encoded surrogate in raw UTF-8", call(`{"memo":"` + "\xed\xa0\x80" + `"}`), ErrInvalidUTF8},
		{"lone high surrogate", call(`{"memo":"\ud800"}`), ErrInvalidUTF8},
		{"lone low surrogate", call(`{"memo":"\udc00"}`), ErrInvalidUTF8},
		{"high then non-low escape", call(`{"memo":"\ud800\u0041"}`), ErrInvalidUTF8},
		{"high then text", call(`{"memo":"\ud800x"}`), ErrInvalidUTF8},
		{"high then high", call(`{"memo":"\ud800\ud800"}`), ErrInvalidUTF8},
		{"reversed pair", call(`{"memo":"\udc00\ud800"}`), ErrInvalidUTF8},
		{"lone surrogate in key", call(`{"\udbff":1}`), ErrInvalidUTF8},
		{"duplicate key top", `{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}`, ErrDuplicateKey},
		{"duplicate key in params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, ErrDuplicateKey},
		{"duplicate key deep", call(`{"a":[{"b":{"c":1,"c":2}}]}`), ErrDuplicateKey},
		{"duplicate via escape", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","\u006eame":"b"}}`, ErrDuplicateKey},
		{"duplicate via escaped slash", call(`{"a/b":1,"a\/b":2}`), ErrDuplicateKey},
		{"duplicate via surrogate pair", call(`{"😀":1,"\ud83d\ude00":2}`), ErrDuplicateKey},
		{"duplicate in large object", call(`{` + manyKeys(40) + `,"k7":1}`), ErrDuplicateKey},
		{"case variant deep", call(`{"x":{"y":[{"path":"a","Path":"b"}]}}`), ErrCaseVariantKey},
		{"case variant in large object", call(`{` + manyKeys(40) + `,"K7":1}`), ErrCaseVariantKey},
		{"Kelvin sign", call(`{"k":1,"\u212a":2}`), ErrCaseVariantKey},
		{"Kelvin sign raw", call(`{"K":1,"` + "\u212a" + `":2}`), ErrCaseVariantKey},
		{"long s", call(`{"s":1,"\u017f":2}`), ErrCaseVariantKey},
		{"capital sharp s", call(`{"ß":1,"ẞ":2}`), ErrCaseVariantKey},
		{"greek sigma forms", call(`{"σ":1,"ς":2}`), ErrCaseVariantKey},
		{"trailing object", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}`, ErrTrailingData},
		{"trailing garbage", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}x`, ErrTrailingData},
		{"trailing NUL", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}` + "\x00", ErrTrailingData},
		{"trailing comma", `{"jsonrpc":"2.0","id":6,"method":"tools/list"},`, ErrTrailingData},
		{"leading zero", call(`{"n":01}`), ErrSyntax},
		{"plus sign", call(`{"n":+1}`), ErrSyntax},
		{"NaN", call(`{"n":NaN}`), ErrSyntax},
		{"Infinity", call(`{"n":Infinity}`), ErrSyntax},
		{"minus Infinity", call(`{"n":-Infinity}`), ErrSyntax},
		{"leading dot", call(`{"n":.5}`), ErrSyntax},
		{"trailing dot", call(`{"n":1.}`), ErrSyntax},
		{"bare exponent", call(`{"n":1e}`), ErrSyntax},
		{"exponent sign only", call(`{"n":1e+}`), ErrSyntax},
		{"lone minus", call(`{"n":-}`), ErrSyntax},
		{"hex", call(`{"n":0x10}`), ErrSyntax},
		{"minus leading zero", call(`{"n":-01}`), ErrSyntax},
		{"2^53+1", call(`{"n":9007199254740993}`), ErrNonCanonicalNumber},
		{"-(2^53+1)", call(`{"n":-9007199254740993}`), ErrNonCanonicalNumber},
		{"huge integer", call(`{"n":123456789012345678901234567890}`), ErrNonCanonicalNumber},
		{"too many digits", call(`{"n":0.10000000000000000555}`), ErrNonCanonicalNumber},
		{"overflow", call(`{"n":1e400}`), ErrNonCanonicalNumber},
		{"negative overflow", call(`{"n":-1e400}`), ErrNonCanonicalNumber},
		{"underflow", call(`{"n":1e-400}`), ErrNonCanonicalNumber},
		{"huge exponent", call(`{"n":1e999999999999999999999999}`), ErrNonCanonicalNumber},
		{"number in params outside arguments", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":9007199254740993}}`, ErrNonCanonicalNumber},
		{"number in error.code", `{"jsonrpc":"2.0","id":1,"error":{"code":9007199254740993,"message":"m"}}`, ErrNonCanonicalNumber},
		{"raw control char", call(`{"s":"a` + "\n" + `"}`), ErrSyntax},
		{"raw tab", call(`{"s":"a` + "\t" + `"}`), ErrSyntax},
		{"bad escape", call(`{"s":"\x41"}`), ErrSyntax},
		{"short unicode escape", call(`{"s":"\u12"}`), ErrSyntax},
		{"non-hex unicode escape", call(`{"s":"\u12G4"}`), ErrSyntax},
		{"unterminated string", `{"jsonrpc":"2.0`, ErrSyntax},
		{"unterminated object", `{"jsonrpc":"2.0"`, ErrSyntax},
		{"unterminated escape", `{"jsonrpc":"2.0\`, ErrSyntax},
		{"missing colon", `{"jsonrpc" "2.0"}`, ErrSyntax},
		{"missing comma", `{"jsonrpc":"2.0" "id":1}`, ErrSyntax},
		{"trailing comma in object", `{"jsonrpc":"2.0",}`, ErrSyntax},
		{"trailing comma in array", call(`{"a":[1,]}`), ErrSyntax},
		{"single quotes", `{'jsonrpc':'2.0'}`, ErrSyntax},
		{"unquoted key", `{jsonrpc:"2.0"}`, ErrSyntax},
		{"comment", `{"jsonrpc":"2.0"/**/}`, ErrSyntax},
		{"True", call(`{"b":True}`), ErrSyntax},
		{"nul", call(`{"b":nul}`), ErrSyntax},
		{"vertical tab whitespace", "{\v\"jsonrpc\":\"2.0\"}", ErrSyntax},
		{"NBSP whitespace", "{\u00a0\"jsonrpc\":\"2.0\"}", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			wantKind(t, err, tt.want)
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
	}
	return b.String()
}

func TestParseAcceptsNumbers(t *testing.T) {
	tests := []struct {
		give string
		want string // canonical arguments
	}{
		{`{"n":9007199254740992}`, `{"n":9007199254740992}`},
		{`{"n":-9007199254740992}`, `{"n":-9007199254740992}`},
		{`{"n":12.50}`, `{"n":12.5}`},
		{`{"n":1E2}`, `{"n":100}`},
		{`{"n":1e+2}`, `{"n":100}`},
		{`{"n":100e-2}`, `{"n":1}`},
		{`{"n":0.1}`, `{"n":0.1}`},
		{`{"n":-0}`, `{"n":0}`},
		{`{"n":-0.0}`, `{"n":0}`},
		{`{"n":0e10}`, `{"n":0}`},
		{`{"n":1e21}`, `{"n":1e+21}`},
		{`{"n":1e-7}`, `{"n":1e-7}`},
		{`{"n":0.000001}`, `{"n":0.000001}`},
		{`{"n":1E30}`, `{"n":1e+30}`},
		{`{"n":123456789012345}`, `{"n":123456789012345}`},
		{`{"n":1234567890123456}`, `{"n":1234567890123456}`},
		{`{"n":1.7976931348623157e308}`, `{"n":1.7976931348623157e+308}`},
		{`{"n":5e-324}`, `{"n":5e-324}`},
		{`{"n":0.30000000000000004}`, `{"n":0.30000000000000004}`},
		{`{"n":1.00000000000000000000}`, `{"n":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			b, err := Parse([]byte(call(tt.give)), ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b.Messages[0].Arguments()); got != tt.want {
				t.Errorf("Arguments = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseIDExemptFromNumberRule(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{`{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}`, `12345678901234567890123`},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, `9007199254740993`},
		{`{"jsonrpc":"2.0","id":-7,"method":"ping"}`, `-7`},
		{`{"jsonrpc":"2.0","id":-0,"method":"ping"}`, `-0`},
		{`{"jsonrpc":"2.0","id":"abc","method":"ping"}`, `"abc"`},
		{`{"jsonrpc":"2.0","id":"\u0061","method":"ping"}`, `"\u0061"`},
		{`{"jsonrpc":"2.0","id": 7 ,"method":"ping"}`, `7`},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			b, err := Parse([]byte(tt.give), ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b.Messages[0].ID); got != tt.want {
				t.Errorf("ID = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseEnvelopeErrors(t *testing.T) {
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"top-level string", `"x"`, ErrInvalidRequest},
		{"top-level number", `1`, ErrInvalidRequest},
		{"top-level null", `null`, ErrInvalidRequest},
		{"empty object", `{}`, ErrInvalidRequest},
		{"missing jsonrpc", `{"id":1,"method":"ping"}`, ErrInvalidRequest},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, ErrInvalidRequest},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`, ErrInvalidRequest},
		{"jsonrpc with space", `{"jsonrpc":"2.0 ","id":1,"method":"ping"}`, ErrInvalidRequest},
		{"unknown member", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`, ErrInvalidRequest},
		{"Method alone", `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, ErrCaseVariantKey},
		{"method and Method", `{"jsonrpc":"2.0","id":1,"method":"ping","Method":"tools/call"}`, ErrCaseVariantKey},
		{"PARAMS", `{"jsonrpc":"2.0","id":1,"method":"ping","PARAMS":{}}`, ErrCaseVariantKey},
		{"ID", `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, ErrCaseVariantKey},
		{"JSONRPC", `{"JSONRPC":"2.0","id":1,"method":"ping"}`, ErrCaseVariantKey},
		{"Result", `{"jsonrpc":"2.0","id":1,"Result":{}}`, ErrCaseVariantKey},
		{"id float", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, ErrInvalidRequest},
		{"id exponent", `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, ErrInvalidRequest},
		{"id integral fraction", `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, ErrInvalidRequest},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, ErrInvalidRequest},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, ErrInvalidRequest},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, ErrInvalidRequest},
		{"id bad grammar", `{"jsonrpc":"2.0","id":01,"method":"ping"}`, ErrSyntax},
		{"null id on request", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`, ErrInvalidRequest},
		{"tools/call without id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`, ErrInvalidRequest},
		{"ping without id", `{"jsonrpc":"2.0","method":"ping"}`, ErrInvalidRequest},
		{"notification with id", `{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}`, ErrInvalidRequest},
		{"notification with null id", `{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`, ErrInvalidRequest},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":1}`, ErrInvalidRequest},
		{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`, ErrInvalidRequest},
		{"method empty", `{"jsonrpc":"2.0","id":1,"method":""}`, ErrInvalidRequest},
		{"params array", `{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`, ErrInvalidRequest},
		{"params null", `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, ErrInvalidRequest},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, ErrInvalidRequest},
		{"request with result", `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, ErrInvalidRequest},
		{"notification with error", `{"jsonrpc":"2.0","method":"notifications/x","error":{"code":1,"message":"m"}}`, ErrInvalidRequest},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, ErrInvalidRequest},
		{"response with both", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, ErrInvalidRequest},
		{"response with neither", `{"jsonrpc":"2.0","id":1}`, ErrInvalidRequest},
		{"response with params", `{"jsonrpc":"2.0","id":1,"result":{},"params":{}}`, ErrInvalidRequest},
		{"null id with result", `{"jsonrpc":"2.0","id":null,"result":{}}`, ErrInvalidRequest},
		{"error not object", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, ErrInvalidRequest},
		{"error code float", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, ErrInvalidRequest},
		{"error code missing", `{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}`, ErrInvalidRequest},
		{"error message missing", `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			pe := wantKind(t, err, tt.want)
			if pe.Index != -1 {
				t.Errorf("Index = %d, want -1", pe.Index)
			}
		})
	}
}

func TestParseParamsErrors(t *testing.T) {
	env := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"tools/call no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, ErrInvalidParams},
		{"tools/call no name", env("tools/call", `{"arguments":{}}`), ErrInvalidParams},
		{"tools/call empty name", env("tools/call", `{"name":""}`), ErrInvalidParams},
		{"tools/call name number", env("tools/call", `{"name":5}`), ErrInvalidParams},
		{"tools/call name array", env("tools/call", `{"name":["a"]}`), ErrInvalidParams},
		{"tools/call name object", env("tools/call", `{"name":{"a":1}}`), ErrInvalidParams},
		{"tools/call name null", env("tools/call", `{"name":null}`), ErrInvalidParams},
		{"tools/call Name only (C03)", env("tools/call", `{"Name":"delete_repo","arguments":{}}`), ErrCaseVariantKey},
		{"tools/call NAME with name", env("tools/call", `{"name":"a","NAME":"b"}`), ErrCaseVariantKey},
		{"tools/call Arguments", env("tools/call", `{"name":"a","Arguments":{}}`), ErrCaseVariantKey},
		{"tools/call Kelvin-free variant via long s", env("tools/call", `{"name":"a","_meta":{},"_META":{}}`), ErrCaseVariantKey},
		{"tools/call arguments array", env("tools/call", `{"name":"a","arguments":[]}`), ErrInvalidParams},
		{"tools/call arguments null", env("tools/call", `{"name":"a","arguments":null}`), ErrInvalidParams},
		{"tools/call arguments string", env("tools/call", `{"name":"a","arguments":"{}"}`), ErrInvalidParams},
		{"prompts/get no name", env("prompts/get", `{}`), ErrInvalidParams},
		{"prompts/get arguments number", env("prompts/get", `{"name":"p","arguments":1}`), ErrInvalidParams},
		{"resources/read no uri", env("resources/read", `{}`), ErrInvalidParams},
		{"resources/read URI", env("resources/read", `{"URI":"file:///etc/passwd"}`), ErrCaseVariantKey},
		{"resources/read uri number", env("resources/read", `{"uri":1}`), ErrInvalidParams},
		{"resources/subscribe empty uri", env("resources/subscribe", `{"uri":""}`), ErrInvalidParams},
		{"resources/unsubscribe no params", `{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe"}`, ErrInvalidParams},
		{"completion no params", `{"jsonrpc":"2.0","id":1,"method":"completion/complete"}`, ErrInvalidParams},
		{"completion no ref", env("completion/complete", `{"argument":{"name":"a","value":"b"}}`), ErrInvalidParams},
		{"completion ref string", env("completion/complete", `{"ref":"ref/prompt"}`), ErrInvalidParams},
		{"completion ref no type", env("completion/complete", `{"ref":{"name":"p"}}`), ErrInvalidParams},
		{"completion unknown type", env("completion/complete", `{"ref":{"type":"ref/tool","name":"p"}}`), ErrInvalidParams},
		{"completion prompt no name", env("completion/complete", `{"ref":{"type":"ref/prompt","uri":"x"}}`), ErrInvalidParams},
		{"completion resource no uri", env("completion/complete", `{"ref":{"type":"ref/resource","name":"x"}}`), ErrInvalidParams},
		{"completion ref Type", env("completion/complete", `{"ref":{"Type":"ref/prompt","name":"p"}}`), ErrCaseVariantKey},
		{"completion ref URI", env("completion/complete", `{"ref":{"type":"ref/resource","uri":"a","Uri":"b"}}`), ErrCaseVariantKey},
		{"completion Ref", env("completion/complete", `{"Ref":{"type":"ref/prompt","name":"p"}}`), ErrCaseVariantKey},
		{"unknown method Name", env("x/y", `{"Name":"a"}`), ErrCaseVariantKey},
		{"unknown method strict JSON", env("x/y", `{"a":1,"a":2}`), ErrDuplicateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			wantKind(t, err, tt.want)
		})
	}
}

// wantMessage is what TestParseMessages expects of a Message; Arguments is
// the canonical form (Message.Arguments()), Args the decoded arguments.
type wantMessage struct {
	Kind                       Kind
	ID                         []byte
	Method                     string
	Tool, URI, Prompt, RefType string
	Arguments                  []byte
	Args                       map[string]any
}

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name string
		give string
		want wantMessage // Args compared when set
	}{
		{
			name: "tools/call",
			give: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a","n":1,"f":1.5,"big":1e21,"ok":true,"z":null,"l":[1,"x"],"o":{}}}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`1`), Method: "tools/call", Tool: "read_file",
				Arguments: []byte(`{"big":1e+21,"f":1.5,"l":[1,"x"],"n":1,"o":{},"ok":true,"path":"/a","z":null}`),
				Args: map[string]any{"path": "/a", "n": int64(1), "f": 1.5, "big": 1e21, "ok": true, "z": nil,
					"l": []any{int64(1), "x"}, "o": map[string]any{}}},
		},
		{
			name: "tools/call without arguments",
			give: `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t"}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`"a"`), Method: "tools/call", Tool: "t",
				Arguments: []byte(`{}`), Args: map[string]any{}},
		},
		{
			name: "tools/call with task and _meta",
			give: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","task":{"ttl":60000},"_meta":{"progressToken":1}}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`2`), Method: "tools/call", Tool: "t", Arguments: []byte(`{}`)},
		},
		{
			name: "prompts/get",
			give: `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"summarize","arguments":{"topic":"Zürich 💶","style":"brief"}}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`3`), Method: "prompts/get", Prompt: "summarize",
				Arguments: []byte(`{"style":"brief","topic":"Zürich 💶"}`)},
		},
		{
			name: "resources/read",
			give: `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a%20b"}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`4`), Method: "resources/read", URI: "file:///a%20b", Arguments: []byte(`{}`)},
		},
		{
			name: "completion prompt ref",
			give: `{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"}}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`5`), Method: "completion/complete", RefType: "ref/prompt", Prompt: "p", Arguments: []byte(`{}`)},
		},
		{
			name: "completion resource ref",
			give: `{"jsonrpc":"2.0","id":6,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///{x}"},"argument":{"name":"x","value":""}}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`6`), Method: "completion/complete", RefType: "ref/resource", URI: "file:///{x}", Arguments: []byte(`{}`)},
		},
		{
			name: "unknown method is a request",
			give: `{"jsonrpc":"2.0","id":12,"method":"Tools/Call","params":{"name":"delete_repo","arguments":{}}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`12`), Method: "Tools/Call", Arguments: []byte(`{}`)},
		},
		{
			name: "notification",
			give: `{"method":"notifications/initialized","jsonrpc":"2.0"}`,
			want: wantMessage{Kind: KindNotification, Method: "notifications/initialized", Arguments: []byte(`{}`)},
		},
		{
			name: "response result",
			give: `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}`,
			want: wantMessage{Kind: KindResponse, ID: []byte(`"s1"`), Arguments: []byte(`{}`)},
		},
		{
			name: "response null id error",
			give: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad","data":{"x":1}}}`,
			want: wantMessage{Kind: KindResponse, ID: []byte(`null`), Arguments: []byte(`{}`)},
		},
		{
			name: "escaped method and name",
			give: `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"re\u0061d_file"}}`,
			want: wantMessage{Kind: KindRequest, ID: []byte(`1`), Method: "tools/call", Tool: "read_file", Arguments: []byte(`{}`)},
		},
		{
			name: "trailing whitespace",
			give: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} \r\n\t",
			want: wantMessage{Kind: KindRequest, ID: []byte(`1`), Method: "ping", Arguments: []byte(`{}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Parse([]byte(tt.give), ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if b.Batch || len(b.Messages) != 1 {
				t.Fatalf("Batch=%v len=%d", b.Batch, len(b.Messages))
			}
			got := b.Messages[0]
			if got.Kind != tt.want.Kind || !bytes.Equal(got.ID, tt.want.ID) || got.Method != tt.want.Method ||
				got.Tool != tt.want.Tool || got.URI != tt.want.URI || got.Prompt != tt.want.Prompt || got.RefType != tt.want.RefType {
				t.Errorf("got %s id=%s method=%q tool=%q uri=%q prompt=%q ref=%q, want %s id=%s method=%q tool=%q uri=%q prompt=%q ref=%q",
					got.Kind, got.ID, got.Method, got.Tool, got.URI, got.Prompt, got.RefType,
					tt.want.Kind, tt.want.ID, tt.want.Method, tt.want.Tool, tt.want.URI, tt.want.Prompt, tt.want.RefType)
			}
			if !bytes.Equal(got.Arguments(), tt.want.Arguments) {
				t.Errorf("Arguments = %s, want %s", got.Arguments(), tt.want.Arguments)
			}
			if got.ArgsDigest != Digest(got.Arguments()) {
				t.Errorf("ArgsDigest = %s, want Digest(Arguments)", got.ArgsDigest)
			}
			if got.Args() == nil {
				t.Error("Args is nil")
			}
			for k, v := range tt.want.Args { // Arg decodes one member, before Args()
				if gv, ok := got.Arg(k); !ok || !reflect.DeepEqual(gv, v) {
					t.Errorf("Arg(%q) = %#v, %v; want %#v", k, gv, ok, v)
				}
			}
			if _, ok := got.Arg("absent"); ok {
				t.Error(`Arg("absent") found`)
			}
			if tt.want.Args != nil && !reflect.DeepEqual(got.Args(), tt.want.Args) {
				t.Errorf("Args = %#v, want %#v", got.Args(), tt.want.Args)
			}
		})
	}
}

func TestParseParamsRaw(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params": { "name" : "t" , "arguments":{"b":1,"a":2}} }`
	b, err := Parse([]byte(body), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := b.Messages[0]
	if want := `{ "name" : "t" , "arguments":{"b":1,"a":2}}`; string(m.Params) != want {
		t.Errorf("Params = %s, want %s", m.Params, want)
	}
	if want := `{"a":2,"b":1}`; string(m.Arguments()) != want {
		t.Errorf("Arguments = %s, want %s", m.Arguments(), want)
	}
	b2, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b2.Messages[0].Params != nil {
		t.Errorf("Params = %q, want nil", b2.Messages[0].Params)
	}
}

func TestParseBatchAllowed(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`
	tests := []struct {
		name      string
		give      string
		want      ErrorKind
		wantIndex int
	}{
		{"empty", `[]`, ErrBatchEmpty, -1},
		{"empty with space", ` [ ] `, ErrBatchEmpty, -1},
		{"element not object", `[1]`, ErrInvalidRequest, 0},
		{"nested array", `[[` + ok + `]]`, ErrInvalidRequest, 0},
		{"second invalid", `[` + ok + `,{"jsonrpc":"2.0","method":"tools/call","params":{"name":"b"}}]`, ErrInvalidRequest, 1},
		{"second duplicate key", `[` + ok + `,{"jsonrpc":"2.0","id":2,"id":3,"method":"ping"}]`, ErrDuplicateKey, 1},
		{"second bad number", `[` + ok + `,` + call(`{"n":1e400}`) + `]`, ErrNonCanonicalNumber, 1},
		{"too many", `[` + strings.Repeat(ok+`,`, 100) + ok + `]`, ErrTooManyElements, 100},
		{"trailing data", `[` + ok + `]x`, ErrTrailingData, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{AllowBatch: true})
			pe := wantKind(t, err, tt.want)
			if pe.Index != tt.wantIndex {
				t.Errorf("Index = %d, want %d", pe.Index, tt.wantIndex)
			}
		})
	}
}

func TestParseBatchAllowedOK(t *testing.T) {
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}},` +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}},` +
		`{"jsonrpc":"2.0","id":"r","result":{}}]`
	b, err := Parse([]byte(body), ParseOptions{AllowBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Batch || len(b.Messages) != 3 {
		t.Fatalf("Batch=%v len=%d", b.Batch, len(b.Messages))
	}
	kinds := []Kind{b.Messages[0].Kind, b.Messages[1].Kind, b.Messages[2].Kind}
	if want := []Kind{KindRequest, KindNotification, KindResponse}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	if b.Messages[0].Tool != "a" || string(b.Messages[0].Arguments()) != `{"x":1}` {
		t.Errorf("first message = %+v", b.Messages[0])
	}
}

func TestParseBatchNotAllowed(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"C05", `[{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}]`},
		{"empty", `[]`},
		{"leading whitespace", " \n[{}]"},
		{"notifications", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{"invalid JSON after bracket", `[{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			wantKind(t, err, ErrBatchNotSupported)
		})
	}
}

func TestParseErrorOffset(t *testing.T) {
	tests := []struct {
		give string
		want int64
	}{
		{`{"jsonrpc":"2.0","jsonrpc":"2.0"}`, 17},
		{`{"jsonrpc":"2.0"}x`, 17},
		{`{"a` + "\xff" + `":1}`, 3},
		{call(`{"n":9007199254740993}`), int64(strings.Index(call(`{"n":9007199254740993}`), "9007"))},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Offset != tt.want {
				t.Errorf("err = %v, want offset %d", err, tt.want)
			}
		})
	}
}

func TestParseErrorMessageOmitsValues(t *testing.T) {
	secret := "s3cr3t-value-do-not-log"
	bodies := []string{
		call(`{"a":"` + secret + `","a":1}`),
		call(`{"x":"` + secret + `","X":1}`),
		call(`{"memo":"` + secret + "\xff" + `"}`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["` + secret + `"]}}`,
		`{"jsonrpc":"` + secret + `","id":1,"method":"ping"}`,
	}
	for _, body := range bodies {
		_, err := Parse([]byte(body), ParseOptions{})
		if err == nil {
			t.Fatalf("no error for %s", body)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q quotes a value", err)
		}
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		give     ErrorKind
		wantName string
	}{
		{ErrSyntax, "syntax"},
		{ErrInvalidUTF8, "invalid_utf8"},
		{ErrDuplicateKey, "duplicate_key"},
		{ErrCaseVariantKey, "case_variant_key"},
		{ErrTrailingData, "trailing_data"},
		{ErrTooDeep, "too_deep"},
		{ErrTooLarge, "too_large"},
		{ErrTooManyKeys, "too_many_keys"},
		{ErrTooManyElements, "too_many_elements"},
		{ErrStringTooLong, "string_too_long"},
		{ErrInvalidRequest, "invalid_request"},
		{ErrInvalidParams, "invalid_params"},
		{ErrNonCanonicalNumber, "non_canonical_number"},
		{ErrBatchEmpty, "batch_empty"},
		{ErrBatchNotSupported, "batch_not_supported"},
		{ErrReservedKey, "reserved_key"},
		{ErrorKind(0), "ErrorKind(0)"},
		{ErrorKind(99), "ErrorKind(99)"},
	}
	for _, tt := range tests {
		t.Run(tt.wantName, func(t *testing.T) {
			if got := tt.give.String(); got != tt.wantName {
				t.Errorf("String() = %q, want %q", got, tt.wantName)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		give Kind
		want string
	}{
		{KindRequest, "request"},
		{KindNotification, "notification"},
		{KindResponse, "response"},
		{Kind(0), "Kind(0)"},
	}
	for _, tt := range tests {
		if got := tt.give.String(); got != tt.want {
			t.Errorf("%d.String() = %q, want %q", int(tt.give), got, tt.want)
		}
	}
}

func TestParseErrorString(t *testing.T) {
	tests := []struct {
		give *ParseError
		want string
	}{
		{&ParseError{Kind: ErrSyntax, Offset: 3, Index: -1, Msg: "m"}, "mcpparse: syntax at offset 3: m"},
		{&ParseError{Kind: ErrInvalidRequest, Offset: 9, Index: 2, Msg: "m"}, "mcpparse: invalid_request at offset 9 in batch element 2: m"},
	}
	for _, tt := range tests {
		if got := tt.give.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestArgBatch: Arg reads each batch element's own arguments, as Parse
// located them (escaped names, nested members of the same name ignored).
func TestArgBatch(t *testing.T) {
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1,"n":{"y":2}}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b","arguments":{ "\u0079" : "two" , "z":[{"x":3}]}}},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c","arguments":{}}}]`
	b, err := Parse([]byte(body), ParseOptions{AllowBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		msg    int
		give   string
		want   any
		wantOK bool
	}{
		{0, "x", int64(1), true},
		{0, "y", nil, false},
		{1, "y", "two", true},
		{1, "x", nil, false},
		{2, "x", nil, false},
	}
	for _, tt := range tests {
		got, ok := b.Messages[tt.msg].Arg(tt.give)
		if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("message %d Arg(%q) = %#v, %v; want %#v, %v", tt.msg, tt.give, got, ok, tt.want, tt.wantOK)
		}
	}
}
