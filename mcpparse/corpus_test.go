package mcpparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

func TestCases(t *testing.T) {
	cases := loadCases(t)
	tests := []struct {
		give       string // case id
		want       ErrorKind
		wantKind   Kind // when want == 0
		wantMethod string
	}{
		{give: "C01", want: ErrCaseVariantKey},
		{give: "C02", want: ErrDuplicateKey},
		{give: "C03", want: ErrCaseVariantKey},
		{give: "C04", want: ErrTrailingData},
		{give: "C05", want: ErrBatchNotSupported},
		{give: "C08", wantKind: KindRequest, wantMethod: "Tools/Call"},
		{give: "C09", want: ErrInvalidRequest},
		{give: "C18", want: ErrNonCanonicalNumber},
		{give: "C19", want: ErrInvalidUTF8},
		{give: "E01", want: ErrDuplicateKey},
		{give: "E02", want: ErrReservedKey},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			body, ok := cases[tt.give]
			if !ok {
				t.Fatalf("case %s not in cases.jsonl", tt.give)
			}
			b, err := Parse(body, ParseOptions{})
			if tt.want != 0 {
				wantKind(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m := b.Messages[0]; m.Kind != tt.wantKind || m.Method != tt.wantMethod || m.Tool != "" {
				t.Errorf("got %s %q tool %q, want %s %q and no tool", m.Kind, m.Method, m.Tool, tt.wantKind, tt.wantMethod)
			}
		})
	}
}

// TestCaseVariations covers the variations the cases ask for beyond their
// literal body.
func TestCaseVariations(t *testing.T) {
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"C02 reversed", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_repo","name":"read_file","arguments":{}}}`, ErrDuplicateKey},
		{"C03 name number", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5,"arguments":{}}}`, ErrInvalidParams},
		{"C03 name array", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":["delete_repo"],"arguments":{}}}`, ErrInvalidParams},
		{"C03 name object", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":{},"arguments":{}}}`, ErrInvalidParams},
		{"C05 empty", `[]`, ErrBatchNotSupported},
		{"C09 null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`, ErrInvalidRequest},
		{"C18 above 2^53 negative", `{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"amount":-9007199254740993}}}`, ErrNonCanonicalNumber},
		{"C19 byte 0xFE", "{\"jsonrpc\":\"2.0\",\"id\":29,\"method\":\"tools/call\",\"params\":{\"name\":\"transfer_funds\",\"arguments\":{\"memo\":\"a\xfe\"}}}", ErrInvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			wantKind(t, err, tt.want)
		})
	}
	// C08's other spellings are unknown methods: parsed, left to the policy.
	for _, method := range []string{`tools/call `, `tools//call`, `tools/call\u0000`} {
		body := `{"jsonrpc":"2.0","id":12,"method":"` + method + `","params":{"name":"delete_repo","arguments":{}}}`
		b, err := Parse([]byte(body), ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if m := b.Messages[0]; m.Method == "tools/call" || m.Tool != "" {
			t.Errorf("%s parsed as %q tool %q", method, m.Method, m.Tool)
		}
	}
	// C18: the safe neighbour parses, and its digest is the one the case names.
	b, err := Parse([]byte(`{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"amount":9007199254740992}}}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Messages[0].ArgsDigest, "sha256:a2102c7fa09a83bf190218094fc70210b6ae22b18f2669457afe43fd8d00f107"; got != want {
		t.Errorf("C18 approval digest = %s, want %s", got, want)
	}
}

// isUnsafeBigInt reports the Go SDK bodies that carry 2^53+1, which the
// corpus README documents as real client behaviour.
func isUnsafeBigInt(body []byte) bool {
	return bytes.Contains(body, []byte(`"amountMinor":9007199254740993`))
}

func TestCorpus(t *testing.T) {
	recs := loadCorpus(t)
	var parsed, rejected int
	for _, r := range recs {
		t.Run(fmt.Sprintf("%s/%d", r.Session, r.Seq), func(t *testing.T) {
			b, err := Parse(r.body, ParseOptions{})
			if isUnsafeBigInt(r.body) {
				wantKind(t, err, ErrNonCanonicalNumber)
				rejected++
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			parsed++
			if r.JSONRPC == nil {
				t.Fatal("record has a body but no jsonrpc summary")
			}
			if b.Batch || len(b.Messages) != 1 {
				t.Fatalf("Batch=%v len=%d", b.Batch, len(b.Messages))
			}
			m := b.Messages[0]
			if m.Method != r.JSONRPC.Method {
				t.Errorf("Method = %q, want %q", m.Method, r.JSONRPC.Method)
			}
			var target string
			switch {
			case m.Tool != "":
				target = m.Tool
			case m.URI != "":
				target = m.URI
			case m.Prompt != "":
				target = m.Prompt
			}
			want := ""
			if r.JSONRPC.ToolOrURI != nil {
				want = *r.JSONRPC.ToolOrURI
			}
			if target != want {
				t.Errorf("target = %q, want %q", target, want)
			}
			switch m.Method {
			case "tools/call":
				if m.Tool != want {
					t.Errorf("Tool = %q, want %q", m.Tool, want)
				}
			case "prompts/get":
				if m.Prompt != want {
					t.Errorf("Prompt = %q, want %q", m.Prompt, want)
				}
			case "resources/read", "resources/subscribe", "resources/unsubscribe":
				if m.URI != want {
					t.Errorf("URI = %q, want %q", m.URI, want)
				}
			}
			wantID := string(r.JSONRPC.ID)
			if wantID == "null" {
				wantID = ""
			}
			if string(m.ID) != wantID {
				t.Errorf("ID = %s, want %s", m.ID, wantID)
			}
			if wantID == "" && m.Kind != KindNotification || wantID != "" && m.Kind != KindRequest {
				t.Errorf("Kind = %s for id %q", m.Kind, wantID)
			}
		})
	}
	if parsed == 0 || rejected == 0 {
		t.Errorf("parsed %d bodies and rejected %d: the corpus should give both", parsed, rejected)
	}
}

// goldenRecord renders what Parse derives from a corpus body as one
// RFC 8785 object, so the canonical arguments appear in it byte for byte:
// {"args_digest":…,"arguments":<Arguments>,"method":…,"target":…}.
func goldenRecord(m *Message) []byte {
	b := []byte(`{"args_digest":`)
	b = AppendJCSString(b, m.ArgsDigest)
	b = append(b, `,"arguments":`...)
	b = append(b, m.Arguments()...)
	b = append(b, `,"method":`...)
	b = AppendJCSString(b, m.Method)
	b = append(b, `,"target":`...)
	b = AppendJCSString(b, m.Tool+m.Prompt)
	return append(b, "}\n"...)
}

// TestGoldenCorpusArguments pins the canonical arguments and digest of
// every corpus tools/call and prompts/get body (go test -update rewrites).
func TestGoldenCorpusArguments(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	n := 0
	for _, r := range loadCorpus(t) {
		if r.JSONRPC == nil || (r.JSONRPC.Method != "tools/call" && r.JSONRPC.Method != "prompts/get") || isUnsafeBigInt(r.body) {
			continue
		}
		n++
		name := fmt.Sprintf("%s-%03d.json", r.Session, r.Seq)
		t.Run(name, func(t *testing.T) {
			b, err := Parse(r.body, ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := b.Messages[0]
			got := goldenRecord(&m)
			path := filepath.Join(dir, name)
			want, same := testkit.Golden(t, path, got)
			if !same {
				t.Errorf("golden mismatch for %s:\ngot  %s\nwant %s", path, got, want)
			}
			// The golden record is itself canonical, and its digest is that
			// of its arguments.
			if c, err := Canonicalize(want, Limits{}); err != nil || !bytes.Equal(append(c, '\n'), want) {
				t.Errorf("golden record is not canonical (%v)", err)
			}
			if m.ArgsDigest != Digest(m.Arguments()) {
				t.Errorf("ArgsDigest is not Digest(Arguments)")
			}
			checkGoldenIndependently(t, r, want)
		})
	}
	if n == 0 {
		t.Fatal("no tools/call or prompts/get bodies in the corpus")
	}
}

// checkGoldenIndependently recomputes a golden record from the corpus body
// without mcpparse: encoding/json finds params and its arguments, and
// internal/jcsoracle (an RFC 8785 implementation sharing no code with this
// package) canonicalizes the arguments and the record and gives the digest.
// So a golden file written by -update from a wrong canonicalizer fails here.
func checkGoldenIndependently(t *testing.T, r corpusRecord, golden []byte) {
	t.Helper()
	var body struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	args := body.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	canonArgs, err := jcsoracle.Transform(args)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	digest, err := jcsoracle.Digest(args)
	if err != nil {
		t.Fatal(err)
	}
	record, err := json.Marshal(map[string]any{"args_digest": digest, "arguments": json.RawMessage(canonArgs),
		"method": body.Method, "target": body.Params.Name})
	if err != nil {
		t.Fatal(err)
	}
	want, err := jcsoracle.Transform(record)
	if err != nil {
		t.Fatal(err)
	}
	if string(append(want, '\n')) != string(golden) {
		t.Errorf("golden record differs from the independent recomputation:\ngolden      %s\nindependent %s", golden, want)
	}
}

// TestReservedKey: a member named __proto__, in any escape spelling, at any
// depth of params (arguments, _meta, ref, nested objects and arrays) is
// ErrReservedKey at its name's offset (cases-3 E02); outside params, or as
// a value or a longer name, it is an ordinary string.
func TestReservedKey(t *testing.T) {
	const env = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`
	tests := []struct {
		name   string
		give   string // params
		want   ErrorKind
		wantAt string // the member name at the error's offset
	}{
		{"arguments", `{"name":"search","arguments":{"query":"alpha","__proto__":{"x":1}}}`, ErrReservedKey, `"__proto__"`},
		{"first argument", `{"name":"search","arguments":{"__proto__":1}}`, ErrReservedKey, `"__proto__"`},
		{"escaped underscore", `{"name":"search","arguments":{"\u005f_proto__":{}}}`, ErrReservedKey, `"\u005f_proto__"`},
		{"escaped letters", `{"name":"search","arguments":{"__\u0070\u0072oto__":{}}}`, ErrReservedKey, `"__\u0070\u0072oto__"`},
		{"all escaped", `{"name":"search","arguments":{"\u005F\u005F\u0070\u0072\u006F\u0074\u006F\u005F\u005F":0}}`, ErrReservedKey, `"\u005F`},
		{"nested", `{"name":"search","arguments":{"q":{"a":[1,{"__proto__":null}]}}}`, ErrReservedKey, `"__proto__"`},
		{"params itself", `{"name":"search","__proto__":{"name":"delete_repo"},"arguments":{}}`, ErrReservedKey, `"__proto__"`},
		{"_meta", `{"name":"search","arguments":{},"_meta":{"__proto__":{"progressToken":1}}}`, ErrReservedKey, `"__proto__"`},
		{"first of two", `{"name":"search","arguments":{"a":{"__proto__":1},"__proto__":2}}`, ErrReservedKey, `"__proto__":1`},
		{"as a value", `{"name":"search","arguments":{"q":"__proto__"}}`, 0, ""},
		{"longer name", `{"name":"search","arguments":{"__proto__x":1,"x__proto__":2}}`, 0, ""},
		{"case variant", `{"name":"search","arguments":{"__PROTO__":1}}`, 0, ""},
		{"constructor", `{"name":"search","arguments":{"constructor":{"prototype":{}}}}`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := env + tt.give + `}`
			_, err := Parse([]byte(body), ParseOptions{})
			if tt.want == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			pe := wantKind(t, err, tt.want)
			if at := body[pe.Offset:]; !strings.HasPrefix(at, tt.wantAt) {
				t.Errorf("offset %d at %.20q, want %q", pe.Offset, at, tt.wantAt)
			}
		})
	}
	// Outside params: a response's result, and a prompts/get's arguments
	// too (they are params).
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"__proto__":{}}}`), ParseOptions{}); err != nil {
		t.Errorf("result: %v", err)
	}
	_, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"__proto__":"x"}}}`), ParseOptions{})
	wantKind(t, err, ErrReservedKey)
}
