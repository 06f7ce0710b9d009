package listfilter

import (
	"errors"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

func TestReplaceCursor(t *testing.T) {
	open := func(method, c string) (string, error) {
		if c == "bad" {
			return "", errors.New("invalid cursor")
		}
		return method + "|" + c, nil
	}
	tests := []struct {
		name, give, want string
		changed          bool
	}{
		{"list with cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"s1"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/list|s1"}}`, true},
		{"no cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, false},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, false},
		{"not a list", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","cursor":"c"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","cursor":"c"}}`, false},
		{"escaped", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"cursor":"\u0073"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"cursor":"tasks/list|s"}}`, true},
		{"escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"\u0063ursor":"s1"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"\u0063ursor":"tools/list|s1"}}`, true},
	}
	for _, tt := range tests {
		out, changed, err := ReplaceCursor([]byte(tt.give), mcpparse.Limits{}, open)
		if err != nil || string(out) != tt.want || changed != tt.changed {
			t.Errorf("%s: %s %v %v", tt.name, out, changed, err)
		}
	}
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"bad"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"Cursor":"s1"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"s1","cursor":"s2"}}`,
	} {
		if _, _, err := ReplaceCursor([]byte(bad), mcpparse.Limits{}, open); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
