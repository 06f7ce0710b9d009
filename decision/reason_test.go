package decision

import (
	"slices"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// TestBearerReasons: every failure kind of the token verifier maps to the
// reason of the same word, and that reason is in the closed set.
func TestBearerReasons(t *testing.T) {
	for _, k := range bearer.Kinds() {
		r := bearerReason(k)
		if string(r) != k.String() {
			t.Errorf("kind %v answers %s", k, r)
		}
		if !slices.Contains(reasons, r) {
			t.Errorf("kind %v: reason %s is not in the closed set", k, r)
		}
	}
	if r := bearerReason(bearer.Kind(0)); r != ReasonInternalError {
		t.Errorf("an unknown kind answers %s, want internal_error", r)
	}
}
