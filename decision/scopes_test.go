package decision

import (
	"slices"
	"testing"
)

// TestTokenScopes: the scope claim is split on U+0020 only (RFC 6749
// section 3.3); no other whitespace separates, and a piece that is not a
// scope-token grants nothing.
func TestTokenScopes(t *testing.T) {
	tests := []struct {
		name string
		give map[string]any
		want []string
	}{
		{"space separated", map[string]any{"scope": "openid mcp:search"}, []string{"openid", "mcp:search"}},
		{"double and edge spaces", map[string]any{"scope": " openid  mcp:search "}, []string{"openid", "mcp:search"}},
		{"tab", map[string]any{"scope": "openid\tmcp:search"}, nil},
		{"line feed", map[string]any{"scope": "openid\nmcp:search"}, nil},
		{"carriage return", map[string]any{"scope": "openid\rmcp:search"}, nil},
		{"vertical tab", map[string]any{"scope": "openid\vmcp:search"}, nil},
		{"form feed", map[string]any{"scope": "openid\fmcp:search"}, nil},
		{"NBSP", map[string]any{"scope": "openid\u00a0mcp:search"}, nil},
		{"em space", map[string]any{"scope": "openid\u2003mcp:search"}, nil},
		{"ideographic space", map[string]any{"scope": "openid\u3000mcp:search"}, nil},
		{"NEL", map[string]any{"scope": "openid\u0085mcp:search"}, nil},
		{"tab then space", map[string]any{"scope": "openid\t mcp:search"}, []string{"mcp:search"}},
		{"tab-joined piece between good ones", map[string]any{"scope": "a b\tc d"}, []string{"a", "d"}},
		{"quote and backslash are not scope characters", map[string]any{"scope": `a"b c\d e`}, []string{"e"}},
		{"non-ASCII piece", map[string]any{"scope": "mcp:séarch mcp:search"}, []string{"mcp:search"}},
		{"empty", map[string]any{"scope": ""}, nil},
		{"scp string", map[string]any{"scp": "a b\tc"}, []string{"a"}},
		{"scp list", map[string]any{"scp": []any{"a", "b c", "d\te", 7, "f"}}, []string{"a", "f"}},
		{"scope list", map[string]any{"scope": []any{"a", "b"}}, []string{"a", "b"}},
		{"scope wins over scp", map[string]any{"scope": "a", "scp": []any{"b"}}, []string{"a"}},
		{"scope of another type grants none, even with scp", map[string]any{"scope": 7, "scp": []any{"b"}}, nil},
		{"scope null grants none", map[string]any{"scope": nil, "scp": "b"}, nil},
		{"neither", map[string]any{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokenScopes(tt.give); !slices.Equal(got, tt.want) {
				t.Errorf("tokenScopes(%v) = %q, want %q", tt.give, got, tt.want)
			}
		})
	}
}
