package extproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
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
//	pin-cached  pin_mode tofu (examples/policy.yaml as shipped), as serve
//	            configures it, the list seen before: the steady state, where
//	            toolpin.Recent remembers the whole list (ListSeen) and no
//	            tool is fingerprinted or observed again
//	pin-items   the same with no memory of whole lists (Recent.MaxListBytes
//	            below the list's size): every tool fingerprinted through a
//	            toolpin.Cache that saw it (one lookup by its bytes) and
//	            observed (Recent remembers it): a list that changed by one
//	            tool
//	pin-fresh   pin-items with an empty Cache per list (every definition
//	            canonicalized: a catalog seen for the first time)
//	ratio       filter, pin-cached and pin-items in turn, each iteration
//	            all three (in rotating order), reporting their times over
//	            filter's as "pin/filter" and "pin-items/filter": issue 18's
//	            target is <= 1.20
//
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
	const (
		pinOff = iota
		pinCached
		pinItems
		pinFresh
	)
	for _, tt := range []struct {
		name string
		mode int
	}{
		{"filter", pinOff},
		{"pin-cached", pinCached},
		{"pin-items", pinItems},
		{"pin-fresh", pinFresh},
	} {
		b.Run(tt.name, func(b *testing.B) {
			run := pinBenchRun(b, src, off, tt.mode, body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
	b.Run("ratio", func(b *testing.B) {
		runs := [3]func(){pinBenchRun(b, src, off, pinOff, body), pinBenchRun(b, src, off, pinCached, body), pinBenchRun(b, src, off, pinItems, body)}
		var spent [3]time.Duration
		n := 0
		for b.Loop() {
			for j := range 3 {
				k := (n + j) % 3 // rotate which goes first
				t0 := time.Now()
				runs[k]()
				spent[k] += time.Since(t0)
			}
			n++
		}
		b.ReportMetric(float64(spent[1])/float64(spent[0]), "pin/filter")
		b.ReportMetric(float64(spent[2])/float64(spent[0]), "pin-items/filter")
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(n), "filter-ns/op")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(n), "pin-ns/op")
		b.ReportMetric(float64(spent[2].Nanoseconds())/float64(n), "pin-items-ns/op")
	})
}

// pinBenchRun returns one filtering of body on a fresh side stream,
// checked, under the reference policy src as BenchmarkFilterPin500's mode
// says (off: src with pin_mode off). The store and the caches have seen
// body once already.
func pinBenchRun(b *testing.B, src, off []byte, mode int, body []byte) func() {
	pin, fresh := mode != 0, mode == 3
	if !pin {
		src = off
	}
	pol, err := policy.Compile("examples/policy.yaml", src)
	if err != nil {
		b.Fatal(err)
	}
	if (pol.PinMode() != policy.PinOff) != pin {
		b.Fatalf("pin mode %v", pol.PinMode())
	}
	cfg := Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(pol), "v" }}
	if pin {
		recent := &toolpin.Recent{} // as serve configures it
		if mode != 1 {
			recent.MaxListBytes = len(body) / 2 // no whole list remembered
		}
		cfg.Definitions = &toolpin.Observations{Store: state.NewMemory(100000, nil), Recent: recent}
		cfg.Fingerprints = &toolpin.Cache{}
	}
	srv := New(cfg)
	ctx := context.Background()
	run := func() {
		st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice", claims: map[string]any{"sub": "alice"},
			policyVersion: "v", isList: true, session: "s1", rpcID: []byte("1"), mode: modeJSON}
		if fresh {
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
	run()
	return run
}
