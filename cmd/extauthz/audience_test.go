package main

import (
	"io"
	"strings"
	"testing"
)

// TestServeAudienceIsAResourceURI: an --audience that is no absolute URI
// with a host (RFC 8707 section 2) stops serve at start-up, since every
// 401's resource_metadata is derived from it.
func TestServeAudienceIsAResourceURI(t *testing.T) {
	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--state-store-memory-per-replica-ok"}
	tests := []struct {
		give    string
		wantErr bool
	}{
		{"https://mcp.example.com/mcp", false},
		{"https://mcp.example.com", false},
		{"http://127.0.0.1:8080/mcp", false},
		{"payments", true},
		{"mcp.example.com/mcp", true},
		{"https:///mcp", true},
		{"urn:example:payments", true},
		{"https://mcp.example.com/mcp#frag", true},
		{"https://mcp.example.com/mcp#", true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := parseServeConfig(append(base, "--audience", "https://ok.example/mcp", "--audience", tt.give), func(string) string { return "" }, io.Discard)
			if tt.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!strings.Contains(err.Error(), `--audience "`+tt.give+`": want the MCP server's resource URI`) || !strings.Contains(err.Error(), "resource_metadata")) {
				t.Errorf("err = %v: want the audience named and why", err)
			}
		})
	}
}
