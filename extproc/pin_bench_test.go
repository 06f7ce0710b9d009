package extproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// list500 is a tools/list answer of n tools (> 64 KiB for 500), the shape
// of listfilter's BenchmarkFilter500: delete_<i> every tenth, search and
// search_<i>, tool_<i> for the rest.
func list500(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		name := fmt.Sprintf("tool_%d", i)
		switch i % 10 {
		case 0:
			name = fmt.Sprintf("delete_%d", i)
		case 1:
			name = "search"
			if i > 1 {
				name = fmt.Sprintf("search_%d", i)
			}
		}
		fmt.Fprintf(&sb, `{"name":%q,"description":"Tool number %d does something useful with its inputs and returns a result.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"the query"},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["q"]}}`, name, i)
	}
	sb.WriteString(`],"nextCursor":"next"}}`)
	return []byte(sb.String())
}

// BenchmarkFilterPin500 filters a 500-tool tools/list (JSON, buffered) on
// a side stream with the reference policy, MB/s of the upstream's body:
//
//	filter      pin_mode off: the filter alone
//	pin-cached  pin_mode tofu (examples/policy.yaml as shipped): every tool
//	            fingerprinted through a toolpin.Cache that saw this list
//	            before (steady state: one SHA-256 per tool) and observed in
//	            a memory store
//	pin-fresh   the same with an empty Cache per list (every definition
//	            canonicalized: a catalog seen for the first time)
//
// Issue 18's target is pin-cached / filter <= 1.20 in time per list.
// Each iteration checks the answer: the list was rewritten, delete_ tools
// are gone.
func BenchmarkFilterPin500(b *testing.B) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(src, []byte("pin_mode: tofu")) {
		b.Fatal("the reference policy no longer pins on first use")
	}
	off := bytes.Replace(src, []byte("pin_mode: tofu"), []byte("pin_mode: off"), 1)
	body := list500(500)
	if len(body) <= 64<<10 {
		b.Fatalf("list of %d bytes, want > 64 KiB", len(body))
	}
	for _, tt := range []struct {
		name  string
		src   []byte
		pin   bool
		fresh bool
	}{
		{"filter", off, false, false},
		{"pin-cached", src, true, false},
		{"pin-fresh", src, true, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			pol, err := policy.Compile("examples/policy.yaml", tt.src)
			if err != nil {
				b.Fatal(err)
			}
			if (pol.PinMode() != policy.PinOff) != tt.pin {
				b.Fatalf("pin mode %v", pol.PinMode())
			}
			cfg := Config{Policy: func() (*policy.Policy, string) { return pol, "v" }}
			if tt.pin {
				cfg.Definitions = &toolpin.Observations{Store: state.NewMemory(100000, nil), Recent: &toolpin.Recent{}} // as serve configures it
				cfg.Fingerprints = &toolpin.Cache{}
			}
			srv := New(cfg)
			ctx := context.Background()
			run := func() {
				st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice",
					policyVersion: "v", isList: true, session: "s1", rpcID: []byte("1"), mode: modeJSON}
				if tt.fresh {
					srv.cfg.Fingerprints = &toolpin.Cache{}
				}
				r, err := st.responseBody(ctx, &extprocv3.HttpBody{Body: body, EndOfStream: true})
				if err != nil {
					b.Fatal(err)
				}
				out := r.GetResponseBody().GetResponse().GetBodyMutation().GetBody()
				if len(out) == 0 || bytes.Contains(out, []byte("delete_")) || !bytes.Contains(out, []byte(`"search"`)) || bytes.Contains(out, []byte(`"error"`)) {
					b.Fatalf("not filtered: %.200s", out)
				}
			}
			run() // the store and (pin-cached) the cache have seen this list
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}
