package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extproc"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// check --list-response: what a principal would see of a captured list.
func TestCheckListResponse(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, body string
		args       []string
		after      []string // after FILE
		want       []string
		wantCode   int
	}{
		{name: "json", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"delete_repo"}]}}`,
			want: []string{"sees 1 of 2 items (1 answer)\n", "keep   tools              search\n", "remove tools              delete_repo  (deny rule no-deletes matches every call)"}},
		{name: "sse, explained", body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"prompts\":[{\"name\":\"summarize\"},{\"name\":\"draft_email\"}]}}\n\n",
			args: []string{"--explain"},
			want: []string{"sees 1 of 2 items", "keep   prompts            summarize  (allow rule summarize-prompt could match)", "remove prompts            draft_email  (no rule could match: default deny)"}},
		{name: "flags after FILE", body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"prompts\":[{\"name\":\"summarize\"}]}}\n\n",
			after: []string{"--explain"},
			want:  []string{"sees 1 of 1 item (1 answer)\n", "keep   prompts            summarize  (allow rule summarize-prompt could match)"}},
		{name: "two answers", body: "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n",
			want: []string{"sees 0 of 0 items (2 answers)\n"}},
		{name: "duplicate names are refused", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"search"}]}}`,
			want: []string{"refused: the seam would answer a JSON-RPC error instead of this list (response_unfilterable)"}, wantCode: 1},
		{name: "a result without a list is refused", body: `{"jsonrpc":"2.0","id":1,"result":{"things":[]}}`,
			want: []string{"refused: the seam would answer a JSON-RPC error instead of this list (response_unfilterable): the result carries no list"}, wantCode: 1},
		{name: "an empty result is refused", body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
			want: []string{"(response_unfilterable): the result carries no list"}, wantCode: 1},
		{name: "an error answer passes", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
			want: []string{"sees 0 of 0 items (1 answer)\n"}},
		{name: "empty", body: " \n", wantCode: 2},
		{name: "a task list needs the task store", body: `{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"t1"}]}}`,
			wantCode: 2},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		args := append([]string{"check", "--config", "examples/config.yaml", "--sub", "alice", "--list-response"}, tt.args...)
		args = append(args, write(strings.ReplaceAll(tt.name, " ", "_"), tt.body))
		err := run(t.Context(), append(args, tt.after...), &out, &errb)
		code := 0
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		} else if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if code != tt.wantCode {
			t.Errorf("%s: exit %d, want %d (%s%s)", tt.name, code, tt.wantCode, out.String(), errb.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.name, w, out.String())
			}
		}
	}
}

// TestCheckListAgreesWithSeam: check --list-response keeps the tools the
// response seam passes for the same policy and list, pin state included:
// the seam (extproc, over loopback gRPC as Envoy drives it) with a state
// store that saw nothing before this list, the offline check with its own
// empty one. Removed tools are those whose next call the pin step refuses
// (a changed or unpinned definition, a tooldef-v1 pin, a swapped MCP Apps
// UI resource) or a rule would.
func TestCheckListAgreesWithSeam(t *testing.T) {
	fp := func(def string) string {
		f, _, err := toolpin.Fingerprint([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	const (
		search = `{"name":"search","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`
		wipe   = `{"name":"wipe","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}}`
		plain  = `{"name":"plain","inputSchema":{"type":"object"}}`
		app    = `{"name":"cart","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://shop/cart.html","visibility":["app"]}}}`
	)
	appModel := strings.Replace(app, `["app"]`, `["model","app"]`, 1)
	v1 := func(def string) string { return "tooldef-v1" + fp(def)[len(toolpin.Version):] }
	list := func(defs ...string) string {
		return `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Join(defs, ",") + `]}}`
	}
	tests := []struct {
		name   string
		policy string
		give   string
		want   []string // kept, in list order
		out    string   // a line of the offline output
	}{
		{"tofu, annotations of a trusted server", "default: deny\npin_mode: tofu\ntrusted_servers: [payments]\ndeny:\n  - {id: no-destructive, match: 'payments/*', annotations: {destructiveHint: true}}\nallow:\n  - {id: ro, match: 'payments/*', annotations: {readOnlyHint: true}}\n",
			list(search, wipe, plain), []string{"search"}, "pin_mode tofu: tools decided as right after these answers were the first observed (no live state store offline"},
		{"strict: pinned, pinned by tooldef-v1, unpinned", "default: deny\npin_mode: strict\npins: {payments: {search: [" + fp(search) + "], plain: [" + v1(plain) + "]}}\nallow: ['payments/*']\n",
			list(search, wipe, plain), []string{"search"}, "remove tools              plain  (definition_changed: its pins are tooldef-v1 fingerprints, which never match: review the definition and pin it again"},
		{"strict: an MCP Apps tool made visible to the model", "default: deny\npin_mode: strict\npins: {payments: {cart: [" + fp(app) + "], search: [" + fp(search) + "]}}\nallow: ['payments/*']\n",
			list(appModel, search), []string{"search"}, "remove tools              cart  (definition_changed: this definition is not in the tool's baseline"},
		{"strict, refusal conceal", "default: deny\npin_mode: strict\nrefusal: conceal\npins: {payments: {cart: [" + fp(app) + "]}}\nallow: ['payments/*']\n",
			list(app, plain), []string{"cart"}, "pin_mode strict"},
		{"pinning off", "default: deny\nallow: ['payments/*']\ndeny:\n  - {id: no-wipe, match: payments/wipe}\n",
			list(search, wipe, plain), []string{"search", "plain"}, "sees 2 of 3 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pf, lf := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "list.json")
			if err := os.WriteFile(pf, []byte(tt.policy), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(lf, []byte(tt.give), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runOut(t, "check", "--policy", pf, "--server-id", "payments", "--sub", "alice", "--list-response", lf)
			if code != 0 {
				t.Fatalf("check: exit %d %s", code, errs)
			}
			var offline []string
			for _, line := range strings.Split(out, "\n") {
				if name, ok := strings.CutPrefix(line, "  keep   tools              "); ok {
					offline = append(offline, strings.Fields(name)[0])
				}
			}
			served := seamKeeps(t, tt.policy, tt.give)
			if !slices.Equal(offline, served) || !slices.Equal(served, tt.want) || !strings.Contains(out, tt.out) {
				t.Errorf("offline keeps %q, the seam %q, want %q and a line with %q\n%s", offline, served, tt.want, tt.out, out)
			}
		})
	}
}

// seamKeeps passes list, the answer to alice's tools/list on payments, through
// an extproc.Server with policy src and a fresh memory state store, as Envoy
// sends a list route's messages, and returns the names of the tools the
// filtered answer keeps.
func seamKeeps(t *testing.T, src, list string) []string {
	t.Helper()
	pol, err := policy.Compile("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	srv := extproc.New(extproc.Config{
		Policy:      func() (*decision.Policy, string) { return decision.PolicyOf(pol), "v" },
		Definitions: &toolpin.Observations{Store: state.NewMemory(0, nil)},
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := extprocv3.NewExternalProcessorClient(conn).Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"decision_id": "d-1", "decision": "allow", "method": "tools/list", "server": "payments", "principal": "alice", "rpc_id": "1", "policy_version": "v",
		"claims": `{"sub":"alice"}`} // as Check writes them (decision.MetadataOf)
	ms, err := structpb.NewStruct(meta)
	if err != nil {
		t.Fatal(err)
	}
	hdrs := func(kv ...string) *corev3.HeaderMap {
		m := &corev3.HeaderMap{}
		for i := 0; i < len(kv); i += 2 {
			m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
		}
		return m
	}
	var answer *extprocv3.ProcessingResponse
	for _, req := range []*extprocv3.ProcessingRequest{
		{MetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{extproc.AuthzNamespace: ms}},
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":method", "POST", ":path", "/mcp", "content-type", "application/json")}}},
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":status", "200", "content-type", "application/json")}}},
		{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(list), EndOfStream: true}}},
	} {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		if answer, err = stream.Recv(); err != nil {
			t.Fatal(err)
		}
		if ir := answer.GetImmediateResponse(); ir != nil {
			t.Fatalf("the seam answered %d %s", ir.GetStatus().GetCode(), ir.GetBody())
		}
	}
	_ = stream.CloseSend()
	body := answer.GetResponseBody().GetResponse().GetBodyMutation().GetBody()
	if body == nil {
		body = []byte(list) // passed unchanged
	}
	var res struct {
		Result struct{ Tools []struct{ Name string } }
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var names []string
	for _, tl := range res.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}
