package extauthz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// quotaTestPolicy limits search per principal (2 a minute), any payments
// tool per OAuth client (3 per hour, bursts of 3), tools/list for
// everyone (1 per 10s) and refunds fail open on a store error.
const quotaTestPolicy = `default: deny
deny:
  - id: no-deletes
    match: "*/delete_*"
ask:
  - id: refunds
    match: payments/issue_refund
allow:
  - "payments/*"
methods:
  allow: [tools/list, initialize, notifications/initialized, ping, GET, DELETE]
quotas:
  - id: search-per-user
    match: payments/search
    limit: 2
    window: 1m
  - id: tools-per-client
    match: "payments/lookup_*"
    per: client
    limit: 3
    window: 1h
  - id: lists
    method: tools/list
    per: everyone
    limit: 1
    window: 10s
  - id: delete-quota
    match: "*/delete_*"
    limit: 1
    window: 1h
  - id: refunds-open
    match: payments/issue_refund
    limit: 1
    window: 1h
    on_store_error: allow
`

// principalsByToken verifies a token by looking it up: each names a
// principal, so tests speak for several callers.
type principalsByToken map[string]bearer.Principal

func (v principalsByToken) Audiences() []string { return []string{testAudience} }

func (v principalsByToken) Verify(_ context.Context, tok string) (*bearer.Principal, error) {
	p, ok := v[tok]
	if !ok {
		return nil, &bearer.TokenError{Kind: bearer.KindInvalid}
	}
	return &p, nil
}

var quotaCallers = principalsByToken{
	"alice": {Issuer: "https://idp.example.com", Subject: "alice", Audience: testAudience, Claims: map[string]any{"client_id": "app-1"}},
	"bob":   {Issuer: "https://idp.example.com", Subject: "bob", Audience: testAudience, Claims: map[string]any{"client_id": "app-1"}},
	"carol": {Issuer: "https://idp.example.com", Subject: "carol", Audience: testAudience, Claims: map[string]any{"azp": "app-2"}},
}

// quotaServer is a Check server on quotaTestPolicy whose buckets are b.
func quotaServer(t testing.TB, b decision.QuotaBuckets, observe func(id, outcome string)) *Server {
	t.Helper()
	lp, err := decision.CompilePolicy("quotas.yaml", []byte(quotaTestPolicy))
	if err != nil {
		t.Fatal(err)
	}
	store := &decision.PolicyStore{}
	store.Store(lp)
	return &Server{
		Decider: mustDecider(decision.Config{ServerID: testServerID, Verifier: quotaCallers, Policies: store,
			Limits: mcpparse.DefaultLimits(), Quotas: b, QuotaObserver: observe}),
		Responder: &Responder{ResourceMetadataURL: resourcemeta.URL(testAudience)},
	}
}

// quotaCall is a Streamable HTTP request (Accept lists text/event-stream)
// of tok calling body.
func quotaCall(tok, body string) *capture.Request {
	c := postReq(body)
	c.Headers["authorization"] = "Bearer " + tok
	c.Headers["accept"] = "application/json, text/event-stream"
	return c
}

func toolCallBody(tool string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

// TestQuotaCheck: windows, bursts, per-principal and per-client
// isolation, everyone's bucket, deny before quota, on a clock the test
// moves.
func TestQuotaCheck(t *testing.T) {
	type step struct {
		after      time.Duration
		tok, body  string
		wantReason decision.Reason
		wantRule   string
		wantRetry  string // Retry-After on rate_limited
	}
	search, lookup := toolCallBody("search"), toolCallBody("lookup_invoice")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	tests := []struct {
		name string
		give []step
	}{
		{"burst of 2 a minute per principal, then one every 30s", []step{
			{0, "alice", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "alice", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "alice", search, decision.ReasonRateLimited, "search-per-user", "30"},
			{10 * time.Second, "alice", search, decision.ReasonRateLimited, "search-per-user", "20"},
			{20 * time.Second, "alice", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "alice", search, decision.ReasonRateLimited, "search-per-user", "30"},
		}},
		{"principals do not share a bucket", []step{
			{0, "alice", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "alice", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "alice", search, decision.ReasonRateLimited, "search-per-user", "30"},
			{0, "bob", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "bob", search, decision.ReasonAllowed, "allow[0]", ""},
			{0, "bob", search, decision.ReasonRateLimited, "search-per-user", "30"},
		}},
		{"one OAuth client's principals share its bucket", []step{
			{0, "alice", lookup, decision.ReasonAllowed, "allow[0]", ""},
			{0, "bob", lookup, decision.ReasonAllowed, "allow[0]", ""},
			{0, "alice", lookup, decision.ReasonAllowed, "allow[0]", ""},
			{0, "bob", lookup, decision.ReasonRateLimited, "tools-per-client", "1200"},
			{0, "carol", lookup, decision.ReasonAllowed, "allow[0]", ""}, // azp app-2
		}},
		{"everyone shares one bucket", []step{
			{0, "alice", list, decision.ReasonAllowed, "methods.allow[0]", ""},
			{0, "carol", list, decision.ReasonRateLimited, "lists", "10"},
			{10 * time.Second, "carol", list, decision.ReasonAllowed, "methods.allow[0]", ""},
		}},
		{"a deny rule decides before its quota, which takes nothing", []step{
			{0, "alice", toolCallBody("delete_all"), decision.ReasonPolicyDenied, "no-deletes", ""},
			{0, "alice", toolCallBody("delete_all"), decision.ReasonPolicyDenied, "no-deletes", ""},
		}},
		{"an ask is charged before it asks", []step{
			{0, "alice", toolCallBody("issue_refund"), decision.ReasonAuthorizationRequired, "refunds", ""},
			{0, "alice", toolCallBody("issue_refund"), decision.ReasonRateLimited, "refunds-open", "3600"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_800_000_000, 0)
			srv := quotaServer(t, state.NewMemory(0, func() time.Time { return now }), nil)
			for i, s := range tt.give {
				now = now.Add(s.after)
				resp, err := srv.Check(t.Context(), quotaCall(s.tok, s.body).CheckRequest(true))
				if err != nil {
					t.Fatal(err)
				}
				md := resp.GetDynamicMetadata().GetFields()
				if got := md["reason"].GetStringValue(); got != string(s.wantReason) || md["rule_id"].GetStringValue() != s.wantRule {
					t.Errorf("step %d (%s): reason %s rule %q, want %s %q", i, s.tok, got, md["rule_id"].GetStringValue(), s.wantReason, s.wantRule)
				}
				if s.wantReason != decision.ReasonRateLimited {
					continue
				}
				d, status := parseDenial(t, resp)
				var data struct {
					RetryAfter int `json:"retry_after"`
				}
				_ = json.Unmarshal(errorData(t, resp.GetDeniedResponse().GetBody()), &data)
				if status != 200 || d.Error.Code != CodeRateLimited || d.Error.Data.Decision != "deny" || fmt.Sprint(data.RetryAfter) != s.wantRetry {
					t.Errorf("step %d: HTTP %d, code %d, decision %s, retry_after %d; want 200 (auto, Streamable HTTP), -32017, deny, %s",
						i, status, d.Error.Code, d.Error.Data.Decision, data.RetryAfter, s.wantRetry)
				}
				if got := responseHeader(resp.GetDeniedResponse().GetHeaders(), "retry-after"); got != s.wantRetry {
					t.Errorf("step %d: Retry-After %q, want %q", i, got, s.wantRetry)
				}
			}
		})
	}
}

// errorData returns error.data of a JSON-RPC error body.
func errorData(t testing.TB, body string) []byte {
	t.Helper()
	var e struct {
		Error struct {
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	return e.Error.Data
}

// TestQuotaStatus: rate_limited is HTTP 429 + Retry-After on a
// notification, a legacy HTTP+SSE POST and under --denial-status
// http-error; 200 with the JSON-RPC error on a Streamable HTTP request
// under auto.
func TestQuotaStatus(t *testing.T) {
	tests := []struct {
		name   string
		accept string
		mode   DenialStatus
		want   int
	}{
		{"streamable, auto", "application/json, text/event-stream", DenialStatusAuto, 200},
		{"streamable, http-error", "application/json, text/event-stream", DenialStatusHTTPError, 429},
		{"legacy HTTP+SSE, auto", "application/json", DenialStatusAuto, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := quotaServer(t, state.NewMemory(0, nil), nil)
			srv.Responder.DenialStatus = tt.mode
			client := startGRPC(t, srv) // through gRPC, as Envoy asks
			for i := range 3 {
				c := quotaCall("alice", toolCallBody("search"))
				c.Headers["accept"] = tt.accept
				resp := check(t, client, c.CheckRequest(true))
				if i < 2 {
					okHeaders(t, resp)
					continue
				}
				d, status := parseDenial(t, resp)
				if status != tt.want || d.Error.Data.Reason != "rate_limited" || d.Error.Data.RuleID != "search-per-user" {
					t.Errorf("HTTP %d %s %s, want %d rate_limited search-per-user", status, d.Error.Data.Reason, d.Error.Data.RuleID, tt.want)
				}
				if ra := responseHeader(resp.GetDeniedResponse().GetHeaders(), "retry-after"); ra != "30" {
					t.Errorf("Retry-After %q, want 30", ra)
				}
			}
		})
	}
}

// brokenBuckets is a bucket store that cannot answer.
type brokenBuckets struct{}

func (brokenBuckets) Take(context.Context, string, time.Duration, int) (bool, time.Duration, error) {
	return false, 0, fmt.Errorf("%w: connection refused", state.ErrUnavailable)
}

// TestQuotaStoreDown: a bucket store that fails (or none) refuses what a
// quota applies to, state_store_unavailable with 503 + Retry-After, unless
// the quota says on_store_error: allow; metrics count each outcome by
// quota id.
func TestQuotaStoreDown(t *testing.T) {
	for _, b := range []decision.QuotaBuckets{brokenBuckets{}, nil} {
		reg := prometheus.NewRegistry()
		m := newMetrics(reg)
		srv := quotaServer(t, b, m.QuotaCharged)
		srv.Metrics = m
		resp, _ := srv.Check(t.Context(), quotaCall("alice", toolCallBody("search")).CheckRequest(true))
		d, status := parseDenial(t, resp)
		if status != 503 || d.Error.Data.Reason != "state_store_unavailable" || d.Error.Data.RuleID != "search-per-user" {
			t.Errorf("%T: HTTP %d %s %s, want 503 state_store_unavailable search-per-user", b, status, d.Error.Data.Reason, d.Error.Data.RuleID)
		}
		resp, _ = srv.Check(t.Context(), quotaCall("alice", toolCallBody("issue_refund")).CheckRequest(true))
		if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != "authorization_required" {
			t.Errorf("%T: on_store_error allow: reason %s, want authorization_required (the ask rule)", b, got)
		}
		if got := testutil.ToFloat64(m.QuotaDecisions.WithLabelValues("search-per-user", decision.QuotaStoreRefused)); got != 1 {
			t.Errorf("quota_decisions_total{search-per-user,store_refused} = %v, want 1", got)
		}
		if got := testutil.ToFloat64(m.QuotaDecisions.WithLabelValues("refunds-open", decision.QuotaStoreAdmitted)); got != 1 {
			t.Errorf("quota_decisions_total{refunds-open,store_admitted} = %v, want 1", got)
		}
	}
}

// TestQuotaReplicasOnRedis: three replicas of the service, each with its
// own client of one real redis-server, answer 90 concurrent calls of one
// principal: exactly the burst (2) is admitted, the rest rate_limited.
// Then the server stops: every call is refused (fail closed).
func TestQuotaReplicasOnRedis(t *testing.T) {
	url, stop := statetest.StartRedis(t)
	prefix := statetest.Prefix()
	var servers []*Server
	for range 3 {
		r, err := state.NewRedis(url, prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		servers = append(servers, quotaServer(t, r, nil))
	}
	var admitted, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := servers[i%3].Check(context.Background(), quotaCall("alice", toolCallBody("search")).CheckRequest(true))
			switch r := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); r {
			case "allowed":
				admitted.Add(1)
			case "rate_limited":
				limited.Add(1)
			default:
				t.Errorf("reason %s", r)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 2 || limited.Load() != 88 {
		t.Errorf("admitted %d, limited %d; want 2 and 88", admitted.Load(), limited.Load())
	}
	stop()
	resp, _ := servers[0].Check(context.Background(), quotaCall("bob", toolCallBody("search")).CheckRequest(true))
	if r := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); r != "state_store_unavailable" {
		t.Errorf("Redis down: reason %s, want state_store_unavailable", r)
	}
}

// BenchmarkQuota is Check (fixed principal, in process) of an allowed
// tools/call: "baseline" names a tool no quota applies to, "memory" one
// charged to a per-principal quota in a Memory store (admitted: the bucket
// never empties), "limited" one refused rate_limited, "redis" the
// admitted call on a real redis-server (a round trip). memory minus
// baseline is the quota's cost on the hot path of one replica.
func BenchmarkQuota(b *testing.B) {
	const pol = `default: deny
allow: ["payments/*"]
quotas:
  - {id: big, match: payments/search, limit: 1000000, window: 1s}
  - {id: tiny, match: payments/lookup, limit: 1, window: 24h}
`
	lp, err := decision.CompilePolicy("bench.yaml", []byte(pol))
	if err != nil {
		b.Fatal(err)
	}
	server := func(buckets decision.QuotaBuckets) *Server {
		store := &decision.PolicyStore{}
		store.Store(lp)
		return &Server{Decider: mustDecider(decision.Config{ServerID: testServerID, Verifier: quotaCallers, Policies: store,
			Limits: mcpparse.DefaultLimits(), Quotas: buckets}), Responder: &Responder{ResourceMetadataURL: resourcemeta.URL(testAudience)}}
	}
	run := func(b *testing.B, srv *Server, tool string, want decision.Reason) {
		req := quotaCall("alice", toolCallBody(tool)).CheckRequest(true)
		resp, _ := srv.Check(context.Background(), req)
		if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != string(want) {
			b.Fatalf("setup: %s, want %s", got, want)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			_, _ = srv.Check(context.Background(), req)
		}
	}
	b.Run("baseline", func(b *testing.B) { run(b, server(state.NewMemory(0, nil)), "other", decision.ReasonAllowed) })
	b.Run("memory", func(b *testing.B) { run(b, server(state.NewMemory(0, nil)), "search", decision.ReasonAllowed) })
	b.Run("limited", func(b *testing.B) {
		srv := server(state.NewMemory(0, nil))
		_, _ = srv.Check(context.Background(), quotaCall("alice", toolCallBody("lookup")).CheckRequest(true))
		run(b, srv, "lookup", decision.ReasonRateLimited)
	})
	b.Run("redis", func(b *testing.B) {
		r, err := state.NewRedis(statetest.RedisURL(b), statetest.Prefix())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		run(b, server(r), "search", decision.ReasonAllowed)
	})
}

// TestRateLimitedWithGoSDK: the official Go SDK (v1.8.0) as client and
// server behind the service, the policy's quota of 2 searches a minute:
// the third call reaches the caller under --denial-status auto as a
// *jsonrpc.Error (-32017, data.reason rate_limited, data.retry_after 30),
// under http-error as the SDK's transient 429 error (its "rejected by
// transport", -32005, with "Too Many Requests"; the body unread); never as a closed connection, and the session goes on
// (a call no quota limits succeeds in the same session).
func TestRateLimitedWithGoSDK(t *testing.T) {
	for _, mode := range []DenialStatus{DenialStatusAuto, DenialStatusHTTPError} {
		t.Run(mode.String(), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "1"}, nil)
			var ran atomic.Int64
			for _, name := range []string{"search", "other"} {
				mcp.AddTool(server, &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
						ran.Add(1)
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + name}}}, nil, nil
					})
			}
			srv := quotaServer(t, state.NewMemory(0, nil), nil)
			srv.Decider = mustDecider(func() decision.Config {
				c := srv.Decider.Config()
				c.Verifier = principalsByToken{"test-token": quotaCallers["alice"]}
				return c
			}())
			srv.Responder.DenialStatus = mode
			cs := connectSDK(t, srv, server)
			ctx := t.Context()
			for i := range 2 {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{}}); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{}})
			if err == nil || errors.Is(err, mcp.ErrConnectionClosed) {
				t.Fatalf("third call: %v, want refused, not a closed connection", err)
			}
			var je *jsonrpc.Error
			switch mode {
			case DenialStatusAuto:
				var data struct {
					Reason     string `json:"reason"`
					RuleID     string `json:"rule_id"`
					RetryAfter int    `json:"retry_after"`
				}
				if !errors.As(err, &je) || je.Code != CodeRateLimited || json.Unmarshal(je.Data, &data) != nil ||
					data.Reason != "rate_limited" || data.RuleID != "search-per-user" || data.RetryAfter != 30 {
					t.Errorf("auto: %T %v, want *jsonrpc.Error -32017 rate_limited search-per-user retry_after 30", err, err)
				}
			default:
				// jsonrpc2.ErrRejected, -32005 "rejected by transport",
				// with the status text: the service's body is not read.
				if !errors.As(err, &je) || je.Code == CodeRateLimited || !strings.Contains(err.Error(), "Too Many Requests") {
					t.Errorf("http-error: %T %v, want the SDK's transient 429 error", err, err)
				}
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "other", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("the session did not survive: %v", err)
			}
			if ran.Load() != 3 {
				t.Errorf("the server ran %d calls, want 3 (the refused one never reached it)", ran.Load())
			}
		})
	}
}
