package extauthz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// concealRig is a Check server under testdata/conceal/policy.yaml
// (`refusal: conceal`, every target refused by the default deny): real
// gRPC, real JWTs against a JWKS served on loopback.
type concealRig struct {
	token  string
	client func(style ConcealStyle, jsonResponse bool) authv3.AuthorizationClient
}

func newConcealRig(t *testing.T) *concealRig {
	t.Helper()
	key := testkit.NewKey(t, "conceal-key")
	idp := testkit.NewIdP(t, key)
	v := warmVerifier(t, idp.Issuer(), []string{testAudience}, nil)
	policies := compileStore(t, filepath.Join("testdata", "conceal", "policy.yaml"))
	clients := map[string]authv3.AuthorizationClient{}
	return &concealRig{
		token: key.Sign(t, idp.Claims()),
		client: func(style ConcealStyle, jsonResponse bool) authv3.AuthorizationClient {
			k := fmt.Sprint(style, jsonResponse)
			if c, ok := clients[k]; ok {
				return c
			}
			srv := newTestServer(policies, v, nil)
			srv.Responder.ConcealAs, srv.Responder.ConcealJSONResponse = style, jsonResponse
			clients[k] = startGRPC(t, srv)
			return clients[k]
		},
	}
}

// concealedHTTP is the HTTP answer of a denial: status, headers, body.
type concealedHTTP struct {
	status  int
	headers map[string]string
	body    string
}

// do sends a POST /mcp with headers h (authorization added) and body to a
// server concealing as style; it fails unless the answer is a denial whose
// dynamic metadata keeps the true reason.
func (rig *concealRig) do(t *testing.T, style ConcealStyle, jsonResponse bool, h map[string]string, body string) concealedHTTP {
	t.Helper()
	c := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body), Headers: map[string]string{"authorization": "Bearer " + rig.token}}
	for k, v := range h {
		c.Headers[k] = v
	}
	resp := check(t, rig.client(style, jsonResponse), c.CheckRequest(true))
	dr := resp.GetDeniedResponse()
	if dr == nil || resp.GetStatus().GetCode() == 0 {
		t.Fatalf("want a denial, got %v", resp)
	}
	if r := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); r != string(decision.ReasonDefaultDeny) {
		t.Fatalf("reason %q, want default_deny (body %s)", r, dr.GetBody())
	}
	out := concealedHTTP{status: int(dr.GetStatus().GetCode()), headers: map[string]string{}, body: dr.GetBody()}
	for _, hv := range dr.GetHeaders() {
		if _, dup := out.headers[hv.GetHeader().GetKey()]; dup {
			t.Fatalf("header %s set twice", hv.GetHeader().GetKey())
		}
		out.headers[hv.GetHeader().GetKey()] = hv.GetHeader().GetValue()
	}
	return out
}

// observed is one answer of a real SDK server, recorded on loopback
// (testdata/conceal/observed.jsonl): go-sdk v1.8.0 StreamableHTTPHandler
// (stateful; stateless for 2026-07-28), @modelcontextprotocol/sdk 1.32.2
// StreamableHTTPServerTransport (stateful, behind node:http), and
// @modelcontextprotocol/server 2.4.0 WebStandardStreamableHTTPServerTransport
// (stateful) and createMcpHandler (2026-07-28, default responseMode), each
// serving one tool "search" (TypeScript also a prompt and a resource), with
// JSON responses off (mode sse) and on (mode json); mode auto is
// createMcpHandler, which has no such option. The requests are the ones
// replayed here.
type observed struct {
	SDK     string       `json:"sdk"`
	Style   ConcealStyle `json:"style"`
	Mode    string       `json:"mode"`
	Era     string       `json:"era"`
	Key     string       `json:"key"`
	Request struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"request"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// hopByHop are the headers Envoy removes from every response it sends
// (ConnectionManagerUtility::mutateResponseHeaders), so the client never
// sees them from either the server or a concealed refusal.
var hopByHop = map[string]bool{"connection": true, "keep-alive": true, "transfer-encoding": true, "proxy-connection": true, "upgrade": true}

// knownConcealGaps are observed answers the service does not reproduce, and
// why; each must still differ only in its body (when it stops differing,
// remove it here).
var knownConcealGaps = map[string]string{
	"typescript-sdk target resources/read file:///x<&>\u2028é": "SDK 1.x writes the URI as new URL(uri).href (WHATWG URL serialization, percent-encoding <, > and non-ASCII); not modelled",
}

func loadObserved(t *testing.T) []observed {
	t.Helper()
	var out []observed
	for _, l := range testkit.JSONLines(t, filepath.Join("testdata", "conceal", "observed.jsonl")) {
		var o observed
		l.Decode(t, &o)
		out = append(out, o)
	}
	return out
}

// TestConcealObserved: for every request the real SDK servers answered
// (observed.jsonl), a concealed refusal replayed through a real gRPC server
// answers with the same status, the same headers (but hop-by-hop ones) and
// the same body, byte for byte.
func TestConcealObserved(t *testing.T) {
	rig := newConcealRig(t)
	for _, o := range loadObserved(t) {
		jsonModes := map[string][]bool{"sse": {false}, "json": {true}, "auto": {false, true}}[o.Mode]
		if jsonModes == nil {
			t.Fatalf("observed mode %q", o.Mode)
		}
		for _, jsonResponse := range jsonModes {
			name := fmt.Sprintf("%s/%s/%s/json=%v/%s", o.Style, o.Era, o.Mode, jsonResponse, o.Key)
			t.Run(name, func(t *testing.T) {
				got := rig.do(t, o.Style, jsonResponse, o.Request.Headers, o.Request.Body)
				want := map[string]string{}
				for k, v := range o.Headers {
					if !hopByHop[k] {
						want[k] = v
					}
				}
				sameHead := got.status == o.Status && fmt.Sprint(got.headers) == fmt.Sprint(want)
				if gap, ok := knownConcealGaps[string(o.Style)+" "+o.Key]; ok {
					if !sameHead || got.body == o.Body {
						t.Errorf("known gap (%s) changed: got %d %v %q; %s answers %d %v %q", gap, got.status, got.headers, got.body, o.SDK, o.Status, want, o.Body)
					}
					return
				}
				if !sameHead || got.body != o.Body {
					t.Errorf("concealed answer\n got %d %v %q\n%s answers\n     %d %v %q", got.status, got.headers, got.body, o.SDK, o.Status, want, o.Body)
				}
			})
		}
	}
}

// concealIDs are the id shapes the goldens cover: integers around 2^53
// and 2^63 and past the double range, -0, and strings whose escapes the
// SDKs' encoders write differently.
var concealIDs = []string{
	`7`, `-5`, `-0`, `9007199254740991`, `9007199254740993`, `-9007199254740993`,
	`9223372036854775807`, `-9223372036854775809`, `123456789012345678901234567890`, `1` + strings.Repeat("0", 400),
	`"a-1"`, `"\u0041"`, `"<&>"`, `"\u2028\u2029"`, "\"\u2028\"", `"\ud83d\ude00"`, `"😀"`,
	`"\u0000\b\f\n\r\t\u001f\u007f"`, `"\/\"\\"`, `"é"`, `""`,
}

// concealTargets are one request per method, with names and URIs that the
// SDKs' encoders escape differently.
var concealTargets = []struct{ method, params string }{
	{"tools/call", `{"name":"delete_repo","arguments":{}}`},
	{"tools/call", "{\"name\":\"x<&>\u2028é\\\"q\",\"arguments\":{}}"},
	{"prompts/get", "{\"name\":\"secret<prompt>\u2028\"}"},
	{"resources/read", `{"uri":"file:///etc/shadow"}`},
	{"resources/read", "{\"uri\":\"file:///x<&>\u2028é\"}"},
	{"tasks/get", `{"taskId":"t-1"}`},
	{"tasks/result", "{\"taskId\":\"t<&>\u2028é\\\"q\"}"},
	{"tasks/cancel", `{"taskId":"t-1"}`},
	{"tasks/update", `{"taskId":"t-1","status":"working"}`},
}

// concealForms are the request and server shapes of the goldens.
var concealForms = []struct {
	name         string
	jsonResponse bool
	headers      map[string]string
}{
	{"sse", false, map[string]string{"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", "mcp-session-id": "sess-1"}},
	{"json", true, map[string]string{"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", "mcp-session-id": "sess-1"}},
	{"no-event-stream", false, map[string]string{"accept": "application/json", "mcp-protocol-version": "2025-11-25"}},
	{"2026-07-28", false, map[string]string{"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"}},
}

// TestConcealGolden: every style × form × id shape and target, through a
// real gRPC server, against testdata/conceal/<style>.golden (-update
// rewrites them). TestConcealObserved checks the same answers against the
// real SDKs; this pins the forms they were not recorded in.
func TestConcealGolden(t *testing.T) {
	rig := newConcealRig(t)
	for _, style := range []ConcealStyle{ConcealGoSDK, ConcealTypeScriptSDK, ConcealTypeScriptSDKV2} {
		t.Run(string(style), func(t *testing.T) {
			var b strings.Builder
			for _, f := range concealForms {
				run := func(key, method, id, params string) {
					body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
					h := map[string]string{"content-type": "application/json"}
					for k, v := range f.headers {
						h[k] = v
					}
					got := rig.do(t, style, f.jsonResponse, h, body)
					keys := make([]string, 0, len(got.headers))
					for k := range got.headers {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					fmt.Fprintf(&b, "== %s %s\nstatus %d\n", f.name, key, got.status)
					for _, k := range keys {
						fmt.Fprintf(&b, "%s: %s\n", k, got.headers[k])
					}
					fmt.Fprintf(&b, "body %q\n", got.body)
				}
				for _, id := range concealIDs {
					run("id "+id, "tools/call", id, concealTargets[0].params)
				}
				for _, tg := range concealTargets[1:] {
					run(tg.method+" "+tg.params, tg.method, "1", tg.params)
				}
			}
			file := filepath.Join("testdata", "conceal", string(style)+".golden")
			if want, same := testkit.Golden(t, file, []byte(b.String())); !same {
				t.Errorf("%s is stale (run with -update and review the diff):\n%s", file, firstDiff(string(want), b.String()))
			}
		})
	}
}

// oracleID is the id as each SDK writes it back, computed independently of
// sdkID: TypeScript by RFC 8785 (internal/jcsoracle: ECMAScript's
// Number::toString and JSON.stringify's string escapes) after an exact
// safe-integer test with math/big; go-sdk by encoding/json (decode into
// any, int64 of the float64 through math/big, encode with HTML escaping off
// as go-sdk's encoder does). false: the SDK refuses the message.
func oracleID(t testing.TB, style ConcealStyle, raw string) (string, bool) {
	t.Helper()
	if raw[0] != '"' {
		n, ok := new(big.Int).SetString(raw, 10)
		if !ok {
			t.Fatalf("oracle: %q is not an integer", raw)
		}
		if style != ConcealGoSDK {
			if new(big.Int).Abs(n).Cmp(big.NewInt(1<<53-1)) > 0 {
				return "", false
			}
			s, err := jcsoracle.Number(raw)
			if err != nil {
				t.Fatal(err)
			}
			return s, true
		}
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return "", false // beyond the double range
		}
		i, acc := big.NewFloat(v.(float64)).Int64()
		if acc != big.Exact {
			i = math.MinInt64 // amd64's int64 conversion out of range
		}
		return fmt.Sprint(i), true
	}
	if style != ConcealGoSDK {
		s, err := jcsoracle.Transform([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return string(s), true
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

// TestConcealIDOracle: the id a concealed refusal answers, read back from
// the body through a real gRPC server, is the oracle's for every id shape
// and style; an id the oracle says the SDK refuses gets HTTP 400.
func TestConcealIDOracle(t *testing.T) {
	rig := newConcealRig(t)
	h := map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
	for _, style := range []ConcealStyle{ConcealGoSDK, ConcealTypeScriptSDK, ConcealTypeScriptSDKV2} {
		for _, raw := range concealIDs {
			t.Run(string(style)+"/"+raw, func(t *testing.T) {
				want, ok := oracleID(t, style, raw)
				got := rig.do(t, style, true, h, `{"jsonrpc":"2.0","id":`+raw+`,"method":"prompts/get","params":{"name":"p"}}`)
				if !ok {
					if got.status != 400 {
						t.Errorf("the SDK refuses id %s; got %d %s", raw, got.status, got.body)
					}
					return
				}
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				if err := json.Unmarshal([]byte(got.body), &m); err != nil || got.status != 200 {
					t.Fatalf("%d %s: %v", got.status, got.body, err)
				}
				if string(m.ID) != want {
					t.Errorf("id %s answered as %s, oracle %s", raw, m.ID, want)
				}
			})
		}
	}
}

// FuzzSDKID: sdkID agrees with the independent oracle for any string id
// and any integer literal, for every style.
func FuzzSDKID(f *testing.F) {
	for _, s := range []string{"a", "<&>", "\u2028", "\x00\x7f", "😀", "\"\\/", "9007199254740993", "-0", "123456789012345678901234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		raws := []string{}
		if b, err := json.Marshal(s); err == nil { // a JSON string literal, HTML-escaped as mcpparse admits
			raws = append(raws, string(b))
		}
		digits := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, s)
		if digits != "" && (digits == "0" || digits[0] != '0') {
			raws = append(raws, digits, "-"+digits)
		}
		for _, raw := range raws {
			for _, style := range []ConcealStyle{ConcealGoSDK, ConcealTypeScriptSDK, ConcealTypeScriptSDKV2} {
				got, ok := sdkID(style, []byte(raw))
				want, wantOK := oracleID(t, style, raw)
				if ok != wantOK || (ok && string(got) != want) {
					t.Fatalf("%s id %s: sdkID %s %v, oracle %s %v", style, raw, got, ok, want, wantOK)
				}
			}
		}
	})
}

// TestConcealAccept: each SDK's reading of Accept decides SSE or JSON (the
// server streaming): go-sdk takes text/*, */* and any case, TypeScript a
// case-sensitive "text/event-stream" substring; neither reads q.
func TestConcealAccept(t *testing.T) {
	rig := newConcealRig(t)
	tests := []struct {
		style ConcealStyle
		give  string
		want  string // content-type
	}{
		{ConcealGoSDK, "application/json, text/event-stream", contentTypeSSE},
		{ConcealGoSDK, "*/*", contentTypeSSE},
		{ConcealGoSDK, "application/json, text/*", contentTypeSSE},
		{ConcealGoSDK, "application/json, TEXT/EVENT-STREAM ; charset=utf-8", contentTypeSSE},
		{ConcealGoSDK, "text/event-stream;q=0", contentTypeSSE},
		{ConcealGoSDK, "application/json", contentTypeJSON},
		{ConcealGoSDK, "", contentTypeJSON},
		{ConcealTypeScriptSDK, "application/json, text/event-stream", contentTypeSSE},
		{ConcealTypeScriptSDK, "text/event-stream;q=0", contentTypeSSE},
		{ConcealTypeScriptSDK, "*/*", contentTypeJSON},
		{ConcealTypeScriptSDK, "TEXT/EVENT-STREAM", contentTypeJSON},
		{ConcealTypeScriptSDKV2, "application/json,text/event-stream", contentTypeSSE},
		{ConcealTypeScriptSDKV2, "text/*", contentTypeJSON},
	}
	for _, tt := range tests {
		h := map[string]string{"content-type": "application/json", "mcp-protocol-version": "2025-11-25"}
		if tt.give != "" {
			h["accept"] = tt.give
		}
		got := rig.do(t, tt.style, false, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
		if got.headers["content-type"] != tt.want || got.status != 200 {
			t.Errorf("%s Accept %q: %d %s, want %s", tt.style, tt.give, got.status, got.headers["content-type"], tt.want)
		}
		if sse := tt.want == contentTypeSSE; sse != strings.HasPrefix(got.body, "event: message\ndata: {") || sse != strings.HasSuffix(got.body, "}\n\n") {
			t.Errorf("%s Accept %q: body %q not framed as %s", tt.style, tt.give, got.body, tt.want)
		}
	}
}

// TestConcealSessionID: a TypeScript answer echoes the request's
// Mcp-Session-Id when it is a session id (visible ASCII, given once);
// go-sdk never sets it outside initialize.
func TestConcealSessionID(t *testing.T) {
	rig := newConcealRig(t)
	tests := []struct {
		style ConcealStyle
		give  string
		want  string
	}{
		{ConcealTypeScriptSDK, "1868a90c-2d1e-4f35-8b33-5cbd4a0b0a3c", "1868a90c-2d1e-4f35-8b33-5cbd4a0b0a3c"},
		{ConcealTypeScriptSDKV2, "abc", "abc"},
		{ConcealTypeScriptSDK, "a b", ""},
		{ConcealTypeScriptSDK, "é", ""},
		{ConcealGoSDK, "ZSEFVRCPKGCSYNZTCW3DOHVXVM", ""},
	}
	for _, tt := range tests {
		for _, jsonResponse := range []bool{false, true} {
			h := map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", "mcp-session-id": tt.give}
			got := rig.do(t, tt.style, jsonResponse, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
			if got.headers["mcp-session-id"] != tt.want {
				t.Errorf("%s json=%v session %q: echoed %q, want %q", tt.style, jsonResponse, tt.give, got.headers["mcp-session-id"], tt.want)
			}
		}
	}
}

// BenchmarkConcealAnswer: building a concealed answer (SSE, TypeScript
// style, a string id), off the gRPC path.
func BenchmarkConcealAnswer(b *testing.B) {
	d := &decision.Decision{Method: "tools/call", Target: "delete_repo", RPCID: []byte(`"a-1"`)}
	h := decision.Headers{"accept": {"application/json, text/event-stream"}, "mcp-session-id": {"sess-1"}, "mcp-protocol-version": {"2025-11-25"}}
	for _, style := range []ConcealStyle{ConcealGoSDK, ConcealTypeScriptSDK} {
		b.Run(string(style), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if a := concealAnswer(style, false, d, h); a.status != 200 {
					b.Fatal(a.status)
				}
			}
		})
	}
}

// TestConcealTaskNotOwned: a tasks/get, tasks/result or tasks/cancel naming
// another principal's task, or a task never bound, is refused
// task_not_owned (the dynamic metadata keeps the true reason); under
// `refusal: conceal` the client gets the SDK's own unknown-task answer,
// under explain the machine-readable denial. The owner is allowed.
func TestConcealTaskNotOwned(t *testing.T) {
	key := testkit.NewKey(t, "task-key")
	idp := testkit.NewIdP(t, key)
	v := warmVerifier(t, idp.Issuer(), []string{testAudience}, nil)
	tasks := &state.Tasks{Store: state.NewMemory(0, nil)}
	claims := idp.Claims()
	owner := state.TaskOwner(idp.Issuer(), claims["sub"].(string))
	if err := tasks.Bind(context.Background(), testServerID, "t-mine", owner, 60_000); err != nil {
		t.Fatal(err)
	}
	if err := tasks.Bind(context.Background(), testServerID, "t-theirs", state.TaskOwner(idp.Issuer(), "someone-else"), 60_000); err != nil {
		t.Fatal(err)
	}
	token := key.Sign(t, claims)
	server := func(refusal string, style ConcealStyle) authv3.AuthorizationClient {
		dir := t.TempDir()
		file := filepath.Join(dir, "policy.yaml")
		src := "refusal: " + refusal + "\nmethods:\n  allow:\n    - {id: tasks, method: tasks/get}\n    - {method: tasks/result}\n    - {method: tasks/cancel}\n"
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		srv := newTestServer(compileStore(t, file), v, nil)
		srv.Decider = mustDecider(decision.Config{ServerID: testServerID, Verifier: v, Policies: compileStore(t, file),
			Limits: mcpparse.DefaultLimits(), Tasks: tasks})
		srv.Responder.ConcealAs, srv.Responder.ConcealJSONResponse = style, true
		return startGRPC(t, srv)
	}
	call := func(c authv3.AuthorizationClient, method, task string) *authv3.CheckResponse {
		body := `{"jsonrpc":"2.0","id":4,"method":"` + method + `","params":{"taskId":"` + task + `"}}`
		r := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body), Headers: map[string]string{
			"authorization": "Bearer " + token, "content-type": "application/json",
			"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25",
		}}
		return check(t, c, r.CheckRequest(true))
	}
	tests := []struct {
		refusal    string
		style      ConcealStyle
		method     string
		task       string
		wantStatus int
		wantBody   string // "" for an allowed request
	}{
		{"conceal", ConcealTypeScriptSDK, "tasks/get", "t-mine", 0, ""},
		{"conceal", ConcealTypeScriptSDK, "tasks/get", "t-theirs", 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"MCP error -32602: Failed to retrieve task: Task not found"}}`},
		{"conceal", ConcealTypeScriptSDK, "tasks/result", "t-theirs", 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"MCP error -32602: Task not found: t-theirs"}}`},
		{"conceal", ConcealTypeScriptSDK, "tasks/cancel", "t-never-bound", 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"MCP error -32602: Task not found: t-never-bound"}}`},
		{"conceal", ConcealTypeScriptSDKV2, "tasks/get", "t-theirs", 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}`},
		{"conceal", ConcealGoSDK, "tasks/get", "t-theirs", 400, "JSON RPC not handled: \"tasks/get\" unsupported\n"},
		{"explain", ConcealTypeScriptSDK, "tasks/get", "t-theirs", 200, `"reason":"task_not_owned"`}, // DenialStatusAuto: 200 for a JSON-RPC client
	}
	for _, tt := range tests {
		t.Run(tt.refusal+"/"+string(tt.style)+"/"+tt.method+"/"+tt.task, func(t *testing.T) {
			resp := call(server(tt.refusal, tt.style), tt.method, tt.task)
			if tt.wantBody == "" {
				if resp.GetOkResponse() == nil {
					t.Fatalf("owner refused: %v", resp)
				}
				return
			}
			dr := resp.GetDeniedResponse()
			if dr == nil {
				t.Fatalf("want a denial, got %v", resp)
			}
			if r := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); r != string(decision.ReasonTaskNotOwned) {
				t.Errorf("metadata reason %q, want task_not_owned", r)
			}
			if int(dr.GetStatus().GetCode()) != tt.wantStatus {
				t.Errorf("status %d, want %d", dr.GetStatus().GetCode(), tt.wantStatus)
			}
			if tt.refusal == "explain" {
				if !strings.Contains(dr.GetBody(), tt.wantBody) {
					t.Errorf("body %s, want it to contain %s", dr.GetBody(), tt.wantBody)
				}
				return
			}
			if dr.GetBody() != tt.wantBody {
				t.Errorf("body\n got %q\nwant %q", dr.GetBody(), tt.wantBody)
			}
		})
	}
}
