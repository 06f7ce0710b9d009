package decision

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// argsDecider decides for server payments under a policy that allows every
// tool and prompt of it, pins with tofu (new tools allowed, so a tool
// never listed has no known definition) and says arguments: mode; the
// tools in defs are listed.
func argsDecider(t testing.TB, arguments string, defs ...string) *Decider {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.json"), []byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":8}},"required":["name"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	src := "default: deny\npin_mode: tofu\nallow_new_tools: true\nallow:\n  - {id: tools, match: payments/*}\n  - {id: prompts, match: \"prompt:payments/*\"}\n" + arguments
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	lp, err := CompilePolicy(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	store := new(PolicyStore)
	store.Store(lp)
	obs := toolpin.Observations{Store: state.NewMemory(0, nil)}
	for _, def := range defs {
		d, err := toolpin.Parse([]byte(def), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := obs.Observe(context.Background(), "payments", d); err != nil {
			t.Fatal(err)
		}
	}
	dec, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: subjectVerifier{}, Definitions: obs, Schemas: obs})
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

const transferDef = `{"name":"transfer","inputSchema":{"type":"object","properties":{"amount":{"type":"integer","maximum":100},"to":{"type":"string","x-mcp-header":"To"},"urgent":{"type":"boolean","x-mcp-header":"Urgent"},"n":{"type":"number","x-mcp-header":"N"}},"required":["amount"]}}`

func toolCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

// TestArgumentsModes: validate, require and off, with and without a known
// definition, and a policy schema_file for a prompt.
func TestArgumentsModes(t *testing.T) {
	tests := []struct {
		name, arguments, body string
		want                  Reason
		wantPointer, wantKw   string
	}{
		{"validate known valid", "arguments: {mode: validate}\n", toolCall("transfer", `{"amount":5}`), ReasonAllowed, "", ""},
		{"validate known over maximum", "arguments: {mode: validate}\n", toolCall("transfer", `{"amount":101}`), ReasonArgumentsInvalid, "/amount", "maximum"},
		{"validate known missing", "arguments: {mode: validate}\n", toolCall("transfer", `{}`), ReasonArgumentsInvalid, "/amount", "required"},
		{"validate known unknown member", "arguments: {mode: validate}\n", toolCall("transfer", `{"amount":1,"memo":"x"}`), ReasonArgumentsInvalid, "/memo", "unevaluatedProperties"},
		{"validate known no arguments", "arguments: {mode: validate}\n", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer"}}`, ReasonArgumentsInvalid, "/amount", "required"},
		{"validate unknown", "arguments: {mode: validate}\n", toolCall("unlisted", `{"anything":1}`), ReasonAllowed, "", ""},
		{"require known valid", "arguments: {mode: require}\n", toolCall("transfer", `{"amount":5}`), ReasonAllowed, "", ""},
		{"require unknown", "arguments: {mode: require}\n", toolCall("unlisted", `{}`), ReasonArgumentsInvalid, "", ""},
		{"off known invalid", "arguments: {mode: off}\n", toolCall("transfer", `{"amount":"x"}`), ReasonAllowed, "", ""},
		{"no setting", "", toolCall("transfer", `{"amount":"x"}`), ReasonAllowed, "", ""},
		{"tool off under server require", "arguments: {servers: {payments: {mode: require, tools: {transfer: off}}}}\n", toolCall("transfer", `{"amount":"x"}`), ReasonAllowed, "", ""},
		{"other server", "arguments: {servers: {wiki: {mode: require}}}\n", toolCall("unlisted", `{}`), ReasonAllowed, "", ""},
		{"no schema listed", "arguments: {mode: require}\n", toolCall("ping", `{}`), ReasonArgumentsInvalid, "", ""},
		{"prompt schema_file valid", "arguments: {servers: {payments: {prompts: {greet: {mode: require, schema_file: greet.json}}}}}\n", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ann"}}}`, ReasonAllowed, "", ""},
		{"prompt schema_file too long", "arguments: {servers: {payments: {prompts: {greet: {mode: require, schema_file: greet.json}}}}}\n", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Annabelle-Marie"}}}`, ReasonArgumentsInvalid, "/name", "maxLength"},
		{"prompt require unknown", "arguments: {servers: {payments: {prompts: {other: require}}}}\n", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"other","arguments":{}}}`, ReasonArgumentsInvalid, "", ""},
		{"tool schema_file over the pinned one", "arguments: {servers: {payments: {tools: {transfer: {schema_file: greet.json}}}}}\n", toolCall("transfer", `{"amount":5,"name":"x"}`), ReasonArgumentsInvalid, "/amount", "unevaluatedProperties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := argsDecider(t, tt.arguments, transferDef, `{"name":"ping"}`)
			got := d.Decide(context.Background(), post("alice", tt.body))
			if got.Reason != tt.want || got.ArgumentsPointer != tt.wantPointer || got.ArgumentsKeyword != tt.wantKw {
				t.Errorf("%s %q %q (%s), want %s %q %q", got.Reason, got.ArgumentsPointer, got.ArgumentsKeyword, got.Detail, tt.want, tt.wantPointer, tt.wantKw)
			}
		})
	}
}

// TestArgumentsBeforeAsk: an ask rule's call with invalid arguments is
// arguments_invalid, not authorization_required; a deny rule still wins.
func TestArgumentsBeforeAsk(t *testing.T) {
	d := argsDecider(t, "arguments: {mode: validate}\nask:\n  - {id: big, match: payments/transfer}\ndeny:\n  - {id: no, match: payments/ping}\n", transferDef, `{"name":"ping","inputSchema":{"type":"object"}}`)
	for _, tt := range []struct {
		body string
		want Reason
	}{
		{toolCall("transfer", `{"amount":5}`), ReasonAuthorizationRequired},
		{toolCall("transfer", `{"amount":500}`), ReasonArgumentsInvalid},
		{toolCall("ping", `{"x":1}`), ReasonPolicyDenied},
	} {
		if got := d.Decide(context.Background(), post("alice", tt.body)); got.Reason != tt.want {
			t.Errorf("%s: %s, want %s", tt.body, got.Reason, tt.want)
		}
	}
}

// TestParamHeaders: Mcp-Param-{Name} headers of x-mcp-header parameters
// must equal the body (plain or =?base64?…?=; names in any case, as Envoy
// lower-cases them); unmarked parameters' headers are left alone; on
// 2026-07-28 a present value needs its header.
func TestParamHeaders(t *testing.T) {
	b64 := func(s string) string { return "=?base64?" + s + "?=" }
	tests := []struct {
		name    string
		version string
		args    string
		headers map[string][]string
		want    Reason
	}{
		{"agree plain", "2025-11-25", `{"amount":1,"to":"bob"}`, map[string][]string{"mcp-param-to": {"bob"}}, ReasonAllowed},
		{"disagree plain", "2025-11-25", `{"amount":1,"to":"bob"}`, map[string][]string{"mcp-param-to": {"eve"}}, ReasonHeaderMismatch},
		{"case of value matters", "2025-11-25", `{"amount":1,"to":"bob"}`, map[string][]string{"mcp-param-to": {"Bob"}}, ReasonHeaderMismatch},
		{"agree base64", "2025-11-25", `{"amount":1,"to":"José"}`, map[string][]string{"mcp-param-to": {b64("Sm9zw6k=")}}, ReasonAllowed},
		{"disagree base64", "2025-11-25", `{"amount":1,"to":"José"}`, map[string][]string{"mcp-param-to": {b64("Sm9zZQ==")}}, ReasonHeaderMismatch},
		{"bad base64", "2025-11-25", `{"amount":1,"to":"bob"}`, map[string][]string{"mcp-param-to": {b64("%%%")}}, ReasonHeaderMismatch},
		{"repeated", "2025-11-25", `{"amount":1,"to":"bob"}`, map[string][]string{"mcp-param-to": {"bob", "bob"}}, ReasonHeaderMismatch},
		{"header without value", "2025-11-25", `{"amount":1}`, map[string][]string{"mcp-param-to": {"bob"}}, ReasonHeaderMismatch},
		{"null value, no header", "2026-07-28", `{"amount":1,"to":null}`, nil, ReasonArgumentsInvalid}, // null is not a string: the schema refuses it
		{"boolean agrees", "2025-11-25", `{"amount":1,"urgent":true}`, map[string][]string{"mcp-param-urgent": {"true"}}, ReasonAllowed},
		{"boolean disagrees", "2025-11-25", `{"amount":1,"urgent":false}`, map[string][]string{"mcp-param-urgent": {"true"}}, ReasonHeaderMismatch},
		{"boolean spelled", "2025-11-25", `{"amount":1,"urgent":true}`, map[string][]string{"mcp-param-urgent": {"True"}}, ReasonHeaderMismatch},
		{"number as decimal", "2025-11-25", `{"amount":1,"n":42}`, map[string][]string{"mcp-param-n": {"42.0"}}, ReasonAllowed},
		{"number exact", "2025-11-25", `{"amount":1,"n":0.1}`, map[string][]string{"mcp-param-n": {"0.10000000000000001"}}, ReasonHeaderMismatch},
		{"number junk", "2025-11-25", `{"amount":1,"n":1}`, map[string][]string{"mcp-param-n": {"0x1"}}, ReasonHeaderMismatch},
		{"unmarked header left alone", "2025-11-25", `{"amount":1}`, map[string][]string{"mcp-param-amount": {"999"}}, ReasonAllowed},
		{"absent header before 2026", "2025-11-25", `{"amount":1,"to":"bob"}`, nil, ReasonAllowed},
		{"absent header on 2026", "2026-07-28", `{"amount":1,"to":"bob"}`, nil, ReasonHeaderMismatch},
		{"present header on 2026", "2026-07-28", `{"amount":1,"to":"bob"}`, map[string][]string{"mcp-param-to": {"bob"}}, ReasonAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := argsDecider(t, "arguments: {mode: validate}\n", transferDef)
			r := post("alice", toolCall("transfer", tt.args))
			r.Headers["mcp-protocol-version"] = []string{tt.version}
			for k, v := range tt.headers {
				r.Headers[k] = v
			}
			if got := d.Decide(context.Background(), r); got.Reason != tt.want {
				t.Errorf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
		})
	}
	// With arguments off, present headers are still compared when the
	// definition is known; an absent one is not looked for.
	d := argsDecider(t, "", transferDef)
	r := post("alice", toolCall("transfer", `{"amount":1,"to":"bob"}`))
	r.Headers["mcp-param-to"] = []string{"eve"}
	if got := d.Decide(context.Background(), r); got.Reason != ReasonHeaderMismatch {
		t.Errorf("arguments off, disagreeing header: %s, want header_mismatch", got.Reason)
	}
	// With arguments off, a missing header is not looked for on 2026.
	r = post("alice", toolCall("transfer", `{"amount":1,"to":"bob","urgent":true}`))
	r.Headers["mcp-protocol-version"] = []string{"2026-07-28"}
	r.Headers["mcp-param-to"] = []string{"bob"}
	if got := d.Decide(context.Background(), r); got.Reason != ReasonAllowed {
		t.Errorf("arguments off, one header missing on 2026: %s (%s), want allowed", got.Reason, got.Detail)
	}
	// No definition known: nothing to compare against.
	r = post("alice", toolCall("unlisted", `{"to":"bob"}`))
	r.Headers["mcp-param-to"] = []string{"eve"}
	if got := d.Decide(context.Background(), r); got.Reason != ReasonAllowed {
		t.Errorf("no definition, header: %s, want allowed", got.Reason)
	}
}

// TestPromptArgumentsObserved: without a schema_file, prompts/get
// arguments are validated against the prompt's declared arguments as the
// seam observed them (strings, the required ones present, no other).
func TestPromptArgumentsObserved(t *testing.T) {
	src := "default: deny\npin_mode: tofu\nallow:\n  - {id: prompts, match: \"prompt:payments/*\"}\narguments: {mode: validate}\n"
	lp, err := CompilePolicy("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	store := new(PolicyStore)
	store.Store(lp)
	obs := toolpin.Observations{Store: state.NewMemory(0, nil)}
	name, schema, err := toolpin.PromptArgumentsSchema([]byte(`{"name":"greet","arguments":[{"name":"who","required":true},{"name":"lang"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.ObservePromptArguments(context.Background(), "payments", name, schema); err != nil {
		t.Fatal(err)
	}
	d, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: subjectVerifier{}, Definitions: obs, Prompts: obs})
	if err != nil {
		t.Fatal(err)
	}
	get := func(prompt, args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"` + prompt + `","arguments":` + args + `}}`
	}
	for _, tt := range []struct {
		body        string
		want        Reason
		wantPointer string
		wantKw      string
	}{
		{get("greet", `{"who":"Ann"}`), ReasonAllowed, "", ""},
		{get("greet", `{"who":"Ann","lang":"fr"}`), ReasonAllowed, "", ""},
		{get("greet", `{"lang":"fr"}`), ReasonArgumentsInvalid, "/who", "required"},
		{get("greet", `{"who":"Ann","tone":"dry"}`), ReasonArgumentsInvalid, "/tone", "additionalProperties"},
		{get("greet", `{"who":7}`), ReasonArgumentsInvalid, "/who", "type"},
		{get("unlisted", `{"x":"y"}`), ReasonAllowed, "", ""}, // validate: none known
	} {
		got := d.Decide(context.Background(), post("alice", tt.body))
		if got.Reason != tt.want || got.ArgumentsPointer != tt.wantPointer || got.ArgumentsKeyword != tt.wantKw {
			t.Errorf("%s: %s %q %q (%s), want %s %q %q", tt.body, got.Reason, got.ArgumentsPointer, got.ArgumentsKeyword, got.Detail, tt.want, tt.wantPointer, tt.wantKw)
		}
	}
}
