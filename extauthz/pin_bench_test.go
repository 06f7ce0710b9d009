package extauthz

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// BenchmarkPinnedCall is issue 18's figure "a pinned tools/call costs at
// most one store round trip more than today": an allowed tools/call Check
// (examples/policy.yaml, issue_refund of 12.50 EUR, a verified and cached
// token) whose tool definitions live in a private redis-server on
// 127.0.0.1, with
//
//	pin=off     pin_mode off: no definition is read (today's cost)
//	pin=tofu    pin_mode tofu, the tool observed in a list: its observed,
//	            divergent and baseline fingerprints are read
//	pin=pinned  the same with the policy pinning the tool: observed and
//	            divergent are read
//
// Each reports store-calls/op (calls through the state.Reader, each one
// round trip on one redis-server) and redis-cmds/op (the server's INFO
// commandstats calls, INFO itself left out). The ns/op of pin=tofu over
// pin=off is the cost of the round trip on loopback.
func BenchmarkPinnedCall(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "policy.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(src, []byte("pin_mode: tofu")) {
		b.Fatal("the reference policy no longer pins on first use")
	}
	def := []byte(`{"name":"issue_refund","description":"Refund an order","inputSchema":{"type":"object","properties":{"orderId":{"type":"string"},"amountMinor":{"type":"integer"},"currency":{"type":"string"}}}}`)
	d, err := toolpin.Parse(def, nil)
	if err != nil {
		b.Fatal(err)
	}
	url, _ := statetest.StartRedis(b)
	opt, err := redis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	admin := redis.NewClient(opt)
	b.Cleanup(func() { admin.Close() })
	for _, tt := range []struct {
		name string
		src  []byte
	}{
		{"pin=off", bytes.Replace(src, []byte("pin_mode: tofu"), []byte("pin_mode: off"), 1)},
		{"pin=tofu", src},
		{"pin=pinned", append(bytes.Clone(src), []byte("\npins:\n  payments:\n    issue_refund: ["+d.Fingerprint+"]\n")...)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			file := filepath.Join(b.TempDir(), "policy.yaml")
			if err := os.WriteFile(file, tt.src, 0o600); err != nil {
				b.Fatal(err)
			}
			r, err := state.NewRedis(url, statetest.Prefix())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.Close() })
			var calls atomic.Int64
			st := state.Observe(r, func(string, time.Duration, error) { calls.Add(1) }).(state.Reader)
			srv, req := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
			policies := compileStore(b, file)
			configure(b, srv, func(c *decision.Config) {
				c.Policies = policies
				c.Definitions = toolpin.Observations{Store: st}
			})
			lp := policies.Load()
			scope := toolpin.Scope(lp.Policy, testServerID, toolpin.Session("", "/mcp", "2025-11-25"))
			if err := (toolpin.Observations{Store: r}).Observe(context.Background(), scope, d); err != nil {
				b.Fatal(err)
			}
			check := func() {
				resp, _ := srv.Check(context.Background(), req)
				if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != string(decision.ReasonAllowed) {
					b.Fatalf("reason %s, want allowed", got)
				}
			}
			check() // warms the token cache
			calls.Store(0)
			before := redisCalls(b, admin)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = srv.Check(context.Background(), req)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(calls.Load())/n, "store-calls/op")
			b.ReportMetric(float64(redisCalls(b, admin)-before)/n, "redis-cmds/op")
			check()
		})
	}
}

// redisCalls is the sum of the calls of every command in INFO
// commandstats, INFO's own left out.
func redisCalls(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum int64
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("commandstats line %q", line)
		}
		sum += n
	}
	return sum
}
