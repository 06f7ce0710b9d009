package toolpin

import (
	"context"
	"strconv"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// BenchmarkLookupScopeMany500 reads the pin state of a 500-tool list, each
// tool observed once, in a session's scope of a memory store, as the
// response seam does for every tools/list under pinning: LookupScopeMany
// (one GetMany), against LookupScope of each tool (500).
func BenchmarkLookupScopeMany500(b *testing.B) {
	p, err := policy.Compile("p.yaml", []byte("default: deny\npin_mode: tofu\npin_scope: session\n"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	o := Observations{Store: state.NewMemory(0, nil)}
	scope := Scope(p, "payments", "s1")
	tools := make([]string, 500)
	for i := range tools {
		tools[i] = "tool_" + strconv.Itoa(i)
		d, err := Parse([]byte(`{"name":"`+tools[i]+`","inputSchema":{"type":"object"}}`), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := o.Observe(ctx, scope, d); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("many", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			defs, err := o.LookupScopeMany(ctx, p, "payments", scope, tools)
			if err != nil || len(defs) != len(tools) || !defs[0].Listed || defs[0].Changed {
				b.Fatalf("%v %+v", err, defs[:1])
			}
		}
	})
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, tool := range tools {
				if def, err := o.LookupScope(ctx, p, "payments", scope, tool); err != nil || !def.Listed {
					b.Fatalf("%v %+v", err, def)
				}
			}
		}
	})
}
