package extproc

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// denied reports whether data, decoded by encoding/json as a client would
// (one message or a batch), carries a list naming an item the reference
// policy denies alice.
func denied(data []byte) bool {
	var msgs []map[string]json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		_ = json.Unmarshal(data, &msgs)
	} else {
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) == nil {
			msgs = append(msgs, m)
		}
	}
	for _, m := range msgs {
		var res map[string]json.RawMessage
		if json.Unmarshal(m["result"], &res) != nil {
			continue
		}
		for k, v := range res {
			if !strings.EqualFold(k, "tools") {
				continue
			}
			var items []map[string]any
			_ = json.Unmarshal(v, &items)
			for _, it := range items {
				for ik, iv := range it {
					if s, ok := iv.(string); ok && strings.EqualFold(ik, "name") && strings.Contains(strings.ToLower(s), "delete") {
						return true
					}
				}
			}
		}
	}
	return false
}

// FuzzProcessSSE: whatever the upstream streams and however it is chunked,
// no event of what the processor releases, as either SDK client reads it
// (the framer's TypeScript and Go views, themselves checked against ports
// of the clients' readers by internal/sse's FuzzFramer), carries a tool
// whose name holds "delete" (every such tool is hidden by the reference
// policy: no-deletes or the default), decoded by encoding/json.
func FuzzProcessSSE(f *testing.F) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		f.Fatal(err)
	}
	pol, err := policy.Compile("p.yaml", src)
	if err != nil {
		f.Fatal(err)
	}
	srv := New(Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(pol), "v" }})
	f.Add([]byte("data: "+toolsBody+"\n\n"), uint8(5))
	f.Add([]byte("\xef\xbb\xbfevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{\"Tools\":[{\"name\":\"delete_repo\"}]}}"), uint8(9))
	f.Add([]byte("event: x\ndata: "+toolsBody+"\n\ndata: ["+toolsBody+"]\n\n"), uint8(30))
	f.Fuzz(func(t *testing.T, up []byte, cut uint8) {
		st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice", claims: map[string]any{"sub": "alice"},
			policyVersion: "v", isList: true, mode: modeSSE, framer: sse.New(1 << 16)}
		c := min(int(cut), len(up))
		var out []byte
		for i, chunk := range [][]byte{up[:c], up[c:], nil} {
			resp, err := st.responseBody(context.Background(), &extprocv3.HttpBody{Body: chunk, EndOfStream: i == 2})
			if err != nil {
				return // an aborted stream: Envoy resets it, nothing more reaches the client
			}
			if m, ok := resp.GetResponseBody().GetResponse().GetBodyMutation().GetMutation().(*extprocv3.BodyMutation_Body); ok {
				out = append(out, m.Body...)
			} else {
				out = append(out, chunk...)
			}
		}
		fr := sse.New(len(out) + 1)
		check := func(ev *sse.Event) error {
			for _, v := range []*sse.View{&ev.TS, &ev.Go} {
				if v.Message() && denied(v.Data) {
					t.Fatalf("a denied tool reached a client: %q (from %q)", v.Data, up)
				}
			}
			return nil
		}
		if fr.Write(out, check) == nil {
			_ = fr.Close(check)
		}
	})
}
