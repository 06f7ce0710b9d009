package extproc

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// A tools/call the server turns into a task binds the task to its caller in
// both shapes: MCP 2025-11-25's result.task.taskId and the 2026-07-28 tasks
// extension's flat result (resultType "task", taskId, ttlMs; SEP-2663), as
// JSON or on SSE; the receipt says task_created.
func TestTaskBinding(t *testing.T) {
	const (
		nested = `{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"T-nested","status":"working","ttl":60000,"createdAt":"2025-11-25T00:00:00Z","lastUpdatedAt":"2025-11-25T00:00:00Z"}}}`
		flat   = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"T-flat","status":"working","createdAt":"2026-07-28T00:00:00Z","lastUpdatedAt":"2026-07-28T00:00:00Z","ttlMs":60000,"pollIntervalMs":5000}}`
	)
	tests := []struct {
		name     string
		protocol string
		ct       string
		chunks   []string
		wantID   string
	}{
		{name: "2025 nested, JSON", protocol: "2025-11-25", ct: "application/json", chunks: []string{nested}, wantID: "T-nested"},
		{name: "2026 flat, JSON", protocol: "2026-07-28", ct: "application/json", chunks: []string{flat}, wantID: "T-flat"},
		{name: "2026 flat, SSE", protocol: "2026-07-28", ct: "text/event-stream", chunks: []string{
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n",
			"event: message\ndata: " + flat + "\n\n"}, wantID: "T-flat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			m := f.meta("alice", "tools/call", "7")
			m["protocol_version"] = tt.protocol
			got := f.envoy.do(t, callRoute, exchange{method: "POST", meta: m, status: 200, hdrs: map[string]string{"content-type": tt.ct}, chunks: tt.chunks})
			if got.status != 200 || got.localReply || got.reset || !strings.Contains(got.body, tt.wantID) {
				t.Fatalf("the task result was not passed: %+v", got)
			}
			owner, found, err := f.tasks.Owner(context.Background(), "payments", tt.wantID)
			if err != nil || !found || owner != state.TaskOwner(issuer, "alice") {
				t.Fatalf("binding: %q %v %v", owner, found, err)
			}
			lines := f.logs.FilterMessage("receipt").All()
			if len(lines) != 1 || lines[0].ContextMap()["outcome"] != OutcomeTaskCreated {
				t.Errorf("receipts %v", lines)
			}
		})
	}
}

// The binding lives for the task's own TTL (ttlMs in 2026), capped by the
// store's maximum; null (unlimited) gets the maximum.
func TestTaskBindingTTL(t *testing.T) {
	tests := []struct {
		name string
		ttl  string
		want time.Duration
	}{
		{name: "ttlMs", ttl: "60000", want: time.Minute},
		{name: "ttlMs above the maximum", ttl: "86400000000", want: state.DefaultMaxTaskTTL},
		{name: "ttlMs null", ttl: "null", want: state.DefaultMaxTaskTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &ttlRecorder{Reader: state.NewMemory(100, nil)}
			f := newFixtureWith(t, examplePolicy(t), nil, func(c *Config) { c.Tasks = &state.Tasks{Store: rec} })
			m := f.meta("alice", "tools/call", "7")
			m["protocol_version"] = "2026-07-28"
			body := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"T-ttl","status":"working","ttlMs":` + tt.ttl + `}}`
			if got := f.envoy.do(t, callRoute, jsonAnswer(exchange{method: "POST", meta: m, status: 200}, body)); got.status != 200 {
				t.Fatalf("%+v", got)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.ttls) != 1 || rec.ttls[0] != tt.want {
				t.Errorf("bound for %v, want %v", rec.ttls, tt.want)
			}
		})
	}
}

// A task result whose id the sidecar cannot bind binds nothing, so no
// caller's later tasks/get of it is admitted (task_not_owned: fail closed).
// The answer is refused (response_unfilterable): the seam cannot prove the
// task is its caller's.
func TestTaskResultUnbindable(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":7,"status":"working"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"","status":"working"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","status":"working","note":"T-bad"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"T-bad","task":{"taskId":"T-bad2"}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":["T-bad"]}}}`,
	} {
		f := newFixture(t)
		m := f.meta("alice", "tools/call", "7")
		m["protocol_version"] = "2026-07-28"
		got := f.envoy.do(t, callRoute, jsonAnswer(exchange{method: "POST", meta: m, status: 200}, body))
		if r, _ := rpcErrorOf(got.body); got.status != 200 || r != ReasonUnfilterable {
			t.Errorf("%s: not refused: %+v", body, got)
		}
		for _, id := range []string{"T-bad", "T-bad2"} {
			if _, found, _ := f.tasks.Owner(context.Background(), "payments", id); found {
				t.Errorf("%s: %s bound", body, id)
			}
		}
	}
}

// ttlRecorder records the lifetime of every claim.
type ttlRecorder struct {
	state.Reader
	mu   sync.Mutex
	ttls []time.Duration
}

func (r *ttlRecorder) Claim(ctx context.Context, key, value string, ttl time.Duration) (bool, string, error) {
	r.mu.Lock()
	r.ttls = append(r.ttls, ttl)
	r.mu.Unlock()
	return r.Reader.Claim(ctx, key, value, ttl)
}

func examplePolicy(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return src
}
