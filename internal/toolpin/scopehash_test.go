package toolpin

import (
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// TestScopeOfHashAgrees: the scope the seam builds (ScopeOfHash) from Check's session
// hash is the one Check's pin step builds from the session, under either
// pin_scope, and the hash never holds the session id.
func TestScopeOfHashAgrees(t *testing.T) {
	for _, src := range []string{"default: deny\npin_mode: tofu\npin_scope: session\n", "default: deny\npin_mode: tofu\npin_scope: server\n", "default: deny\n"} {
		p, err := policy.Compile("p.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"", "abc", "rev:2025-06-18", "a-very-long-session-id-0123456789"} {
			h := SessionHash(s)
			if got, want := ScopeOfHash(p, "payments", h), Scope(p, "payments", s); got != want {
				t.Errorf("%q: session %q: %q, want %q", src, s, got, want)
			}
			if s != "" && (len(h) != 32 || h == s) {
				t.Errorf("SessionHash(%q) = %q", s, h)
			}
		}
	}
}
