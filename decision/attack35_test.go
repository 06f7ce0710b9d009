package decision

import (
	"context"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// TestAttack35RefusedBatchDropsSeamMarks: a refused batch is decided as
// its refused element (decideBatch: *dec = el), so its metadata names that
// element's method and its SealedCursor is that element's. Under dry run
// (extauthz Server.DryRun admits every decision) the whole batch reaches
// the MCP server: a tools/list element's sealed cursor then travels with
// neither x-mcp-cursor nor x-mcp-method batch (the default route: no
// request body to the processor, the cursor unswapped), and the metadata
// carries no claims (ClaimsFor(tasks/get) is false) although the batch's
// answer holds a list.
func TestAttack35RefusedBatchDropsSeamMarks(t *testing.T) {
	d, _, sealer, version := seamDecider(t)
	sealed, err := sealer.Seal(cursor.Binding{Method: "tools/list", Server: "payments", Principal: state.TaskOwner("https://idp.example.com", "alice"), PolicyVersion: version}, "up-2")
	if err != nil {
		t.Fatal(err)
	}
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + sealed + `"}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":7}}]`
	r := post("alice", body)
	r.Headers["mcp-protocol-version"] = []string{"2025-03-26"}
	got := d.Decide(context.Background(), r)
	if got.Allowed() {
		t.Fatalf("batch allowed: %+v", got)
	}
	if got.BatchIndex != 1 {
		t.Fatalf("refused at %d (%s %s), want the tasks/get element", got.BatchIndex, got.Reason, got.Detail)
	}
	md := MetadataOf(got, true, "") // as a dry run admits it
	if !got.SealedCursor || md.Claims == "" {
		t.Errorf("dry-run admitted batch with a sealed tools/list cursor: method %q, SealedCursor %v, claims %q", got.Method, got.SealedCursor, md.Claims)
	}
}
