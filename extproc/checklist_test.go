package extproc

import (
	"errors"
	"slices"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// TestCheckList: the offline list check frames JSON and SSE answers as the
// seam does and returns every item with the core's decision, ordered by
// kind; what the seam would refuse is an error, tasks are ErrTasksOffline.
func TestCheckList(t *testing.T) {
	pol, err := policy.Compile("p.yaml", []byte("default: deny\ndeny:\n  - {id: no-wipe, match: payments/wipe}\nallow: ['payments/*', 'prompt:payments/summarize']\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		give        string
		want        []string // kind/key kept or removed (-)
		wantAnswers int
		wantTools   int
		wantErr     error // errors.Is; errAny: any error
	}{
		{name: "json", give: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"wipe"}]}}`,
			want: []string{"tools/search", "-tools/wipe"}, wantAnswers: 1, wantTools: 2},
		{name: "sse, prompts before tools in the stream, tools first in the result",
			give: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"prompts\":[{\"name\":\"draft\"},{\"name\":\"summarize\"}]}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"wipe\"}]}}\n\n",
			want: []string{"-tools/wipe", "-prompts/draft", "prompts/summarize"}, wantAnswers: 2, wantTools: 1},
		{name: "sse without data", give: ": keep-alive\n\n", wantAnswers: 0},
		{name: "a template that does not expand is removed", give: `{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"file:///{","name":"t"}]}}`,
			want: []string{"-resourceTemplates/file:///{"}, wantAnswers: 1},
		{name: "tasks", give: `{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"t1"}]}}`, wantAnswers: 1, wantErr: ErrTasksOffline},
		{name: "no list", give: `{"jsonrpc":"2.0","id":1,"result":{"things":[]}}`, wantAnswers: 1, wantErr: errNoList},
		{name: "duplicate items", give: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"a"}]}}`, wantAnswers: 1, wantErr: errAny},
		{name: "not JSON-RPC", give: `{"id":1,"result":{"tools":[]}}`, wantAnswers: 1, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckList(t.Context(), decision.PolicyOf(pol), "payments", nil, []byte(tt.give))
			switch {
			case tt.wantErr == nil && err != nil, tt.wantErr != nil && err == nil:
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got.Answers != tt.wantAnswers || got.Tools != tt.wantTools {
				t.Errorf("answers %d, tools %d; want %d, %d", got.Answers, got.Tools, tt.wantAnswers, tt.wantTools)
			}
			if tt.wantErr != nil {
				return
			}
			var items []string
			for _, it := range got.Items {
				s := it.Kind + "/" + it.Key
				if !it.Visible {
					s = "-" + s
				}
				items = append(items, s)
			}
			if !slices.Equal(items, tt.want) {
				t.Errorf("items %q, want %q", items, tt.want)
			}
		})
	}
}

// errAny in a table: some error, whichever.
var errAny = errors.New("any error")
