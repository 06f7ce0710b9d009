package extproc

import "testing"

// TestContentReading: the three clients' readings of Content-Type values
// (media.go), as their sources parse them; the fast path for the SDK
// servers' own values agrees with the general one.
func TestContentReading(t *testing.T) {
	tests := []struct {
		give             []string
		kind             bodyKind
		agree, charsetOK bool
	}{
		{nil, kindOther, true, true},
		{[]string{"application/json"}, kindJSON, true, true},
		{[]string{"application/json; charset=utf-8"}, kindJSON, true, true},
		{[]string{"Application/JSON ; Charset=UTF-8"}, kindJSON, true, true},
		{[]string{"text/event-stream"}, kindSSE, true, true},
		{[]string{"text/event-stream; charset=utf-8"}, kindSSE, true, true},
		{[]string{`application/json; profile="text/event-stream"`}, kindJSON, true, true},
		{[]string{"application/jsonx"}, kindOther, false, true},                     // Python: startswith
		{[]string{"application/json; charset"}, kindJSON, false, false},             // Go refuses the parameter
		{[]string{"application/json", "text/event-stream"}, kindOther, false, true}, // joined: TS none, Go json, Python json
		{[]string{" text/event-stream"}, kindSSE, false, true},                      // Python does not trim
		{[]string{"text/event-stream; charset=utf-16le"}, kindSSE, true, false},
		{[]string{"text/event-stream; charset=\"utf-8\""}, kindSSE, true, true},
		{[]string{"application/json; charset*=utf-8''utf-16"}, kindJSON, true, false}, // RFC 2231: Go reads charset utf-16
		{[]string{"text/plain"}, kindOther, true, true},
		{[]string{"text/event-stream", "text/event-stream; charset=utf-16le"}, kindOther, false, false}, // httpx joins them and decodes UTF-16
		{[]string{"text/plain; a=application/json"}, kindOther, true, true},
	}
	for _, tt := range tests {
		kind, agree, charsetOK := contentReading(tt.give)
		if kind != tt.kind || agree != tt.agree || charsetOK != tt.charsetOK {
			t.Errorf("%q: %v %v %v, want %v %v %v", tt.give, kind, agree, charsetOK, tt.kind, tt.agree, tt.charsetOK)
		}
	}
}

// TestCodingsIdentity: every entry and every coding in it must be identity.
func TestCodingsIdentity(t *testing.T) {
	for _, tt := range []struct {
		give []string
		want bool
	}{
		{nil, true},
		{[]string{"identity"}, true},
		{[]string{"Identity, identity"}, true},
		{[]string{"identity, gzip"}, false},
		{[]string{"identity", "br"}, false},
		{[]string{"x-gzip"}, false},
	} {
		if got := codingsIdentity(tt.give); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.give, got, tt.want)
		}
	}
}
