package mcpmethod

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestTableMatchesSchemas: for every revision whose schema.json is in
// testdata/shared/mcp-schema (a copy of ../shared/mcp-schema), the table lists exactly the methods of the schema's
// Client/Server Request/Notification unions, with that revision and sender.
func TestTableMatchesSchemas(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "shared", "mcp-schema")
	for _, rev := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, rev, "schema.json"))
			if err != nil {
				t.Fatal(err)
			}
			type def struct {
				AnyOf []struct {
					Ref string `json:"$ref"`
				} `json:"anyOf"`
				Properties struct {
					Method struct{ Const string } `json:"method"`
				} `json:"properties"`
			}
			var schema struct {
				Defs        map[string]def `json:"$defs"`       // 2026-07-28
				Definitions map[string]def `json:"definitions"` // earlier revisions
			}
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			defs := schema.Defs
			if defs == nil {
				defs = schema.Definitions
			}
			if len(defs) == 0 {
				t.Fatal("schema has no definitions")
			}
			want := map[string]Sender{}
			for union, from := range map[string]Sender{"ClientRequest": Client, "ClientNotification": Client, "ServerRequest": Server, "ServerNotification": Server} {
				for _, ref := range defs[union].AnyOf {
					m := defs[filepath.Base(ref.Ref)].Properties.Method.Const
					if m == "" {
						t.Fatalf("%s: %s has no method const", union, ref.Ref)
					}
					want[m] |= from
				}
			}
			got := map[string]Sender{}
			for _, m := range Methods {
				if slices.Contains(m.Revisions, rev) {
					got[m.Name] = m.From
				}
			}
			for m, from := range want {
				if g, ok := got[m]; !ok {
					t.Errorf("%s defines %s; the table does not", rev, m)
				} else if g&from != from {
					t.Errorf("%s: %s sent by %b in the schema, %b in the table", rev, m, from, g)
				}
			}
			for m := range got {
				if _, ok := want[m]; !ok {
					t.Errorf("the table gives %s revision %s, whose schema does not define it", m, rev)
				}
			}
		})
	}
}

func TestLookup(t *testing.T) {
	if !sort.SliceIsSorted(Methods, func(i, j int) bool { return Methods[i].Name < Methods[j].Name }) {
		t.Fatal("Methods is not in name order")
	}
	tests := []struct {
		give       string
		wantOK     bool
		wantClient bool
		wantTarget TargetKind
	}{
		{"tools/call", true, true, Tool},
		{"prompts/get", true, true, Prompt},
		{"resources/unsubscribe", true, true, Resource},
		{"subscriptions/listen", true, true, ResourceList},
		{"completion/complete", true, true, Reference},
		{"notifications/message", true, false, None},
		{"ping", true, true, None},
		{"Tools/Call", false, false, None},
		{"tools/call ", false, false, None},
		{"", false, false, None},
	}
	for _, tt := range tests {
		m, ok := Lookup(tt.give)
		if ok != tt.wantOK || FromClient(tt.give) != tt.wantClient || m.Target != tt.wantTarget {
			t.Errorf("Lookup(%q) = %+v, %v (client %v); want ok %v client %v target %v", tt.give, m, ok, FromClient(tt.give), tt.wantOK, tt.wantClient, tt.wantTarget)
		}
		if ok && (m.Target == None) != (m.Member == "") {
			t.Errorf("%s: target %v with member %q", tt.give, m.Target, m.Member)
		}
	}
}

func TestPseudoMethodsUnclaimed(t *testing.T) {
	for _, p := range []string{Response, Batch, HTTPGet, HTTPDelete} {
		if _, ok := Lookup(p); ok {
			t.Errorf("pseudo-method %q is also an MCP method", p)
		}
		if !Pseudo(p) || Label(p) != p {
			t.Errorf("%q: Pseudo %v, Label %q", p, Pseudo(p), Label(p))
		}
	}
	for in, want := range map[string]string{"tools/call": "tools/call", "": "none", "x/unknown": "other", "notifications/message": "other", "get": "other"} {
		if got := Label(in); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSets checks each method set against an oracle drawn from Methods (or,
// for TaskIDInName, SEP-2663's list), over every name in the table, every
// pseudo-method and names no revision defines.
func TestSets(t *testing.T) {
	isTaskRequest := func(m Method) bool { // a tasks/ request other than the list
		return strings.HasPrefix(m.Name, "tasks/") && m.Name != TasksList
	}
	tests := []struct {
		give   string
		set    func(string) bool
		oracle func(Method) bool
	}{
		{"Task", Task, isTaskRequest},
		{"TaskIDInName", TaskIDInName, func(m Method) bool {
			return m.Name == TasksGet || m.Name == TasksUpdate || m.Name == TasksCancel
		}},
		{"Paginated", Paginated, func(m Method) bool { return m.From&Client != 0 && strings.HasSuffix(m.Name, "/list") }},
		{"OneResource", OneResource, func(m Method) bool { return m.Target == Resource }},
		{"Concealable", Concealable, func(m Method) bool {
			return m.Target == Tool || m.Target == Prompt || m.Name == ResourcesRead || isTaskRequest(m)
		}},
	}
	outside := []string{"", Response, Batch, HTTPGet, HTTPDelete, "tools/Call", "tasks/", "tasks/unknown", "roots/list "}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			n := 0
			for _, m := range Methods {
				want := tt.oracle(m)
				if got := tt.set(m.Name); got != want {
					t.Errorf("%s(%q) = %v, want %v", tt.give, m.Name, got, want)
				}
				if want {
					n++
				}
			}
			if n == 0 {
				t.Errorf("%s holds no method of the table", tt.give)
			}
			for _, name := range outside {
				if tt.set(name) {
					t.Errorf("%s(%q) = true, want false", tt.give, name)
				}
			}
		})
	}
}

// TestRevisions: Revisions is every revision the table names, oldest first,
// and orders as a string compare does (callers compare with >=).
func TestRevisions(t *testing.T) {
	named := map[string]bool{}
	for _, m := range Methods {
		for _, r := range m.Revisions {
			if r != "tasks" {
				named[r] = true
			}
		}
	}
	if len(named) != len(Revisions) {
		t.Errorf("the table names %d revisions, Revisions lists %d", len(named), len(Revisions))
	}
	for i, r := range Revisions {
		if !named[r] {
			t.Errorf("no method names revision %s", r)
		}
		if i > 0 && Revisions[i-1] >= r {
			t.Errorf("Revisions out of order at %s", r)
		}
	}
}
