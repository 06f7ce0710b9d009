package policy

import (
	"reflect"
	"strings"
	"testing"
)

// TestArguments: the arguments setting of a tool or prompt, from its own
// entry, its server's mode, or the top-level mode.
func TestArguments(t *testing.T) {
	p := mustCompile(t, lines(
		"pin_mode: tofu",
		"arguments:",
		"  mode: validate",
		"  servers:",
		"    payments:",
		"      mode: require",
		"      tools:",
		"        debug: off",
		"        refund: {mode: require, schema_file: schemas/refund.json}",
		"        quote: {schema_file: /etc/schemas/quote.json}",
		"      prompts:",
		"        summarize: {mode: validate, schema_file: schemas/refund.json}",
		"    wiki:",
		"      tools:",
		"        search: off",
	))
	tests := []struct {
		server string
		prompt bool
		name   string
		want   ArgumentsSetting
	}{
		{"payments", false, "transfer", ArgumentsSetting{Mode: ArgumentsRequire}},
		{"payments", false, "debug", ArgumentsSetting{Mode: ArgumentsOff}},
		{"payments", false, "refund", ArgumentsSetting{Mode: ArgumentsRequire, SchemaFile: "schemas/refund.json"}},
		{"payments", false, "quote", ArgumentsSetting{Mode: ArgumentsValidate, SchemaFile: "/etc/schemas/quote.json"}},
		{"payments", true, "summarize", ArgumentsSetting{Mode: ArgumentsValidate, SchemaFile: "schemas/refund.json"}},
		{"payments", true, "other", ArgumentsSetting{Mode: ArgumentsRequire}},
		{"wiki", false, "search", ArgumentsSetting{Mode: ArgumentsOff}},
		{"wiki", false, "read", ArgumentsSetting{Mode: ArgumentsValidate}},
		{"other", true, "x", ArgumentsSetting{Mode: ArgumentsValidate}},
	}
	for _, tt := range tests {
		if got := p.Arguments(tt.server, tt.prompt, tt.name); got != tt.want {
			t.Errorf("Arguments(%s, %v, %s) = %+v, want %+v", tt.server, tt.prompt, tt.name, got, tt.want)
		}
	}
	if want := []string{"schemas/refund.json", "/etc/schemas/quote.json"}; !reflect.DeepEqual(p.SchemaFiles(), want) {
		t.Errorf("SchemaFiles %q, want %q", p.SchemaFiles(), want)
	}
	if !p.ValidatesArguments() {
		t.Error("ValidatesArguments false")
	}
	if off := mustCompile(t, "default: deny\n"); off.ValidatesArguments() || off.Arguments("a", false, "b").Mode != ArgumentsOff {
		t.Error("no arguments setting validates")
	}
}

func TestArgumentsErrors(t *testing.T) {
	tests := []struct{ give, wantErr string }{
		{"arguments:\n  mode: validate\n", "set pin_mode: tofu or strict"},
		{"arguments:\n  servers:\n    s:\n      mode: require\n", "set pin_mode"},
		{"arguments:\n  servers:\n    s:\n      tools:\n        t: validate\n", "set pin_mode"},
		{"arguments:\n  mode: strict\n", `must be off, validate or require, not "strict"`},
		{"arguments:\n  mode: true\n", "must be a string"},
		{"arguments:\n  servers:\n    s:\n      tools:\n        t: {mode: validate, schema_file: \"\"}\n", "must name a file"},
		{"arguments:\n  servers:\n    s:\n      tools:\n        t: {mode: validate, file: x}\n", `unknown key "file"`},
		{"arguments:\n  servers:\n    s:\n      tool: {}\n", `unknown key "tool"`},
		{"arguments: validate\n", "arguments must be a mapping"},
		{"arguments:\n  servers:\n    s:\n      prompts:\n        p: validate\n", "set pin_mode"},
	}
	for _, tt := range tests {
		if _, err := Compile("p.yaml", []byte(tt.give)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%q: err %v, want %q", tt.give, err, tt.wantErr)
		}
	}
	// A schema_file needs no pinning; off needs none either.
	for _, ok := range []string{
		"arguments:\n  servers:\n    s:\n      tools:\n        t: {mode: require, schema_file: t.json}\n",
		"arguments:\n  mode: off\n",
		"arguments:\n  servers:\n    s:\n      prompts:\n        p: {schema_file: p.json}\n",
	} {
		if _, err := Compile("p.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestScopeHierarchy: which token scopes satisfy a needed scope.
func TestScopeHierarchy(t *testing.T) {
	p := mustCompile(t, lines(
		"scope_hierarchy:",
		"  implies:",
		"    mcp:admin: [mcp:tools, files:write]",
		"    mcp:tools: [mcp:tools:call]",
		"    files:write: [files:audit]",
		"    a: [b]",
		"    b: [a]",
		"  actions: [admin, write, read]",
	))
	tests := []struct {
		have []string
		need string
		want bool
	}{
		{[]string{"x"}, "x", true},
		{nil, "x", false},
		{[]string{"mcp:admin"}, "mcp:tools", true},
		{[]string{"mcp:admin"}, "mcp:tools:call", true}, // transitive
		{[]string{"mcp:tools"}, "mcp:admin", false},     // never upwards
		{[]string{"files:admin"}, "files:write", true},  // actions order
		{[]string{"files:admin"}, "files:read", true},
		{[]string{"files:write"}, "files:read", true},
		{[]string{"files:read"}, "files:write", false},
		{[]string{"files:*"}, "files:admin", true},
		{[]string{"files:*"}, "files:delete", false},   // not a listed action
		{[]string{"files:admin"}, "files:audit", true}, // action, then implies
		{[]string{"files:write"}, "repo:read", false},  // another resource
		{[]string{"files"}, "files:read", false},       // a bare resource implies nothing
		{[]string{"mcp:files:write"}, "mcp:files:read", true},
		{[]string{"a"}, "c", false}, // a cycle ends
		{[]string{"a"}, "b", true},
	}
	for _, tt := range tests {
		if got := p.ScopeSatisfied(tt.have, tt.need); got != tt.want {
			t.Errorf("ScopeSatisfied(%q, %q) = %v, want %v", tt.have, tt.need, got, tt.want)
		}
	}
	if mustCompile(t, "default: deny\n").ScopeSatisfied([]string{"files:write"}, "files:read") {
		t.Error("no hierarchy, yet files:write satisfies files:read")
	}
	for _, bad := range []string{
		"scope_hierarchy:\n  implies:\n    \"a b\": [c]\n",
		"scope_hierarchy:\n  implies:\n    a: [c, c]\n",
		"scope_hierarchy:\n  actions: [\"x:y\"]\n",
		"scope_hierarchy:\n  actions: [\"*\"]\n",
		"scope_hierarchy:\n  implies: [a]\n",
		"scope_hierarchy:\n  order: [a]\n",
	} {
		if _, err := Compile("p.yaml", []byte(bad)); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

// TestListenScopes: a subscriptions/listen needs every scope the rules
// deciding its method and each of its URIs name.
func TestListenScopes(t *testing.T) {
	p := mustCompile(t, lines(
		"methods:",
		"  allow:",
		"    - {id: listen, method: subscriptions/listen, scopes: [mcp:listen]}",
		"allow:",
		"  - {id: a, match: \"resource:payments/file:///a/**\", scopes: [files:a]}",
		"  - {id: b, match: \"resource:payments/file:///b/**\", scopes: [files:b, files:a]}",
	))
	in := &Input{Op: OpRequest, Method: "subscriptions/listen", Server: "payments", URIs: []string{"file:///a/x", "file:///b/y"}}
	res := p.Evaluate(in)
	if want := []string{"mcp:listen", "files:a", "files:b"}; res.Decision != Allow || !reflect.DeepEqual(res.Scopes, want) {
		t.Fatalf("listen: %v scopes %q, want allow %q", res.Decision, res.Scopes, want)
	}
}
