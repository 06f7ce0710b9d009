package mcpparse

import "testing"

func TestDecodeHeaderValue(t *testing.T) {
	tests := []struct {
		give    string
		want    string
		wantErr bool
	}{
		{give: "tools/call", want: "tools/call"},
		{give: "", want: ""},
		{give: "read_file", want: "read_file"},
		{give: "=?base64?cmVhZF9maWxl?=", want: "read_file"},
		{give: "=?base64?WsO8cmljaCDwn5qA?=", want: "Zürich 🚀"},
		{give: "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", want: "=?base64?literal?="}, // the spec's example
		{give: "=?base64??=", want: ""},
		{give: "=?BASE64?cmVhZF9maWxl?=", want: "=?BASE64?cmVhZF9maWxl?="}, // markers are case-sensitive
		{give: "=?base64?", want: "=?base64?"},
		{give: "=?base64?=", want: "=?base64?="},
		{give: "=?base64?cmVhZF9maWxl", want: "=?base64?cmVhZF9maWxl"},
		{give: "=?base64?not base64!?=", wantErr: true},
		{give: "=?base64?cmVhZF9maWxl?=x", want: "=?base64?cmVhZF9maWxl?=x"},
		{give: "=?base64?cmVhZF9maWxl=?=", wantErr: true},    // bad padding
		{give: "=?base64?YR==?=", wantErr: true},             // non-zero padding bits
		{give: "=?base64?cmVhZF9m\r\naWxl?=", wantErr: true}, // line breaks
		{give: "=?base64?cmVhZF9maWxl_-?=", wantErr: true},   // URL alphabet
		{give: "=?base64?/w==?=", wantErr: true},             // 0xFF: not UTF-8
		{give: "=?base64?7aCA?=", wantErr: true},             // encoded surrogate
		{give: "=?base64?AA==?=", want: "\x00"},              // valid UTF-8; the caller judges NUL
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := DecodeHeaderValue(tt.give)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
