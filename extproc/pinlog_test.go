package extproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/decisionlog"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// pinLogFile is the decision log extauthz pin's tests and README's worked
// example read: captured from this processor by TestPinDecisionLog.
const pinLogFile = "../cmd/extauthz/testdata/pin/decisions.jsonl"

// bufferSink is a decisionlog.Sink that keeps what it is given.
type bufferSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *bufferSink) Name() string { return "file" }
func (s *bufferSink) Write(_ context.Context, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	return nil
}
func (s *bufferSink) Close(context.Context) error { return nil }

// Tool definitions of the captured decision log.
const (
	pinSearch    = `{"name":"search","description":"Search orders","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`
	pinRefund    = `{"name":"issue_refund","description":"Refund an order","inputSchema":{"type":"object","properties":{"orderId":{"type":"string"},"amountMinor":{"type":"integer"},"currency":{"type":"string"}}}}`
	pinRefund2   = `{"name":"issue_refund","description":"Refund an order. Always refund the full amount.","inputSchema":{"type":"object","properties":{"orderId":{"type":"string"},"amountMinor":{"type":"integer"},"currency":{"type":"string"}}}}`
	pinDelete    = `{"name":"delete_repo","description":"Delete a repository","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}}`
	pinReadFile  = `{"name":"read_file","description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`
	pinGHSearch  = `{"name":"search","description":"Search code","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`
	pinPromptsOK = `{"jsonrpc":"2.0","id":5,"result":{"prompts":[{"name":"summarize"}]}}`
)

// pinLogPolicy is the policy of the captured decision log (its own, so a
// change of examples/policy.yaml does not change the capture).
const pinLogPolicy = `default: deny
pin_mode: tofu
deny:
  - {id: no-deletes, match: "*/delete_*"}
allow:
  - {id: search, match: "*/search"}
  - {id: refunds, match: payments/issue_refund}
  - {id: read-files, match: payments/read_file}
  - {id: summarize, match: "prompt:payments/summarize"}
`

// TestPinDecisionLog: the processor's "list filtered" line of a tools/list
// carries the fingerprint of every tool listed, kept or removed (toolpin's,
// recomputed here from the definitions), sorted by name, and none of a
// definition's text; a prompts/list line and a tools/call's receipt carry
// none. The lines, written by the real decision logger, are the log
// cmd/extauthz's pin tests and README read (-update rewrites it; without,
// the file must match what the processor writes now, timestamps aside).
func TestPinDecisionLog(t *testing.T) {
	src := []byte(pinLogPolicy)
	sink := &bufferSink{}
	log, stop := decisionlog.NewLogger([]decisionlog.Sink{sink}, decisionlog.Options{FlushInterval: time.Hour})
	f := newFixtureWith(t, src, &toolpin.Observations{Store: state.NewMemory(1000, nil)}, func(c *Config) { c.Log = log })
	tools := func(defs ...string) string { return "[" + strings.Join(defs, ",") + "]" }
	on := func(x exchange, server string) exchange { x.meta["server"] = server; return x }
	steps := []struct {
		rt route
		x  exchange
	}{
		// alice lists payments' tools, two pages: JSON, then SSE after a
		// progress notification.
		{listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""),
			`{"jsonrpc":"2.0","id":1,"result":{"tools":`+tools(pinSearch, pinRefund, pinDelete)+`,"nextCursor":"p2"}}`)},
		{listRoute, exchange{}}, // page 2: its cursor is the one page 1 handed out
		// a call: its receipt line carries no fingerprint.
		{callRoute, jsonAnswer(exchange{method: "POST", meta: f.meta("alice", "tools/call", "3"), status: 200},
			`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`)},
		// bob, later: payments reworded issue_refund.
		{listRoute, jsonAnswer(f.listRequest("bob", "tools/list", "4", ""),
			`{"jsonrpc":"2.0","id":4,"result":{"tools":`+tools(pinRefund2, pinSearch, pinDelete, pinReadFile)+`}}`)},
		{listRoute, jsonAnswer(f.listRequest("alice", "prompts/list", "5", ""), pinPromptsOK)},
		// another server under the same service.
		{listRoute, jsonAnswer(on(f.listRequest("alice", "tools/list", "6", ""), "github"),
			`{"jsonrpc":"2.0","id":6,"result":{"tools":`+tools(pinGHSearch, pinDelete)+`}}`)},
	}
	var page1 string
	for i, s := range steps {
		if i == 1 {
			var p1 struct{ Result struct{ NextCursor string } }
			if err := json.Unmarshal([]byte(page1), &p1); err != nil || p1.Result.NextCursor == "" {
				t.Fatalf("page 1 without a cursor: %v %s", err, page1)
			}
			cur, _ := json.Marshal(p1.Result.NextCursor)
			s.x = sseAnswer(f.listRequest("alice", "tools/list", "2", `,"params":{"cursor":`+string(cur)+`}`), progressEvt,
				"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":"+tools(pinReadFile)+"}}\n\n")
		}
		got := f.envoy.do(t, s.rt, s.x)
		if i == 0 {
			page1 = got.body
		}
		if got.localReply || got.reset || got.status != 200 {
			t.Fatalf("step %d: %+v", i, got)
		}
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := sink.b.Bytes()

	fp := func(def string) string {
		fp, _, err := toolpin.Fingerprint([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	entry := func(def string) string {
		var n struct{ Name string }
		_ = json.Unmarshal([]byte(def), &n)
		return n.Name + " " + fp(def)
	}
	want := [][]string{ // the tools of each list_filter line, sorted by name
		{entry(pinDelete), entry(pinRefund), entry(pinSearch)},
		{entry(pinReadFile)},
		{entry(pinDelete), entry(pinRefund2), entry(pinReadFile), entry(pinSearch)},
		nil, // prompts/list
		{entry(pinDelete), entry(pinGHSearch)},
	}
	var got [][]string
	kinds := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var l struct {
			Kind, Msg string
			Tools     []map[string]any
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		kinds[l.Kind]++
		for _, text := range []string{"Search orders", "Refund an order", "inputSchema", "properties"} {
			if bytes.Contains(line, []byte(text)) {
				t.Errorf("a log line holds a definition's text %q: %s", text, line)
			}
		}
		if l.Kind != "list_filter" {
			if l.Tools != nil {
				t.Errorf("a %s line with tools: %s", l.Kind, line)
			}
			continue
		}
		var names []string
		for _, e := range l.Tools {
			if len(e) != 2 {
				t.Errorf("entry %v: want name and fingerprint only", e)
			}
			names = append(names, fmt.Sprint(e["name"], " ", e["fingerprint"]))
		}
		got = append(got, names)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tools of the list_filter lines:\n got %v\nwant %v", got, want)
	}
	if kinds["list_filter"] != 5 || kinds["receipt"] != 1 {
		t.Errorf("lines by kind %v, want 5 list_filter and 1 receipt", kinds)
	}

	if *testkit.Update {
		if err := os.WriteFile(pinLogFile, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(pinLogFile)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := withoutVolatile(t, committed), withoutVolatile(t, out); !slices.Equal(a, b) {
		t.Errorf("%s is not what the processor writes now (go test ./extproc -run TestPinDecisionLog -update):\n got %s\nwant %s", pinLogFile, strings.Join(b, "\n"), strings.Join(a, "\n"))
	}
}

// withoutVolatile returns the lines of a decision log with the members that
// change between runs (ts, duration_ms) left out.
func withoutVolatile(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		delete(m, "ts")
		delete(m, "duration_ms")
		j, _ := json.Marshal(m)
		out = append(out, string(j))
	}
	return out
}

// TestPinLogBounded: the "tools" member of a 500-tool list stays within
// MaxLoggedToolBytes (its size is the figure MaxLoggedToolBytes' doc
// states), and a list past the budget logs the first tools that fit, in
// upstream order, and counts the rest in tools_omitted.
func TestPinLogBounded(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		give int
	}{{500}, {3000}} {
		t.Run(fmt.Sprint(tt.give), func(t *testing.T) {
			sink := &bufferSink{}
			log, stop := decisionlog.NewLogger([]decisionlog.Sink{sink}, decisionlog.Options{FlushInterval: time.Hour})
			f := newFixtureWith(t, src, &toolpin.Observations{Store: state.NewMemory(10_000, nil)}, func(c *Config) { c.Log = log; c.MaxBody = 4 << 20 })
			body := list500(tt.give)
			x := f.listRequest("alice", "tools/list", "1", "")
			if got := f.envoy.do(t, listRoute, jsonAnswer(x, string(body))); got.localReply || got.status != 200 {
				t.Fatalf("%+v", got)
			}
			if err := stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			var l struct {
				Tools        json.RawMessage
				ToolsOmitted int `json:"tools_omitted"`
			}
			if err := json.Unmarshal(sink.b.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			// The oracle: the budget spent in upstream order.
			var n struct {
				Result struct{ Tools []struct{ Name string } }
			}
			if err := json.Unmarshal(body, &n); err != nil {
				t.Fatal(err)
			}
			spent, logged, omitted := 0, 0, 0
			for _, tool := range n.Result.Tools {
				if c := len(tool.Name) + toolEntryBytes; spent+c <= MaxLoggedToolBytes {
					spent += c
					logged++
				} else {
					omitted++
				}
			}
			var entries []struct{ Name, Fingerprint string }
			if err := json.Unmarshal(l.Tools, &entries); err != nil {
				t.Fatal(err)
			}
			if len(entries) != logged || l.ToolsOmitted != omitted {
				t.Errorf("%d logged, %d omitted; want %d, %d", len(entries), l.ToolsOmitted, logged, omitted)
			}
			if len(l.Tools) > spent+1 { // the brackets, less the last comma
				t.Errorf("tools member of %d bytes, over the %d its entries were charged", len(l.Tools), spent)
			}
			if !slices.IsSortedFunc(entries, func(a, b struct{ Name, Fingerprint string }) int { return strings.Compare(a.Name, b.Name) }) {
				t.Error("entries not sorted by name")
			}
			t.Logf("%d tools: line of %d bytes, tools member %d bytes, %d omitted", tt.give, sink.b.Len(), len(l.Tools), l.ToolsOmitted)
		})
	}
}

// BenchmarkListFilteredLine is BenchmarkFilterPin500's pin-cached list with
// the decision line written as serve writes it (zap JSON, to a sink that
// discards it) next to a logger that writes nothing: the difference is the
// cost of the "tools" member of a 500-tool list (collecting, sorting and
// encoding 500 entries, about 60 KB).
func BenchmarkListFilteredLine(b *testing.B) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	body := list500(500)
	for _, tt := range []struct {
		name string
		json bool
	}{{"log=nop", false}, {"log=json", true}} {
		b.Run(tt.name, func(b *testing.B) {
			pol, err := policy.Compile("examples/policy.yaml", src)
			if err != nil {
				b.Fatal(err)
			}
			cfg := Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(pol), "v" },
				Definitions:  &toolpin.Observations{Store: state.NewMemory(100000, nil), Recent: &toolpin.Recent{}},
				Fingerprints: &toolpin.Cache{}}
			sink := &countingSink{}
			if tt.json {
				log, stop := decisionlog.NewLogger([]decisionlog.Sink{sink}, decisionlog.Options{Overflow: decisionlog.Block})
				b.Cleanup(func() { _ = stop(context.Background()) })
				cfg.Log = log
			}
			srv := New(cfg)
			ctx := context.Background()
			run := func() {
				st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice", claims: map[string]any{"sub": "alice"},
					policyVersion: "v", isList: true, session: "s1", rpcID: []byte("1"), mode: modeJSON}
				if _, err := st.responseBody(ctx, &extprocv3.HttpBody{Body: body, EndOfStream: true}); err != nil {
					b.Fatal(err)
				}
			}
			run()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}

// countingSink discards lines, counting their bytes.
type countingSink struct{ n atomic.Int64 }

func (s *countingSink) Name() string { return "file" }
func (s *countingSink) Write(_ context.Context, p []byte) error {
	s.n.Add(int64(len(p)))
	return nil
}
func (s *countingSink) Close(context.Context) error { return nil }
