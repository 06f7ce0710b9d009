package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// TestPin: extauthz pin prints, for JSON, batch and SSE captures, a pins
// block that compiles into a policy whose pins are toolpin's fingerprints of
// the listed definitions; a capture without a tools/list result, or with a
// tool that cannot be fingerprinted, exits 1.
func TestPin(t *testing.T) {
	dir := t.TempDir()
	search := `{"name":"search","description":"Search","inputSchema":{"type":"object"}}`
	search2 := `{"name":"search","description":"Search v2","inputSchema":{"type":"object"}}`
	odd := `{"name":"odd name: x","inputSchema":{"type":"object"}}`
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonFile := write("a.json", `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+search+`,`+odd+`],"nextCursor":"c"}}`)
	batch := write("b.json", `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"tools":[`+search+`]}}]`)
	sse := write("c.sse", "\xef\xbb\xbf: comment\r\nevent: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\r\ndata: \"result\":{\"tools\":["+search2+"]}}\r\n\r\n")
	code, out, errs := runOut(t, "pin", "--server-id", "payments", jsonFile, batch, sse)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p, err := policy.Compile("pins.yaml", []byte("default: deny\npin_mode: strict\n"+out))
	if err != nil {
		t.Fatalf("the pins block does not compile: %v\n%s", err, out)
	}
	for name, defs := range map[string][]string{"search": {search, search2}, "odd name: x": {odd}} {
		got := p.Pins("payments", name)
		if len(got) != len(defs) {
			t.Errorf("%s: pins %v, want %d", name, got, len(defs))
			continue
		}
		for i, def := range defs {
			if fp, _, _ := toolpin.Fingerprint([]byte(def)); got[i] != fp {
				t.Errorf("%s[%d] = %s, want %s", name, i, got[i], fp)
			}
		}
	}
	for _, tt := range []struct {
		body string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"prompts":[]}}`, "no tools/list result"},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","name":"b"}]}}`, "cannot be fingerprinted"},
	} {
		code, _, errs := runOut(t, "pin", "--server-id", "payments", write("bad.json", tt.body))
		if code != 1 || !strings.Contains(errs, tt.want) {
			t.Errorf("%s: exit %d %q, want 1 and %q", tt.body, code, errs, tt.want)
		}
	}
	if code, _, errs := runOut(t, "pin", jsonFile); code != 2 || !strings.Contains(errs, "no MCP server id") {
		t.Errorf("no server id: exit %d %q", code, errs)
	}
}
