package toolpin

import (
	"context"
	"errors"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

func TestPromptArgumentsSchema(t *testing.T) {
	tests := []struct {
		give, wantName, want string
		wantErr              bool
	}{
		{give: `{"name":"summarize","arguments":[{"name":"text","required":true},{"name":"style","description":"tone"}]}`, wantName: "summarize",
			want: `{"additionalProperties":false,"properties":{"style":{"type":"string"},"text":{"type":"string"}},"required":["text"],"type":"object"}`},
		{give: `{"name":"hello"}`, wantName: "hello", want: `{"additionalProperties":false,"properties":{},"type":"object"}`},
		{give: `{"name":"x","arguments":[{"name":"a","required":false}]}`, wantName: "x", want: `{"additionalProperties":false,"properties":{"a":{"type":"string"}},"type":"object"}`},
		{give: `{"name":"x","arguments":[{"name":"a"},{"name":"a"}]}`, wantErr: true},
		{give: `{"name":"x","arguments":[{"description":"no name"}]}`, wantErr: true},
		{give: `{"name":"x","arguments":[{"name":"a","required":"yes"}]}`, wantErr: true},
		{give: `{"arguments":[]}`, wantErr: true},
		{give: `{"name":"x","name":"y"}`, wantErr: true},
		{give: `[]`, wantErr: true},
	}
	for _, tt := range tests {
		name, schema, err := PromptArgumentsSchema([]byte(tt.give))
		if (err != nil) != tt.wantErr || name != tt.wantName || string(schema) != tt.want {
			t.Errorf("%s: %q %s %v; want %q %s (error %v)", tt.give, name, schema, err, tt.wantName, tt.want, tt.wantErr)
		}
	}
}

// TestObservePromptArguments: the latest declaration listed is the one
// read, per pin scope; nothing is read with pinning off.
func TestObservePromptArguments(t *testing.T) {
	ctx := context.Background()
	o := Observations{Store: state.NewMemory(0, nil), Recent: &Recent{}}
	pol, err := policy.Compile("p.yaml", []byte("default: deny\npin_mode: tofu\npin_scope: session\n"))
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope(pol, "srv", "S1")
	for _, v := range []string{`{"v":1}`, `{"v":2}`, `{"v":2}`} {
		if err := o.ObservePromptArguments(ctx, scope, "p", []byte(v)); err != nil {
			t.Fatal(err)
		}
		got, found, err := o.PromptArguments(ctx, pol, "srv", "S1", "p")
		if err != nil || !found || string(got) != v {
			t.Fatalf("after listing %s: %s %v %v", v, got, found, err)
		}
	}
	if _, found, _ := o.PromptArguments(ctx, pol, "srv", "S2", "p"); found {
		t.Error("another session's scope reads this one's prompt")
	}
	off, _ := policy.Compile("p.yaml", []byte("default: deny\n"))
	if _, found, _ := o.PromptArguments(ctx, off, "srv", "S1", "p"); found {
		t.Error("pinning off reads observations")
	}
	down := Observations{Store: state.NewMemory(1, nil)}
	_ = down.ObservePromptArguments(ctx, "srv", "a", []byte(`{}`))
	if err := down.ObservePromptArguments(ctx, "srv", "b", []byte(`{}`)); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("a full store: %v, want ErrUnavailable", err)
	}
}
