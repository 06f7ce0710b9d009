package extauthz

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// staticRig decides with a fixed principal and the reference policy, so the
// tests below exercise the request path rather than token verification.
func staticRig(t testing.TB, log *zap.Logger) *Server {
	return newTestServer(referencePolicy(t), staticVerifier{bearer.Principal{
		Issuer: "https://idp.example.com", Subject: testSubject, Audience: testAudience,
		Claims: map[string]any{"sub": testSubject},
	}}, log)
}

func postReq(body string) *capture.Request {
	return &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body), Headers: map[string]string{
		"content-type": "application/json", "authorization": "Bearer secret-token-value", "mcp-protocol-version": "2025-11-25",
	}}
}

func TestOkResponseHeaders(t *testing.T) {
	srv := staticRig(t, nil)
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`)
	c.Headers["x-mcp-tool"] = "delete_repo" // forged copy of ours: overwritten
	c.Headers["x-mcp-approved"] = "yes"     // not ours: removed
	c.Headers["x-mcp-principal"] = "admin"  // forged: overwritten
	c.Headers["mcp-session-id"] = "s1"      // MCP's own: untouched
	resp, err := srv.Check(t.Context(), c.CheckRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	h := okHeaders(t, resp)
	if h[HeaderTool] != "search" || h[HeaderPrincipal] != testSubject || h[HeaderMethod] != "tools/call" {
		t.Errorf("headers = %v", h)
	}
	for _, o := range resp.GetOkResponse().GetHeaders() {
		if o.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
			t.Errorf("%s: append action %v, want OVERWRITE_IF_EXISTS_OR_ADD", o.GetHeader().GetKey(), o.GetAppendAction())
		}
	}
	rm := resp.GetOkResponse().GetHeadersToRemove()
	if len(rm) != 1 || rm[0] != "x-mcp-approved" {
		t.Errorf("headers_to_remove = %v, want [x-mcp-approved]", rm)
	}
	md := resp.GetDynamicMetadata().GetFields()
	for _, k := range []string{"decision_id", "decision", "reason", "rule_id", "method", "server", "target", "args_digest", "request_digest", "policy_version", "principal"} {
		if md[k].GetStringValue() == "" {
			t.Errorf("dynamic metadata %s is empty", k)
		}
	}
	if md["decision"].GetStringValue() != "allow" || md["decision_id"].GetStringValue() != h[HeaderDecisionID] {
		t.Errorf("metadata = %v", md)
	}
}

// TestHeaderMap: with encode_raw_headers, headers arrive in header_map, one
// entry per occurrence, values in raw_value.
func TestHeaderMap(t *testing.T) {
	srv := staticRig(t, nil)
	mk := func(hs ...[2]string) *authv3.CheckRequest {
		req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).CheckRequest(true)
		http := req.GetAttributes().GetRequest().GetHttp()
		http.Headers = nil
		http.HeaderMap = &corev3.HeaderMap{}
		for _, h := range hs {
			http.HeaderMap.Headers = append(http.HeaderMap.Headers, &corev3.HeaderValue{Key: h[0], RawValue: []byte(h[1])})
		}
		return req
	}
	ct, auth := [2]string{"content-type", "application/json"}, [2]string{"authorization", "Bearer t"}
	resp, _ := srv.Check(t.Context(), mk(ct, auth))
	okHeaders(t, resp)
	resp, _ = srv.Check(t.Context(), mk(ct, auth, [2]string{"authorization", "Bearer u"}))
	if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonTokenMalformed) {
		t.Errorf("two Authorization headers: %s", d.Error.Data.Reason)
	}
	resp, _ = srv.Check(t.Context(), mk(ct, auth, [2]string{"mcp-method", "tools/list"}, [2]string{"mcp-method", "tools/call"}))
	if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonHeaderMismatch) {
		t.Errorf("two Mcp-Method headers: %s", d.Error.Data.Reason)
	}
}

func TestBodilessAndServer(t *testing.T) {
	srv := staticRig(t, nil)
	get := &capture.Request{Method: "GET", Path: "/mcp", Headers: map[string]string{"authorization": "Bearer t", "accept": "text/event-stream", "mcp-session-id": "s"}}
	resp, _ := srv.Check(t.Context(), get.CheckRequest(true))
	if h := okHeaders(t, resp); h[HeaderMethod] != "GET" {
		t.Errorf("GET: %v", h)
	}
	del := cloneCapture(get)
	del.Method = "DELETE"
	resp, _ = srv.Check(t.Context(), del.CheckRequest(true))
	okHeaders(t, resp)
	delete(get.Headers, "authorization")
	resp, _ = srv.Check(t.Context(), get.CheckRequest(true))
	if d, status := parseDenial(t, resp); status != 401 || d.Error.Data.Reason != string(decision.ReasonTokenMissing) {
		t.Errorf("GET without token: %d %s", status, d.Error.Data.Reason)
	}

	// The route's mcp_server context extension names the server: the
	// reference policy's payments/issue_refund rules do not apply to billing.
	refund := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{"currency":"EUR","amountMinor":100}}}`)
	req := refund.CheckRequest(true)
	resp, _ = srv.Check(t.Context(), req)
	okHeaders(t, resp)
	req.Attributes.ContextExtensions = map[string]string{ContextExtensionServer: "billing"}
	resp, _ = srv.Check(t.Context(), req)
	if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonDefaultDeny) {
		t.Errorf("billing/issue_refund: %s", d.Error.Data.Reason)
	}
	configure(t, srv, func(c *decision.Config) { c.ServerID = "" })
	req.Attributes.ContextExtensions = nil
	resp, _ = srv.Check(t.Context(), req)
	if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonUnknownServer) {
		t.Errorf("no server id: %s", d.Error.Data.Reason)
	}
}

// TestDenialBody checks the JSON-RPC error body: id byte for byte (a large
// integer must not pass through a float), ask as decision, digests.
func TestDenialBody(t *testing.T) {
	srv := staticRig(t, nil)
	tests := []struct {
		give         string
		wantID       string
		wantDecision string
		wantReason   decision.Reason
		wantCode     int
	}{
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"delete_repo"}}`, "123456789012345678901234567890", "deny", decision.ReasonPolicyDenied, CodeForbidden},
		{`{"jsonrpc":"2.0","id":"a\"b\\u00e9","method":"tools/call","params":{"name":"delete_repo"}}`, `"a\"b\\u00e9"`, "deny", decision.ReasonPolicyDenied, CodeForbidden},
		{`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"issue_refund","arguments":{"currency":"EUR","amountMinor":3000}}}`, "-7", "ask", decision.ReasonAuthorizationRequired, CodeAuthorizationRequired},
	}
	for _, tt := range tests {
		t.Run(string(tt.wantReason)+tt.wantID, func(t *testing.T) {
			resp, err := srv.Check(t.Context(), postReq(tt.give).CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			d, status := parseDenial(t, resp)
			if string(d.ID) != tt.wantID || d.Error.Data.Decision != tt.wantDecision || decision.Reason(d.Error.Data.Reason) != tt.wantReason || d.Error.Code != tt.wantCode || status != 403 {
				t.Errorf("got id %s %s %s code %d status %d", d.ID, d.Error.Data.Decision, d.Error.Data.Reason, d.Error.Code, status)
			}
			if !strings.HasPrefix(d.Error.Data.RequestDigest, "sha256:") || d.Error.Data.RuleID == "" || !strings.HasPrefix(d.Error.Data.PolicyVersion, "sha256:") {
				t.Errorf("data = %+v", d.Error.Data)
			}
		})
	}
}

// panicVerifier panics inside Check.
type panicVerifier struct{}

func (panicVerifier) Verify(context.Context, string) (*bearer.Principal, error) { panic("boom") }
func (panicVerifier) Audiences() []string                                       { return nil }

func TestFailClosed(t *testing.T) {
	t.Run("panic", func(t *testing.T) {
		srv := newTestServer(referencePolicy(t), panicVerifier{}, nil)
		resp, err := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		if d, status := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonInternalError) || status != 500 {
			t.Errorf("%d %s", status, d.Error.Data.Reason)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		srv := staticRig(t, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		resp, err := srv.Check(ctx, postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonDeadlineExceeded) {
			t.Errorf("%s", d.Error.Data.Reason)
		}
	})
	t.Run("no policy", func(t *testing.T) {
		srv := newTestServer(&decision.PolicyStore{}, staticVerifier{}, nil)
		resp, _ := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).CheckRequest(true))
		if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonPolicyUnavailable) {
			t.Errorf("%s", d.Error.Data.Reason)
		}
	})
	t.Run("nil request", func(t *testing.T) {
		srv := staticRig(t, nil)
		resp, err := srv.Check(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		parseDenial(t, resp)
	})
}

// TestDecisionLog: one line per decision, with digests, never the token or
// raw arguments.
func TestDecisionLog(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	srv := staticRig(t, zap.New(core))
	secretArg := "card-4111111111111111"
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"` + secretArg + `"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repo","arguments":{"repo":"` + secretArg + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":"` + secretArg + `","a":1}}}`,
	} {
		if _, err := srv.Check(t.Context(), postReq(body).CheckRequest(true)); err != nil {
			t.Fatal(err)
		}
	}
	entries := logs.All()
	if len(entries) != 3 {
		t.Fatalf("%d log lines, want one per decision (3)", len(entries))
	}
	for _, e := range entries {
		b, _ := json.Marshal(e.ContextMap())
		line := string(b)
		if strings.Contains(line, "secret-token-value") || strings.Contains(line, secretArg) {
			t.Errorf("log line leaks the token or an argument: %s", line)
		}
		m := e.ContextMap()
		for _, k := range []string{"decision_id", "decision", "reason", "method", "server", "latency_us", "policy_version"} {
			if _, ok := m[k]; !ok {
				t.Errorf("log line lacks %s: %s", k, line)
			}
		}
	}
	if m := entries[0].ContextMap(); m["args_digest"] == "" || m["sub"] != testSubject || m["decision"] != "allow" {
		t.Errorf("first line: %v", m)
	}
}

// FuzzCheck: any body, headers and method give a non-nil response and no
// error; an OK answer only ever comes with ReasonAllowed metadata.
func FuzzCheck(f *testing.F) {
	for _, r := range loadCorpus(f) {
		if c, err := capture.Parse(r.line); err == nil {
			f.Add(c.Method, c.Headers["content-type"], c.Headers["mcp-method"], c.Body)
		}
	}
	f.Add("POST", "application/json", "", []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`))
	srv := staticRig(f, nil)
	f.Fuzz(func(t *testing.T, method, ct, mcpMethod string, body []byte) {
		c := postReq("")
		c.Method, c.Body = method, body
		c.Headers["content-type"] = ct
		if mcpMethod != "" {
			c.Headers["mcp-method"] = mcpMethod
		}
		resp, err := srv.Check(context.Background(), c.CheckRequest(true))
		if err != nil || resp == nil {
			t.Fatalf("Check = %v, %v", resp, err)
		}
		reason := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue()
		if (resp.GetOkResponse() != nil) != (reason == string(decision.ReasonAllowed)) || (resp.GetStatus().GetCode() == 0) != (reason == string(decision.ReasonAllowed)) {
			t.Fatalf("status %v with reason %q", resp.GetStatus(), reason)
		}
		if _, ok := outcomes[decision.Reason(reason)]; !ok {
			t.Fatalf("reason %q outside the closed set", reason)
		}
	})
}

// benchRequest returns a server verifying RS256 tokens against a static key
// set, with or without the verified-token cache, and a tools/call of
// issue_refund with args.
func benchRequest(b testing.TB, args string, cache bool) (*Server, *authv3.CheckRequest) {
	key := testkit.NewKey(b, "k1")
	ks := bearer.NewStaticKeySet([]jose.JSONWebKey{key.Public()})
	ov, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: "https://idp.example.com", Audiences: []string{testAudience}, KeySet: ks})
	if err != nil {
		b.Fatal(err)
	}
	var v bearer.TokenVerifier = ov
	if cache {
		if v, err = bearer.NewCachingVerifier(ov, 1024, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	tok := key.Sign(b, map[string]any{"iss": "https://idp.example.com", "sub": testSubject, "aud": testAudience, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()})
	srv := newTestServer(referencePolicy(b), v, nil)
	c := postReq(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"issue_refund","arguments":` + args + `}}`)
	c.Headers["authorization"] = "Bearer " + tok
	return srv, c.CheckRequest(true)
}

func runBench(b *testing.B, args string, want decision.Reason) {
	for _, cache := range []bool{false, true} {
		name := "cache=off"
		if cache {
			name = "cache=on"
		}
		b.Run(name, func(b *testing.B) {
			srv, req := benchRequest(b, args, cache)
			resp, _ := srv.Check(context.Background(), req) // also warms the cache
			if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != string(want) {
				b.Fatalf("reason %s, want %s", got, want)
			}
			b.SetBytes(int64(len(req.GetAttributes().GetRequest().GetHttp().GetRawBody())))
			b.ReportAllocs()
			b.ResetTimer()
			measureCPU(b, func() {
				for b.Loop() {
					_, _ = srv.Check(context.Background(), req)
				}
			})
		})
	}
}

// largeArgs returns issue_refund arguments padded to about n bytes.
func largeArgs(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"currency":"EUR","amountMinor":1250,"orderId":"ord-1","lines":[`)
	for i := 0; sb.Len() < n-64; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"sku":"SKU-%06d","qty":%d,"note":"Zürich 🚀 line"}`, i, i%7+1)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

// BenchmarkCheck is the in-process Check path with a valid RS256 token for
// the small issue_refund call and a 64 KiB one, with the verified-token
// cache off (every Check verifies the signature) and on (warm).
func BenchmarkCheck(b *testing.B) {
	b.Run("allow", func(b *testing.B) {
		runBench(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, decision.ReasonAllowed)
	})
	b.Run("ask", func(b *testing.B) {
		runBench(b, `{"orderId":"ord-1","amountMinor":4000,"currency":"EUR"}`, decision.ReasonAuthorizationRequired)
	})
	b.Run("deny", func(b *testing.B) {
		runBench(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"CHF"}`, decision.ReasonDefaultDeny)
	})
	b.Run("args=64KiB", func(b *testing.B) {
		runBench(b, largeArgs(64<<10), decision.ReasonAllowed)
	})
}

func BenchmarkCheckParallel(b *testing.B) {
	srv, req := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = srv.Check(context.Background(), req)
		}
	})
}

// TestDryRun: every request is admitted, but the decision that would have
// been enforced is logged, counted and passed upstream.
func TestDryRun(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	srv := staticRig(t, zap.New(core))
	srv.DryRun = true
	srv.Metrics = newMetrics(prometheus.NewRegistry())
	tests := []struct {
		give         string
		wantDecision string
		wantReason   decision.Reason
		wantMethod   string // metric label
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_repo"}}`, "deny", decision.ReasonPolicyDenied, "tools/call"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"issue_refund","arguments":{"currency":"EUR","amountMinor":9000}}}`, "ask", decision.ReasonAuthorizationRequired, "tools/call"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{}}}`, "allow", decision.ReasonAllowed, "tools/call"},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","name":"y"}}`, "deny", decision.ReasonDuplicateKey, "none"},
		{`{"jsonrpc":"2.0","id":5,"method":"Tools/Call","params":{"name":"x"}}`, "deny", decision.ReasonUnknownMethod, "other"},
	}
	for _, tt := range tests {
		resp, err := srv.Check(t.Context(), postReq(tt.give).CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		h := okHeaders(t, resp)
		if h[HeaderDryRunDecision] != tt.wantDecision || h[HeaderDryRunReason] != string(tt.wantReason) {
			t.Errorf("%s: dry-run headers %q %q, want %s %s", tt.give, h[HeaderDryRunDecision], h[HeaderDryRunReason], tt.wantDecision, tt.wantReason)
		}
		md := resp.GetDynamicMetadata().GetFields()
		if md["dry_run"].GetStringValue() != "true" || md["reason"].GetStringValue() != string(tt.wantReason) {
			t.Errorf("metadata %v", md)
		}
		if got := testutil.ToFloat64(srv.Metrics.Decisions.WithLabelValues(tt.wantDecision, string(tt.wantReason), tt.wantMethod, "other", "true")); got != 1 {
			t.Errorf("%s: decisions_total{dry_run=true} = %v, want 1", tt.wantReason, got)
		}
	}
	for _, e := range logs.All() {
		if e.ContextMap()["dry_run"] != true {
			t.Errorf("log line without dry_run: %v", e.ContextMap())
		}
	}
}

// TestShadowRule: a shadow deny is logged and counted but the allow decides.
func TestShadowRule(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	srv := newTestServer(compileStore(t, filepath.Join("testdata", "shadow-policy.yaml")), staticVerifier{bearer.Principal{Subject: testSubject}}, zap.New(core))
	srv.Metrics = newMetrics(prometheus.NewRegistry())
	resp, _ := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`).CheckRequest(true))
	okHeaders(t, resp)
	if got := logs.All()[0].ContextMap()["shadow"]; fmt.Sprint(got) != "[try-no-search=deny]" {
		t.Errorf("shadow log field = %v", got)
	}
	if got := testutil.ToFloat64(srv.Metrics.ShadowMatches.WithLabelValues("deny")); got != 1 {
		t.Errorf("shadow_matches_total{deny} = %v", got)
	}
}

// TestLimitsBoundMemory: hostile bodies are refused with their own reason
// while allocating a small fraction of their size.
func TestLimitsBoundMemory(t *testing.T) {
	srv := staticRig(t, nil)
	configure(t, srv, func(c *decision.Config) { c.Limits.MaxBytes = 64 << 20 }) // let the bodies reach the parser
	var keys strings.Builder
	keys.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{`)
	for i := range 1_000_000 {
		if i > 0 {
			keys.WriteByte(',')
		}
		fmt.Fprintf(&keys, `"k%d":0`, i)
	}
	keys.WriteString(`}}}`)
	tests := []struct {
		name string
		give []byte
		want decision.Reason
	}{
		{"deep nesting", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"a":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}}}`), decision.ReasonLimitExceeded},
		{"a million keys", []byte(keys.String()), decision.ReasonLimitExceeded},
		{"a 50 MB string", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"a":"` + strings.Repeat("x", 50<<20) + `"}}}`), decision.ReasonLimitExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq("")
			c.Body = tt.give
			r := RequestFromCheck(c.CheckRequest(true))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			d := srv.Decider.Decide(t.Context(), r)
			runtime.ReadMemStats(&after)
			if d.Reason != tt.want {
				t.Fatalf("reason %s, want %s", d.Reason, tt.want)
			}
			// The limits (10k keys, 100k elements, depth 64, 256 KiB
			// strings) bound the work, not the body's size.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("deciding a %d-byte body allocated %d bytes; want it bounded by the limits (16 MiB)", len(tt.give), alloc)
			}
		})
	}
	// Past the body limit nothing is parsed at all.
	configure(t, srv, func(c *decision.Config) { c.Limits.MaxBytes = 1 << 20 })
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"a":"` + strings.Repeat("x", 2<<20) + `"}}}`)
	if d := srv.Decider.Decide(t.Context(), RequestFromCheck(c.CheckRequest(true))); d.Reason != decision.ReasonBodyTooLarge {
		t.Fatalf("2 MiB body: %s", d.Reason)
	}
}

// TestHeaderValuesAreSafe: a value that is not plain header-safe ASCII (a
// sub with CR/LF, a non-ASCII tool name) reaches the upstream in MCP's
// =?base64?…?= form, never raw.
func TestHeaderValuesAreSafe(t *testing.T) {
	srv := newTestServer(compileStore(t, filepath.Join("testdata", "cases-policy.yaml")),
		staticVerifier{bearer.Principal{Subject: "alice\r\nx-evil: 1"}}, nil)
	resp, err := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_Zürich"}}`).CheckRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	h := okHeaders(t, resp)
	for k, want := range map[string]string{HeaderPrincipal: "alice\r\nx-evil: 1", HeaderTool: "read_Zürich", HeaderMethod: "tools/call"} {
		got, err := mcpparse.DecodeHeaderValue(h[k])
		if err != nil || got != want {
			t.Errorf("%s = %q decodes to %q (%v), want %q", k, h[k], got, err, want)
		}
		for _, c := range []byte(h[k]) {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("%s = %q carries a byte that is not header-safe", k, h[k])
			}
		}
	}
	if h[HeaderMethod] != "tools/call" {
		t.Errorf("a safe value was encoded: %q", h[HeaderMethod])
	}
}

// TestPanicOutsideDecide: a panic in Check itself, outside Decide (here a
// metrics value missing its collectors, with no logger), is a denial, not a
// crash or an RPC error.
func TestPanicOutsideDecide(t *testing.T) {
	srv := staticRig(t, nil)
	srv.Log = nil
	srv.Metrics = &metrics.Metrics{}
	resp, err := srv.Check(t.Context(), postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).CheckRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := parseDenial(t, resp); d.Error.Data.Reason != string(decision.ReasonInternalError) {
		t.Fatalf("reason %s", d.Error.Data.Reason)
	}
}

// TestServerByDestinationPrincipal: under Istio one service may decide for
// several MCP workloads; the destination principal (the workload's SPIFFE
// id) names the server, after the route's mcp_server and before ServerID.
func TestServerByDestinationPrincipal(t *testing.T) {
	srv := staticRig(t, nil)
	configure(t, srv, func(c *decision.Config) {
		c.ServersByPrincipal = map[string]string{
			"spiffe://cluster.local/ns/billing/sa/billing-mcp":   "billing",
			"spiffe://cluster.local/ns/payments/sa/payments-mcp": "payments",
		}
	})
	tests := []struct {
		name      string
		principal string
		route     map[string]string
		serverID  string
		want      string
	}{
		{"mapped principal", "spiffe://cluster.local/ns/billing/sa/billing-mcp", nil, testServerID, "billing"},
		{"route wins", "spiffe://cluster.local/ns/billing/sa/billing-mcp", map[string]string{ContextExtensionServer: "payments"}, testServerID, "payments"},
		{"unmapped principal falls to --server-id", "spiffe://cluster.local/ns/x/sa/x", nil, testServerID, testServerID},
		{"unmapped principal, no --server-id", "spiffe://cluster.local/ns/x/sa/x", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			configure(t, srv, func(c *decision.Config) { c.ServerID = tt.serverID })
			req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).CheckRequest(true)
			req.Attributes.ContextExtensions = tt.route
			req.Attributes.Destination = &authv3.AttributeContext_Peer{Principal: tt.principal}
			resp, err := srv.Check(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			md := resp.GetDynamicMetadata().GetFields()
			if tt.want == "" {
				if got := md["reason"].GetStringValue(); got != string(decision.ReasonUnknownServer) {
					t.Errorf("reason %q, want %s", got, decision.ReasonUnknownServer)
				}
				return
			}
			if got := md["server"].GetStringValue(); got != tt.want {
				t.Errorf("server %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHeaderValueRule pins the rule docs/reasons.md, "What Envoy gets back" states:
// plain only when non-empty, bytes 0x20-0x7E, no space at either end and
// not already in the =?base64?…?= form; else that form.
func TestHeaderValueRule(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{give: "alice", want: "alice"},
		{give: "spiffe://cluster.local/ns/a/sa/b", want: "spiffe://cluster.local/ns/a/sa/b"},
		{give: "a b", want: "a b"},
		{give: "José", want: "=?base64?Sm9zw6k=?="},
		{give: "", want: "=?base64??="},
		{give: " alice", want: "=?base64?IGFsaWNl?="},
		{give: "alice ", want: "=?base64?YWxpY2Ug?="},
		{give: "a\tb", want: "=?base64?YQli?="},
		{give: "a\x7fb", want: "=?base64?YX9i?="},
		{give: "=?base64?YQ==?=", want: "=?base64?PT9iYXNlNjQ/WVE9PT89?="},
	}
	for _, tt := range tests {
		if got := headerValue(tt.give); got != tt.want {
			t.Errorf("headerValue(%q) = %q, want %q", tt.give, got, tt.want)
		}
		if got, err := mcpparse.DecodeHeaderValue(headerValue(tt.give)); err != nil || got != tt.give {
			t.Errorf("DecodeHeaderValue(headerValue(%q)) = %q, %v", tt.give, got, err)
		}
	}
}

// TestPlainByte: headerValue's table holds exactly 0x20..0x7e.
func TestPlainByte(t *testing.T) {
	for c := range 256 {
		if got, want := plainByte.All(string([]byte{byte(c), 'a'})), c >= 0x20 && c < 0x7f; got != want {
			t.Errorf("byte %#x: in the table %v, want %v", c, got, want)
		}
	}
}
