package decision

import (
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// TestSessionHashCached: the cached hash is toolpin's, past the cache's
// bound too, and "" stays "".
func TestSessionHashCached(t *testing.T) {
	if sessionHash("") != "" {
		t.Fatal("a hash for no session")
	}
	for i := range maxSessionHashes + 10 {
		s := "session-" + string(rune('a'+i%26)) + string(rune(i))
		for range 2 {
			if got, want := sessionHash(s), toolpin.SessionHash(s); got != want {
				t.Fatalf("%q: %q, want %q", s, got, want)
			}
		}
	}
	if n := len(sessionHashes.m); n > maxSessionHashes {
		t.Fatalf("%d cached, bound %d", n, maxSessionHashes)
	}
}
