package decision

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// fakeSchemas answers InputSchema and PromptArguments with one schema, or
// an error.
type fakeSchemas struct {
	schema []byte
	found  bool
	err    error
}

func (f fakeSchemas) InputSchema(context.Context, string) ([]byte, bool, error) {
	return f.schema, f.found, f.err
}

func (f fakeSchemas) PromptArguments(context.Context, *policy.Policy, string, string, string) ([]byte, bool, error) {
	return f.schema, f.found, f.err
}

// brokenDefinitions cannot read tool definitions.
type brokenDefinitions struct{}

func (brokenDefinitions) Lookup(context.Context, *policy.Policy, string, string, string) (*policy.ToolDefinition, error) {
	return nil, errBroken
}

// TestArgumentsStores: the argument stage when what it reads is missing,
// unreachable or unusable: a store that cannot answer is
// state_store_unavailable, a schema that does not compile
// arguments_invalid (also when the cache answers the second time), a
// schema not found lets validate through; arguments: off with only an
// Mcp-Param header and no schema to say which parameters are marked lets
// the call through.
func TestArgumentsStores(t *testing.T) {
	transferCall := toolCall("transfer", `{"amount":5}`)
	greet := `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"Ann"}}}`
	tests := []struct {
		name      string
		arguments string
		edit      func(*Config)
		body      string
		hdr       []string
		want      Reason
		wantTwice bool // decide twice, the second answer counts
	}{
		{"no definitions under pin_mode", "arguments: {mode: validate}\n", func(c *Config) { c.Definitions = nil }, transferCall, nil, ReasonStateStoreUnavailable, false},
		{"definitions unreachable", "arguments: {mode: validate}\n", func(c *Config) { c.Definitions = brokenDefinitions{} }, transferCall, nil, ReasonStateStoreUnavailable, false},
		{"no schema store", "arguments: {mode: validate}\n", func(c *Config) { c.Schemas = nil }, transferCall, nil, ReasonStateStoreUnavailable, false},
		{"schema store unreachable", "arguments: {mode: validate}\n", func(c *Config) { c.Schemas = fakeSchemas{err: errBroken} }, transferCall, nil, ReasonStateStoreUnavailable, false},
		{"schema not recorded, validate", "arguments: {mode: validate}\n", func(c *Config) { c.Schemas = fakeSchemas{} }, transferCall, nil, ReasonAllowed, false},
		{"schema not recorded, require", "arguments: {mode: require}\n", func(c *Config) { c.Schemas = fakeSchemas{} }, transferCall, nil, ReasonArgumentsInvalid, false},
		{"schema unusable", "arguments: {mode: validate}\n", func(c *Config) { c.Schemas = fakeSchemas{schema: []byte(`{"type":7}`), found: true} }, transferCall, nil, ReasonArgumentsInvalid, false},
		{"schema unusable, cached", "arguments: {mode: validate}\n", func(c *Config) { c.Schemas = fakeSchemas{schema: []byte(`{"type":7}`), found: true} }, transferCall, nil, ReasonArgumentsInvalid, true},
		{"schema cached", "arguments: {mode: validate}\n", nil, transferCall, nil, ReasonAllowed, true},
		{"off, a param header, no schema store", "arguments: {mode: off}\n", func(c *Config) { c.Schemas = nil }, transferCall, []string{"mcp-param-to", "x"}, ReasonAllowed, false},
		{"off, a param header that disagrees", "arguments: {mode: off}\n", nil, toolCall("transfer", `{"amount":5,"to":"a"}`), []string{"mcp-param-to", "b"}, ReasonHeaderMismatch, false},
		{"prompt store unreachable", "arguments: {mode: validate}\n", func(c *Config) { c.Prompts = fakeSchemas{err: errBroken} }, greet, nil, ReasonStateStoreUnavailable, false},
		{"prompt schema unusable", "arguments: {mode: validate}\n", func(c *Config) { c.Prompts = fakeSchemas{schema: []byte(`[`), found: true} }, greet, nil, ReasonArgumentsInvalid, false},
		{"prompt schema not recorded", "arguments: {mode: require}\n", func(c *Config) { c.Prompts = fakeSchemas{} }, greet, nil, ReasonArgumentsInvalid, false},
		{"prompt schema", "arguments: {mode: require}\n", func(c *Config) {
			c.Prompts = fakeSchemas{schema: []byte(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`), found: true}
		}, greet, nil, ReasonAllowed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := argsDecider(t, tt.arguments, transferDef).Config()
			if tt.edit != nil {
				tt.edit(&c)
			}
			d, err := NewDecider(c)
			if err != nil {
				t.Fatal(err)
			}
			q := post("alice", tt.body)
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				q.Headers[tt.hdr[i]] = []string{tt.hdr[i+1]}
			}
			got := d.Decide(context.Background(), q)
			if tt.wantTwice {
				got = d.Decide(context.Background(), q)
			}
			if got.Reason != tt.want {
				t.Fatalf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
			if got.Reason != ReasonAllowed && got.Detail == "" {
				t.Error("refused without a detail")
			}
		})
	}
}

// TestPolicyStorePublish: Publish makes a compiled policy live, reports no
// change for the same bytes, and keeps the live one on a compile error;
// Ready says whether one is live.
func TestPolicyStorePublish(t *testing.T) {
	s := new(PolicyStore)
	if s.Ready() == nil {
		t.Fatal("ready with no policy")
	}
	src := []byte("default: deny\nallow: [\"payments/search\"]\n")
	if changed, err := s.Publish("p.yaml", src); !changed || err != nil {
		t.Fatalf("first publish: %v, %v", changed, err)
	}
	if s.Ready() != nil {
		t.Error("not ready after a publish")
	}
	v := s.Load().Version
	if changed, err := s.Publish("p.yaml", src); changed || err != nil {
		t.Errorf("same bytes: %v, %v", changed, err)
	}
	if changed, err := s.Publish("p.yaml", []byte("default: maybe\n")); changed || err == nil || s.Load().Version != v {
		t.Errorf("a bad policy: %v, %v; live %s, want %s", changed, err, s.Load().Version, v)
	}
	if changed, err := s.Publish("p.yaml", append(src, '\n')); !changed || err != nil || s.Load().Version == v {
		t.Errorf("new bytes: %v, %v", changed, err)
	}
	if _, err := CompilePolicy(t.TempDir()+"/p.yaml", []byte("default: deny\narguments: {servers: {s: {tools: {t: {schema_file: missing.json}}}}}\n")); err == nil ||
		!strings.Contains(err.Error(), "missing.json") {
		t.Errorf("a missing schema_file: %v", err)
	}
}

// TestDetailTextWhenErrors: a failed `when` is named in the detail after
// the decision's own detail.
func TestDetailTextWhenErrors(t *testing.T) {
	src := "default: deny\nallow:\n  - {id: big, match: payments/transfer, when: args.amount > 5}\n"
	lp, err := CompilePolicy("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	store := new(PolicyStore)
	store.Store(lp)
	d, err := NewDecider(Config{ServerID: "payments", Policies: store, Verifier: subjectVerifier{}})
	if err != nil {
		t.Fatal(err)
	}
	got := d.Decide(context.Background(), post("alice", toolCall("transfer", `{"amount":"x"}`)))
	if got.Reason != ReasonDefaultDeny || len(got.WhenErrors) != 1 || !strings.Contains(got.DetailText(), `"big"`) {
		t.Fatalf("%s, when errors %v, detail %q", got.Reason, got.WhenErrors, got.DetailText())
	}
	got.Detail = "first"
	if dt := got.DetailText(); !strings.HasPrefix(dt, "first; ") {
		t.Errorf("detail %q", dt)
	}
}
