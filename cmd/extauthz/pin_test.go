package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// TestPin: extauthz pin prints, for JSON, batch and SSE captures, a pins
// block that compiles into a policy whose pins are toolpin's fingerprints of
// the listed definitions; a capture without a tools/list result, or with a
// tool that cannot be fingerprinted, exits 1.
func TestPin(t *testing.T) {
	dir := t.TempDir()
	search := `{"name":"search","description":"Search","inputSchema":{"type":"object"}}`
	search2 := `{"name":"search","description":"Search v2","inputSchema":{"type":"object"}}`
	odd := `{"name":"odd name: x","inputSchema":{"type":"object"}}`
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonFile := write("a.json", `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+search+`,`+odd+`],"nextCursor":"c"}}`)
	batch := write("b.json", `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"tools":[`+search+`]}}]`)
	sse := write("c.sse", "\xef\xbb\xbf: comment\r\nevent: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\r\ndata: \"result\":{\"tools\":["+search2+"]}}\r\n\r\n")
	code, out, errs := runOut(t, "pin", "--server-id", "payments", jsonFile, batch, sse)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p, err := policy.Compile("pins.yaml", []byte("default: deny\npin_mode: strict\n"+out))
	if err != nil {
		t.Fatalf("the pins block does not compile: %v\n%s", err, out)
	}
	for name, defs := range map[string][]string{"search": {search, search2}, "odd name: x": {odd}} {
		got := p.Pins("payments", name)
		if len(got) != len(defs) {
			t.Errorf("%s: pins %v, want %d", name, got, len(defs))
			continue
		}
		for i, def := range defs {
			if fp, _, _ := toolpin.Fingerprint([]byte(def)); got[i] != fp {
				t.Errorf("%s[%d] = %s, want %s", name, i, got[i], fp)
			}
		}
	}
	for _, tt := range []struct {
		body string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"prompts":[]}}`, "no tools/list result"},
		// The seam refuses such answers (response_unfilterable): no client saw them.
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","name":"b"}]}}`, "not a strict JSON-RPC message, which the seam refuses (response_unfilterable): mcpparse: duplicate_key"},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"tools":[{"name":"b"}]}}`, `duplicate member "tools"`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","Name":"b"}]}}`, "case_variant_key"},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"n\":1e400}]}}\n\n", "non_canonical_number"},
	} {
		code, _, errs := runOut(t, "pin", "--server-id", "payments", write("bad.json", tt.body))
		if code != 1 || !strings.Contains(errs, tt.want) {
			t.Errorf("%s: exit %d %q, want 1 and %q", tt.body, code, errs, tt.want)
		}
	}
	if code, _, errs := runOut(t, "pin", jsonFile); code != 2 || !strings.Contains(errs, "no MCP server id") {
		t.Errorf("no server id: exit %d %q", code, errs)
	}
}

// pinLog is a decision log the real processor wrote (extproc's
// TestPinDecisionLog captures it and checks it is current): payments'
// tools in two pages, a receipt, a later list where issue_refund was
// reworded, a prompts/list, and github's tools.
const pinLog = "cmd/extauthz/testdata/pin/decisions.jsonl"

// TestPinDecisionLog: pin --decision-log prints the golden pins block of
// every server and tool of the captured log (issue_refund with both of its
// definitions, first seen first, and a comment naming where), a block that
// compiles into a policy with those pins; the same from stdin (but for
// the line numbers) with lines
// of other kinds and blank lines mixed in; --server-id keeps one server.
func TestPinDecisionLog(t *testing.T) {
	code, out, errs := runOut(t, "pin", "--decision-log", pinLog)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want, same := testkit.Golden(t, filepath.Join("cmd", "extauthz", "testdata", "pin", "decisions.pins.golden"), []byte(out)); !same {
		t.Errorf("pins (go test ./cmd/extauthz -run TestPinDecisionLog -update):\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(out, "# issue_refund was listed with 2 definitions (first seen at lines 1, 4, in this order)") {
		t.Errorf("no comment on issue_refund's two definitions:\n%s", out)
	}
	p, err := policy.Compile("pins.yaml", []byte("default: deny\npin_mode: strict\n"+out))
	if err != nil {
		t.Fatalf("the pins block does not compile: %v\n%s", err, out)
	}
	// The oracle: the fingerprints of the log's lines, read here on their own.
	logged := map[[2]string][]string{}
	b, err := os.ReadFile(pinLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			Kind, List, Server string
			Tools              []struct{ Name, Fingerprint string }
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		for _, tool := range l.Tools {
			k := [2]string{l.Server, tool.Name}
			if !slices.Contains(logged[k], tool.Fingerprint) {
				logged[k] = append(logged[k], tool.Fingerprint)
			}
		}
	}
	if len(logged) != 6 || len(logged[[2]string{"payments", "issue_refund"}]) != 2 {
		t.Fatalf("the captured log changed shape: %v", logged)
	}
	for k, fps := range logged {
		if got := p.Pins(k[0], k[1]); !slices.Equal(got, fps) {
			t.Errorf("%s/%s: pins %v, want %v", k[0], k[1], got, fps)
		}
	}

	// stdin, with what else a decision log holds.
	mixed := `{"level":"info","ts":"2026-12-02T03:00:00Z","msg":"decision","kind":"decision","decision":"allow","server":"payments","tool":"search"}` + "\n\n" +
		`{"level":"info","msg":"list refused","kind":"list_filter","method":"tools/list","server":"payments","result":"refused","reason":"unfilterable_list"}` + "\n" +
		string(b)
	shifted := strings.Replace(out, "lines 1, 4,", "lines 4, 7,", 1) // three lines more above
	if code, got, errs := runStdin(t, mixed, "pin", "--decision-log", "-"); code != 0 || got != shifted {
		t.Errorf("stdin: exit %d %s\n%s", code, errs, got)
	}
	code, got, errs := runOut(t, "pin", "--decision-log", pinLog, "--server-id", "github")
	if code != 0 || strings.Contains(got, "payments") || !strings.Contains(got, "  github:\n    delete_repo: [") {
		t.Errorf("--server-id github: exit %d %s\n%s", code, errs, got)
	}
}

// runStdin is runOut with stdin reading in.
func runStdin(t *testing.T, in string, args ...string) (int, string, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old; f.Close() }()
	return runOut(t, args...)
}

// TestPinDecisionLogRefuses: what pin --decision-log refuses, and with
// which exit status and message; a list whose tools were cut at the line's
// budget is printed with a note.
func TestPinDecisionLogRefuses(t *testing.T) {
	const fp = "tooldef-v2:sha256:0f01237a4d5f227afb96ea1a2a0e42ea41e98effc456b804579bedbed4cdcbf9"
	list := func(tools string) string {
		return `{"msg":"list filtered","kind":"list_filter","method":"tools/list","server":"payments","list":"tools","result":"ok"` + tools + "}\n"
	}
	ok := list(`,"tools":[{"name":"read_file","fingerprint":"` + fp + `"}]`)
	v1 := "tooldef-v1" + fp[len("tooldef-v2"):] // logged before tooldef-v2
	for _, tt := range []struct {
		name string
		give string
		code int
		want string
	}{
		{"malformed lines, each by number", ok + "{\"kind\":\n" + ok + "not json\n" + ok, 1, "f.jsonl:2: not a strict JSON line: mcpparse: syntax"},
		{"the second malformed line too", ok + "{\"kind\":\n" + ok + "not json\n", 1, "f.jsonl:4: not a JSON object"},
		{"trailing data", `{"kind":"x"} {}` + "\n", 1, "f.jsonl:1: not a strict JSON line: mcpparse: trailing_data"},
		// encoding/json would take the last tools, or fold Tools onto tools.
		{"duplicate members", ok + list(`,"tools":[{"name":"a","fingerprint":"`+fp+`"}],"tools":[{"name":"b","fingerprint":"`+fp+`"}]`), 1, "f.jsonl:2: not a strict JSON line: mcpparse: duplicate_key"},
		{"case-variant members", list(`,"tools":[{"name":"a","fingerprint":"` + fp + `"}],"Tools":[]`), 1, "f.jsonl:1: not a strict JSON line: mcpparse: case_variant_key"},
		{"duplicate members in a tool", list(`,"tools":[{"name":"a","name":"b","fingerprint":"` + fp + `"}]`), 1, "f.jsonl:1: not a strict JSON line: mcpparse: duplicate_key"},
		{"a duplicate on a line of another kind", `{"kind":"receipt","kind":"list_filter"}` + "\n" + ok, 1, "f.jsonl:1: not a strict JSON line: mcpparse: duplicate_key"},
		{"invalid UTF-8", "{\"kind\":\"\xff\"}\n", 1, "f.jsonl:1: not UTF-8"},
		{"not a fingerprint", list(`,"tools":[{"name":"a","fingerprint":"sha256:00"}]`), 1, `tools[0] (a): "sha256:00" is not a tooldef-v2 fingerprint`},
		{"only tooldef-v1 entries", list(`,"tools":[{"name":"read_file","fingerprint":"` + v1 + `"}]`), 1, "no tool definition can be pinned (1 tool of a superseded fingerprint version, logged before tooldef-v2"},
		{"no name", list(`,"tools":[{"fingerprint":"` + fp + `"}]`), 1, "tools[0] has no name"},
		{"tools not a list", list(`,"tools":{"a":"b"}`), 1, "tools is not a list"},
		{"only tools pinned by raw bytes", list(`,"tools":[{"name":"a","fingerprint":"` + fp + `","raw":true}]`), 1, "no tool definition can be pinned (1 tool not strict JSON)"},
		{"no server", `{"kind":"list_filter","list":"tools","tools":[]}` + "\n", 1, "without a server"},
		{"no tools/list line", `{"kind":"receipt","server":"payments"}` + "\n", 1, "no tools/list line"},
		{"pinning off", list(""), 1, "1 tools/list line but no fingerprint (pinning was off"},
		{"empty", "", 1, "no tools/list line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "f.jsonl")
			if err := os.WriteFile(file, []byte(tt.give), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runOut(t, "pin", "--decision-log", file)
			if code != tt.code || !strings.Contains(errs, tt.want) || out != "" {
				t.Errorf("exit %d %q (stdout %q), want %d and %q", code, errs, out, tt.code, tt.want)
			}
		})
	}
	many := ""
	for range 12 {
		many += "x\n"
	}
	file := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(file, []byte(many), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runOut(t, "pin", "--decision-log", file); code != 1 || strings.Count(errs, "not a JSON object") != maxPinLogErrors || !strings.Contains(errs, "(more not shown)") {
		t.Errorf("twelve bad lines: exit %d %s", code, errs)
	}

	cut := list(`,"tools":[{"name":"read_file","fingerprint":"`+fp+`"}],"tools_omitted":37`) + list("")
	file = filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(file, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runOut(t, "pin", "--decision-log", file)
	if code != 0 || !strings.Contains(out, "    # line 1: 37 more tools of that list were not logged") || !strings.Contains(errs, "37 more tools") ||
		!strings.Contains(errs, "1 tools/list line without fingerprints") || !strings.Contains(out, "read_file: ["+fp+"]") {
		t.Errorf("cut list: exit %d %s\n%s", code, errs, out)
	}

	// A log spanning the upgrade: the tooldef-v1 entries are left out, with
	// a comment; the tooldef-v2 ones are printed.
	mixed := list(`,"tools":[{"name":"read_file","fingerprint":"`+v1+`"},{"name":"search","fingerprint":"`+v1+`"}]`) + ok
	file = filepath.Join(t.TempDir(), "mixed.jsonl")
	if err := os.WriteFile(file, []byte(mixed), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runOut(t, "pin", "--decision-log", file)
	if code != 0 || !strings.Contains(out, "    # line 1: 2 tools of an earlier fingerprint version (tooldef-v1, logged before tooldef-v2) left out: such pins never match") ||
		!strings.Contains(errs, "tooldef-v1, logged before tooldef-v2") || !strings.Contains(out, "    read_file: ["+fp+"]\n") || strings.Contains(out, v1) || strings.Contains(out, "search:") {
		t.Errorf("a log of tooldef-v1 and tooldef-v2 lines: exit %d %s\n%s", code, errs, out)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--decision-log", pinLog, "x.json"}, "reads no RESPONSE files"},
		{[]string{"--decision-log", pinLog, "--config", "examples/config.yaml"}, "--config names the server"},
		{[]string{"--decision-log", filepath.Join(t.TempDir(), "missing.jsonl")}, "no such file"},
	} {
		if code, _, errs := runOut(t, append([]string{"pin"}, tt.args...)...); code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}

// TestPinNotStrictJSON: a tool that cannot be fingerprinted (in a capture
// the seam passes, a definition over toolpin's limits; a log entry the
// processor marked "raw") is a comment in the pins block, on stderr too,
// and the other tools are printed: exit 0, and the block compiles with
// their pins only.
func TestPinNotStrictJSON(t *testing.T) {
	const fp = "tooldef-v2:sha256:0f01237a4d5f227afb96ea1a2a0e42ea41e98effc456b804579bedbed4cdcbf9"
	dir := t.TempDir()
	search := `{"name":"search","inputSchema":{"type":"object"}}`
	searchFP, _, err := toolpin.Fingerprint([]byte(search))
	if err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(dir, "list.json")
	props := make([]string, mcpparse.DefaultMaxKeys+1) // toolpin's key limit
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{}`, i)
	}
	if err := os.WriteFile(capture, []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"dup","inputSchema":{"type":"object","properties":{`+strings.Join(props, ",")+`}}},`+search+`]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "f.jsonl")
	if err := os.WriteFile(log, []byte(`{"kind":"list_filter","list":"tools","server":"payments","tools":[{"name":"dup","fingerprint":"`+fp+`","raw":true},{"name":"search","fingerprint":"`+searchFP+`"}]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		give []string
		want string // the comment line
	}{
		{"a capture", []string{"--server-id", "payments", capture}, "    # dup: definition is not strict JSON; cannot be pinned by content (" + capture + ", tools[0]: toolpin: mcpparse: too_many_keys"},
		{"a decision log", []string{"--decision-log", log}, "    # dup: definition is not strict JSON; cannot be pinned by content (line 1;"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runOut(t, append([]string{"pin"}, tt.give...)...)
			if code != 0 || !strings.Contains(out, tt.want) || !strings.Contains(errs, "dup: definition is not strict JSON") {
				t.Fatalf("exit %d, stderr %s\nstdout\n%s\nwant a line %q", code, errs, out, tt.want)
			}
			p, err := policy.Compile("pins.yaml", []byte("default: deny\npin_mode: strict\n"+out))
			if err != nil {
				t.Fatalf("does not compile: %v\n%s", err, out)
			}
			if got := p.Pins("payments", "search"); !slices.Equal(got, []string{searchFP}) {
				t.Errorf("search pins %v, want %s", got, searchFP)
			}
			if got := p.Pins("payments", "dup"); got != nil {
				t.Errorf("dup pinned: %v", got)
			}
		})
	}
}

// TestPinYAMLKeys: server ids and tool names a YAML reader would take for
// null, a boolean or a number are quoted, so the block compiles back with
// the same pins under the same strings; simple names stay plain.
func TestPinYAMLKeys(t *testing.T) {
	names := []string{"null", "NULL", "Null", "true", "False", "yes", "No", "on", "OFF", "y", "N", "~", "123", "1.5", "0x1F", "0o17", "1e3",
		".inf", "-.NaN", "+1", "2026", "-", "a: b", "#c", "x y", "é", "", "\"q\"", "line\nbreak",
		"search", "read_file", "a.b-c", "_x", "Nope", "yesterday"}
	plain := map[string]bool{"search": true, "read_file": true, "a.b-c": true, "_x": true, "Nope": true, "yesterday": true}
	dir := t.TempDir()
	var tools []string
	for _, n := range names {
		if n == "" {
			continue // not a tool name: toolpin refuses it
		}
		b, _ := json.Marshal(map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
		tools = append(tools, string(b))
	}
	capture := filepath.Join(dir, "list.json")
	if err := os.WriteFile(capture, []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`+strings.Join(tools, ",")+`]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"2026", "null", "payments"} {
		t.Run(server, func(t *testing.T) {
			code, out, errs := runOut(t, "pin", "--server-id", server, capture)
			if code != 0 {
				t.Fatalf("exit %d %s", code, errs)
			}
			p, err := policy.Compile("pins.yaml", []byte("default: deny\npin_mode: strict\n"+out))
			if err != nil {
				t.Fatalf("does not compile: %v\n%s", err, out)
			}
			for _, def := range tools {
				fp, name, err := toolpin.Fingerprint([]byte(def))
				if err != nil {
					t.Fatal(err)
				}
				if got := p.Pins(server, name); !slices.Equal(got, []string{fp}) {
					t.Errorf("%q on %q: pins %v, want %s\n%s", name, server, got, fp, out)
				}
			}
		})
	}
	for _, n := range names {
		if got := yamlKey(n); (got == n) != plain[n] {
			t.Errorf("yamlKey(%q) = %s, want it plain: %v", n, got, plain[n])
		}
	}
}
