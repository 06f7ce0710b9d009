package decision

import (
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// TestParseDetail: a body refused by a limit says which limit and which
// member; a body over the size limit only its size.
func TestParseDetail(t *testing.T) {
	for _, tt := range []struct {
		name string
		lim  mcpparse.Limits
		body string
		want string
	}{
		{"too deep", mcpparse.Limits{MaxDepth: 3}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"q":{"a":1}}}}`,
			"mcpparse: too_deep at offset 84: nested deeper than 3 (at /params/arguments/q)"},
		{"duplicate member", mcpparse.Limits{}, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
			`mcpparse: duplicate_key at offset 24: duplicate member "id" (at /id)`},
		{"too large", mcpparse.Limits{MaxBytes: 10}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			"mcpparse: too_large at offset 10: body longer than 10 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mcpparse.Parse([]byte(tt.body), mcpparse.ParseOptions{Limits: tt.lim})
			pe, ok := err.(*mcpparse.ParseError)
			if !ok {
				t.Fatalf("Parse: %v", err)
			}
			if got := parseDetail(pe, []byte(tt.body)); got != tt.want {
				t.Errorf("parseDetail = %q, want %q", got, tt.want)
			}
			if strings.Contains(parseDetail(pe, []byte(tt.body)), `"s"`) {
				t.Error("a value in the detail")
			}
		})
	}
}
