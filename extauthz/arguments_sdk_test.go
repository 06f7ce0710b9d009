package extauthz

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// TestArgumentsWithGoSDK: the official Go SDK (1.8, MCP 2026-07-28) as
// client and server behind the service, arguments: validate, the tool's
// definition observed as the SDK lists it. A call the inputSchema accepts
// runs, with the SDK's own Mcp-Param-Region header (x-mcp-header) agreeing
// with the body; one it refuses reaches the caller as *jsonrpc.Error
// -32602 with data.pointer and data.keyword and never runs; a request
// whose Mcp-Param-Region disagrees with the body is refused 400 / -32020
// before the server sees it.
func TestArgumentsWithGoSDK(t *testing.T) {
	ran := 0
	server := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},` +
		`"amountMinor":{"type":"integer","minimum":1,"maximum":10000}},"required":["region","amountMinor"],"additionalProperties":false}`)
	mcp.AddTool(server, &mcp.Tool{Name: "search", InputSchema: schema},
		func(_ context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	src, err := os.ReadFile(filepath.Join("..", "examples", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, append(src, "\narguments:\n  mode: validate\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	obs := toolpin.Observations{Store: state.NewMemory(0, nil)}
	store := compileStore(t, file)
	// The reference policy pins per session: a 2026-07-28 client has none,
	// so its scope is the revision's (toolpin.Session).
	scope := toolpin.Scope(store.Load().Policy, testServerID, toolpin.Session("", "/mcp", "2026-07-28"))
	srv := newTestServer(store, staticVerifier{bearer.Principal{
		Issuer: "https://idp.example.com", Subject: testSubject, Audience: testAudience, Claims: map[string]any{"sub": testSubject},
	}}, nil)
	configure(t, srv, func(c *decision.Config) { c.Definitions, c.Schemas = obs, obs })
	inner := envoyFront(srv, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})) // MCP 2026-07-28: no sessions
	var mirrored []string // the SDK client's Mcp-Param-Region of each tools/call
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mirrored = append(mirrored, r.Header.Get("Mcp-Param-Region"))
		}
		inner.ServeHTTP(w, r)
	}))
	defer front.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx := t.Context()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tr}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The seam's part: observe the tools as the server lists them.
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		b, _ := json.Marshal(tool)
		d, err := toolpin.Parse(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := obs.Observe(ctx, scope, d); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"region": "eu-west", "amountMinor": 500}}); err != nil || ran != 1 {
		t.Fatalf("a valid call: %v (ran %d)", err, ran)
	}
	if len(mirrored) != 1 || mirrored[0] != "eu-west" {
		t.Fatalf("the SDK mirrored %q, want its Mcp-Param-Region: the agreement was not exercised", mirrored)
	}
	for _, tt := range []struct {
		args             map[string]any
		pointer, keyword string
	}{
		{map[string]any{"region": "eu-west", "amountMinor": 50000}, "/amountMinor", "maximum"},
		{map[string]any{"region": "eu-west", "amountMinor": 5, "memo": "x"}, "/memo", "additionalProperties"},
		{map[string]any{"region": "eu-west"}, "/amountMinor", "required"},
	} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: tt.args})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != CodeInvalidParams {
			t.Fatalf("%v: %T %v, want *jsonrpc.Error %d", tt.args, err, err, CodeInvalidParams)
		}
		var data struct{ Reason, Pointer, Keyword string }
		if err := json.Unmarshal(je.Data, &data); err != nil || data.Reason != string(decision.ReasonArgumentsInvalid) || data.Pointer != tt.pointer || data.Keyword != tt.keyword {
			t.Errorf("%v: data %s, want %s %s %s", tt.args, je.Data, decision.ReasonArgumentsInvalid, tt.pointer, tt.keyword)
		}
	}
	if ran != 1 {
		t.Errorf("the server ran %d calls, want 1", ran)
	}

	// A client (or an intermediary) whose Mcp-Param-Region disagrees with
	// the body: refused before the server.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":{"region":"eu-west","amountMinor":5},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", front.URL+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "search", "Mcp-Param-Region": "us-east"} {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: bearerTransport{tr}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error struct {
			Code int
			Data struct{ Reason string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 400 || out.Error.Code != CodeHeaderMismatch || out.Error.Data.Reason != string(decision.ReasonHeaderMismatch) {
		t.Errorf("disagreeing Mcp-Param-Region: %d %+v (%v), want 400 %d header_mismatch", resp.StatusCode, out, err, CodeHeaderMismatch)
	}
	if ran != 1 {
		t.Errorf("the server ran %d calls, want 1", ran)
	}
}
