package listfilter

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// Both shapes of a created task: MCP 2025-11-25's result.task{taskId, ttl}
// and the 2026-07-28 tasks extension's flat result with resultType "task"
// (SEP-2663, "Task Creation": taskId and ttlMs beside resultType).
func TestTaskResults(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []Task
	}{
		{name: "2025 nested", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9","status":"working","ttl":60000}}}`, want: []Task{{"t-9", 60000}}},
		{name: "2025 nested, no ttl", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9"}}}`, want: []Task{{"t-9", -1}}},
		{name: "2025 nested, ttl null", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9","ttl":null}}}`, want: []Task{{"t-9", math.MaxInt64}}},
		{name: "2025 nested, ttl fractional", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9","ttl":1.5}}}`, want: []Task{{"t-9", -1}}},
		{name: "2025 nested, escaped id", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t\u002d9"}}}`, want: []Task{{"t-9", -1}}},
		{name: "2026 flat", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"T-flat","status":"working","createdAt":"2026-07-28T00:00:00Z","lastUpdatedAt":"2026-07-28T00:00:00Z","ttlMs":60000,"pollIntervalMs":5000}}`, want: []Task{{"T-flat", 60000}}},
		{name: "2026 flat, ttlMs null", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"T-flat","ttlMs":null}}`, want: []Task{{"T-flat", math.MaxInt64}}},
		{name: "2026 flat, no ttlMs", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"T-flat"}}`, want: []Task{{"T-flat", -1}}},
		{name: "2026 flat, ttl is not the 2026 name", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"T-flat","ttl":5}}`, want: []Task{{"T-flat", -1}}},
		{name: "2026 flat, negative ttlMs", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"T-flat","ttlMs":-5}}`, want: []Task{{"T-flat", -1}}},
		{name: "2026 flat, member names folded", give: `{"jsonrpc":"2.0","id":1,"result":{"ResultType":"task","TaskID":"T-flat","TTLMS":7}}`, want: []Task{{"T-flat", 7}}},
		{name: "2026 batch, two tasks", give: `[{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"A"}},{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"B"}}}]`, want: []Task{{"A", -1}, {"B", -1}}},
		// Not a created task: a tasks/get answer, another resultType, a
		// result.task that is not an object or names no task.
		{name: "2026 tasks/get answer", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","taskId":"T-flat","status":"working","ttlMs":1}}`},
		{name: "2026 input_required", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","taskId":"T-flat"}}`},
		{name: "resultType value is case-sensitive", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"Task","taskId":"T-flat"}}`},
		{name: "flat taskId without resultType", give: `{"jsonrpc":"2.0","id":1,"result":{"taskId":"T-flat","ttlMs":1}}`},
		{name: "task not an object", give: `{"jsonrpc":"2.0","id":1,"result":{"task":"t-9"}}`},
		{name: "task without taskId", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"status":"working"}}}`},
		{name: "a result that is not an object", give: `{"jsonrpc":"2.0","id":1,"result":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Filter([]byte(tt.give), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tasks, tt.want) || res.Changed || string(res.Body) != tt.give {
				t.Errorf("tasks %+v changed %v, want %+v", res.Tasks, res.Changed, tt.want)
			}
		})
	}
}

// A created task the sidecar cannot bind unambiguously fails the filter
// (the caller answers with an error), in either shape.
func TestTaskResultErrors(t *testing.T) {
	tests := []struct {
		name string
		give string
		want string // Error.Kind
	}{
		{name: "2026 taskId a number", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":7}}`, want: "shape"},
		{name: "2026 taskId null", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":null}}`, want: "shape"},
		{name: "2026 taskId empty", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":""}}`, want: "shape"},
		{name: "2026 taskId missing", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working"}}`, want: "shape"},
		{name: "2026 taskId an object", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":{"id":"T"}}}`, want: "shape"},
		{name: "2026 duplicate taskId", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"A","taskId":"B"}}`, want: "parse"},
		{name: "2026 case-variant taskId", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"A","TaskId":"B"}}`, want: "parse"},
		{name: "2026 duplicate resultType", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resultType":"task","taskId":"A"}}`, want: "parse"},
		{name: "both shapes", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"A","task":{"taskId":"B"}}}`, want: "shape"},
		{name: "both shapes, one id", give: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"A","task":{"taskId":"A"}}}`, want: "shape"},
		{name: "2025 taskId a number", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":7}}}`, want: "shape"},
		{name: "2025 taskId empty", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":""}}}`, want: "shape"},
		{name: "2025 duplicate taskId", give: `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"A","taskId":"B"}}}`, want: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Filter([]byte(tt.give), Options{})
			var fe *Error
			if !errors.As(err, &fe) || fe.Kind != tt.want {
				t.Fatalf("%v, want a %s error", err, tt.want)
			}
			if res.Body != nil || res.Tasks != nil {
				t.Errorf("partial result on error: %+v", res)
			}
		})
	}
}
