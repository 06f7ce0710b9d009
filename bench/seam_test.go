package main

import (
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extproc"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// referencePolicy compiles examples/policy.yaml.
func referencePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile("examples/policy.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSeams writes every seam case with Check metadata for alice's
// method, as Check gives it, without a running service.
func writeSeams(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range SeamCases {
		req, cr, err := c.checkRequest("../examples/requests", "tok")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{"decision_id": "d-1", "decision": "allow", "reason": "allowed",
			"method": c.Method, "server": "payments", "principal": "alice", "policy_version": "v", "rpc_id": "1"}
		if decision.ClaimsFor(c.Method) {
			m["claims"] = `{"sub":"alice"}` // as Check writes them (decision.MetadataOf)
		}
		meta, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeSeam(dir, c, req, cr, meta); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestToolsList: the measured list is valid JSON of SeamTools distinct
// tools, and the reference policy keeps exactly the three it says.
func TestToolsList(t *testing.T) {
	var m struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(ToolsList(SeamTools)), &m); err != nil {
		t.Fatal(err)
	}
	p := referencePolicy(t)
	seen := map[string]bool{}
	var kept []string
	for _, tool := range m.Result.Tools {
		if seen[tool.Name] {
			t.Fatalf("duplicate %s", tool.Name)
		}
		seen[tool.Name] = true
		in, _ := decision.ItemInput(listfilter.Tools, tool.Name, "payments", nil)
		if p.Visible(in).Visible {
			kept = append(kept, tool.Name)
		}
	}
	if len(m.Result.Tools) != SeamTools || strings.Join(kept, ",") != "search,read_file,issue_refund" {
		t.Fatalf("%d tools, kept %v", len(m.Result.Tools), kept)
	}
}

// TestSeamMessages: the messages are in Envoy's order for each route,
// metadata on each, protocol_config on the first only (with the route's
// request body mode), the list route's request body whole and ended,
// content-length matching a buffered body, and the SSE chunks adding up to
// one event ended by an empty end_of_stream chunk.
func TestSeamMessages(t *testing.T) {
	dir := writeSeams(t)
	want := map[string]string{
		"list-json":       "resph body*",
		"list-sse":        "resph body body body body*",
		"call-json":       "resph body*",
		"call-sse":        "resph body body*",
		"initialize-json": "resph body*",
		"ping-json":       "resph body*",
		"ping-sse":        "resph body body*",
	}
	if len(want) != len(SeamCases) {
		t.Fatalf("%d cases, %d expected", len(SeamCases), len(want))
	}
	for _, c := range SeamCases {
		f, err := readSeam(dir, c.Name)
		if err != nil {
			t.Fatal(err)
		}
		if f.req.GetAttributes().GetRequest().GetHttp().GetHeaders()["authorization"] != "Bearer tok" {
			t.Errorf("%s: CheckRequest without the token", c.Name)
		}
		var kinds []string
		var body strings.Builder
		cl := ""
		for i, m := range f.msgs {
			if (m.GetProtocolConfig() != nil) != (i == 0) {
				t.Errorf("%s: message %d: protocol_config %v", c.Name, i+1, m.GetProtocolConfig())
			}
			if m.GetMetadataContext().GetFilterMetadata()[authzNamespace].GetFields()["decision_id"].GetStringValue() != "d-1" {
				t.Errorf("%s: message %d without Check's metadata", c.Name, i+1)
			}
			switch r := m.GetRequest().(type) {
			case *extprocv3.ProcessingRequest_RequestHeaders:
				kinds = append(kinds, "reqh")
				if _, ok := headerOf(r.RequestHeaders, "authorization"); !ok {
					t.Errorf("%s: request headers without the token", c.Name)
				}
			case *extprocv3.ProcessingRequest_RequestBody:
				if r.RequestBody.GetEndOfStream() && string(r.RequestBody.GetBody()) == string(f.req.GetAttributes().GetRequest().GetHttp().GetRawBody()) {
					kinds = append(kinds, "reqb*")
				} else {
					kinds = append(kinds, "reqb")
				}
			case *extprocv3.ProcessingRequest_ResponseHeaders:
				kinds = append(kinds, "resph")
				cl, _ = headerOf(r.ResponseHeaders, "content-length")
			case *extprocv3.ProcessingRequest_ResponseBody:
				k := "body"
				if r.ResponseBody.GetEndOfStream() {
					k += "*"
				}
				kinds = append(kinds, k)
				body.Write(r.ResponseBody.GetBody())
			}
		}
		if got := strings.Join(kinds, " "); got != want[c.Name] {
			t.Errorf("%s: %q, want %q", c.Name, got, want[c.Name])
		}
		if got := f.msgs[0].GetProtocolConfig().GetRequestBodyMode(); got != procfv3.ProcessingMode_NONE {
			t.Errorf("%s: protocol_config request_body_mode %v, want NONE", c.Name, got)
		}
		answer, _ := c.answer()
		switch {
		case c.SSE && (cl != "" || body.String() != "event: message\ndata: "+answer+"\n\n"):
			t.Errorf("%s: content-length %q, body %.80q", c.Name, cl, body.String())
		case !c.SSE && (cl != itoa(body.Len()) || body.String() != answer || !json.Valid([]byte(answer))):
			t.Errorf("%s: content-length %q for %d bytes", c.Name, cl, body.Len())
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func headerOf(h *extprocv3.HttpHeaders, k string) (string, bool) {
	for _, x := range h.GetHeaders().GetHeaders() {
		if x.GetKey() == k {
			return string(x.GetRawValue()), true
		}
	}
	return "", false
}

// startSeam serves a null Check next to the real processor (reference
// policy, tool definitions recorded, no token verifier) on loopback.
func startSeam(t *testing.T) string {
	t.Helper()
	p := referencePolicy(t)
	lis := testkit.Listen(t)
	gs := grpc.NewServer()
	authv3.RegisterAuthorizationServer(gs, nullServer{})
	extprocv3.RegisterExternalProcessorServer(gs, extproc.New(extproc.Config{
		Policy:      func() (*decision.Policy, string) { return decision.PolicyOf(p), "v" },
		Definitions: &toolpin.Observations{Store: state.NewMemory(1000, nil)}, Fingerprints: &toolpin.Cache{},
	}))
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// TestSeamProbe: the real processor filters both list answers from these
// messages (the probe's --filtered check passes), and the null pair, which
// filters nothing, fails it.
func TestSeamProbe(t *testing.T) {
	dir := writeSeams(t)
	var sb strings.Builder
	if err := seamProbe(t.Context(), startSeam(t), dir, true, &sb); err != nil {
		t.Fatalf("%v\n%s", err, sb.String())
	}
	for _, want := range []string{"list-json: 2 answers, body mode BUFFERED, body replaced true, 3 tools", "list-sse: 5 answers, body mode STREAMED, body replaced true, 3 tools"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("probe output lacks %q:\n%s", want, sb.String())
		}
	}
	null := startNull(t)
	if err := seamProbe(t.Context(), null, dir, false, &sb); err != nil {
		t.Fatalf("null pair: %v", err)
	}
	if err := seamProbe(t.Context(), null, dir, true, &sb); err == nil || !strings.Contains(err.Error(), "not filtered") {
		t.Fatalf("null pair passed the filtered probe: %v", err)
	}
}

// TestSeamLoad: a short closed-loop run completes requests with no
// failure on both; a Check the server refuses counts as failed.
func TestSeamLoad(t *testing.T) {
	dir := writeSeams(t)
	for _, addr := range []string{startNull(t), startSeam(t)} {
		for _, c := range []string{"list-sse", "initialize-json", "ping-sse"} {
			f, err := readSeam(dir, c)
			if err != nil {
				t.Fatal(err)
			}
			ok, failed, err := SeamLoad(t.Context(), addr, f, 4, 100*time.Millisecond)
			if err != nil || ok == 0 || failed != 0 {
				t.Errorf("%s %s: ok %d failed %d, %v", addr, c, ok, failed, err)
			}
		}
	}
	f, err := readSeam(dir, "list-json")
	if err != nil {
		t.Fatal(err)
	}
	f.check = []byte{0xff, 0xff}
	if _, _, err := SeamLoad(t.Context(), startNull(t), f, 2, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "first request") {
		t.Fatalf("got %v, want the first request to fail", err)
	}
}

// TestSeamShape prints each message of each case.
func TestSeamShape(t *testing.T) {
	var sb strings.Builder
	if err := run(t.Context(), []string{"seamshape", "--dir", writeSeams(t)}, &sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"list-json: tools/list;", "1. response_headers [:status content-type content-length]", "+ protocol_config",
		"response_body 0 bytes end_of_stream true", "initialize-json: initialize;", "ping-sse: ping;",
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("shape lacks %q:\n%s", want, sb.String())
		}
	}
}

// TestSetup: with the do-nothing upstream served by Setup itself as the
// URL, an open-loop run times GETs and POSTs in turn, every one answered
// and seen by the upstream, percentiles in order and the upstream reached
// before the headers; a URL that answers nothing counts every request
// failed.
func TestSetup(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	get, post, err := Setup(t.Context(), "http://"+addr+"/mcp", addr, "tok", 200, 200*time.Millisecond)
	if err != nil || get.OK+get.Failed != 20 || post.OK+post.Failed != 20 || get.Failed+post.Failed != 0 {
		t.Fatalf("get %v, post %v, %v: want 20 of each, none failed", get, post, err)
	}
	for _, r := range []SetupResult{get, post} {
		if r.UpP50 <= 0 || r.UpP50 > r.UpP99 || r.UpP50 > r.P50 || r.P50 > r.P99 || r.P99 > r.P999 {
			t.Errorf("%v: percentiles out of order", r)
		}
	}
	get, post, err = Setup(t.Context(), "http://127.0.0.1:1/mcp", addr, "tok", 100, 100*time.Millisecond)
	if err != nil || get.OK+post.OK != 0 || get.Failed+post.Failed != 10 {
		t.Errorf("nothing listening: get %v, post %v, %v", get, post, err)
	}
}
