package decision

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// subjectVerifier accepts "Bearer <subject>" for the subjects it knows.
type subjectVerifier struct{}

func (subjectVerifier) Audiences() []string { return []string{"https://mcp.example.com/mcp"} }

func (subjectVerifier) Verify(_ context.Context, tok string) (*bearer.Principal, error) {
	return &bearer.Principal{Issuer: "https://idp.example.com", Subject: tok, Audience: "https://mcp.example.com/mcp"}, nil
}

func seamDecider(t *testing.T) (*Decider, *state.Tasks, *cursor.Sealer, string) {
	t.Helper()
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lp, err := CompilePolicy("examples/policy.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	store := new(PolicyStore)
	store.Store(lp)
	tasks := &state.Tasks{Store: state.NewMemory(10, nil)}
	sealer, err := cursor.New(bytes.Repeat([]byte{3}, cursor.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: subjectVerifier{}, Tasks: tasks, Cursors: sealer,
		Definitions: toolpin.Observations{Store: state.NewMemory(0, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	return d, tasks, sealer, lp.Version
}

func post(subject, body string) *Request {
	return &Request{Method: "POST", Headers: Headers{
		"authorization": {"Bearer " + subject}, "content-type": {"application/json"},
		"accept": {"application/json, text/event-stream"}, "mcp-protocol-version": {"2025-11-25"},
	}, Body: []byte(body)}
}

func TestTaskOwnership(t *testing.T) {
	d, tasks, _, _ := seamDecider(t)
	if err := tasks.Bind(context.Background(), "payments", "t-1", state.TaskOwner("https://idp.example.com", "alice"), 60_000); err != nil {
		t.Fatal(err)
	}
	// The same subject at another issuer is another principal.
	if err := tasks.Bind(context.Background(), "payments", "t-2", state.TaskOwner("https://other-idp.example.com", "alice"), 60_000); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		who, body string
		want      Reason
	}{
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1"}}`, ReasonAllowed},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"t-1"}}`, ReasonAllowed},
		{"bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1"}}`, ReasonTaskNotOwned},
		{"bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"t-1"}}`, ReasonTaskNotOwned},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-unknown"}}`, ReasonTaskNotOwned},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":7}}`, ReasonInvalidParams},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, ReasonInvalidParams},
		{"bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`, ReasonAllowed},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-2"}}`, ReasonTaskNotOwned},
		// A name written with escapes is the name it decodes to, as
		// encoding/json and JSON.parse read it; a case variant is not
		// taskId (an SDK matching names case-insensitively would read
		// it as one, so its absence denies).
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"\u0074askId":"t-1"}}`, ReasonAllowed},
		{"bob", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"\u0074ask\u0049d":"t-1"}}`, ReasonTaskNotOwned},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"TaskId":"t-1"}}`, ReasonInvalidParams},
	}
	for _, tt := range tests {
		if got := d.Decide(context.Background(), post(tt.who, tt.body)); got.Reason != tt.want {
			t.Errorf("%s %s: %s (%s), want %s", tt.who, tt.body, got.Reason, got.Detail, tt.want)
		}
	}
	// A task-augmented call is marked for the seam; the revision is kept.
	got := d.Decide(context.Background(), post("alice", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{},"task":{"ttl":1000}}}`))
	if !got.Allowed() || !got.TaskRequested || got.ProtocolVersion != "2025-11-25" {
		t.Errorf("task-augmented call: %+v", got)
	}
}

func TestSealedCursorCheck(t *testing.T) {
	d, _, sealer, version := seamDecider(t)
	sealed, err := sealer.Seal(cursor.Binding{Method: "tools/list", Server: "payments", Principal: state.TaskOwner("https://idp.example.com", "alice"), PolicyVersion: version}, "up-2")
	if err != nil {
		t.Fatal(err)
	}
	// alice at another issuer is another principal: her cursor is not this one's.
	otherIssuer, err := sealer.Seal(cursor.Binding{Method: "tools/list", Server: "payments", Principal: state.TaskOwner("https://other-idp.example.com", "alice"), PolicyVersion: version}, "up-2")
	if err != nil {
		t.Fatal(err)
	}
	subjectOnly, err := sealer.Seal(cursor.Binding{Method: "tools/list", Server: "payments", Principal: "alice", PolicyVersion: version}, "up-2")
	if err != nil {
		t.Fatal(err)
	}
	list := func(c string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + c + `"}}`
	}
	tests := []struct {
		who, body string
		want      Reason
	}{
		{"alice", list(sealed), ReasonAllowed},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ReasonAllowed},
		{"bob", list(sealed), ReasonInvalidParams},
		{"alice", list(otherIssuer), ReasonInvalidParams},
		{"alice", list(subjectOnly), ReasonInvalidParams},
		{"alice", list("up-2"), ReasonInvalidParams},
		{"alice", strings.Replace(list(sealed), "tools/list", "prompts/list", 1), ReasonInvalidParams},
		{"alice", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}`, ReasonInvalidParams},
		// A name written with escapes is the name it decodes to: an
		// upstream cursor under "\u0063ursor" is refused like one under
		// "cursor".
		{"alice", strings.Replace(list("up-2"), `"cursor"`, `"\u0063ursor"`, 1), ReasonInvalidParams},
		{"alice", strings.Replace(list(sealed), `"cursor"`, `"\u0063ursor"`, 1), ReasonAllowed},
	}
	for _, tt := range tests {
		if got := d.Decide(context.Background(), post(tt.who, tt.body)); got.Reason != tt.want {
			t.Errorf("%s %s: %s (%s), want %s", tt.who, tt.body, got.Reason, got.Detail, tt.want)
		}
	}
}
