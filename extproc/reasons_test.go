package extproc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// wantRefusals is how each seam reason must be answered, written here
// from the rules (docs/seam.md, "The response seam (ext_proc)": a local
// reply before the headers go out, the body replaced after; JSON-RPC 2.0
// section 5.1 codes), not
// copied from the refusals table: a new reason fails TestRefusalTable
// until someone decides its answer here.
var wantRefusals = map[string]refusal{
	"no_authorization_metadata": {503, -32603},
	"invalid_cursor":            {400, -32602},
	"response_redirect":         {502, -32603},
	"response_compressed":       {502, -32603},
	"content_type_ambiguous":    {502, -32603},
	"charset_unsupported":       {502, -32603},
	"unexpected_response":       {0, -32603},
	"response_unfilterable":     {0, -32603},
	"response_too_large":        {0, -32603},
	"result_on_error_status":    {0, -32603},
}

// declaredSeamReasons parses the package's non-test sources and returns
// every constant named Reason*: value → name.
func declaredSeamReasons(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, fn := range files {
		if strings.HasSuffix(fn, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), fn, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Reason") {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s is not a string literal", name.Name)
					}
					v, _ := strconv.Unquote(lit.Value)
					if prev, dup := out[v]; dup {
						t.Errorf("seam reason %q declared twice (%s, %s)", v, prev, name.Name)
					}
					out[v] = name.Name
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("%d Reason constants found: the walk is broken", len(out))
	}
	return out
}

// readmeSeamReasons parses README's (or docs/'s) table of the seam's
// reasons: reason → [HTTP, code] cells.
func readmeSeamReasons(t *testing.T) map[string][2]string {
	t.Helper()
	files, _ := filepath.Glob("../docs/*.md")
	var doc string
	for _, fn := range append([]string{"../README.md"}, files...) {
		b, err := os.ReadFile(fn)
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(string(b), "| Seam reason | HTTP | JSON-RPC code |"); i >= 0 {
			doc = string(b[i:])
			if j := strings.Index(doc, "\n\n"); j >= 0 {
				doc = doc[:j]
			}
			break
		}
	}
	if doc == "" {
		t.Fatal("README (and docs/) lack the table of the seam's reasons")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]+) \\| (-[0-9]+) \\|")
	out := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("the table lists %s twice", m[1])
		}
		out[m[1]] = [2]string{m[2], m[3]}
	}
	if n := strings.Count(doc, "\n| `"); n != len(out) {
		t.Errorf("%d rows, %d of them read", n, len(out))
	}
	return out
}

// TestRefusalTable: the seam's reasons counted four ways (the Reason*
// constants, the refusals table, wantRefusals above and the table of
// docs/seam.md) are one set, and the two tables and wantRefusals agree on each
// reason's HTTP status and JSON-RPC code.
func TestRefusalTable(t *testing.T) {
	declared := declaredSeamReasons(t)
	readme := readmeSeamReasons(t)
	sets := map[string]map[string]bool{"refusals": {}, "wantRefusals": {}, "README": {}, "declared": {}}
	for r := range refusals {
		sets["refusals"][r] = true
	}
	for r := range wantRefusals {
		sets["wantRefusals"][r] = true
	}
	for r := range readme {
		sets["README"][r] = true
	}
	for r := range declared {
		sets["declared"][r] = true
	}
	for name, set := range sets {
		for other, o := range sets {
			for r := range set {
				if !o[r] {
					t.Errorf("%s lists %s, %s does not", name, r, other)
				}
			}
		}
	}
	var names []string
	for r := range wantRefusals {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		want := wantRefusals[r]
		if got := refusalOfReason(r); got != want {
			t.Errorf("%s: refusals says %+v, want %+v", r, got, want)
		}
		cell := "the upstream's, body replaced"
		if want.status != 0 {
			cell = strconv.Itoa(want.status) + " local reply"
		}
		if got := readme[r]; got != [2]string{cell, strconv.Itoa(want.code)} {
			t.Errorf("%s: README says %q %q, want %q %d", r, got[0], got[1], cell, want.code)
		}
	}
}

// TestMetadataRefusedLogged: Check metadata that does not parse
// (decision.ParseMetadata) is refused as no metadata, with one warning
// naming the member; absent metadata is refused without one.
func TestMetadataRefusedLogged(t *testing.T) {
	f := newFixture(t)
	x := jsonAnswer(f.listRequest("alice", "tools/list", "1", ""), `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
	x.meta["dry_run"] = "false"
	if got := f.envoy.do(t, listRoute, x); got.status != 503 {
		t.Fatalf("status %d, want 503 (%s)", got.status, got.body)
	}
	warned := f.logs.FilterMessage("authorization metadata refused").All()
	if len(warned) != 1 || !strings.Contains(warned[0].ContextMap()["error"].(string), "dry_run") {
		t.Errorf("warnings %v, want one naming dry_run", warned)
	}
	x.meta = nil
	f.envoy.do(t, listRoute, x)
	if n := f.logs.FilterMessage("authorization metadata refused").Len(); n != 1 {
		t.Errorf("%d warnings after a stream without metadata, want still 1", n)
	}
}
