package mcpparse

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// TestTargetsFollowMethodTable: the parser extracts a target exactly for the
// client methods internal/mcpmethod gives one, from the member it names, and
// refuses such a method without that member (ErrInvalidParams).
func TestTargetsFollowMethodTable(t *testing.T) {
	params := map[mcpmethod.TargetKind]string{
		mcpmethod.None:         `{"name":"x","uri":"file:///x"}`,
		mcpmethod.Tool:         `{"name":"x","arguments":{}}`,
		mcpmethod.Prompt:       `{"name":"x"}`,
		mcpmethod.Resource:     `{"uri":"file:///x"}`,
		mcpmethod.ResourceList: `{"notifications":{"resourceSubscriptions":["file:///x"]}}`,
		mcpmethod.Reference:    `{"ref":{"type":"ref/resource","uri":"file:///x"},"argument":{"name":"a","value":"v"}}`,
	}
	for _, mm := range mcpmethod.Methods {
		if mm.From&mcpmethod.Client == 0 {
			continue
		}
		t.Run(mm.Name, func(t *testing.T) {
			msg := func(p string) []byte {
				id := `"id":1,`
				if strings.HasPrefix(mm.Name, "notifications/") {
					id = ""
				}
				return []byte(`{"jsonrpc":"2.0",` + id + `"method":"` + mm.Name + `","params":` + p + `}`)
			}
			b, err := Parse(msg(params[mm.Target]), ParseOptions{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			m := b.Messages[0]
			got := map[string]bool{"tool": m.Tool != "", "prompt": m.Prompt != "", "uri": m.URI != "", "uris": len(m.URIs) > 0}
			want := map[string]bool{
				"tool": mm.Target == mcpmethod.Tool, "prompt": mm.Target == mcpmethod.Prompt,
				"uri": mm.Target == mcpmethod.Resource || mm.Target == mcpmethod.Reference, "uris": mm.Target == mcpmethod.ResourceList,
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("target %v (%s): %s set = %v, want %v", mm.Target, mm.Member, k, got[k], want[k])
				}
			}
			if mm.Target == mcpmethod.None || mm.Target == mcpmethod.ResourceList {
				return // no target, or a list that may be absent
			}
			_, err = Parse(msg(`{}`), ParseOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Kind != ErrInvalidParams {
				t.Errorf("without %s: err %v, want invalid_params", mm.Member, err)
			}
		})
	}
}
