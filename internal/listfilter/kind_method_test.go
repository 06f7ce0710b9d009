package listfilter

import (
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// TestKindsArePaginated: the lists this package filters are exactly the
// methods mcpmethod calls paginated (the core seals their cursors), and
// each kind answers its own method.
func TestKindsArePaginated(t *testing.T) {
	for _, m := range mcpmethod.Methods {
		k, ok := KindOf(m.Name)
		if want := mcpmethod.Paginated(m.Name); ok != want {
			t.Errorf("KindOf(%q) ok = %v, want %v (mcpmethod.Paginated)", m.Name, ok, want)
		}
		if ok && k.Method() != m.Name {
			t.Errorf("KindOf(%q).Method() = %q", m.Name, k.Method())
		}
	}
}
