package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	envoycfg "github.com/mcp-extauthz/mcp-extauthz/envoy"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/decisiontest"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision/gosdk"
)

// edKey is a fresh private Ed25519 JWK.
func edKey(t *testing.T, kid string) jose.JSONWebKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: "EdDSA", Use: "sig"}
}

// quickStart are the flags of a serve on the quick-start configuration on
// free loopback ports.
func quickStart(extra ...string) []string {
	return append([]string{"--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s"}, extra...)
}

// TestServeRefusesPublishedDecisionKey: --decision-key-file holding the
// published examples/TEST-ONLY-decision-key.jwk.json (under any kid) stops
// serve unless --allow-test-keys; --decision-jwks-out alone is refused.
func TestServeRefusesPublishedDecisionKey(t *testing.T) {
	dir := t.TempDir()
	disguised := filepath.Join(dir, "key.json")
	var k jose.JSONWebKey
	readJSON(t, "examples/TEST-ONLY-decision-key.jwk.json", &k)
	k.KeyID = "prod-2026"
	writeJSON(t, disguised, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{edKey(t, "fresh"), k}})
	fresh := filepath.Join(dir, "jwks.json")
	writeJSON(t, fresh, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{freshKey(t, "fresh")}})
	refused := []struct {
		name string
		give []string
		want string
	}{
		{"the published key", []string{"--decision-key-file", "examples/TEST-ONLY-decision-key.jwk.json"},
			"--decision-key-file examples/TEST-ONLY-decision-key.jwk.json: the key set holds a published test key"},
		{"the published key under another kid, second in a set", []string{"--decision-key-file", disguised},
			"examples/TEST-ONLY-decision-key.jwk.json"},
		{"a public key", []string{"--decision-key-file", "examples/jwks.json"}, "--decision-key-file examples/jwks.json"},
		{"--decision-jwks-out without a key", []string{"--decision-jwks-out", filepath.Join(dir, "out.json")}, "--decision-jwks-out needs --decision-key-file"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			args := append([]string{"serve", "--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp",
				"--jwks-file", fresh, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s", "--state-store-memory-per-replica-ok"}, tt.give...)
			err := run(ctx, args, io.Discard, &stderr)
			if exitCode(err) != 1 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("exit %d, err %v; want %q", exitCode(err), err, tt.want)
			}
		})
	}
	t.Run("--allow-test-keys", func(t *testing.T) {
		_, httpAddr, stderr := startServe(t, quickStart("--decision-key-file", "examples/TEST-ONLY-decision-key.jwk.json")...)
		if !strings.Contains(stderr.String(), "--decision-key-file trusts published test keys") {
			t.Errorf("no warning:\n%s", stderr.String())
		}
		resp, err := http.Get("http://" + httpAddr + decisionJWKSPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set jose.JSONWebKeySet
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || len(set.Keys) != 1 || !set.Keys[0].IsPublic() || set.Keys[0].KeyID != "example-decision-key-1" {
			t.Errorf("%s: %+v %v", decisionJWKSPath, set, err)
		}
	})
}

// frontEnd is Envoy's ext_authz filter as envoy/sidecar.yaml sets it up,
// as far as a session needs it, its settings read from that file: every
// request goes to Check over gRPC with the headers its allowed_headers
// pass (and those Envoy always adds: host, method, path, content-length,
// authorization) and its body (a body over with_request_body's
// max_request_bytes is 413, as allow_partial_message is off); a denial is
// answered as Check says; an allowed request goes upstream with the
// OkHttpResponse's headers set and removed. It is no Envoy: no ext_proc
// response seam, no route table, no header-size limits.
func frontEnd(t *testing.T, grpcAddr string, upstream string) string {
	t.Helper()
	y, err := os.ReadFile("envoy/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoycfg.ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	hcms, err := envoycfg.HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	var ea *extauthzv3.ExtAuthz
	for _, h := range hcms {
		if envoycfg.Forwards(h.HCM) {
			if ea, _, err = envoycfg.ExtAuthz(h.HCM); err != nil || ea == nil {
				t.Fatalf("envoy/sidecar.yaml: no ext_authz: %v", err)
			}
		}
	}
	if ea == nil || ea.GetFailureModeAllow() || !ea.GetWithRequestBody().GetPackAsBytes() {
		t.Fatalf("envoy/sidecar.yaml's ext_authz: %v", ea)
	}
	maxBody := int(ea.GetWithRequestBody().GetMaxRequestBytes())
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := authv3.NewAuthorizationClient(conn)
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxBody {
			http.Error(w, "Payload Too Large", http.StatusRequestEntityTooLarge)
			return
		}
		c := &capture.Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Headers: map[string]string{"host": r.Host}, Body: body}
		for k, vs := range r.Header {
			if k := strings.ToLower(k); envoycfg.AllowsHeader(ea, k) || k == "authorization" || k == "content-length" {
				c.Headers[k] = strings.Join(vs, ", ")
			}
		}
		resp, err := client.Check(r.Context(), c.CheckRequest(true))
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden) // failure_mode_allow false
			return
		}
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
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL
}

// bearer adds the token to every request of an SDK client.
type bearerRT struct {
	token string
	rt    http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// session connects a go-sdk client to url with token (none when "") and
// calls search; it returns the result's text or the error.
func session(t *testing.T, endpoint, token string) (string, error) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	var rt http.RoundTripper = tr
	if token != "" {
		rt = bearerRT{token, tr}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return "", err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "refunds"}})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("no content")
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return "", errors.New("not text")
	}
	return tc.Text, nil
}

// refusedFor reports whether err is the verifier's refusal with reason.
func refusedFor(err error, reason mcpdecision.Reason) bool {
	var je *jsonrpc.Error
	if errors.As(err, &je) && je.Code == mcpdecision.CodeRefused {
		return strings.Contains(string(je.Data), `"`+string(reason)+`"`)
	}
	return err != nil && strings.Contains(err.Error(), string(reason))
}

// TestSignedDecisionsEndToEnd: serve with --decision-key-file, an Envoy
// stand-in (frontEnd: envoy/sidecar.yaml's ext_authz settings, Check over
// gRPC), and MCP servers of the Go SDK
// (gosdk.Middleware) and the TypeScript SDK (verifyDecisions) that fetch
// the key set from serve's HTTP port: a go-sdk client's session through
// the stand-in (initialize, notifications/initialized, tools/list,
// tools/call) passes; the same session straight to either server is
// refused (decision_missing) before anything runs. Then the key file is
// rotated: serve signs with the new key, publishes both (HTTP port and
// --decision-jwks-out), and the servers verify the new statements.
func TestSignedDecisionsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	keyFile, out := filepath.Join(dir, "decision-key.json"), filepath.Join(dir, "decision-jwks.json")
	first := edKey(t, "decision-1")
	writeJSON(t, keyFile, first)
	grpcAddr, httpAddr, stderr := startServe(t, quickStart("--decision-key-file", keyFile, "--decision-jwks-out", out)...)
	jwksURL := "http://" + httpAddr + decisionJWKSPath
	const audience = "https://mcp.example.com/mcp"

	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(tok.String())

	// The go-sdk server (stateful, SSE answers), verifying with the key
	// set served on serve's HTTP port.
	var mu sync.Mutex // the handler runs on the server's goroutines
	ran := map[string]int{}
	server := mcp.NewServer(&mcp.Implementation{Name: "payments-go", Version: "1"}, nil)
	server.AddReceivingMiddleware(gosdk.Middleware(&mcpdecision.Verifier{Audience: audience, Keys: mcpdecision.RemoteKeys(jwksURL, nil, time.Millisecond)}))
	type searchIn struct {
		Query string `json:"query"`
	}
	var seen []*mcpdecision.Statement
	mcp.AddTool(server, &mcp.Tool{Name: "search"}, func(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		defer mu.Unlock()
		ran["go"]++
		seen = append(seen, mcpdecision.FromContext(ctx))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "searched " + in.Query}}}, nil, nil
	})
	goSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(goSrv.Close)

	servers := []struct {
		name     string
		upstream string
		runs     func() int
	}{{"go-sdk", goSrv.URL, func() int { mu.Lock(); defer mu.Unlock(); return ran["go"] }}}
	_, errNode := exec.LookPath("node")
	_, errNPM := exec.LookPath("npm")
	if errNode == nil && errNPM == nil || os.Getenv("CI") == "true" {
		js := decisiontest.InstallJS(t, "js/mcp-decision")
		ts := decisiontest.StartTS(t, js, "AUDIENCE="+audience, "DECISION_JWKS_URL="+jwksURL)
		servers = append(servers, struct {
			name     string
			upstream string
			runs     func() int
		}{"typescript-sdk", strings.TrimSuffix(ts.URL, "/mcp"), func() int { return ts.Runs(t)["search"] }})
	} else {
		t.Log("node or npm missing: the TypeScript server is left out (CI=true fails instead)")
	}

	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			front := frontEnd(t, grpcAddr, s.upstream)
			before := s.runs()
			if text, err := session(t, front+"/mcp", token); err != nil || text != "searched refunds" {
				t.Fatalf("through the sidecar: %q, %v", text, err)
			}
			if got := s.runs() - before; got != 1 {
				t.Errorf("the tool ran %d times, want 1", got)
			}
			_, err := session(t, s.upstream+"/mcp", token)
			if !refusedFor(err, mcpdecision.ReasonMissing) {
				t.Errorf("straight to the server: %v, want a %s refusal", err, mcpdecision.ReasonMissing)
			}
			if got := s.runs() - before; got != 1 {
				t.Errorf("after the direct call the tool ran %d times, want 1", got)
			}
		})
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] == nil || seen[0].Subject != "alice" || seen[0].RuleID != "search" || seen[0].Issuer != "https://idp.example.com" {
		t.Errorf("the go-sdk handler got %+v", seen)
	}
	mu.Unlock()

	// Rotation: the new key signs, both are published.
	second := edKey(t, "decision-2")
	writeJSON(t, keyFile+".new", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{second, first}})
	if err := os.Rename(keyFile+".new", keyFile); err != nil {
		t.Fatal(err)
	}
	if stderr.waitFor(regexp.MustCompile(`--decision-key-file reloaded.*decision-2`), 10*time.Second) == nil {
		t.Fatalf("no reload logged:\n%s", stderr.String())
	}
	var set jose.JSONWebKeySet
	readJSON(t, out, &set)
	if len(set.Keys) != 2 || set.Keys[0].KeyID != "decision-2" || set.Keys[1].KeyID != "decision-1" || !set.Keys[0].IsPublic() {
		t.Errorf("--decision-jwks-out after rotation: %+v", set.Keys)
	}
	for _, s := range servers {
		t.Run(s.name+" after rotation", func(t *testing.T) {
			front := frontEnd(t, grpcAddr, s.upstream)
			if text, err := session(t, front+"/mcp", token); err != nil || text != "searched refunds" {
				t.Fatalf("through the sidecar: %q, %v", text, err)
			}
		})
	}
	mu.Lock()
	if n := len(seen); n < 2 || seen[n-1] == nil {
		t.Errorf("handler runs %d", n)
	}
	mu.Unlock()

	// A broken key file is refused; the keys in use stay.
	if err := os.WriteFile(keyFile, []byte(`{"keys":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	if stderr.waitFor(regexp.MustCompile(`--decision-key-file reload refused`), 10*time.Second) == nil {
		t.Fatalf("no refused reload logged:\n%s", stderr.String())
	}
	if text, err := session(t, frontEnd(t, grpcAddr, goSrv.URL)+"/mcp", token); err != nil || text != "searched refunds" {
		t.Errorf("after a refused reload: %q, %v", text, err)
	}
}
