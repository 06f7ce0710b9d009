package mcpmethod

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyTableNamesMethods: outside this package, non-test Go code names
// no MCP method and no MCP revision by a string literal: every such name is
// a constant here, so the parser, the policy, the decision, concealment,
// the processor and the Envoy checks cannot drift apart.
func TestOnlyTableNamesMethods(t *testing.T) {
	names := map[string]string{}
	for _, m := range Methods {
		if strings.Contains(m.Name, "/") { // "initialize" and "ping" are also ordinary words
			names[m.Name] = "method"
		}
	}
	for _, r := range Revisions {
		names[r] = "revision"
	}
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "k8s", "examples", "bench", ".git", "mcpmethod":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] != "" {
					found = append(found, p+": the "+names[s]+" "+s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 25 {
		t.Fatalf("only %d method and revision names: the table is broken", len(names))
	}
	for _, f := range found {
		t.Errorf("%s: name it by its mcpmethod constant", f)
	}
}
