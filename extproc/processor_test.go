package extproc

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	issuer   = "https://idp.example.com"
	audience = "https://mcp.example.com/mcp"
)

// fixture is a processor with the reference policy, a real ES256 token
// verifier, a sealing key and a memory task store.
type fixture struct {
	envoy   *envoy
	tokens  map[string]string // subject -> bearer token
	version string
	sealer  *cursor.Sealer
	tasks   *state.Tasks
	logs    *observer.ObservedLogs
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return newFixtureWith(t, src, &toolpin.Observations{Store: state.NewMemory(1000, nil)})
}

// newFixtureWith is newFixture with policy src and tool definition
// observations defs (nil: none).
func newFixtureWith(t testing.TB, src []byte, defs *toolpin.Observations, opts ...func(*Config)) *fixture {
	t.Helper()
	pol, err := policy.Compile("examples/policy.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	version := mcpparse.Digest(src)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, sub := range []string{"alice", "bob"} {
		tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: issuer, Subject: sub, Audience: jwt.Audience{audience},
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		tokens[sub] = tok
	}
	sealer, err := cursor.New(bytes.Repeat([]byte{7}, cursor.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	tasks := &state.Tasks{Store: state.NewMemory(100, nil)}
	core, logs := observer.New(zap.InfoLevel)
	cfg := Config{
		Policy: func() (*decision.Policy, string) { return decision.PolicyOf(pol), version },
		Tasks:  tasks, Cursors: sealer, Log: zap.New(core),
		Definitions: defs, Fingerprints: &toolpin.Cache{},
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv := New(cfg)
	return &fixture{envoy: newEnvoy(startProcessor(t, srv)), tokens: tokens, version: version, sealer: sealer, tasks: tasks, logs: logs}
}

// meta is Check's metadata for principal calling method with rpc id.
func (f *fixture) meta(principal, method, rpcID string) map[string]string {
	m := map[string]string{"decision_id": "d-" + principal, "decision": "allow", "method": method, "server": "payments",
		"principal": principal, "issuer": issuer, "policy_version": f.version, "protocol_version": "2025-11-25"}
	if rpcID != "" {
		m["rpc_id"] = rpcID
	}
	if decision.ClaimsFor(method) {
		m["claims"] = `{"iss":"` + issuer + `","sub":"` + principal + `"}`
	}
	return m
}

func (f *fixture) listRequest(principal, method, id, params string) exchange {
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"` + params + `}`
	return exchange{method: "POST", reqHdrs: map[string]string{"authorization": "Bearer " + f.tokens[principal], "content-type": "application/json"},
		reqBody: body, meta: f.meta(principal, method, id), status: 200}
}

func jsonAnswer(x exchange, body string) exchange {
	x.hdrs = map[string]string{"content-type": "application/json", "content-length": itoa(len(body))}
	x.chunks = []string{body}
	return x
}

func sseAnswer(x exchange, chunks ...string) exchange {
	x.hdrs = map[string]string{"content-type": "text/event-stream"}
	x.chunks = chunks
	return x
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

const (
	toolsBody   = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"delete_repo","inputSchema":{"type":"object"}}]}}`
	toolsKept   = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}}]}}`
	progressEvt = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"
)

// check asserts what every processed answer must satisfy: no denied item,
// no clean close with body left.
func check(t *testing.T, name string, got seen) {
	t.Helper()
	if strings.Contains(got.body, "delete_repo") || strings.Contains(got.body, "draft_email") || strings.Contains(got.body, "file:///secret") {
		t.Errorf("%s: a denied item reached the client: %s", name, got.body)
	}
	if got.cleanClose {
		t.Errorf("%s: the processor closed OK while it owned a body", name)
	}
}

// rpcErrorOf returns data.reason of the JSON-RPC error in body (JSON or
// one SSE data line), or "".
func rpcErrorOf(body string) (reason string, id string) {
	body = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body), "data:"))
	var m struct {
		ID    json.RawMessage
		Error struct{ Data struct{ Reason string } }
	}
	if json.Unmarshal([]byte(body), &m) != nil {
		return "", ""
	}
	return m.Error.Data.Reason, string(m.ID)
}

func TestJSONList(t *testing.T) {
	f := newFixture(t)
	got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody))
	check(t, "json", got)
	if got.status != 200 || got.body != toolsKept {
		t.Fatalf("status %d body %s", got.status, got.body)
	}
	if got.hdrs["content-length"] != itoa(len(toolsKept)) || got.hdrs["cache-control"] != "private, no-store" {
		t.Errorf("headers %v", got.hdrs)
	}
	if n := f.logs.FilterMessage("list filtered").Len(); n != 1 {
		t.Errorf("%d decision-log lines", n)
	}
	for _, e := range f.logs.All() {
		for _, fld := range e.Context {
			if strings.Contains(fld.String, f.tokens["alice"]) || strings.Contains(fld.String, "search") {
				t.Errorf("the log holds a token or an item name: %v", fld)
			}
		}
	}
}

// The peers' bypass list (issue 17), each as a row.
func TestBypassRows(t *testing.T) {
	f := newFixture(t)
	big := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"delete_repo\",\"description\":\"" + strings.Repeat("x", sse.DefaultMaxEvent) + "\"}]}}\n\n"
	tests := []struct {
		name       string
		rt         route
		give       exchange
		wantStatus int
		wantBody   string // exact, when set
		wantReason string // data.reason of a JSON-RPC error, when set
		wantIn     []string
	}{
		{name: "SSE with BOM", rt: listRoute, give: sseAnswer(f.listRequest("alice", "tools/list", "1", ""), "\xef\xbb\xbfdata: "+toolsBody+"\n\n"),
			wantStatus: 200, wantBody: "data: " + toolsKept + "\n\n"},
		{name: "SSE CRLF and events passed byte for byte", rt: listRoute,
			give:       sseAnswer(f.listRequest("alice", "tools/list", "1", ""), ": hi\r\n\r\n"+strings.ReplaceAll(progressEvt, "\n", "\r\n"), "event: message\r\nid: 9\r\ndata: "+toolsBody+"\r\n\r\n"),
			wantStatus: 200, wantBody: ": hi\r\n\r\n" + strings.ReplaceAll(progressEvt, "\n", "\r\n") + "id: 9\ndata: " + toolsKept + "\n\n"},
		{name: "SSE whole body before the header answer, with content-length (TypeScript SDK)", rt: listRoute, give: func() exchange {
			body := "event: message\ndata: " + toolsBody + "\n\n"
			x := sseAnswer(f.listRequest("alice", "tools/list", "1", ""), body)
			x.hdrs["content-length"] = itoa(len(body))
			x.early = true
			return x
		}(), wantStatus: 200, wantBody: "data: " + toolsKept + "\n\n"},
		{name: "SSE with content-length, streamed (TypeScript SDK)", rt: listRoute, give: func() exchange {
			body := progressEvt + "event: message\ndata: " + toolsBody + "\n\n"
			x := sseAnswer(f.listRequest("alice", "tools/list", "1", ""), body[:20], body[20:])
			x.hdrs["content-length"] = itoa(len(body))
			return x
		}(), wantStatus: 200, wantBody: progressEvt + "data: " + toolsKept + "\n\n"},
		// toolsBody's definitions: the rows share one store, and a tool
		// listed with two definitions is not listed (definition_changed).
		{name: "SSE multi-line data", rt: listRoute, give: sseAnswer(f.listRequest("alice", "tools/list", "1", ""),
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\n", "data: \"result\":{\"tools\":[{\"name\":\"delete_repo\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"search\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"),
			wantStatus: 200, wantBody: "data: {\"jsonrpc\":\"2.0\",\"id\":1, \"result\":{\"tools\":[{\"name\":\"search\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"},
		{name: "SSE named event smuggling a list is dropped", rt: listRoute, give: sseAnswer(f.listRequest("alice", "tools/list", "1", ""),
			"event: other\ndata: "+toolsBody+"\n\n", progressEvt),
			wantStatus: 200, wantBody: progressEvt},
		{name: "SSE final event without blank line", rt: listRoute, give: sseAnswer(f.listRequest("alice", "tools/list", "1", ""), progressEvt, "data: "+toolsBody),
			wantStatus: 200, wantBody: progressEvt + "data: " + toolsKept + "\n\n"},
		{name: "SSE bare CR", rt: listRoute, give: sseAnswer(f.listRequest("alice", "tools/list", "1", ""), "data: x\rdata: "+toolsBody+"\n\n"),
			wantStatus: 200, wantReason: ReasonUnfilterable},
		{name: "list on a resumed GET stream", rt: getRoute, give: func() exchange {
			x := exchange{method: "GET", reqHdrs: map[string]string{"authorization": "Bearer " + f.tokens["alice"], "last-event-id": "2"}, meta: f.meta("alice", "GET", ""), status: 200}
			return sseAnswer(x, progressEvt, "id: 3\ndata: "+strings.Replace(toolsBody, `"id":1`, `"id":42`, 1)+"\n\n")
		}(), wantStatus: 200, wantIn: []string{`"search"`, "id: 3\n"}},
		// The legacy HTTP+SSE transport answers every request on its GET
		// stream: filtered by shape there too.
		{name: "a list on a GET stream not resuming", rt: getRoute, give: func() exchange {
			x := exchange{method: "GET", reqHdrs: map[string]string{"authorization": "Bearer " + f.tokens["alice"]}, meta: f.meta("alice", "GET", ""), status: 200}
			return sseAnswer(x, progressEvt, "id: 3\ndata: "+strings.Replace(toolsBody, `"id":1`, `"id":42`, 1)+"\n\n")
		}(), wantStatus: 200, wantIn: []string{`"search"`, "id: 3\n"}},
		{name: "another request's id", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), strings.Replace(toolsBody, `"id":1`, `"id":2`, 1)),
			wantStatus: 200, wantReason: ReasonUnexpected},
		{name: "batch", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), "["+toolsBody+`,{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"draft_email"},{"name":"summarize"}]}}]`)
			x.meta = f.meta("alice", "batch", "1")
			return x
		}(), wantStatus: 200, wantBody: "[" + toolsKept + `,{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"summarize"}]}}]`},
		{name: "a batch answering one request", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), "["+toolsBody+`,{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"draft_email"},{"name":"summarize"}]}}]`),
			wantStatus: 200, wantReason: ReasonUnexpected},
		{name: "non-2xx with a result", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.status = 500
			return x
		}(), wantStatus: 500, wantReason: ReasonResultOnError},
		{name: "both result and error", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "tools/list", "1", ""),
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}]},"error":{"code":1,"message":"x"}}`), wantStatus: 200, wantReason: ReasonUnfilterable},
		{name: "duplicate names", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "tools/list", "1", ""),
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"search","description":"delete_repo"}]}}`), wantStatus: 200, wantReason: ReasonUnfilterable},
		{name: "templates", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "resources/templates/list", "1", ""),
			`{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"file:///reports/{name}","name":"r"},{"uriTemplate":"file:///secret/{name}","name":"s"}]}}`),
			wantStatus: 200, wantBody: `{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"file:///reports/{name}","name":"r"}]}}`},
		{name: "4 MiB + 1 event", rt: listRoute, give: sseAnswer(f.listRequest("alice", "tools/list", "1", ""), big[:len(big)/2], big[len(big)/2:]),
			wantStatus: 200, wantReason: ReasonTooLarge},
		{name: "compressed body", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.hdrs["content-encoding"] = "gzip"
			return x
		}(), wantStatus: 502, wantReason: ReasonCompressed},
		{name: "unparseable list", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"tools":[`),
			wantStatus: 200, wantReason: ReasonUnfilterable},
		{name: "unknown list shape", rt: listRoute, give: jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"tools":{"delete_repo":{}}}}`),
			wantStatus: 200, wantReason: ReasonUnfilterable},
		{name: "no Check metadata", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.meta = nil
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "Check metadata Check does not write (decision.ParseMetadata)", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.meta["task_requested"] = "yes"
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "Check metadata with a reason outside the set", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.meta["reason"] = "allowed_by_envoy"
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "a list for a principal without claims in Check's metadata", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			delete(x.meta, "claims")
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "a GET stream for a principal without claims", rt: getRoute, give: func() exchange {
			x := sseAnswer(exchange{method: "GET", meta: f.meta("alice", "GET", ""), status: 200}, "data: "+toolsBody+"\n\n")
			delete(x.meta, "claims")
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "claims that are not a JSON object", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.meta["claims"] = `["alice"]`
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "claims that do not parse", rt: listRoute, give: func() exchange {
			x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
			x.meta["claims"] = `{"sub":"alice"`
			return x
		}(), wantStatus: 503, wantReason: ReasonNoMetadata},
		{name: "unrequested non-2xx passes", rt: callRoute, give: exchange{method: "POST", status: 503,
			hdrs: map[string]string{"content-type": "text/plain"}, chunks: []string{"upstream connect error"}},
			wantStatus: 503, wantBody: "upstream connect error"},
		{name: "a call answer passes byte for byte", rt: callRoute, give: jsonAnswer(exchange{method: "POST", meta: f.meta("alice", "tools/call", "5"), status: 200},
			`{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`), wantStatus: 200, wantBody: `{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.envoy.do(t, tt.rt, tt.give)
			check(t, tt.name, got)
			if got.reset {
				t.Fatalf("reset")
			}
			if got.status != tt.wantStatus {
				t.Errorf("status %d, want %d (%s)", got.status, tt.wantStatus, got.body)
			}
			if tt.wantBody != "" && got.body != tt.wantBody {
				t.Errorf("body\n%q\nwant\n%q", got.body, tt.wantBody)
			}
			if tt.wantReason != "" {
				body := got.body
				if i := strings.LastIndex(body, "data: "); i >= 0 {
					body = body[i:]
				}
				if r, _ := rpcErrorOf(body); r != tt.wantReason {
					t.Errorf("reason %q, want %q: %q", r, tt.wantReason, got.body)
				}
			}
			for _, w := range tt.wantIn {
				if !strings.Contains(got.body, w) {
					t.Errorf("body lacks %q: %q", w, got.body)
				}
			}
		})
	}
}

// A page filtered to empty keeps a sealed nextCursor; the upstream gets its
// own cursor back; another principal's replay, or one after a policy change,
// is refused (-32602).
func TestSealedCursor(t *testing.T) {
	f := newFixture(t)
	page1 := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}],"nextCursor":"up-2"}}`
	got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), page1))
	check(t, "page 1", got)
	var res struct {
		Result struct {
			Tools      []any
			NextCursor string
		}
	}
	if err := json.Unmarshal([]byte(got.body), &res); err != nil || len(res.Result.Tools) != 0 || !strings.HasPrefix(res.Result.NextCursor, cursor.Prefix) {
		t.Fatalf("page 1: %s", got.body)
	}
	sealed := res.Result.NextCursor
	page2 := f.envoy.do(t, pageRoute, jsonAnswer(f.listRequest("alice", "tools/list", "2", `,"params":{"cursor":"`+sealed+`"}`),
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"search"}]}}`))
	if page2.upstreamBody != `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"up-2"}}` {
		t.Errorf("the upstream got %s", page2.upstreamBody)
	}
	if !strings.Contains(page2.body, `"search"`) {
		t.Errorf("page 2: %s", page2.body)
	}
	replay := f.envoy.do(t, pageRoute, jsonAnswer(f.listRequest("bob", "tools/list", "3", `,"params":{"cursor":"`+sealed+`"}`), page1))
	if reason, id := rpcErrorOf(replay.body); !replay.localReply || reason != ReasonInvalidCursor || id != "3" || !strings.Contains(replay.body, "-32602") {
		t.Errorf("bob's replay: %+v", replay)
	}
	changed := f.listRequest("alice", "tools/list", "4", `,"params":{"cursor":"`+sealed+`"}`)
	changed.meta["policy_version"] = "sha256:other"
	if r := f.envoy.do(t, pageRoute, jsonAnswer(changed, page1)); !strings.Contains(r.body, ReasonInvalidCursor) {
		t.Errorf("after a policy change: %+v", r)
	}
}

// A task created by alice is bound to her; tasks/list shows each caller
// only their own tasks.
func TestTasks(t *testing.T) {
	f := newFixture(t)
	call := jsonAnswer(exchange{method: "POST", meta: f.meta("alice", "tools/call", "7"), status: 200},
		`{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"t-alice","status":"working","ttl":60000,"createdAt":"2025-11-25T00:00:00Z","lastUpdatedAt":"2025-11-25T00:00:00Z"}}}`)
	if got := f.envoy.do(t, callRoute, call); got.status != 200 || !strings.Contains(got.body, "t-alice") {
		t.Fatalf("CreateTaskResult: %+v", got)
	}
	if owner, found, _ := f.tasks.Owner(context.Background(), "payments", "t-alice"); !found || owner != state.TaskOwner(issuer, "alice") {
		t.Fatalf("binding: %q %v", owner, found)
	}
	list := `{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"t-alice","status":"working"},{"taskId":"t-other","status":"working"}]}}`
	for who, want := range map[string]string{"alice": `"t-alice"`, "bob": `"tasks":[]`} {
		got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest(who, "tasks/list", "1", ""), list))
		if !strings.Contains(got.body, want) || strings.Contains(got.body, "t-other") {
			t.Errorf("%s: %s", who, got.body)
		}
	}
}

// 2026-07-28 lists carry cacheScope private and ttlMs; older ones never.
func TestCacheScope(t *testing.T) {
	f := newFixture(t)
	x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody)
	x.meta["protocol_version"] = "2026-07-28"
	got := f.envoy.do(t, listRoute, x)
	if !strings.HasSuffix(got.body, `]},"cacheScope":"private","ttlMs":0}}`) && !strings.Contains(got.body, `"cacheScope":"private","ttlMs":0`) {
		t.Errorf("2026: %s", got.body)
	}
	got = f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody))
	if strings.Contains(got.body, "cacheScope") {
		t.Errorf("2025: %s", got.body)
	}
}

// faulty wraps the processor and breaks it on the response body.
type faulty struct {
	extprocv3.UnimplementedExternalProcessorServer
	inner   *Server
	onBody  string // "close-ok", "error", "hang"
	release chan struct{}
}

func (p *faulty) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		if req.GetResponseBody() != nil {
			switch p.onBody {
			case "close-ok":
				return nil
			case "error":
				return context.DeadlineExceeded
			case "hang":
				<-p.release
				return nil
			}
		}
		// Forward to a one-message run of the real processor state.
		resp, err := (&stream{s: p.inner}).handleOne(srv.Context(), req)
		if err != nil {
			return err
		}
		if err := srv.Send(resp); err != nil {
			return err
		}
	}
}

// handleOne answers one header message with a fresh stream state (the
// fault tests need the header answer only).
func (st *stream) handleOne(ctx context.Context, req *extprocv3.ProcessingRequest) (*extprocv3.ProcessingResponse, error) {
	return st.handle(ctx, req)
}

// What Envoy does when the processor fails, as the harness models it: the
// real processor never triggers the clean-close path; a processor that did
// would leak the body, which is why it must abort instead.
func TestFailureModes(t *testing.T) {
	f := newFixture(t)
	inner := New(Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(nil), "" }})
	for _, tt := range []struct {
		mode       string
		json       bool
		wantStatus int
		wantReset  bool
		wantLeak   bool
	}{
		{mode: "error", json: true, wantStatus: 500},
		{mode: "error", wantReset: true},
		{mode: "hang", json: true, wantStatus: 504},
		{mode: "close-ok", json: true, wantLeak: true},
	} {
		p := &faulty{inner: inner, onBody: tt.mode, release: make(chan struct{})}
		e := newEnvoy(startProcessor(t, p))
		e.timeout = 100 * time.Millisecond
		x := f.listRequest("alice", "tools/list", "1", "")
		if tt.json {
			x = jsonAnswer(x, toolsBody)
		} else {
			x = sseAnswer(x, "data: "+toolsBody+"\n\n")
		}
		got := e.do(t, callRoute, x)
		close(p.release)
		switch {
		case tt.wantLeak:
			if !strings.Contains(got.body, "delete_repo") {
				t.Errorf("%s: the model should pass the body unprocessed: %+v", tt.mode, got)
			}
		case tt.wantReset:
			if !got.reset {
				t.Errorf("%s: %+v, want a reset", tt.mode, got)
			}
		default:
			if got.status != tt.wantStatus || strings.Contains(got.body, "delete_repo") {
				t.Errorf("%s: %+v, want %d", tt.mode, got, tt.wantStatus)
			}
		}
	}
	// The real processor fails closed on its own faults: a policy that
	// panics is a gRPC error, so Envoy answers 500 before the response
	// started.
	panicky := New(Config{Policy: func() (*decision.Policy, string) { panic("boom") }})
	e := newEnvoy(startProcessor(t, panicky))
	got := e.do(t, callRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody))
	if got.status != 500 || !got.localReply {
		t.Errorf("panic: %+v", got)
	}
}

// Chunk boundaries never change what the client sees.
func TestSSEChunking(t *testing.T) {
	f := newFixture(t)
	stream := progressEvt + "id: 5\r\ndata: " + toolsBody + "\r\n\r\n" + ": keepalive\n\n"
	want := ""
	for cut := 1; cut < len(stream); cut += 7 {
		got := f.envoy.do(t, listRoute, sseAnswer(f.listRequest("alice", "tools/list", "1", ""), stream[:cut], stream[cut:]))
		check(t, "chunked", got)
		if want == "" {
			want = got.body
		}
		if got.body != want {
			t.Fatalf("cut %d: %q, want %q", cut, got.body, want)
		}
	}
	if want != progressEvt+"id: 5\ndata: "+toolsKept+"\n\n: keepalive\n\n" {
		t.Errorf("%q", want)
	}
}

func BenchmarkProcessJSON50(b *testing.B) { benchProcess(b, false) }
func BenchmarkProcessSSE50(b *testing.B)  { benchProcess(b, true) }

func benchProcess(b *testing.B, sseForm bool) {
	t := &testing.T{}
	_ = t
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := 0; i < 50; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		name := "search"
		if i > 0 {
			name = "tool_" + itoa(i)
		}
		if i%10 == 5 {
			name = "delete_" + itoa(i)
		}
		sb.WriteString(`{"name":"` + name + `","description":"does a thing","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`)
	}
	sb.WriteString(`]}}`)
	body := sb.String()
	src, _ := os.ReadFile("../examples/policy.yaml")
	pol, _ := policy.Compile("p.yaml", src)
	srv := New(Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(pol), "v" },
		Definitions: &toolpin.Observations{Store: state.NewMemory(1000, nil), Recent: &toolpin.Recent{}}, Fingerprints: &toolpin.Cache{}})
	st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice", policyVersion: "v", isList: true,
		rpcID: []byte("1"), claims: map[string]any{"sub": "alice"}}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		st.mode, st.lists, st.listed = modeJSON, 0, loggedTools{} // a stream per request, as Process makes one
		var err error
		var resp *extprocv3.ProcessingResponse
		if sseForm {
			st.mode, st.framer = modeSSE, sse.New(0)
			_, err = st.responseBody(ctx, &extprocv3.HttpBody{Body: []byte("data: " + body + "\n\n")})
			if err == nil {
				_, err = st.responseBody(ctx, &extprocv3.HttpBody{EndOfStream: true})
			}
		} else {
			resp, err = st.responseBody(ctx, &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true})
		}
		if err != nil {
			b.Fatal(err)
		}
		if out := string(resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody()); resp != nil && (!strings.Contains(out, `"search"`) || strings.Contains(out, "delete_") || strings.Contains(out, `"error"`)) {
			b.Fatalf("the list was not filtered: %.200s", out)
		}
	}
}

// TestPinObservation: with a pinning policy, every tool of a tools/list
// that passes is recorded (denied ones too: they are the server's catalog),
// so Check's pin step sees it; a changed definition in a later list makes
// the tool divergent; with no observations configured the list is refused.
func TestPinObservation(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("pin_mode: tofu")) {
		t.Fatal("the reference policy no longer pins on first use")
	}
	pol, err := policy.Compile("p.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	obs := &toolpin.Observations{Store: state.NewMemory(100, nil)}
	f := newFixtureWith(t, src, obs)
	got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody))
	if got.status != 200 || got.body != toolsKept {
		t.Fatalf("status %d body %s", got.status, got.body)
	}
	ctx := context.Background()
	for _, name := range []string{"search", "delete_repo"} {
		def, err := obs.Lookup(ctx, pol, "payments", "", name)
		if err != nil || def == nil || !def.Listed || def.Changed || !toolpin.Valid(def.Fingerprint) {
			t.Errorf("%s: %+v %v", name, def, err)
		}
	}
	changed := strings.Replace(toolsBody, `"name":"search"`, `"name":"search","description":"now also exfiltrates"`, 1)
	if changed == toolsBody {
		t.Fatal("toolsBody has no search tool to change")
	}
	f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), changed))
	if def, err := obs.Lookup(ctx, pol, "payments", "", "search"); err != nil || !def.Changed {
		t.Errorf("after a changed definition: %+v %v", def, err)
	}

	none := newFixtureWith(t, src, nil)
	got = none.envoy.do(t, listRoute, jsonAnswer(none.listRequest("alice", "tools/list", "1", ""), toolsBody))
	if got.status == 200 && strings.Contains(got.body, `"search"`) {
		t.Errorf("a pinning policy without observations passed the list: %d %s", got.status, got.body)
	}
}

// TestListAnnotationsAgreeWithCalls: with pinning on, a tools/list item is
// decided with the annotations it declares, as a call of that definition
// would be: on a trusted server a read-only tool is listed by an allow on
// readOnlyHint (and is not destructive for a deny on destructiveHint),
// while an undeclared one is not; on any other server every annotation is
// conservative for lists as for calls. The offline check agrees (decision.ItemDefinitions).
func TestListAnnotationsAgreeWithCalls(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[` +
		`{"name":"search","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
		`{"name":"wipe","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true}},` +
		`{"name":"plain","inputSchema":{"type":"object"}}]}}`
	tests := []struct {
		name   string
		policy string
		want   []string
	}{
		{"trusted, allow read-only", "default: deny\npin_mode: tofu\ntrusted_servers: [payments]\nallow:\n  - {id: read-only, match: 'payments/*', annotations: {readOnlyHint: true}}\n", []string{"search"}},
		{"trusted, README's pair", "default: deny\npin_mode: tofu\ntrusted_servers: [payments]\ndeny:\n  - {id: no-destructive, match: 'payments/*', annotations: {destructiveHint: true}}\nallow:\n  - {id: read-only, match: 'payments/*', annotations: {readOnlyHint: true}}\n", []string{"search"}},
		{"trusted, CEL", "default: deny\npin_mode: tofu\ntrusted_servers: [payments]\nallow:\n  - {id: ro, match: 'payments/*', when: 'annotations.readOnlyHint'}\n", []string{"search"}},
		{"untrusted: conservative", "default: deny\npin_mode: tofu\nallow:\n  - {id: read-only, match: 'payments/*', annotations: {readOnlyHint: true}}\n", nil},
		{"untrusted deny on destructive closes all", "default: ask\npin_mode: tofu\ndeny:\n  - {id: no-destructive, match: 'payments/*', annotations: {destructiveHint: true}}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureWith(t, []byte(tt.policy), &toolpin.Observations{Store: state.NewMemory(1000, nil)})
			for round := range 2 { // the second from the Visible cache
				got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), list))
				var res struct {
					Result struct{ Tools []struct{ Name string } }
				}
				if err := json.Unmarshal([]byte(got.body), &res); err != nil {
					t.Fatalf("round %d: %v: %s", round, err, got.body)
				}
				var names []string
				for _, tl := range res.Result.Tools {
					names = append(names, tl.Name)
				}
				if !slices.Equal(names, tt.want) {
					t.Errorf("round %d: listed %q, want %q", round, names, tt.want)
				}
			}
			// What a call of each tool of that list is decided by.
			pol, err := policy.Compile("p.yaml", []byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			obs := toolpin.Observations{Store: state.NewMemory(100, nil)}
			var items []json.RawMessage
			var wrap struct {
				Result struct{ Tools []json.RawMessage }
			}
			if err := json.Unmarshal([]byte(list), &wrap); err != nil {
				t.Fatal(err)
			}
			items = wrap.Result.Tools
			for _, it := range items {
				d, err := toolpin.Parse(it, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := obs.Observe(context.Background(), "payments", d); err != nil {
					t.Fatal(err)
				}
				def, err := obs.Lookup(context.Background(), pol, "payments", "", d.Name)
				if err != nil {
					t.Fatal(err)
				}
				res := pol.Evaluate(&policy.Input{Op: policy.OpRequest, Method: "tools/call", Server: "payments", Tool: d.Name, Definition: def})
				if called, listed := res.Decision != policy.Deny, slices.Contains(tt.want, d.Name); called != listed {
					t.Errorf("%s: a call is %v, yet listed %v", d.Name, res.Decision, listed)
				}
			}
		})
	}
}

// TestClaimsFromCheck: a list is decided with the claims Check handed over
// in its metadata (decision.Metadata.Claims), with no request headers on
// the route: a `when` over claims shows a tool to the caller whose claims
// hold and hides it from one whose do not, on a list and on a GET stream;
// a numeric claim compares as the verifier decoded it (float64).
func TestClaimsFromCheck(t *testing.T) {
	pol := "default: deny\nallow:\n  - {id: ops, match: 'payments/deploy', when: '\"ops\" in claims.groups && claims.level >= 2.0'}\n  - {id: search, match: 'payments/search'}\n"
	f := newFixtureWith(t, []byte(pol), nil)
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"deploy","inputSchema":{"type":"object"}}]}}`
	tests := []struct {
		name   string
		claims string
		get    bool
		want   []string
	}{
		{"ops, level 2", `{"sub":"alice","groups":["ops"],"level":2}`, false, []string{"search", "deploy"}},
		{"ops, level 1", `{"sub":"alice","groups":["ops"],"level":1}`, false, []string{"search"}},
		{"not ops", `{"sub":"alice","groups":["eng"],"level":3}`, false, []string{"search"}},
		{"no such claims", `{"sub":"alice"}`, false, []string{"search"}},
		{"GET stream, ops", `{"sub":"alice","groups":["ops"],"level":2}`, true, []string{"search", "deploy"}},
		{"GET stream, not ops", `{"sub":"alice","groups":[],"level":2}`, true, []string{"search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got seen
			if tt.get {
				x := sseAnswer(exchange{method: "GET", meta: f.meta("alice", "GET", ""), status: 200}, "data: "+list+"\n\n")
				x.meta["claims"] = tt.claims
				got = f.envoy.do(t, getRoute, x)
			} else {
				x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), list)
				x.reqHdrs = nil // the route sends none
				x.meta["claims"] = tt.claims
				got = f.envoy.do(t, listRoute, x)
			}
			body := got.body
			if i := strings.Index(body, "data: "); tt.get && i >= 0 {
				body = strings.TrimSpace(body[i+len("data: "):])
			}
			var res struct {
				Result struct{ Tools []struct{ Name string } }
			}
			if got.status != 200 || json.Unmarshal([]byte(body), &res) != nil {
				t.Fatalf("%d %s", got.status, got.body)
			}
			var names []string
			for _, tl := range res.Result.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("listed %q, want %q", names, tt.want)
			}
		})
	}
}

// TestBodyHandlers: every body mode has its handler, and the handler of
// each BUFFERED mode refuses a chunk without end_of_stream (the mode was
// not honoured): the stream aborts rather than read half an answer.
func TestBodyHandlers(t *testing.T) {
	if len(bodyHandlers) != int(modeHeld)+1 {
		t.Fatalf("%d handlers for %d modes", len(bodyHandlers), modeHeld+1)
	}
	for m, h := range bodyHandlers {
		if h == nil {
			t.Errorf("mode %d has no handler", m)
		}
	}
	for _, m := range []respMode{modeJSON, modeError} {
		st := &stream{s: New(Config{}), mode: m}
		if _, err := st.responseBodyOf(context.Background(), &extprocv3.HttpBody{Body: []byte("{")}); err == nil {
			t.Errorf("mode %d: a chunk without end_of_stream was read", m)
		}
	}
}
