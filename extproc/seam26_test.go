package extproc

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryAnswerPassesTheSeam: issue 26's classes, each an answer a server
// that wants a principal to see delete_repo could send, on the route the
// shipped configs give its request (callRoute is every route but the list
// and GET ones: response headers only). The oracles are the three client
// readings (clients_test.go): none may deliver a list naming delete_repo;
// where the row says kept, some reading still delivers search (the answer
// was filtered, not refused).
func TestEveryAnswerPassesTheSeam(t *testing.T) {
	for i := range len(seamRows(newFixture(t))) {
		// A fixture of its own per row: pins recorded by one row never
		// hide a tool of another.
		f := newFixture(t)
		tt := seamRows(f)[i]
		t.Run(tt.class+"/"+tt.name, func(t *testing.T) {
			got := f.envoy.do(t, tt.rt, tt.give)
			if got.reset {
				t.Fatalf("reset")
			}
			a := answer{get: tt.give.method == "GET", status: got.status, body: got.body}
			if c, ok := got.hdrs["content-type"]; ok {
				a.ctypes = append(a.ctypes, c)
			}
			if !got.localReply {
				for _, kv := range tt.give.more {
					if kv[0] == "content-type" {
						a.ctypes = append(a.ctypes, kv[1])
					}
				}
			}
			kept := false
			for name, read := range clientReaders {
				names := listedNames(read(a))
				if slices.Contains(names, "delete_repo") {
					t.Errorf("the %s client reads delete_repo: %d %v %q", name, a.status, a.ctypes, a.body)
				}
				kept = kept || slices.Contains(names, "search")
			}
			if kept != tt.kept {
				t.Errorf("search read by some client: %v, want %v: %d %q", kept, tt.kept, got.status, got.body)
			}
			if tt.wantReason != "" {
				body := got.body
				if i := strings.LastIndex(body, "data: "); i >= 0 {
					body = body[i:]
				}
				if r, _ := rpcErrorOf(body); r != tt.wantReason {
					t.Errorf("reason %q, want %q: %d %q", r, tt.wantReason, got.status, got.body)
				}
			}
		})
	}
}

// seamRow is one answer of TestEveryAnswerPassesTheSeam.
type seamRow struct {
	class, name string
	rt          route
	give        exchange
	kept        bool   // search reaches some client
	wantReason  string // the refusal's data.reason, when refused
}

// seamRows are issue 26's classes, for fixture f's tokens.
func seamRows(f *fixture) []seamRow {
	alice := "Bearer " + f.tokens["alice"]
	list := func(id string) string { return strings.Replace(toolsBody, `"id":1`, `"id":`+id, 1) }
	onCall := func(method, id string, status int, hdrs map[string]string, chunks ...string) exchange {
		return exchange{method: "POST", meta: f.meta("alice", method, id), status: status, hdrs: hdrs, chunks: chunks}
	}
	onList := func(status int, hdrs map[string]string, chunks ...string) exchange {
		x := f.listRequest("alice", "tools/list", "1", "")
		x.status, x.hdrs, x.chunks = status, hdrs, chunks
		return x
	}
	onGET := func(resume bool, hdrs map[string]string, chunks ...string) exchange {
		req := map[string]string{"authorization": alice}
		if resume {
			req["last-event-id"] = "7"
		}
		return exchange{method: "GET", reqHdrs: req, meta: f.meta("alice", "GET", ""), status: 200, hdrs: hdrs, chunks: chunks}
	}
	ct := func(v string) map[string]string { return map[string]string{"content-type": v} }
	sseData := func(body string) string { return "event: message\ndata: " + body + "\n\n" }
	return []seamRow{
		// Media types are read as the clients read them, not by substring.
		{"media type", "json with an SSE profile", listRoute, onList(200, ct(`application/json; profile="text/event-stream"`), toolsBody), true, ""},
		{"media type", "SSE in upper case with parameters", listRoute, onList(200, ct(`Text/Event-Stream; charset=UTF-8`), sseData(toolsBody)), true, ""},
		{"media type", "a type only Python reads as JSON", callRoute, onCall("ping", "1", 200, ct("application/jsonx"), toolsBody), false, ReasonContentType},
		{"media type", "json, then SSE, joined", listRoute, func() exchange {
			x := onList(200, ct("application/json"), toolsBody)
			x.more = [][2]string{{"content-type", "text/event-stream"}}
			return x
		}(), false, ReasonContentType},
		{"media type", "a malformed parameter", callRoute, onCall("ping", "1", 200, ct("application/json; charset"), toolsBody), false, ReasonContentType},
		// No body is decided from end_of_stream, 204, 304, HEAD: never 202.
		{"no body from status", "202 with a list (Go reads a call's 2xx)", listRoute, onList(202, ct("application/json"), toolsBody), true, ""},
		{"no body from status", "201 SSE with another id's list", callRoute, onCall("tools/call", "5", 201, ct("text/event-stream"), sseData(list("9"))), false, ReasonUnexpected},
		{"no body from status", "a GET's 2xx body is SSE whatever its type", getRoute, onGET(true, ct("application/json"), sseData(list("9"))), true, ""},
		{"no body from status", "a 3xx Python reads", callRoute, onCall("ping", "1", 300, ct("application/json"), list("2")), false, ReasonUnexpected},
		// Redirects: the clients follow them (a 303 as a GET whose answer
		// they read as the POST's); refused whatever their body.
		{"no body from status", "a 303 without a body", listRoute, func() exchange {
			x := onList(303, map[string]string{"location": "/mcp"})
			x.chunks = nil
			return x
		}(), false, ReasonRedirect},
		{"no body from status", "a 307 elsewhere", callRoute, onCall("ping", "1", 307, map[string]string{"location": "https://evil.example/mcp", "content-type": "application/json"}, list("1")), false, ReasonRedirect},
		// Routes without a side stream: every answer obeys the transport rule.
		{"routes", "a list on a ping's SSE stream", callRoute, onCall("ping", "5", 200, ct("text/event-stream"), sseData(`{"jsonrpc":"2.0","id":5,"result":{}}`), sseData(list("9"))), false, ReasonUnexpected},
		{"routes", "a list in the array answering initialize", callRoute, onCall("initialize", "0", 200, ct("application/json"),
			`[{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}},`+list("9")+`]`), false, ReasonUnexpected},
		{"routes", "a list answering a notification", callRoute, onCall("notifications/initialized", "", 200, ct("application/json"), list("9")), false, ReasonUnexpected},
		{"routes", "a list on a GET (legacy HTTP+SSE answers there)", getRoute, onGET(false, ct("text/event-stream"), sseData(list("9"))), true, ""},
		{"routes", "an id that only TypeScript's Number() equates", callRoute, onCall("ping", "2", 200, ct("text/event-stream"), sseData(list(`"0x2"`))), false, ReasonUnexpected},
		// A stream that stops being read passes nothing more.
		{"stopped streams", "a list after an event over the cap", callRoute, func() exchange {
			big := sseData(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 5<<20) + `"}}`)
			var chunks []string
			for len(big) > 1<<19 {
				chunks, big = append(chunks, big[:1<<19]), big[1<<19:]
			}
			return onCall("tools/call", "5", 200, ct("text/event-stream"), append(chunks, big, sseData(list("5")))...)
		}(), false, ReasonTooLarge},
		// BOMs and framings some client strips or splits.
		// The mojibake BOM changes TypeScript's reading of the first event
		// only (sse: Ambiguous): refused, never passed as the others read it.
		{"framings", "a mojibake BOM TypeScript strips", listRoute, onList(200, ct("text/event-stream"), "\u00ef\u00bb\u00bfdata: "+toolsBody+"\n\n"), false, ReasonUnfilterable},
		{"framings", "a byte BOM and a mojibake BOM", listRoute, onList(200, ct("text/event-stream"), "\xef\xbb\xbf\u00ef\u00bb\u00bfdata: "+toolsBody+"\n\n"), false, ReasonUnfilterable},
		{"framings", "a byte BOM the clients read alike", listRoute, onList(200, ct("text/event-stream"), "\xef\xbb\xbf\n"+sseData(toolsBody)), true, ""},
		{"framings", "UTF-16 by charset", listRoute, onList(200, ct("text/event-stream; charset=utf-16le"), sseData(toolsBody)), false, ReasonCharset},
		{"framings", "UTF-7 by charset", callRoute, onCall("ping", "1", 200, ct("text/event-stream; charset=utf-7"), sseData(`{"jsonrpc":"2.0","id":1,"result":{}}`)), false, ReasonCharset},
		{"framings", "a second Content-Type naming a charset, on a GET", getRoute, func() exchange {
			x := onGET(false, ct("text/event-stream"), sseData(list("9")))
			x.more = [][2]string{{"content-type", "text/event-stream; charset=utf-16le"}}
			return x
		}(), false, ReasonContentType},
		{"framings", "a charset on JSON", listRoute, onList(200, ct("application/json; charset=iso-8859-1"), toolsBody), false, ReasonCharset},
		{"framings", "U+2028 ends a Python line inside data", listRoute, onList(200, ct("text/event-stream"),
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"search\",\"description\":\"a\u2028data: x\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"), true, ""},
		{"framings", "a list only Python reads, behind U+2028", listRoute, onList(200, ct("text/event-stream"),
			"event: message\ndata: \u2028data: "+list("1")+"\n\n"), false, ""},
		// Content codings: every entry, every coding.
		{"codings", "identity, gzip", listRoute, func() exchange {
			x := onList(200, ct("application/json"), toolsBody)
			x.hdrs["content-encoding"] = "identity, gzip"
			return x
		}(), false, ReasonCompressed},
		{"codings", "a second content-encoding entry", callRoute, func() exchange {
			x := onCall("ping", "1", 200, ct("application/json"), `{"jsonrpc":"2.0","id":1,"result":{}}`)
			x.more = [][2]string{{"content-encoding", "identity"}, {"content-encoding", "br"}}
			return x
		}(), false, ReasonCompressed},
	}
}

// TestReceiptReadsAsClientsDo: a tools/call result's members are matched by
// their exact names ("IsError" is no isError: both SDKs read a success).
func TestReceiptReadsAsClientsDo(t *testing.T) {
	for _, tt := range []struct{ give, want string }{
		{`{"isError":true,"content":[]}`, OutcomeToolError},
		{`{"IsError":true,"content":[]}`, OutcomeSuccess},
		{`{"isError":false,"content":[]}`, OutcomeSuccess},
		{`{"isError":"true","content":[]}`, OutcomeUnknown},
		{`{"task":{"TaskId":"t"}}`, OutcomeSuccess},
		{`{"task":{"taskId":"t"}}`, OutcomeTaskCreated},
		{`{"ResultType":"task"}`, OutcomeSuccess},
	} {
		if got := resultOutcome([]byte(tt.give)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.give, got, tt.want)
		}
	}
}

// TestLossyNumbers: a number the clients read with loss (not exactly an
// IEEE 754 double) in an answer that holds no list passes byte for byte;
// in a list it stays refused (a pin could not see it change); the
// transport rule holds either way.
func TestLossyNumbers(t *testing.T) {
	f := newFixture(t)
	const big = `1700000000123456789`
	call := func(id, body string) exchange {
		return jsonAnswer(exchange{method: "POST", meta: f.meta("alice", "tools/call", id), status: 200}, body)
	}
	ok := `{"jsonrpc":"2.0","id":5,"result":{"content":[],"structuredContent":{"at":` + big + `,"x":1e400,"y":[-0.1000000000000000055511151231257827]}}}`
	tests := []struct {
		name       string
		rt         route
		give       exchange
		wantBody   string
		wantReason string
	}{
		{"a call's result", callRoute, call("5", ok), ok, ""},
		{"as SSE", callRoute, sseAnswer(exchange{method: "POST", meta: f.meta("alice", "tools/call", "5"), status: 200}, "event: message\ndata: "+ok+"\n\n"), "event: message\ndata: " + ok + "\n\n", ""},
		{"another request's id", callRoute, call("6", ok), "", ReasonUnexpected},
		{"in a list", listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""),
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object","maximum":`+big+`}}]}}`), "", ReasonUnfilterable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.envoy.do(t, tt.rt, tt.give)
			if tt.wantBody != "" && got.body != tt.wantBody {
				t.Errorf("body %q, want %q", got.body, tt.wantBody)
			}
			if tt.wantReason != "" {
				if r, _ := rpcErrorOf(got.body); r != tt.wantReason {
					t.Errorf("reason %q, want %q: %q", r, tt.wantReason, got.body)
				}
			}
		})
	}
}

// TestSameID: a response's id is the request's when it is byte for byte
// or in RFC 8785 form (as a server's SDK writes the id back); a string is
// never a number.
func TestSameID(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{`7`, `7`, true},
		{`"abc"`, `"abc"`, true},
		{`"\u0031"`, `"1"`, true},
		{`1.0`, `1`, true},
		{`1e0`, `1`, true},
		{`"1"`, `1`, false},
		{`"0x2"`, `2`, false},
		{`2`, `3`, false},
		{`null`, `1`, false},
		{`12345678901234567890`, `12345678901234567890`, true},
	} {
		if got := sameID([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("%s, %s: %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
