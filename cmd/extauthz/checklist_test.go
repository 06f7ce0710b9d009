package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check --list-response: what a principal would see of a captured list.
func TestCheckListResponse(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, body string
		args       []string
		after      []string // after FILE
		want       []string
		wantCode   int
	}{
		{name: "json", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"delete_repo"}]}}`,
			want: []string{"sees 1 of 2 items (1 answer)\n", "keep   tools              search\n", "remove tools              delete_repo  (deny rule no-deletes matches every call)"}},
		{name: "sse, explained", body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"prompts\":[{\"name\":\"summarize\"},{\"name\":\"draft_email\"}]}}\n\n",
			args: []string{"--explain"},
			want: []string{"sees 1 of 2 items", "keep   prompts            summarize  (allow rule summarize-prompt could match)", "remove prompts            draft_email  (no rule could match: default deny)"}},
		{name: "flags after FILE", body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"prompts\":[{\"name\":\"summarize\"}]}}\n\n",
			after: []string{"--explain"},
			want:  []string{"sees 1 of 1 item (1 answer)\n", "keep   prompts            summarize  (allow rule summarize-prompt could match)"}},
		{name: "two answers", body: "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n",
			want: []string{"sees 0 of 0 items (2 answers)\n"}},
		{name: "duplicate names are refused", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"search"}]}}`,
			want: []string{"refused: the seam would answer a JSON-RPC error instead of this list (response_unfilterable)"}, wantCode: 1},
		{name: "a result without a list is refused", body: `{"jsonrpc":"2.0","id":1,"result":{"things":[]}}`,
			want: []string{"refused: the seam would answer a JSON-RPC error instead of this list (response_unfilterable): the result carries no list"}, wantCode: 1},
		{name: "an empty result is refused", body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
			want: []string{"(response_unfilterable): the result carries no list"}, wantCode: 1},
		{name: "an error answer passes", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
			want: []string{"sees 0 of 0 items (1 answer)\n"}},
		{name: "empty", body: " \n", wantCode: 2},
		{name: "a task list needs the task store", body: `{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"t1"}]}}`,
			wantCode: 2},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		args := append([]string{"check", "--config", "examples/config.yaml", "--sub", "alice", "--list-response"}, tt.args...)
		args = append(args, write(strings.ReplaceAll(tt.name, " ", "_"), tt.body))
		err := run(t.Context(), append(args, tt.after...), &out, &errb)
		code := 0
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		} else if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if code != tt.wantCode {
			t.Errorf("%s: exit %d, want %d (%s%s)", tt.name, code, tt.wantCode, out.String(), errb.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.name, w, out.String())
			}
		}
	}
}
