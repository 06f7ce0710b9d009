package decision

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// requestDigestGolden is testdata/request_digest.json: envelopes and their
// digests, so that an upstream can check its own computation.
type requestDigestGolden struct {
	Name     string `json:"name"`
	Audience string `json:"aud"`
	// Client is the token's client (client_id, else azp, else "").
	Client string `json:"client"`
	Server string `json:"server"`
	Method string `json:"method"`
	Target string `json:"target"`
	// Arguments are the request's params.arguments; ArgsDigest their
	// digest, recomputed by internal/jcsoracle.
	Arguments  json.RawMessage `json:"args"`
	ArgsDigest string          `json:"args_digest"`
	Issuer     string          `json:"iss"`
	Subject    string          `json:"sub"`
	// Canonical is the exact bytes hashed; Digest their digest.
	Canonical string `json:"canonical"`
	Digest    string `json:"digest"`
}

func TestRequestDigestGolden(t *testing.T) {
	envelopes := []requestDigestGolden{
		{Name: "tools/call", Audience: "https://mcp.example.com/mcp", Server: "billing", Method: "tools/call",
			Target: "issue_refund", Arguments: json.RawMessage(`{"orderId":"ord_Zürich_🚀_001","currency":"CHF","amountMinor":1250}`),
			Issuer: "https://idp.example.com", Subject: "user-42", Client: "https://agent.example.com/client-metadata.json"},
		{Name: "no client", Audience: "https://mcp.example.com/mcp", Server: "billing", Method: "tools/call",
			Target: "issue_refund", Arguments: json.RawMessage(`{"orderId":"ord_Zürich_🚀_001","currency":"CHF","amountMinor":1250}`),
			Issuer: "https://idp.example.com", Subject: "user-42"},
		{Name: "no arguments", Audience: "https://mcp.example.com/mcp", Server: "files", Method: "resources/read",
			Target: "file:///reports/index.md", Issuer: "https://idp.example.com", Subject: "user-42", Client: "reports-agent"},
		{Name: "escapes", Audience: "aud", Server: "s", Method: "tools/call", Target: "a\"b\\c\n\u0001</>&",
			Arguments: json.RawMessage(`{}`), Issuer: "iss", Subject: "sub\u2028é", Client: "c\"l\u0007"},
	}
	for i := range envelopes {
		g := &envelopes[i]
		// Recompute independently: internal/jcsoracle (no code shared with
		// mcpparse) digests the arguments, encoding/json builds the
		// envelope, jcsoracle canonicalizes it.
		args := g.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		var err error
		if g.ArgsDigest, err = jcsoracle.Digest(args); err != nil {
			t.Fatal(err)
		}
		obj, err := json.Marshal(map[string]any{"args_digest": g.ArgsDigest, "aud": g.Audience, "client": g.Client, "iss": g.Issuer,
			"method": g.Method, "server": g.Server, "sub": g.Subject, "target": g.Target, "v": "mcp-extauthz/request/v3"})
		if err != nil {
			t.Fatal(err)
		}
		canon, err := jcsoracle.Transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		g.Canonical = string(canon)
		if g.Digest, err = jcsoracle.Digest(canon); err != nil {
			t.Fatal(err)
		}
		// The digest Parse computes in its one pass is the oracle's.
		b, err := mcpparse.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":`+string(args)+`}}`), mcpparse.ParseOptions{})
		if err != nil || b.Messages[0].ArgsDigest != g.ArgsDigest {
			t.Errorf("%s: Parse gives ArgsDigest %v (%v), the oracle %s", g.Name, b, err, g.ArgsDigest)
		}
		got := requestDigest(requestEnvelope{Audience: g.Audience, Client: g.Client, Server: g.Server, Method: g.Method, Target: g.Target,
			ArgsDigest: g.ArgsDigest, Issuer: g.Issuer, Subject: g.Subject})
		if got != g.Digest {
			t.Errorf("%s: requestDigest = %s, independent recomputation %s over %s", g.Name, got, g.Digest, canon)
		}
	}
	got, err := json.MarshalIndent(envelopes, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "request_digest.json")
	if _, same := testkit.Golden(t, path, got); !same {
		t.Errorf("request digest golden changed: a digest format change breaks every upstream; bump the version.\ngot:\n%s", got)
	}
}

func TestRequestDigestFields(t *testing.T) {
	base := requestEnvelope{Audience: "a", Server: "s", Method: "tools/call", Target: "t", ArgsDigest: emptyArgsDigest, Issuer: "i", Subject: "u"}
	d0 := requestDigest(base)
	if d := requestDigest(requestEnvelope{Audience: "a", Server: "s", Method: "tools/call", Target: "t", Issuer: "i", Subject: "u"}); d != d0 {
		t.Errorf("empty ArgsDigest gives %s, the {} digest gives %s", d, d0)
	}
	change := []func(*requestEnvelope){
		func(e *requestEnvelope) { e.Audience = "b" },
		func(e *requestEnvelope) { e.Server = "x" },
		func(e *requestEnvelope) { e.Method = "prompts/get" },
		func(e *requestEnvelope) { e.Target = "u" },
		func(e *requestEnvelope) { e.ArgsDigest = "sha256:00" },
		func(e *requestEnvelope) { e.Issuer = "j" },
		func(e *requestEnvelope) { e.Subject = "v" },
		func(e *requestEnvelope) { e.Audience, e.Server = "", "a" }, // no field shifting
	}
	for i, f := range change {
		e := base
		f(&e)
		if requestDigest(e) == d0 {
			t.Errorf("change %d does not change the digest", i)
		}
	}
	if !strings.HasPrefix(d0, "sha256:") || len(d0) != 71 {
		t.Errorf("digest %q is not sha256:<64 hex>", d0)
	}
}

// TestAppendJCS: the copying fast path writes what mcpparse.AppendJCSString
// writes, for every byte at every position of 1 to 17 bytes and for text
// that is not ASCII or not UTF-8.
func TestAppendJCS(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := appendJCS([]byte("x"), s), mcpparse.AppendJCSString([]byte("x"), s); !bytes.Equal(got, want) {
			t.Fatalf("appendJCS(%q) = %q, want %q", s, got, want)
		}
	}
	for n := 1; n <= 17; n++ {
		for at := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				check(string(b))
			}
		}
	}
	for _, s := range []string{"", "Zürich 🚀", "\xff\xfe", "a\u2028b", `sha256:"\`, "\x7f"} {
		check(s)
	}
}
