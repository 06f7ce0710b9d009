package extproc

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestAttack35ListByShapeWithoutClaims: every stream filters a result
// carrying a list by its shape (listfilter), but only list, batch and GET
// streams get the caller's claims (decision.ClaimsFor; callerClaims runs
// only there). On a tools/call stream a result with a tools array was
// decided with an empty claim set, so a `deny ... when` over claims did
// not fire and the tool an intern must not see stayed in it; now no item
// of such a list is shown (none can be decided for the caller).
func TestAttack35ListByShapeWithoutClaims(t *testing.T) {
	pol := "default: deny\nallow:\n  - {id: all, match: 'payments/*'}\ndeny:\n  - {id: interns, match: 'payments/deploy', when: '\"role\" in claims && claims.role == \"intern\"'}\n"
	f := newFixtureWith(t, []byte(pol), nil)
	const answer = `{"jsonrpc":"2.0","id":1,"result":{"content":[],"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"deploy","inputSchema":{"type":"object"}}]}}`
	names := func(x exchange, r route) []string {
		got := f.envoy.do(t, r, x)
		var res struct {
			Result struct{ Tools []struct{ Name string } }
		}
		if got.status != 200 || json.Unmarshal([]byte(got.body), &res) != nil {
			t.Fatalf("%d %s", got.status, got.body)
		}
		var out []string
		for _, tl := range res.Result.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	// The list stream: the intern's claims hide deploy.
	lx := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"deploy","inputSchema":{"type":"object"}}]}}`)
	lx.reqHdrs = nil
	lx.meta["claims"] = `{"sub":"alice","role":"intern"}`
	if got := names(lx, listRoute); !slices.Equal(got, []string{"search"}) {
		t.Fatalf("list stream: %q", got)
	}
	// The tools/call stream: Check writes no claims; the same array shows
	// nothing.
	cx := jsonAnswer(f.listRequest("alice", "tools/call", "1", `,"params":{"name":"search","arguments":{}}`), answer)
	cx.reqHdrs = nil
	if got := names(cx, callRoute); len(got) != 0 {
		t.Errorf("tools/call stream: the tools array kept %q (decided without the caller's claims)", got)
	}
}

// TestAttack35SealedCursorUnparsedPasses: on the sealed-cursor route a
// request body the processor's parse refuses passes unchanged
// (requestBody: "Check decided this body"), so the sealed cursor reaches
// the MCP server unswapped. The processor parses with mcpparse's default
// depth (64) while Check parses with --max-json-depth: a tools/list that
// Check admits under a larger depth, with params._meta nested 70 deep,
// keeps its sealed cursor.
func TestAttack35SealedCursorUnparsedPasses(t *testing.T) {
	f := newFixture(t)
	page1 := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}],"nextCursor":"up-2"}}`
	got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), page1))
	var res struct{ Result struct{ NextCursor string } }
	if err := json.Unmarshal([]byte(got.body), &res); err != nil || res.Result.NextCursor == "" {
		t.Fatalf("page 1: %s", got.body)
	}
	sealed := res.Result.NextCursor
	deep := strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70)
	page2 := f.envoy.do(t, pageRoute, jsonAnswer(f.listRequest("alice", "tools/list", "2", `,"params":{"cursor":"`+sealed+`","_meta":`+deep+`}`),
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"search"}]}}`))
	if strings.Contains(page2.upstreamBody, sealed) && !page2.localReply {
		t.Errorf("the sealed cursor reached the upstream unswapped (answer %d %s)", page2.status, page2.body)
	}
}
