package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestReadmeQuickStartDenial keeps the quick start's denial body true: the
// request and policy digests it abbreviates are those alice's
// delete-repo-denied.json gets from the quick-start config (the offline
// check computes what the service does).
func TestReadmeQuickStartDenial(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`http_body: +(\{.*"rule_id":"no-deletes"\}\}\})`).FindSubmatch(b)
	if m == nil {
		t.Fatal("README: no quick-start http_body of the no-deletes denial")
	}
	shown := map[string]string{}
	for _, k := range []string{"request_digest", "policy_version"} {
		v := regexp.MustCompile(`"` + k + `":"(sha256:[0-9a-f]+)…"`).FindSubmatch(m[1])
		if v == nil {
			t.Fatalf("README's denial body has no abbreviated %s: %s", k, m[1])
		}
		shown[k] = string(v[1])
	}
	code, out, errs := runOut(t, "check", "--config", "examples/config.yaml", "--sub", "alice", "--json", "examples/requests/delete-repo-denied.json")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d map[string]string
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	for k, v := range shown {
		if !strings.HasPrefix(d[k], v) || len(v) < len("sha256:")+4 {
			t.Errorf("README shows %s %s…; the quick start gives %s", k, v, d[k])
		}
	}
}

// TestReadmeBuildLine: README's build line writes the binary where the next
// line runs it, not onto the extauthz/ package folder, and its version
// example is what a build without a tag prints: the short commit as the
// version, then the full commit it abbreviates.
func TestReadmeBuildLine(t *testing.T) {
	b := []byte(testkit.Docs(t, "."))
	m := regexp.MustCompile(`(?m)^CGO_ENABLED=0 go build .* -o (\S+) \./cmd/extauthz\n(\S+) version +# (.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("README: no build line followed by `BINARY version  # output`")
	}
	out, run, example := string(m[1]), string(m[2]), string(m[3])
	if strings.TrimPrefix(run, "./") != strings.TrimPrefix(out, "./") {
		t.Errorf("README builds %s but runs %s", out, run)
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		t.Errorf("README builds -o %s, a folder of the repository: go build writes the binary inside it", out)
	}
	v := regexp.MustCompile(`^extauthz ([0-9a-f]{7,}) \(commit ([0-9a-f]{40})\)$`).FindStringSubmatch(example)
	if v == nil || !strings.HasPrefix(v[2], v[1]) {
		t.Errorf("README's version example %q: want what an untagged build prints, extauthz SHORT (commit FULL)", example)
	}
}

// TestReadmeFuzzList: the list of fuzz targets by package
// (docs/development.md, "Development details"), .ci/run's
// fuzz lines and the func Fuzz… of the code are the same set, so a new
// target is neither left out of CI nor undocumented.
func TestReadmeFuzzList(t *testing.T) {
	code := map[string]bool{}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	err := filepath.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && p != "." && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			code["./"+filepath.ToSlash(filepath.Dir(p))+" "+string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ci := map[string]bool{}
	run, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^fuzz (\./\S+) (Fuzz\w+)$`).FindAllSubmatch(run, -1) {
		ci[string(m[1])+" "+string(m[2])] = true
	}
	readme := map[string]bool{}
	b := []byte(testkit.Docs(t, "."))
	for _, m := range regexp.MustCompile("(?m)^  `(\\./[^`]+)`: (.*)$").FindAllSubmatch(b, -1) {
		for _, f := range regexp.MustCompile("`(Fuzz\\w+)`").FindAllSubmatch(m[2], -1) {
			readme[string(m[1])+" "+string(f[1])] = true
		}
	}
	if len(code) == 0 {
		t.Fatal("no fuzz targets found in the code")
	}
	for name, set := range map[string]map[string]bool{".ci/run": ci, "README": readme} {
		for k := range code {
			if !set[k] {
				t.Errorf("%s lacks the fuzz target %s", name, k)
			}
		}
		for k := range set {
			if !code[k] {
				t.Errorf("%s lists %s, which the code does not define", name, k)
			}
		}
	}
}
