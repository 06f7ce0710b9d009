package extauthz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
)

// envoyFront is Envoy's ext_authz filter as far as a session needs it:
// every request is checked; a denial is answered with the DeniedHttpResponse
// (status, headers, body), an allow goes upstream with the OkHttpResponse's
// header mutations.
func envoyFront(srv *Server, upstream http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c := &capture.Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Headers: map[string]string{"host": r.Host}, Body: body}
		for k, vs := range r.Header {
			c.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
		}
		resp, _ := srv.Check(r.Context(), c.CheckRequest(true))
		if dr := resp.GetDeniedResponse(); dr != nil {
			for _, h := range dr.GetHeaders() {
				w.Header().Set(h.GetHeader().GetKey(), h.GetHeader().GetValue())
			}
			w.WriteHeader(int(dr.GetStatus().GetCode()))
			_, _ = io.WriteString(w, dr.GetBody())
			return
		}
		for _, h := range resp.GetOkResponse().GetHeaders() {
			r.Header.Set(h.GetHeader().GetKey(), h.GetHeader().GetValue())
		}
		for _, k := range resp.GetOkResponse().GetHeadersToRemove() {
			r.Header.Del(k)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		upstream.ServeHTTP(w, r)
	})
}

// bearerTransport adds a token to every request of the SDK client.
type bearerTransport struct{ rt http.RoundTripper }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer test-token")
	return b.rt.RoundTrip(r)
}

// connectSDK serves server behind srv (envoyFront) until the test ends and
// returns a Go SDK client session to it over Streamable HTTP, every
// request with a bearer token.
func connectSDK(t *testing.T, srv *Server, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	front := httptest.NewServer(envoyFront(srv, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	t.Cleanup(front.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestDeniedCallKeepsSession: with the official Go SDK as client and
// server (Streamable HTTP) behind the service, a denied and an asked call
// reach the caller as *jsonrpc.Error with the service's code and
// error.data, are not reported as a closed connection, never reach the
// server, and the same session goes on: the next call succeeds with the
// same Mcp-Session-Id. In both --denial-status modes.
func TestDeniedCallKeepsSession(t *testing.T) {
	for _, mode := range []DenialStatus{DenialStatusAuto, DenialStatusHTTPError} {
		t.Run(mode.String(), func(t *testing.T) { testDeniedCallKeepsSession(t, mode) })
	}
}

func testDeniedCallKeepsSession(t *testing.T, mode DenialStatus) {
	calls := map[string]int{}
	server := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "1"}, nil)
	type args map[string]any
	for _, name := range []string{"search", "delete_repo", "issue_refund"} {
		mcp.AddTool(server, &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, _ *mcp.CallToolRequest, _ args) (*mcp.CallToolResult, any, error) {
				calls[name]++
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + name}}}, nil, nil
			})
	}
	srv := staticRig(t, nil)
	srv.Responder.DenialStatus = mode
	cs := connectSDK(t, srv, server)
	ctx := t.Context()
	session := cs.ID()

	denied := []struct {
		name       string
		args       map[string]any
		wantCode   int64
		wantReason decision.Reason
		wantDec    string
	}{
		{"delete_repo", map[string]any{"name": "payments"}, CodeForbidden, decision.ReasonPolicyDenied, "deny"},
		{"issue_refund", map[string]any{"orderId": "o-2", "amountMinor": 4000, "currency": "EUR"}, CodeAuthorizationRequired, decision.ReasonAuthorizationRequired, "ask"},
	}
	for _, d := range denied {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: d.name, Arguments: d.args})
		if err == nil {
			t.Fatalf("%s: allowed", d.name)
		}
		if errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("%s: reported as a closed connection: %v", d.name, err)
		}
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Fatalf("%s: %T %v, want a *jsonrpc.Error", d.name, err, err)
		}
		var data struct{ Decision, Reason, DecisionID, RequestDigest string }
		_ = json.Unmarshal(je.Data, &struct {
			Decision      *string `json:"decision"`
			Reason        *string `json:"reason"`
			DecisionID    *string `json:"decision_id"`
			RequestDigest *string `json:"request_digest"`
		}{&data.Decision, &data.Reason, &data.DecisionID, &data.RequestDigest})
		if je.Code != d.wantCode || decision.Reason(data.Reason) != d.wantReason || data.Decision != d.wantDec || data.DecisionID == "" || !strings.HasPrefix(data.RequestDigest, "sha256:") {
			t.Errorf("%s: code %d data %+v; want %d %s %s", d.name, je.Code, data, d.wantCode, d.wantReason, d.wantDec)
		}
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "after " + d.name}})
		if err != nil {
			t.Fatalf("after %s: the session did not survive: %v", d.name, err)
		}
		if tc, ok := r.Content[0].(*mcp.TextContent); !ok || tc.Text != "ran search" {
			t.Errorf("after %s: result %+v", d.name, r.Content)
		}
		if cs.ID() != session || session == "" {
			t.Errorf("after %s: session %q, was %q", d.name, cs.ID(), session)
		}
	}
	if calls["delete_repo"] != 0 || calls["issue_refund"] != 0 || calls["search"] != 2 {
		t.Errorf("server ran %v", calls)
	}
}
