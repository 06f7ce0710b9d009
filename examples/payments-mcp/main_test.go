package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The example server answers what examples/policy.yaml decides on.
func TestPaymentsServer(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	post := func(body, principal string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("content-type", "application/json")
		if principal != "" {
			req.Header.Set("x-mcp-principal", principal)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	tests := []struct {
		give     string
		wantCode int
		want     string // in the JSON response
	}{
		{give: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, wantCode: 200, want: `"protocolVersion":"2025-06-18"`},
		{give: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantCode: 202},
		{give: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, wantCode: 200, want: `"name":"issue_refund"`},
		{give: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`, wantCode: 200, want: `alice searched for q`},
		{give: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`, wantCode: 200, want: `"code":-32602`},
		{give: `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///reports/q3.pdf"}}`, wantCode: 200, want: `report for alice`},
		{give: `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"summarize"}}`, wantCode: 200, want: `Summarize the report.`},
		{give: `{"jsonrpc":"2.0","id":7,"method":"bogus"}`, wantCode: 200, want: `"code":-32601`},
		{give: `not json`, wantCode: 200, want: `"code":-32600`},
	}
	for _, tt := range tests {
		code, m := post(tt.give, "alice")
		b, _ := json.Marshal(m)
		if code != tt.wantCode || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %s, want %d with %s", tt.give, code, b, tt.wantCode, tt.want)
		}
	}
	resp, err := http.Get(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp = %d, want 405 (no server-initiated stream)", resp.StatusCode)
	}
}
