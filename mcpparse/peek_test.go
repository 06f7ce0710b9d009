package mcpparse

import (
	"bytes"
	"strings"
	"testing"
)

func TestPeekEnvelope(t *testing.T) {
	tests := []struct {
		name       string
		give       string
		wantID     string // "" for nil
		wantMethod string
	}{
		{"integer id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, "7", "tools/call"},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, `"a-1"`, "ping"},
		{"id last, after big params", `{"method":"tools/call","params":{"a":[` + strings.Repeat(`{},`, 1000) + `{}]},"jsonrpc":"2.0","id":-12}`, "-12", "tools/call"},
		{"whitespace", " \n{ \"id\" : 3 , \"method\" : \"ping\" }\r\n", "3", "ping"},
		{"big integer kept byte for byte", `{"id":12345678901234567890123,"method":"ping"}`, "12345678901234567890123", "ping"},
		{"response", `{"jsonrpc":"2.0","id":5,"result":{}}`, "5", "response"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "notifications/initialized"},
		{"strings with brackets and escapes", `{"params":{"a":"}]\"{["},"id":1,"method":"m"}`, "1", "m"},
		{"nested id is not the id", `{"params":{"id":9},"method":"m"}`, "", "m"},
		{"empty object", `{}`, "", ""},

		// id null: the scan cannot vouch for it.
		{"duplicate id", `{"id":1,"id":2,"method":"m"}`, "", "m"},
		{"duplicate method", `{"id":1,"method":"a","method":"b"}`, "1", ""},
		{"escaped key", `{"\u0069d":1,"method":"m"}`, "", ""},
		{"escape in id", `{"id":"a\"b","method":"m"}`, "", "m"},
		{"control character in id", "{\"id\":\"a\x01\",\"method\":\"m\"}", "", "m"},
		{"invalid UTF-8 in id", "{\"id\":\"a\xff\",\"method\":\"m\"}", "", "m"},
		{"fractional id", `{"id":1.5,"method":"m"}`, "", "m"},
		{"leading zero id", `{"id":01,"method":"m"}`, "", "m"},
		{"null id", `{"id":null,"method":"m"}`, "", "m"},
		{"object id", `{"id":{"a":1},"method":"m"}`, "", "m"},
		{"id too long", `{"id":"` + strings.Repeat("a", MaxPeekID) + `","method":"m"}`, "", "m"},
		{"trailing data", `{"id":1,"method":"m"}x`, "", ""},
		{"second object", `{"id":1,"method":"m"}{"id":2}`, "", ""},
		{"truncated", `{"id":1,"method":"m","params":{`, "", ""},
		{"batch", `[{"id":1,"method":"m"}]`, "", ""},
		{"not JSON", `id=1`, "", ""},
		{"empty", ``, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, method := PeekEnvelope([]byte(tt.give))
			if string(id) != tt.wantID || (id == nil) != (tt.wantID == "") || method != tt.wantMethod {
				t.Errorf("PeekEnvelope = %q, %q; want %q, %q", id, method, tt.wantID, tt.wantMethod)
			}
		})
	}
}

// TestPeekEnvelopeAllocates: the scan allocates nothing per element, so a
// body of 100k empty objects costs what a small one does.
func TestPeekEnvelopeAllocates(t *testing.T) {
	for _, body := range [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[` + strings.Repeat(`{},`, 100_000) + `{}]}}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":` + strings.Repeat(`[`, 100_000) + strings.Repeat(`]`, 100_000) + `}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + strings.Repeat(`"k":0,`, 50_000) + `"k":0}}`),
	} {
		if n := testing.AllocsPerRun(10, func() { PeekEnvelope(body) }); n > 1 {
			t.Errorf("%d-byte body: %v allocations, want at most 1 (the method)", len(body), n)
		}
	}
}

// FuzzPeekEnvelope: the scan never panics; what it echoes is a JSON string
// or integer; on a body that parses strictly as one message it agrees with
// Parse.
func FuzzPeekEnvelope(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, method := PeekEnvelope(body)
		if id != nil && !echoableID(id) {
			t.Fatalf("echoed id %q", id)
		}
		b, err := Parse(body, ParseOptions{})
		if err != nil || b.Batch {
			return
		}
		m := b.Messages[0]
		wantMethod := m.Method
		if m.Kind == KindResponse {
			wantMethod = "response"
		}
		if id != nil && !bytes.Equal(id, m.ID) {
			t.Fatalf("PeekEnvelope id %q, Parse id %q", id, m.ID)
		}
		if method != "" && method != wantMethod {
			t.Fatalf("PeekEnvelope method %q, Parse method %q", method, wantMethod)
		}
		if id == nil && echoableID(m.ID) && !bytes.Contains(body, []byte(`\`)) {
			t.Fatalf("PeekEnvelope found no id; Parse found %q", m.ID)
		}
	})
}
