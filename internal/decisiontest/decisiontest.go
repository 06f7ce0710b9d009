// Package decisiontest runs MCP servers of the official Go and TypeScript
// SDKs with the signed-decision verifier (mcpdecision/gosdk,
// js/mcp-decision) and the scenarios of issue 28 against them: an allowed
// call runs once; a call sent straight to the server with a statement for
// other arguments, another tool or another server, an expired, replayed or
// foreign-signed statement, arguments changed after the decision, or
// arguments the SDK decodes otherwise than RFC 8785 reads the raw bytes,
// is refused (JSON-RPC error -32016, data.reason) and the tool never runs.
// Tests only.
package decisiontest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Server is an MCP server under test: its MCP endpoint and how often each
// tool ran.
type Server struct {
	URL  string
	Runs func(t testing.TB) map[string]int
}

// Answer is the JSON-RPC answer to one POST.
type Answer struct {
	Status int
	Result json.RawMessage
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Reason string `json:"reason"`
		} `json:"data"`
	}
	Body string
}

// Post sends one JSON-RPC body to url as an MCP client does (Streamable
// HTTP), with statement in x-mcp-decision when not "", and the headers of
// extra. The answer is read as JSON or as one SSE event.
func Post(t testing.TB, url, body, statement string, extra http.Header) Answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range extra {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if statement != "" {
		req.Header.Set(mcpdecision.Header, statement)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := Answer{Status: resp.StatusCode, Body: string(b)}
	data := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = nil
		for _, l := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(l, "data:"); ok && strings.TrimSpace(d) != "" {
				data = []byte(strings.TrimSpace(d))
			}
		}
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err == nil {
		a.Result = m.Result
		if m.Error != nil {
			a.Error = new(struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
				Data    struct {
					Reason string `json:"reason"`
				} `json:"data"`
			})
			_ = json.Unmarshal(m.Error, a.Error)
		}
	}
	return a
}

// Reason is the refusal's data.reason, "ok" for a result, or what else
// came back.
func (a Answer) Reason() string {
	switch {
	case a.Error != nil && a.Error.Code == mcpdecision.CodeRefused:
		return a.Error.Data.Reason
	case a.Error != nil:
		return "error " + a.Error.Message
	case a.Result != nil:
		return "ok"
	}
	return "no JSON-RPC answer: " + a.Body
}

// Call returns a tools/call body with id 1.
func Call(tool, rawArgs string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + rawArgs + `}}`
}

// Issuer is the statement's signer for the scenarios.
type Issuer struct {
	Signer   *mcpdecision.Signer
	Audience string
	Now      func() time.Time // nil: time.Now
}

// Statement returns a fresh statement (random jti) of a tools/call of tool
// whose arguments digest is digest, changed by edit when not nil.
func (is Issuer) Statement(t testing.TB, tool, digest string, edit func(*mcpdecision.Statement)) string {
	t.Helper()
	now := time.Now
	if is.Now != nil {
		now = is.Now
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	iat := now().Unix()
	st := &mcpdecision.Statement{Issuer: "https://idp.example.com", Subject: "alice", ClientID: "agent-1", Audience: is.Audience,
		Server: "payments", Method: mcpmethod.ToolsCall, Target: tool, ArgsDigest: digest, RequestDigest: "sha256:" + strings.Repeat("0", 64),
		ID: hex.EncodeToString(id), PolicyVersion: "sha256:" + strings.Repeat("1", 64), IssuedAt: iat, ExpiresAt: iat + mcpdecision.MaxLifetime}
	if edit != nil {
		edit(st)
	}
	j, err := is.Signer.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Digest is the service's arguments digest of raw JSON arguments.
func Digest(t testing.TB, raw string) string {
	t.Helper()
	c, err := mcpparse.Canonicalize([]byte(raw), mcpparse.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return mcpparse.Digest(c)
}

// RawDigest is "sha256:" + hex of SHA-256 over text taken as the RFC 8785
// form (for readings of raw bytes the service itself refuses).
func RawDigest(text string) string {
	s := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(s[:])
}

// Quirk is a request whose arguments the SDK decodes otherwise than
// RFC 8785 (or a first-member-wins reader) reads the raw bytes: a
// statement for Digest of what that reading gives, and the raw body.
type Quirk struct {
	Name   string
	Args   string // the raw arguments sent
	Digest string // the digest of the raw reading, which the statement names
}

// RunScenarios runs issue 28's scenarios against s, whose verifier trusts
// is.Signer's key set and is.Audience; other signs with a key s does not
// trust. Tools: search {query} and issue_refund {orderId, amountMinor,
// currency}.
func RunScenarios(t *testing.T, s *Server, is Issuer, other *mcpdecision.Signer, quirks []Quirk) {
	search := `{"query":"refunds"}`
	allowed := is.Statement(t, "search", Digest(t, search), nil)
	base := s.Runs(t)
	check := func(name, body, statement, want string) {
		t.Helper()
		if got := Post(t, s.URL, body, statement, nil).Reason(); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	check("an allowed call", Call("search", search), allowed, "ok")
	if got := s.Runs(t)["search"] - base["search"]; got != 1 {
		t.Fatalf("the allowed call ran %d times, want 1", got)
	}
	refund := `{"orderId":"o-1","amountMinor":100,"currency":"EUR"}`
	otherIssuer := is
	otherIssuer.Signer = other
	refused := []struct {
		name      string
		body      string
		statement string
		want      mcpdecision.Reason
	}{
		{"the same statement again (replayed)", Call("search", search), allowed, mcpdecision.ReasonReplayed},
		{"no statement (straight to the server)", Call("search", search), "", mcpdecision.ReasonMissing},
		{"a statement for other arguments", Call("search", search), is.Statement(t, "search", Digest(t, `{"query":"all"}`), nil), mcpdecision.ReasonMismatch},
		{"a statement for another tool", Call("issue_refund", refund), is.Statement(t, "search", Digest(t, refund), nil), mcpdecision.ReasonMismatch},
		{"a statement for another server", Call("search", search), is.Statement(t, "search", Digest(t, search), func(st *mcpdecision.Statement) {
			st.Audience = "https://other.example.com/mcp"
		}), mcpdecision.ReasonWrongAudience},
		{"an expired statement", Call("search", search), is.Statement(t, "search", Digest(t, search), func(st *mcpdecision.Statement) {
			st.IssuedAt, st.ExpiresAt = st.IssuedAt-120, st.IssuedAt-60
		}), mcpdecision.ReasonExpired},
		{"a statement signed by another key", Call("search", search), otherIssuer.Statement(t, "search", Digest(t, search), nil), mcpdecision.ReasonUnverified},
		{"arguments changed after the decision (a proxy hop rewrote the body)", Call("issue_refund", `{"orderId":"o-1","amountMinor":100000,"currency":"EUR"}`),
			is.Statement(t, "issue_refund", Digest(t, refund), nil), mcpdecision.ReasonMismatch},
	}
	for _, q := range quirks {
		refused = append(refused, struct {
			name      string
			body      string
			statement string
			want      mcpdecision.Reason
		}{"decoded otherwise: " + q.Name, Call("search", q.Args), is.Statement(t, "search", q.Digest, nil), mcpdecision.ReasonMismatch})
	}
	for _, tt := range refused {
		check(tt.name, tt.body, tt.statement, string(tt.want))
	}
	check("an allowed refund after the refusals", Call("issue_refund", refund), is.Statement(t, "issue_refund", Digest(t, refund), nil), "ok")
	runs := s.Runs(t)
	if runs["search"]-base["search"] != 1 || runs["issue_refund"]-base["issue_refund"] != 1 {
		t.Errorf("tools ran %v (before: %v); want search and issue_refund once each", runs, base)
	}
}

// NodeOrSkip returns the paths of node and npm; without them it skips the
// test, or fails it under CI=true (CI installs them).
func NodeOrSkip(t testing.TB) (node, npm string) {
	t.Helper()
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are needed (CI installs them): %v %v", err1, err2)
		}
		t.Skipf("node or npm not on PATH: %v %v", err1, err2)
	}
	return node, npm
}

// InstallJS copies the package js/mcp-decision (its path: pkg) into a
// temporary folder and installs its dependencies there from the npm
// registry (npm ci: the versions its package-lock.json pins), returning
// the folder. Nothing is written under pkg.
func InstallJS(t testing.TB, pkg string) string {
	t.Helper()
	_, npm := NodeOrSkip(t)
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "index.js", "index.d.ts", "test/server.mjs", "test/vectors.mjs"} {
		b, err := os.ReadFile(filepath.Join(pkg, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// npm ci: exactly the versions package-lock.json pins (the SDK the
	// scenarios were written against), never a newer release.
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	// Whatever npm leaves in its temporary folder goes with the test's.
	tmp := filepath.Join(dir, ".tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	return dir
}

// StartTS runs test/server.mjs of the installed package dir with env
// (AUDIENCE=…, DECISION_JWKS_FILE=… or DECISION_JWKS_URL=…) until the test
// ends.
func StartTS(t testing.TB, dir string, env ...string) *Server {
	t.Helper()
	node, _ := NodeOrSkip(t)
	cmd := exec.Command(node, "test/server.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("TypeScript server stderr:\n%s", stderr.String())
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
		close(port)
	}()
	var p string
	select {
	case p = <-port:
	case <-time.After(30 * time.Second):
	}
	if p == "" {
		t.Fatalf("the TypeScript server did not start:\n%s", stderr.String())
	}
	base := "http://127.0.0.1:" + p
	return &Server{URL: base + "/mcp", Runs: func(t testing.TB) map[string]int {
		t.Helper()
		resp, err := http.Get(base + "/runs")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Runs map[string]int `json:"runs"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r.Runs
	}}
}
