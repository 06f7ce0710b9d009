package decision

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/mcp-extauthz/mcp-extauthz"

// TestLayers keeps the house as README "How it works" draws it: cmd → adapters (extauthz,
// extproc) → decision → mcpparse, policy, internal/*. The core imports no
// protobuf, gRPC or Envoy package and no adapter; no adapter imports
// another; nothing below the core imports it or an adapter
// (internal/policytest, the offline runner of `extauthz test`, sits beside
// the adapters and may import the core). The core decides list items:
// extproc asks it and never imports policy, and cmd never reaches into the
// seam's byte helpers (internal/listfilter, internal/sse, internal/cursor:
// extproc.CheckList, decision.CursorSealer). internal/mcpmethod, which
// every layer may import, imports no package of the module, and
// internal/jsonscan, the walker of validated JSON that mcpparse, the seam's
// byte helpers, bearer and the core share, imports only the standard
// library. Only non-test imports count.
func TestLayers(t *testing.T) {
	adapters := map[string]bool{module + "/extauthz": true, module + "/extproc": true}
	seamBytes := map[string]bool{module + "/internal/listfilter": true, module + "/internal/sse": true, module + "/internal/cursor": true}
	imports := map[string][]string{}
	root := ".."
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		if n := e.Name(); n == "testdata" || n == "k8s" || strings.HasPrefix(n, ".") && p != root {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(p, 0)
		if err != nil {
			return nil // no Go files
		}
		rel, _ := filepath.Rel(root, p)
		imports[filepath.ToSlash(filepath.Join(module, rel))] = pkg.Imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 || imports[module+"/decision"] == nil {
		t.Fatalf("found %d packages; the walk is broken", len(imports))
	}
	for pkg, imps := range imports {
		for _, imp := range imps {
			switch {
			case pkg == module+"/decision" && (strings.Contains(imp, "envoyproxy") || strings.HasPrefix(imp, "google.golang.org/grpc") ||
				strings.HasPrefix(imp, "google.golang.org/protobuf") || strings.HasPrefix(imp, "google.golang.org/genproto")):
				t.Errorf("the core imports %s", imp)
			case adapters[pkg] && adapters[imp]:
				t.Errorf("adapter %s imports adapter %s", pkg, imp)
			case below(pkg) && (imp == module+"/decision" || adapters[imp] || strings.HasPrefix(imp, module+"/cmd")):
				t.Errorf("%s, below the core, imports %s", pkg, imp)
			case pkg == module+"/decision" && adapters[imp]:
				t.Errorf("the core imports adapter %s", imp)
			case pkg == module+"/extproc" && (imp == module+"/policy" || strings.HasPrefix(imp, module+"/policy/")):
				t.Errorf("extproc imports %s: the core decides list items (decision.ListItems)", imp)
			case strings.HasPrefix(pkg, module+"/cmd/") && seamBytes[imp]:
				t.Errorf("%s imports the seam's byte helper %s: ask extproc or the core", pkg, imp)
			case pkg == module+"/internal/mcpmethod" && strings.HasPrefix(imp, module):
				t.Errorf("internal/mcpmethod imports %s: it is the leaf every layer names methods and revisions by", imp)
			case pkg == module+"/internal/jsonscan" && strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
				t.Errorf("internal/jsonscan imports %s: it is a leaf of the standard library only, below mcpparse", imp)
			}
		}
	}
}

// below reports whether pkg sits below the core: mcpparse, policy and
// internal/* but internal/policytest.
func below(pkg string) bool {
	rel := strings.TrimPrefix(pkg, module+"/")
	switch {
	case rel == "internal/policytest":
		return false
	case rel == "mcpparse", rel == "policy", strings.HasPrefix(rel, "internal/"), strings.HasPrefix(rel, "mcpparse/"), strings.HasPrefix(rel, "policy/"):
		return true
	}
	return false
}
