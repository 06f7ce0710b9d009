package policy

import (
	"reflect"
	"strings"
	"testing"
)

// TestScopes: the scopes list is read in file order and checked as RFC 6749
// scope tokens; it never changes a decision.
func TestScopes(t *testing.T) {
	tests := []struct {
		give    string
		want    []string
		wantErr string
	}{
		{give: "default: deny\n", want: nil},
		{give: "scopes: []\n", want: nil},
		{give: "scopes:\n", want: nil},
		{give: "scopes: [mcp:tools, files.read]\n", want: []string{"mcp:tools", "files.read"}},
		{give: "scopes: [\"a b\"]\n", wantErr: `1:10: scope "a b" is not an OAuth scope token`},
		{give: "scopes: [\"\"]\n", wantErr: `scope "" is not an OAuth scope token`},
		{give: "scopes: [\"a\\\"b\"]\n", wantErr: `is not an OAuth scope token`},
		{give: "scopes: [\"é\"]\n", wantErr: `is not an OAuth scope token`},
		{give: "scopes: [7]\n", wantErr: `scope "7" is not an OAuth scope token`},
		{give: "scopes: [a, a]\n", wantErr: `1:13: duplicate scope "a"`},
		{give: "scopes: mcp:tools\n", wantErr: `scopes must be a list`},
	}
	for _, tt := range tests {
		p, err := Compile("p.yaml", []byte(tt.give))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.give, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.give, err)
			continue
		}
		if got := p.Scopes(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: Scopes() = %q, want %q", tt.give, got, tt.want)
		}
	}
}
