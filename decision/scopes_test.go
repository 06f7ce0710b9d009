package decision

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
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

// scopeVerifier verifies any token; its text is the scope claim, with
// '+' for a space, '_' for ':' and '~' for '*' (RFC 6750 b64token has
// none of these three).
type scopeVerifier struct{}

func (scopeVerifier) Audiences() []string { return []string{"https://mcp.example.com/mcp"} }

func (scopeVerifier) Verify(_ context.Context, tok string) (*bearer.Principal, error) {
	return &bearer.Principal{Issuer: "https://idp.example.com", Subject: "alice", Audience: "https://mcp.example.com/mcp",
		Claims: map[string]any{"scope": strings.NewReplacer("+", " ", "_", ":", "~", "*").Replace(tok)}}, nil
}

// TestScopeHierarchyStepUp: a rule's scopes are satisfied by broader
// token scopes under scope_hierarchy; the insufficient_scope challenge
// names every scope the operation needs, also those the token has.
func TestScopeHierarchyStepUp(t *testing.T) {
	src := lines(
		"default: deny",
		"scope_hierarchy:",
		"  implies: {mcp:admin: [ledger:export]}",
		"  actions: [admin, write, read]",
		"allow:",
		"  - {id: export, match: payments/export, scopes: [ledger:export, ledger:read]}",
		"  - {id: read, match: payments/read, scopes: [files:read]}",
	)
	lp, err := CompilePolicy("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	store := new(PolicyStore)
	store.Store(lp)
	d, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: scopeVerifier{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, scope string
		want        Reason
		wantScopes  []string
	}{
		{"export", "ledger:export+ledger:read", ReasonAllowed, nil},
		{"export", "mcp:admin+ledger:admin", ReasonAllowed, nil}, // implies, and admin ⊇ read
		{"export", "mcp:admin+ledger:write", ReasonAllowed, nil},
		{"export", "ledger:export", ReasonInsufficientScope, []string{"ledger:export", "ledger:read"}},
		{"export", "ledger:read", ReasonInsufficientScope, []string{"ledger:export", "ledger:read"}},
		{"read", "files:write", ReasonAllowed, nil},
		{"read", "files:*", ReasonAllowed, nil},
		{"read", "files", ReasonInsufficientScope, []string{"files:read"}},
		{"read", "other:admin", ReasonInsufficientScope, []string{"files:read"}},
	}
	for _, tt := range tests {
		got := d.Decide(context.Background(), post(strings.NewReplacer(":", "_", "*", "~").Replace(tt.scope), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tt.tool+`"}}`))
		if got.Reason != tt.want || !slices.Equal(got.RequiredScopes, tt.wantScopes) {
			t.Errorf("%s with %q: %s %q, want %s %q", tt.tool, tt.scope, got.Reason, got.RequiredScopes, tt.want, tt.wantScopes)
		}
	}
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }
