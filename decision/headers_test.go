package decision

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// taskHeaderPolicy admits the task methods of both revisions, so every row
// below is decided by the header check and task ownership alone.
const taskHeaderPolicy = `default: deny
methods:
  allow:
    - {id: tasks-get, method: tasks/get}
    - {id: tasks-update, method: tasks/update}
    - {id: tasks-cancel, method: tasks/cancel}
    - {id: tasks-result, method: tasks/result}
`

// SEP-2663 ("Streamable HTTP: Routing Headers"): tasks/get, tasks/update and
// tasks/cancel carry Mcp-Name = params.taskId; a disagreeing, repeated or
// undecodable one is header_mismatch (SEP-2243), an absent one is not
// checked, and the task's owner is still checked after the header.
func TestTaskMcpName(t *testing.T) {
	lp, err := CompilePolicy("task-headers.yaml", []byte(taskHeaderPolicy))
	if err != nil {
		t.Fatal(err)
	}
	store := new(PolicyStore)
	store.Store(lp)
	tasks := &state.Tasks{Store: state.NewMemory(10, nil)}
	if err := tasks.Bind(context.Background(), "payments", "T-1", state.TaskOwner("https://idp.example.com", "alice"), 60_000); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: subjectVerifier{}, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	const (
		get    = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T-1"}}`
		update = `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"T-1","inputResponses":{}}}`
		cancel = `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"T-1"}}`
		result = `{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"T-1"}}`
	)
	b64 := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("T-1")) + "?="
	tests := []struct {
		name    string
		version string
		who     string
		give    string
		method  []string // Mcp-Method values; nil: absent
		mcpName []string // Mcp-Name values; nil: absent
		wantWhy Reason
	}{
		{name: "2026 get match", version: "2026-07-28", who: "alice", give: get, method: []string{"tasks/get"}, mcpName: []string{"T-1"}, wantWhy: ReasonAllowed},
		{name: "2026 update match", version: "2026-07-28", who: "alice", give: update, method: []string{"tasks/update"}, mcpName: []string{"T-1"}, wantWhy: ReasonAllowed},
		{name: "2026 cancel match", version: "2026-07-28", who: "alice", give: cancel, method: []string{"tasks/cancel"}, mcpName: []string{"T-1"}, wantWhy: ReasonAllowed},
		{name: "2026 get match base64", version: "2026-07-28", who: "alice", give: get, method: []string{"tasks/get"}, mcpName: []string{b64}, wantWhy: ReasonAllowed},
		{name: "2026 get match, not the owner", version: "2026-07-28", who: "bob", give: get, method: []string{"tasks/get"}, mcpName: []string{"T-1"}, wantWhy: ReasonTaskNotOwned},
		{name: "2026 get mismatch", version: "2026-07-28", who: "alice", give: get, method: []string{"tasks/get"}, mcpName: []string{"T-2"}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 get mismatch by case", version: "2026-07-28", who: "alice", give: get, mcpName: []string{"t-1"}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 update mismatch", version: "2026-07-28", who: "alice", give: update, mcpName: []string{"T-2"}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 cancel mismatch", version: "2026-07-28", who: "alice", give: cancel, mcpName: []string{""}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 get duplicate", version: "2026-07-28", who: "alice", give: get, mcpName: []string{"T-1", "T-1"}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 cancel duplicate", version: "2026-07-28", who: "alice", give: cancel, mcpName: []string{"T-1", "T-2"}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 get bad base64", version: "2026-07-28", who: "alice", give: get, mcpName: []string{"=?base64?%%%?="}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 get absent", version: "2026-07-28", who: "alice", give: get, method: []string{"tasks/get"}, wantWhy: ReasonAllowed},
		{name: "2026 update absent", version: "2026-07-28", who: "alice", give: update, wantWhy: ReasonAllowed},
		{name: "2026 get non-string taskId", version: "2026-07-28", who: "alice", give: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":1}}`, mcpName: []string{"1"}, wantWhy: ReasonHeaderMismatch},
		{name: "2026 get Mcp-Method mismatch", version: "2026-07-28", who: "alice", give: get, method: []string{"tasks/cancel"}, mcpName: []string{"T-1"}, wantWhy: ReasonHeaderMismatch},
		{name: "2025 get match", version: "2025-11-25", who: "alice", give: get, mcpName: []string{"T-1"}, wantWhy: ReasonAllowed},
		{name: "2025 cancel match", version: "2025-11-25", who: "alice", give: cancel, method: []string{"tasks/cancel"}, mcpName: []string{"T-1"}, wantWhy: ReasonAllowed},
		{name: "2025 get mismatch", version: "2025-11-25", who: "alice", give: get, mcpName: []string{"T-2"}, wantWhy: ReasonHeaderMismatch},
		{name: "2025 get duplicate", version: "2025-11-25", who: "alice", give: get, mcpName: []string{"T-1", "T-1"}, wantWhy: ReasonHeaderMismatch},
		{name: "2025 get absent", version: "2025-11-25", who: "alice", give: get, wantWhy: ReasonAllowed},
		{name: "2025 result absent", version: "2025-11-25", who: "alice", give: result, wantWhy: ReasonAllowed},
		// tasks/result names no Mcp-Name (SEP-2663 removed the method).
		{name: "2025 result with Mcp-Name", version: "2025-11-25", who: "alice", give: result, mcpName: []string{"T-1"}, wantWhy: ReasonHeaderMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(tt.who, tt.give)
			r.Headers["mcp-protocol-version"] = []string{tt.version}
			if tt.method != nil {
				r.Headers["mcp-method"] = tt.method
			}
			if tt.mcpName != nil {
				r.Headers["mcp-name"] = tt.mcpName
			}
			if got := d.Decide(context.Background(), r); got.Reason != tt.wantWhy {
				t.Errorf("%s (%s), want %s", got.Reason, got.Detail, tt.wantWhy)
			}
		})
	}
}
