package toolpin

import (
	"context"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// TestInputSchemaByFingerprint: Observe keeps a definition's inputSchema
// (RFC 8785 form) under its fingerprint; a definition without one, or
// one never observed, has none.
func TestInputSchemaByFingerprint(t *testing.T) {
	ctx := context.Background()
	o := Observations{Store: state.NewMemory(0, nil)}
	tests := []struct {
		name, give, want string
	}{
		{"schema", `{"name":"transfer","inputSchema":{"type":"object", "properties":{"amount":{"type":"integer","maximum":1e3}}}}`, `{"properties":{"amount":{"maximum":1000,"type":"integer"}},"type":"object"}`},
		{"no schema", `{"name":"ping"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.give), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.InputSchema != tt.want {
				t.Fatalf("InputSchema %s, want %s", d.InputSchema, tt.want)
			}
			if err := o.Observe(ctx, "srv", d); err != nil {
				t.Fatal(err)
			}
			got, found, err := o.InputSchema(ctx, d.Fingerprint)
			if err != nil || found != (tt.want != "") || string(got) != tt.want {
				t.Fatalf("InputSchema(fp) = %s, %v, %v; want %s", got, found, err, tt.want)
			}
		})
	}
	if _, found, err := o.InputSchema(ctx, Version+":sha256:"+string(make([]byte, 0))+"00"); found || err != nil {
		t.Fatalf("an unobserved fingerprint has a schema (%v, %v)", found, err)
	}
}
