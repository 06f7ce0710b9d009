package extproc

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Tool definitions of the list rule's table: an MCP Apps tool shown to
// the app only (SEP-1865 _meta.ui, and the deprecated flat key), and a
// plain one.
const (
	plRefund = `{"name":"refund","description":"Refund an order","inputSchema":{"type":"object"},` +
		`"_meta":{"ui":{"resourceUri":"ui://payments/refund.html","visibility":["app"]},"ui/resourceUri":"ui://payments/refund.html","progressToken":1}}`
	plRead = `{"name":"read","description":"Read an order","inputSchema":{"type":"object"}}`
)

// TestListDecidedAsNextCall: each tools/list item is decided as Check would
// decide a tools/call of it right after the list was observed, pin state
// of its scope included: a tool whose definition changed (its description,
// its MCP Apps UI resource or visibility), that appeared after the first
// list, or whose pin is a tooldef-v1 fingerprint is not listed, while its
// call is refused (definition_changed); a change of what the fingerprint
// leaves out changes nothing. Under pin_scope session the scope is the
// session's, read from Mcp-Session-Id or from Check's session hash alone.
// Every tool of the last list is listed exactly when its call would not be
// refused.
func TestListDecidedAsNextCall(t *testing.T) {
	edit := func(def string, f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(def), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	ui := func(m map[string]any) map[string]any { return m["_meta"].(map[string]any)["ui"].(map[string]any) }
	reworded := edit(plRefund, func(m map[string]any) { m["description"] = "Refund the full amount, always" })
	swapped := edit(plRefund, func(m map[string]any) { ui(m)["resourceUri"] = "ui://payments/evil.html" })
	visible := edit(plRefund, func(m map[string]any) { ui(m)["visibility"] = []any{"model", "app"} })
	flat := edit(plRefund, func(m map[string]any) { m["_meta"].(map[string]any)["ui/resourceUri"] = "ui://payments/evil.html" })
	other := edit(plRefund, func(m map[string]any) { m["_meta"].(map[string]any)["progressToken"] = 2 })
	fp := func(def string) string {
		d, _, err := toolpin.Fingerprint([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const tofu = "default: deny\npin_mode: tofu\nallow:\n  - {id: all, match: \"payments/*\"}\n"
	const session = tofu + "pin_scope: session\n"
	strict := func(pins string) string {
		return "default: deny\npin_mode: strict\npins: {payments: {read: [" + fp(plRead) + "], refund: [" + pins + "]}}\nallow: ['payments/*']\n"
	}
	// a list shown in a session: by its Mcp-Session-Id (sid), or known
	// to the processor by Check's session hash only (hash).
	type shown struct {
		sid, hash string
		defs      []string
		later     bool // an hour after the previous list: past the baseline window
	}
	tests := []struct {
		name   string
		policy string
		give   []shown // the last one is decided
		want   []string
	}{
		{"unchanged", tofu, []shown{{defs: []string{plRefund, plRead}}, {defs: []string{plRefund, plRead}, later: true}}, []string{"refund", "read"}},
		{"description changed", tofu, []shown{{defs: []string{plRefund, plRead}}, {defs: []string{reworded, plRead}, later: true}}, []string{"read"}},
		{"MCP Apps UI resource swapped", tofu, []shown{{defs: []string{plRefund, plRead}}, {defs: []string{swapped, plRead}, later: true}}, []string{"read"}},
		{"MCP Apps: an app-only tool made visible to the model", tofu, []shown{{defs: []string{plRefund, plRead}}, {defs: []string{visible, plRead}, later: true}}, []string{"read"}},
		{"MCP Apps: flat ui/resourceUri swapped", tofu, []shown{{defs: []string{plRefund, plRead}}, {defs: []string{flat, plRead}, later: true}}, []string{"read"}},
		{"other _meta changed", tofu, []shown{{defs: []string{plRefund, plRead}}, {defs: []string{other, plRead}, later: true}}, []string{"refund", "read"}},
		{"a tool added after the first list", tofu, []shown{{defs: []string{plRead}}, {defs: []string{plRefund, plRead}, later: true}}, []string{"read"}},
		{"changed, refusal conceal", tofu + "refusal: conceal\n", []shown{{defs: []string{plRefund, plRead}}, {defs: []string{swapped, plRead}, later: true}}, []string{"read"}},
		{"strict, pinned", strict(fp(plRefund)), []shown{{defs: []string{plRefund, plRead}}}, []string{"refund", "read"}},
		{"strict, pinned by tooldef-v1", strict("tooldef-v1" + fp(plRefund)[len(toolpin.Version):]), []shown{{defs: []string{plRefund, plRead}}}, []string{"read"}},
		{"strict, pinned before its UI resource was swapped", strict(fp(plRefund)), []shown{{defs: []string{swapped, plRead}}}, []string{"read"}},
		{"session: changed within it", session, []shown{{sid: "s1", defs: []string{plRefund, plRead}}, {sid: "s1", defs: []string{swapped, plRead}, later: true}}, []string{"read"}},
		{"session: changed in another", session, []shown{{sid: "s1", defs: []string{plRefund}}, {sid: "s2", defs: []string{plRefund, plRead}}, {sid: "s1", defs: []string{swapped}, later: true}, {sid: "s2", defs: []string{plRefund, plRead}}}, []string{"refund", "read"}},
		{"session known by Check's hash only", session, []shown{{hash: toolpin.SessionHash("s1"), defs: []string{plRefund, plRead}}, {hash: toolpin.SessionHash("s1"), defs: []string{swapped, plRead}, later: true}}, []string{"read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Unix(1_800_000_000, 0)
			obs := &toolpin.Observations{Store: state.NewMemory(1000, nil), Now: func() time.Time { return clock }}
			f := newFixtureWith(t, []byte(tt.policy), obs)
			var names []string
			for i, s := range tt.give {
				if s.later {
					clock = clock.Add(time.Hour)
				}
				x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+strings.Join(s.defs, ",")+`]}}`)
				if s.sid != "" {
					// As Check hands it over (decision.Metadata.Session).
					x.meta["session"] = toolpin.SessionHash(s.sid)
				}
				if s.hash != "" {
					x.meta["session"] = s.hash
				}
				got := f.envoy.do(t, listRoute, x)
				var res struct {
					Result struct{ Tools []struct{ Name string } }
				}
				if got.status != 200 || json.Unmarshal([]byte(got.body), &res) != nil {
					t.Fatalf("list %d: %d %s", i, got.status, got.body)
				}
				names = names[:0]
				for _, tl := range res.Result.Tools {
					names = append(names, tl.Name)
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("listed %q, want %q", names, tt.want)
			}
			// What Check decides a call of each tool of the last list by.
			pol, err := policy.Compile("p.yaml", []byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			last := tt.give[len(tt.give)-1]
			for _, def := range last.defs {
				d, err := toolpin.Parse([]byte(def), nil)
				if err != nil {
					t.Fatal(err)
				}
				var cd *policy.ToolDefinition
				if last.hash != "" {
					cd, err = obs.LookupScope(context.Background(), pol, "payments", toolpin.ScopeOfHash(pol, "payments", last.hash), d.Name)
				} else {
					cd, err = obs.Lookup(context.Background(), pol, "payments", last.sid, d.Name)
				}
				if err != nil {
					t.Fatal(err)
				}
				res := pol.Evaluate(&policy.Input{Op: policy.OpRequest, Method: "tools/call", Server: "payments", Tool: d.Name, Definition: cd})
				called := res.Decision != policy.Deny && res.Cause != policy.CauseDefinitionChanged
				if listed := slices.Contains(names, d.Name); listed != called {
					t.Errorf("%s: listed %v, yet its call is %v/%v", d.Name, listed, res.Decision, res.Cause)
				}
			}
		})
	}
}

// TestListPinStoreDown: a list whose pin state cannot be read is refused,
// never passed with its tools decided without it.
func TestListPinStoreDown(t *testing.T) {
	f := newFixtureWith(t, []byte("default: deny\npin_mode: tofu\nallow: ['payments/*']\n"), &toolpin.Observations{Store: lookupDown{state.NewMemory(0, nil)}})
	got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+plRead+`]}}`))
	if !strings.Contains(got.body, ReasonUnfilterable) || strings.Contains(got.body, `"read"`) {
		t.Errorf("%d %s, want the list refused (%s)", got.status, got.body, ReasonUnfilterable)
	}
}

// lookupDown records observations but cannot be read, as a Redis that
// fails between the write and the read.
type lookupDown struct{ *state.Memory }

func (lookupDown) GetMany(context.Context, ...string) ([]string, []bool, error) {
	return nil, nil, state.ErrUnavailable
}

// TestLegacyEndpointSession: on the legacy HTTP+SSE transport's GET stream
// the session is the endpoint event's sessionId (the one every POST of the
// session carries, and Check's pin step scopes by), not the GET's own
// (none): a list answered there is recorded in that session's scope.
func TestLegacyEndpointSession(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile("p.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	obs := &toolpin.Observations{Store: state.NewMemory(100, nil)}
	f := newFixtureWith(t, src, obs)
	x := exchange{method: "GET", reqHdrs: map[string]string{"authorization": "Bearer " + f.tokens["alice"], ":path": "/sse"}, meta: f.meta("alice", "GET", ""), status: 200}
	f.envoy.do(t, getRoute, sseAnswer(x, "event: endpoint\ndata: /sse?sessionId=S-1\n\n", "event: message\ndata: "+toolsBody+"\n\n"))
	ctx := context.Background()
	if def, err := obs.Lookup(ctx, pol, "payments", toolpin.Session("", "/sse?sessionId=S-1", ""), "search"); err != nil || def == nil || !def.Listed {
		t.Errorf("search in the endpoint's session: %+v %v", def, err)
	}
	if def, err := obs.Lookup(ctx, pol, "payments", "", "search"); err != nil || def != nil && def.Listed {
		t.Errorf("search recorded outside the session: %+v %v", def, err)
	}
}

// TestPromptsListRecordsArguments: with pinning on, a prompts/list answer
// through the seam records each prompt's declared arguments as a JSON
// Schema, which Check validates prompts/get arguments against; a prompt
// listed again with other arguments replaces them.
func TestPromptsListRecordsArguments(t *testing.T) {
	obs := &toolpin.Observations{Store: state.NewMemory(0, nil)}
	const pol = "default: deny\npin_mode: tofu\nallow:\n  - {id: all, match: \"prompt:payments/*\"}\n"
	f := newFixtureWith(t, []byte(pol), obs)
	p, err := policy.Compile("p.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ list, want string }{
		{`{"name":"greet","arguments":[{"name":"who","required":true}]}`, `{"additionalProperties":false,"properties":{"who":{"type":"string"}},"required":["who"],"type":"object"}`},
		{`{"name":"greet","arguments":[{"name":"who"},{"name":"lang"}]}`, `{"additionalProperties":false,"properties":{"lang":{"type":"string"},"who":{"type":"string"}},"type":"object"}`},
	} {
		got := f.envoy.do(t, listRoute, jsonAnswer(f.listRequest("alice", "prompts/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"prompts":[`+tt.list+`]}}`))
		if got.status != 200 || !strings.Contains(got.body, `"greet"`) {
			t.Fatalf("%d %s", got.status, got.body)
		}
		schema, found, err := obs.PromptArguments(context.Background(), p, "payments", "", "greet")
		if err != nil || !found || string(schema) != tt.want {
			t.Errorf("recorded %s %v %v, want %s", schema, found, err, tt.want)
		}
	}
}
