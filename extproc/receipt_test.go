package extproc

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"go.uber.org/zap/zapcore"
)

// TestReceipts: every outcome of an allowed tools/call leaves one receipt
// line with Check's decision_id and request_digest, and never the result
// itself (its RFC 8785 digest only).
func TestReceipts(t *testing.T) {
	call := func(f *fixture, status int, ct string, chunks ...string) exchange {
		m := f.meta("alice", "tools/call", "7")
		m["request_digest"] = "sha256:req"
		return exchange{method: "POST", meta: m, status: status, hdrs: map[string]string{"content-type": ct}, chunks: chunks}
	}
	const secret = "s3cr3t-result-text"
	tests := []struct {
		name    string
		status  int
		ct      string
		chunks  []string
		outcome string
		code    int64
	}{
		{"success (JSON)", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + secret + `"}]}}`}, OutcomeSuccess, 0},
		{"tool error", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[{"type":"text","text":"` + secret + `"}]}}`}, OutcomeToolError, 0},
		{"rpc error", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}`}, OutcomeRPCError, -32602},
		{"task created", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"t1","status":"working"}}}`}, OutcomeTaskCreated, 0},
		{"input required (2026)", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required"}}`}, OutcomeInputRequired, 0},
		{"http error, no JSON-RPC body", 502, "text/plain", []string{"upstream connect error"}, OutcomeHTTPError, 0},
		{"success (SSE, after a notification)", 200, "text/event-stream", []string{
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n",
			"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n"}, OutcomeSuccess, 0},
		{"SSE ended before the answer", 200, "text/event-stream", []string{
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"}, OutcomeUnknown, 0},
		{"another id only", 200, "application/json", []string{`{"jsonrpc":"2.0","id":8,"result":{}}`}, OutcomeUnknown, 0},
		{"task id not a string", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":7}}}`}, OutcomeUnknown, 0},
		{"isError not a boolean", 200, "application/json", []string{`{"jsonrpc":"2.0","id":7,"result":{"isError":"true","content":[]}}`}, OutcomeUnknown, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			got := f.envoy.do(t, callRoute, call(f, tt.status, tt.ct, tt.chunks...))
			if got.localReply || got.reset {
				t.Fatalf("the call was not passed: %+v", got)
			}
			lines := f.logs.FilterMessage("receipt").All()
			if len(lines) != 1 {
				t.Fatalf("%d receipt lines, want 1", len(lines))
			}
			fields := lines[0].ContextMap()
			if fields["outcome"] != tt.outcome || fields["decision_id"] != "d-alice" || fields["request_digest"] != "sha256:req" {
				t.Errorf("receipt %v", fields)
			}
			if tt.code != 0 && fields["rpc_error_code"] != tt.code {
				t.Errorf("rpc_error_code %v, want %d", fields["rpc_error_code"], tt.code)
			}
			for _, fl := range lines[0].Context {
				if fl.Type == zapcore.StringType && strings.Contains(fl.String, secret) {
					t.Errorf("the receipt holds the result: %s", fl.Key)
				}
			}
			if d, _ := fields["result_digest"].(string); tt.outcome != OutcomeUnknown && tt.outcome != OutcomeHTTPError && !strings.HasPrefix(d, "sha256:") {
				t.Errorf("result_digest %v", fields["result_digest"])
			}
		})
	}
}

// TestReceiptOnlyForCalls: lists and GET streams leave no receipt.
func TestReceiptOnlyForCalls(t *testing.T) {
	f := newFixture(t)
	f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), toolsBody))
	if n := f.logs.FilterMessage("receipt").Len(); n != 0 {
		t.Errorf("%d receipts for a list", n)
	}
}

// TestRecordResult: the result of a call Check marked recover_key is kept
// for its retry when it is success or tool_error, never an rpc error or a
// call without the mark.
func TestRecordResult(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	results := &state.Results{Store: state.NewMemory(100, nil)}
	f := newFixtureWith(t, src, &toolpin.Observations{Store: state.NewMemory(100, nil)}, func(c *Config) { c.Results, c.ResultTTL = results, time.Hour })
	for _, tt := range []struct {
		key, answer string
		kept        bool
	}{
		{"k-ok", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, true},
		{"k-toolerr", `{"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[]}}`, true},
		{"k-rpcerr", `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}`, false},
		{"", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, false},
	} {
		m := f.meta("alice", "tools/call", "7")
		if tt.key != "" {
			m["recover_key"] = tt.key
		}
		f.envoy.do(t, callRoute, exchange{method: "POST", meta: m, status: 200, hdrs: map[string]string{"content-type": "application/json"}, chunks: []string{tt.answer}})
		if tt.key == "" {
			continue
		}
		got, found, err := results.Lookup(context.Background(), tt.key)
		if err != nil || found != tt.kept || (found && !strings.Contains(tt.answer, string(got))) {
			t.Errorf("%s: %q %v %v, want kept %v", tt.key, got, found, err, tt.kept)
		}
	}
}

// TestCallRouteFailsClosed: a tools/call's answer is read like every
// other (issue 26: the route is no longer observe-only). A JSON answer in
// chunks reaches the client as sent (content-length removed: it could come
// back filtered); one larger than MaxBody is answered with a JSON-RPC error
// (response_too_large) and nothing of it passes; an SSE event larger than
// MaxEvent becomes an error event and nothing after it passes; a compressed
// answer is refused (502) before its headers go out; a non-2xx JSON-RPC
// error passes.
func TestCallRouteFailsClosed(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const maxBody = 1 << 10
	f := newFixtureWith(t, src, &toolpin.Observations{Store: state.NewMemory(100, nil)}, func(c *Config) { c.MaxBody, c.MaxEvent = maxBody, maxBody })
	big := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 3*maxBody) + `"}]}}`
	small := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}`
	split := func(s string, n int) []string {
		var out []string
		for len(s) > n {
			out = append(out, s[:n])
			s = s[n:]
		}
		return append(out, s)
	}
	tests := []struct {
		name       string
		status     int
		hdrs       map[string]string
		chunks     []string
		wantStatus int
		wantBody   string // "": the upstream's bytes
		wantReason string
		outcome    string
	}{
		{"JSON in chunks, buffered (small)", 200, map[string]string{"content-type": "application/json", "content-length": strconv.Itoa(len(small))}, split(small, 10), 200, "", "", OutcomeSuccess},
		{"JSON in chunks, held (no length)", 200, map[string]string{"content-type": "application/json"}, split(small, 10), 200, "", "", OutcomeSuccess},
		{"larger than MaxBody", 200, map[string]string{"content-type": "application/json"}, split(big, 700), 200, "-", ReasonTooLarge, OutcomeUnknown},
		{"compressed", 200, map[string]string{"content-type": "application/json", "content-encoding": "gzip"}, []string{"\x1f\x8b\x08\x00binary"}, 502, "-", ReasonCompressed, OutcomeUnknown},
		{"an SSE event larger than MaxEvent, and the rest", 200, map[string]string{"content-type": "text/event-stream"},
			split("event: message\ndata: "+big+"\n\nevent: message\ndata: "+small+"\n\n", 500), 200, "-", ReasonTooLarge, OutcomeUnknown},
		{"non-2xx JSON-RPC error", 500, map[string]string{"content-type": "application/json"}, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom"}}`}, 500, "", "", OutcomeRPCError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.logs.FilterMessage("receipt").Len()
			m := f.meta("alice", "tools/call", "7")
			got := f.envoy.do(t, callRoute, exchange{method: "POST", meta: m, status: tt.status, hdrs: tt.hdrs, chunks: tt.chunks})
			if got.reset || got.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %+v", got.status, tt.wantStatus, got)
			}
			switch want := strings.Join(tt.chunks, ""); tt.wantBody {
			case "":
				if got.body != want {
					t.Errorf("body changed: %q, want the upstream's", got.body)
				}
			default:
				if strings.Contains(got.body, "xxxx") || strings.Contains(got.body, `"ok"`) {
					t.Errorf("bytes of the refused answer passed: %q", got.body)
				}
			}
			if tt.wantReason != "" {
				if r, _ := rpcErrorOf(strings.TrimSpace(strings.TrimPrefix(got.body, "data: "))); r != tt.wantReason {
					t.Errorf("reason %q, want %q: %q", r, tt.wantReason, got.body)
				}
			}
			lines := f.logs.FilterMessage("receipt").All()
			if len(lines) != before+1 {
				t.Fatalf("%d new receipt lines, want 1", len(lines)-before)
			}
			if o := lines[len(lines)-1].ContextMap()["outcome"]; o != tt.outcome {
				t.Errorf("outcome %v, want %s", o, tt.outcome)
			}
		})
	}
}
