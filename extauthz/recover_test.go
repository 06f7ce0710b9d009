package extauthz

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// TestRetryRecoversResult: a retry (same idempotency key, same request
// digest) of a call whose rule says recover_results is answered by Check
// from the result the response seam recorded under Check's recover_key,
// so the upstream runs once for two requests; without a recorded result
// the retry goes upstream marked x-mcp-retry; under another rule, or for
// another request under the key, nothing is recovered.
func TestRetryRecoversResult(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte("default: deny\nallow:\n  - {id: refunds, match: payments/issue_refund, recover_results: true}\n  - {id: search, match: payments/search}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := state.NewMemory(0, nil)
	results := &state.Results{Store: store}
	srv := newTestServer(compileStore(t, pol), staticVerifier{bearer.Principal{Issuer: "https://idp.example.com", Subject: testSubject,
		Audience: testAudience, Claims: map[string]any{"sub": testSubject}}}, nil)
	configure(t, srv, func(c *decision.Config) {
		c.Binding = &decision.Binding{Store: store, IdempotencyHeader: decision.DefaultIdempotencyHeader, Results: results}
	})
	upstreamRuns := 0
	// send checks one tools/call with id and key; an allowed call runs
	// upstream, and the seam records its result as the processor does.
	send := func(id, tool, args, key string) (reason string, status int, body string) {
		t.Helper()
		c := postReq(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
		c.Headers[decision.DefaultIdempotencyHeader] = key
		resp, err := srv.Check(context.Background(), c.CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		md := resp.GetDynamicMetadata().GetFields()
		reason = md["reason"].GetStringValue()
		if resp.GetOkResponse() != nil {
			upstreamRuns++
			if k := md["recover_key"].GetStringValue(); k != "" {
				if _, err := results.Record(context.Background(), k, []byte(`{"content":[{"type":"text","text":"refund r-1 issued"}]}`), 3600e9); err != nil {
					t.Fatal(err)
				}
			}
			return reason, 200, ""
		}
		dr := resp.GetDeniedResponse()
		if reason == "result_recovered" && codes.Code(resp.GetStatus().GetCode()) == codes.OK {
			t.Error("a recovered answer with gRPC OK would reach the upstream")
		}
		return reason, int(dr.GetStatus().GetCode()), dr.GetBody()
	}
	args := `{"amountMinor":100,"currency":"EUR"}`
	if r, _, _ := send("1", "issue_refund", args, "k-1"); r != "allowed" {
		t.Fatalf("first call: %s", r)
	}
	r, status, body := send("2", "issue_refund", args, "k-1")
	if r != "result_recovered" || status != 200 || body != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"refund r-1 issued"}]}}` {
		t.Fatalf("retry: %s %d %s", r, status, body)
	}
	if upstreamRuns != 1 {
		t.Errorf("the upstream ran %d times for two requests, want 1", upstreamRuns)
	}
	if r, _, _ := send("3", "issue_refund", `{"amountMinor":999,"currency":"EUR"}`, "k-1"); r != "replay_substitution" {
		t.Errorf("another request under the key: %s", r)
	}
	// A rule without recover_results: the retry runs again (x-mcp-retry).
	send("4", "search", `{}`, "k-2")
	if r, _, _ := send("5", "search", `{}`, "k-2"); r != "allowed" || upstreamRuns != 3 {
		t.Errorf("retry under a rule without recover_results: %s, upstream ran %d", r, upstreamRuns)
	}
	// No result recorded (yet): the retry goes upstream.
	c := postReq(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"issue_refund","arguments":{"amountMinor":7,"currency":"EUR"}}}`)
	c.Headers[decision.DefaultIdempotencyHeader] = "k-3"
	for range 2 {
		resp, _ := srv.Check(context.Background(), c.CheckRequest(true))
		if resp.GetOkResponse() == nil {
			t.Fatalf("a retry without a recorded result: %v", resp.GetStatus())
		}
	}
	if !strings.Contains(body, `"refund r-1 issued"`) {
		t.Error("unreachable")
	}
}
