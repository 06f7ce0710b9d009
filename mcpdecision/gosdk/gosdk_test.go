package gosdk

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-extauthz/mcp-extauthz/internal/decisiontest"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

const audience = "https://mcp.example.com/mcp"

func signer(t *testing.T, kid string) *mcpdecision.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpdecision.NewSigner([]jose.JSONWebKey{{Key: priv, KeyID: kid}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// goServer is a go-sdk MCP server (Streamable HTTP, stateless, JSON
// answers) with the middleware of v, on 127.0.0.1; seen gets each verified
// statement a tool handler was given.
type goServer struct {
	mu   sync.Mutex
	runs map[string]int
	seen []*mcpdecision.Statement
}

func startGoServer(t *testing.T, v *mcpdecision.Verifier) (*goServer, *decisiontest.Server) {
	t.Helper()
	g := &goServer{runs: map[string]int{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "payments-go", Version: "1"}, nil)
	server.AddReceivingMiddleware(Middleware(v))
	type searchIn struct {
		Query string `json:"query"`
	}
	type refundIn struct {
		OrderID     string `json:"orderId"`
		AmountMinor int64  `json:"amountMinor"`
		Currency    string `json:"currency"`
	}
	ran := func(ctx context.Context, name string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.runs[name]++
		g.seen = append(g.seen, mcpdecision.FromContext(ctx))
	}
	mcp.AddTool(server, &mcp.Tool{Name: "search"}, func(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
		ran(ctx, "search")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "searched " + in.Query}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "issue_refund"}, func(ctx context.Context, _ *mcp.CallToolRequest, in refundIn) (*mcp.CallToolResult, any, error) {
		ran(ctx, "issue_refund")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return g, &decisiontest.Server{URL: srv.URL, Runs: func(testing.TB) map[string]int {
		g.mu.Lock()
		defer g.mu.Unlock()
		out := map[string]int{}
		for k, n := range g.runs {
			out[k] = n
		}
		return out
	}}
}

// goQuirks are requests whose arguments the go-sdk decodes (its JSON
// decoder, segmentio/encoding/json, into a map) otherwise than the raw
// bytes read: a repeated member (the decoder keeps the last; the
// statement was made for a reader that keeps the first), an escaped
// repetition of a name, a lone surrogate escape and a byte that is not
// UTF-8 (both decoded as U+FFFD; the statement names RFC 8785's reading of
// the raw text).
var goQuirks = []decisiontest.Quirk{
	{Name: "a repeated member, last one kept", Args: `{"query":"refunds","query":"all"}`, Digest: decisiontest.RawDigest(`{"query":"refunds"}`)},
	{Name: "a member repeated under an escaped name", Args: `{"query":"refunds","\u0071uery":"all"}`, Digest: decisiontest.RawDigest(`{"query":"refunds"}`)},
	{Name: "a lone surrogate escape, read as U+FFFD", Args: `{"query":"\ud800"}`, Digest: decisiontest.RawDigest(`{"query":"\ud800"}`)},
	{Name: "a byte that is not UTF-8, read as U+FFFD", Args: "{\"query\":\"caf\xe9\"}", Digest: decisiontest.RawDigest("{\"query\":\"caf\xe9\"}")},
}

// TestGoSDKServer: the go-sdk server with the middleware runs an allowed
// call once and refuses every scenario of issue 28 (decisiontest) with
// the reason in error.data, the tool never running; the handler gets the
// verified statement.
func TestGoSDKServer(t *testing.T) {
	s := signer(t, "k1")
	keys, err := mcpdecision.StaticKeys(s.PublicKeySet())
	if err != nil {
		t.Fatal(err)
	}
	g, srv := startGoServer(t, &mcpdecision.Verifier{Audience: audience, Keys: keys})
	decisiontest.RunScenarios(t, srv, decisiontest.Issuer{Signer: s, Audience: audience}, signer(t, "k1"), goQuirks)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.seen) != 2 {
		t.Fatalf("%d handler runs", len(g.seen))
	}
	for _, st := range g.seen {
		if st == nil || st.Subject != "alice" || st.ClientID != "agent-1" || st.ID == "" || st.PolicyVersion == "" {
			t.Errorf("the handler got %+v, want the verified statement", st)
		}
	}
}

// TestOtherMethods: tools/list and a notification are verified too: with
// a statement naming them they pass; without, tools/list is refused.
func TestOtherMethods(t *testing.T) {
	s := signer(t, "k1")
	keys, _ := mcpdecision.StaticKeys(s.PublicKeySet())
	_, srv := startGoServer(t, &mcpdecision.Verifier{Audience: audience, Keys: keys})
	is := decisiontest.Issuer{Signer: s, Audience: audience}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	forList := is.Statement(t, "", decisiontest.Digest(t, `{}`), func(st *mcpdecision.Statement) { st.Method = "tools/list" })
	if got := decisiontest.Post(t, srv.URL, list, forList, nil).Reason(); got != "ok" {
		t.Errorf("tools/list with its statement: %s", got)
	}
	if got := decisiontest.Post(t, srv.URL, list, "", nil).Reason(); got != string(mcpdecision.ReasonMissing) {
		t.Errorf("tools/list without: %s", got)
	}
	forCall := is.Statement(t, "search", decisiontest.Digest(t, `{}`), nil)
	if got := decisiontest.Post(t, srv.URL, list, forCall, nil).Reason(); got != string(mcpdecision.ReasonMismatch) {
		t.Errorf("tools/list with a tools/call statement: %s", got)
	}
}
