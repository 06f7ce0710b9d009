package capture

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		give     string
		wantBody string
		wantHost string
		wantErr  string // a substring of the error; "" for none
	}{
		{"corpus line", `{"http":{"method":"POST","path":"/mcp","headers":{"Host":"h"},"body_text":"{}"}}`, "{}", "h", ""},
		{"test case", `{"request":{"method":"POST","path":"/mcp","body_b64":"e30="}}`, "{}", "", ""},
		{"bare", `{"method":"GET","path":"/mcp","body_hex":"7b7d"}`, "{}", "", ""},
		{"b64 before text", `{"method":"POST","body_b64":"e30=","body_text":"x"}`, "{}", "", ""},
		{"no method", `{"http":{"path":"/mcp"}}`, "", "", "no method"},
		{"bad hex", `{"method":"POST","body_hex":"zz"}`, "", "", "captured request body"},
		{"not JSON", `{`, "", "", "not strict JSON: mcpparse: syntax"},
		// encoding/json would keep the last of each.
		{"two body_text", `{"method":"POST","body_text":"{}","body_text":"x"}`, "", "", "not strict JSON: mcpparse: duplicate_key at offset 34: duplicate member \"body_text\""},
		{"two http", `{"http":{"method":"POST","body_text":"{}"},"http":{"method":"POST","body_text":"x"}}`, "", "", "duplicate_key"},
		{"two headers of one name", `{"method":"POST","headers":{"authorization":"Bearer a","authorization":"Bearer b"}}`, "", "", "duplicate_key"},
		{"header names differing in case", `{"method":"POST","headers":{"Authorization":"Bearer a","authorization":"Bearer b"}}`, "", "", "case_variant_key"},
		{"a member in another case", `{"method":"POST","body_text":"{}","Body_Text":"x"}`, "", "", "case_variant_key"},
		{"two methods inside http", `{"http":{"method":"GET","method":"POST"}}`, "", "", "duplicate_key"},
		{"trailing data", `{"method":"POST"} {}`, "", "", "trailing_data"},
		{"invalid UTF-8", "{\"method\":\"POST\",\"body_text\":\"\xff\"}", "", "", "invalid_utf8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.give))
			if (err != nil) != (tt.wantErr != "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse: err %v, want error %q", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !bytes.Equal(got.Body, []byte(tt.wantBody)) || got.Headers["host"] != tt.wantHost {
				t.Errorf("Parse = body %q host %q, want %q %q", got.Body, got.Headers["host"], tt.wantBody, tt.wantHost)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	c := &Request{Method: "POST", Path: "/mcp", Query: "a=1", Body: []byte("{}"),
		Headers: map[string]string{"host": "h", "content-length": "7"}}
	h := c.CheckRequest(true).GetAttributes().GetRequest().GetHttp()
	if h.GetPath() != "/mcp?a=1" || h.GetHeaders()[":authority"] != "h" || string(h.GetRawBody()) != "{}" || h.GetBody() != "" || h.GetSize() != 7 {
		t.Errorf("CheckRequest(true) = %v", h)
	}
	h = c.CheckRequest(false).GetAttributes().GetRequest().GetHttp()
	if h.GetBody() != "{}" || h.GetRawBody() != nil {
		t.Errorf("CheckRequest(false) = %v", h)
	}
}
