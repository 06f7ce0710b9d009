package capture

import (
	"bytes"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		give     string
		wantBody string
		wantHost string
		wantErr  bool
	}{
		{"corpus line", `{"http":{"method":"POST","path":"/mcp","headers":{"Host":"h"},"body_text":"{}"}}`, "{}", "h", false},
		{"test case", `{"request":{"method":"POST","path":"/mcp","body_b64":"e30="}}`, "{}", "", false},
		{"bare", `{"method":"GET","path":"/mcp","body_hex":"7b7d"}`, "{}", "", false},
		{"b64 before text", `{"method":"POST","body_b64":"e30=","body_text":"x"}`, "{}", "", false},
		{"no method", `{"http":{"path":"/mcp"}}`, "", "", true},
		{"bad hex", `{"method":"POST","body_hex":"zz"}`, "", "", true},
		{"not JSON", `{`, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.give))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse: err %v, want error %v", err, tt.wantErr)
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
