package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A prose reference to a section of the documentation, in any tracked
// text file (comments of Go, YAML, shell and JavaScript, NOTES.txt,
// Markdown, golden files): the document, an optional 's or comma, and
// the heading in double quotes, as in docs/seam.md, "Lists, paging and
// tasks" or README "Quick start"; or the document and a GitHub anchor, as
// in docs/operations.md#mcpextauthzdown. README is README.md at the
// repository root wherever the reference stands (another folder's,
// conformance/README.md, is not it); docs/ is the root's (or, in a URL,
// this repository's on GitHub). The quoted heading may
// run on over a comment's next line; \" counts as " (a reference inside a
// Go string).
var (
	docRefQuotedRE = regexp.MustCompile(`(?:^|[^/\w.-])(README(?:\.md)?|docs/[a-z0-9-]+\.md)(?:'s)?,? "([^"]+)"`)
	docRefAnchorRE = regexp.MustCompile(`(?:^|[^/\w.-]|github\.com/mcp-extauthz/mcp-extauthz/blob/main/)(README\.md|docs/[a-z0-9-]+\.md)#([A-Za-z0-9_-]+)`)
	// docRefWrapRE is a line break with the next line's indentation and
	// comment marker, read as one space.
	docRefWrapRE = regexp.MustCompile(`[ \t]*\r?\n[ \t]*(?://|#+|\*|--)?[ \t]*`)
)

// docHeadings returns the headings of a Markdown text outside fences, as
// written after the #s, inline code's backticks dropped.
func docHeadings(s string) []string {
	var out []string
	lines, _ := outsideFences(s)
	for _, line := range lines {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, headingText(strings.TrimLeft(line, "#")))
	}
	return out
}

// headingText is s with backticks dropped and runs of space as one.
func headingText(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ")
}

// docRef is one reference found: the file and line it stands on, the
// document it names (README.md or docs/NAME.md) and the heading, quoted
// or as an #anchor.
type docRef struct {
	file   string
	line   int
	doc    string
	quoted string
	anchor string
}

// findDocRefs returns the references of text, a file's content.
func findDocRefs(file string, text []byte) []docRef {
	if !bytes.Contains(text, []byte("README")) && !bytes.Contains(text, []byte("docs/")) {
		return nil
	}
	s := strings.ReplaceAll(string(text), `\"`, `"`)
	// Flatten, keeping where each flat byte came from for the line number.
	var flat strings.Builder
	var from []int
	last := 0
	for _, m := range docRefWrapRE.FindAllStringIndex(s, -1) {
		for i := last; i < m[0]; i++ {
			from = append(from, i)
		}
		flat.WriteString(s[last:m[0]])
		flat.WriteByte(' ')
		from = append(from, m[0])
		last = m[1]
	}
	flat.WriteString(s[last:])
	for i := last; i < len(s); i++ {
		from = append(from, i)
	}
	f := flat.String()
	lineOf := func(i int) int { return strings.Count(s[:from[i]], "\n") + 1 }
	doc := func(name string) string {
		if strings.HasPrefix(name, "README") {
			return "README.md"
		}
		return name
	}
	var out []docRef
	for _, m := range docRefQuotedRE.FindAllStringSubmatchIndex(f, -1) {
		out = append(out, docRef{file: file, line: lineOf(m[2]), doc: doc(f[m[2]:m[3]]), quoted: f[m[4]:m[5]]})
	}
	for _, m := range docRefAnchorRE.FindAllStringSubmatchIndex(f, -1) {
		out = append(out, docRef{file: file, line: lineOf(m[2]), doc: doc(f[m[2]:m[3]]), anchor: f[m[4]:m[5]]})
	}
	return out
}

// trackedTextFiles returns the files git tracks (relative to the
// repository root, the working directory), but those with a NUL byte.
func trackedTextFiles(t *testing.T) map[string][]byte {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := map[string][]byte{}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			if os.IsNotExist(err) { // deleted in the work tree, not yet committed
				continue
			}
			t.Fatal(err)
		}
		if !bytes.ContainsRune(b, 0) {
			files[name] = b
		}
	}
	return files
}

// TestDocReferences: every reference to a section of the documentation,
// in any tracked text file (the k8s module's included), names a heading
// that the named document has: README "Quick start" a heading of
// README.md, docs/policy.md, "Quotas" one of docs/policy.md,
// docs/operations.md#alerts an anchor of one. When the README moved its
// reference text to docs/, such references went stale; the message says
// which document has the heading now.
func TestDocReferences(t *testing.T) {
	files := trackedTextFiles(t)
	headings := map[string][]string{}
	anchors := map[string]map[string]bool{}
	var docs []string
	for name, b := range files {
		if name == "README.md" || (strings.HasPrefix(name, "docs/") && strings.HasSuffix(name, ".md") && !strings.Contains(name[5:], "/")) {
			headings[name] = docHeadings(string(b))
			anchors[name] = githubAnchors(string(b))
			docs = append(docs, name)
		}
	}
	slices.Sort(docs)
	if len(docs) < 5 {
		t.Fatalf("documents %v: git ls-files is not run at the repository root", docs)
	}
	// where says which documents have a heading, for the message.
	where := func(h string) string {
		var in []string
		for _, d := range docs {
			if slices.Contains(headings[d], h) {
				in = append(in, d)
			}
		}
		if len(in) == 0 {
			return "no document has it"
		}
		return "it is a heading of " + strings.Join(in, ", ")
	}
	var n, nk8s int
	for name, b := range files {
		if name == "cmd/extauthz/docrefs_test.go" { // the forms' own examples
			continue
		}
		for _, r := range findDocRefs(name, b) {
			n++
			if strings.HasPrefix(name, "k8s/") {
				nk8s++
			}
			if _, ok := headings[r.doc]; !ok {
				t.Errorf("%s:%d: names %s, which is no document", r.file, r.line, r.doc)
				continue
			}
			switch {
			case r.anchor != "" && !anchors[r.doc][r.anchor]:
				t.Errorf("%s:%d: %s#%s: %s has no heading with that anchor", r.file, r.line, r.doc, r.anchor, r.doc)
			case r.anchor == "" && !slices.Contains(headings[r.doc], headingText(r.quoted)):
				t.Errorf("%s:%d: %s %q: %s has no such heading; %s", r.file, r.line, r.doc, r.quoted, r.doc, where(headingText(r.quoted)))
			}
		}
	}
	// The scan must see the references that exist (the runbook URLs of
	// the alerts alone are over 20, in k8s/), else the pattern is wrong.
	t.Logf("%d references, %d under k8s/", n, nk8s)
	if n < 40 || nk8s < 20 {
		t.Errorf("%d references found, %d under k8s/; the patterns are wrong", n, nk8s)
	}
}

// TestFindDocRefs pins the forms findDocRefs reads, wrapped comments
// included, and what it leaves alone.
func TestFindDocRefs(t *testing.T) {
	tests := []struct {
		give string
		want []string // doc|quoted or doc#anchor, line
	}{
		{`// see README "Quick start".`, []string{"README.md|Quick start:1"}},
		{"# (README, \"Run it\n# locally\"): more", []string{"README.md|Run it locally:1"}},
		{"x\n  // docs/seam.md, \"Lists, paging\n  // and tasks\")", []string{"docs/seam.md|Lists, paging and tasks:2"}},
		{`README's "Observing it" and docs/policy.md "Quotas"`, []string{"README.md|Observing it:1", "docs/policy.md|Quotas:1"}},
		{`"(README \"Istio\")"`, []string{"README.md|Istio:1"}},
		{"url: https://github.com/mcp-extauthz/mcp-extauthz/blob/main/docs/operations.md#mcpextauthzdown\n", []string{"docs/operations.md#mcpextauthzdown:1"}},
		{"docs/policy.md#quotas, [x](README.md#quick-start)", []string{"docs/policy.md#quotas:1", "README.md#quick-start:1"}},
		{`README: "a quoted sentence", README (the line after "Run the tests")`, nil},
		{`READMEs "x", conformance/README.md "x", k8s/docs/x.md#y, https://example.com/docs/x.md#y`, nil}, // not the root's
	}
	for _, tt := range tests {
		var got []string
		for _, r := range findDocRefs("f", []byte(tt.give)) {
			if r.anchor != "" {
				got = append(got, fmt.Sprintf("%s#%s:%d", r.doc, r.anchor, r.line))
			} else {
				got = append(got, fmt.Sprintf("%s|%s:%d", r.doc, r.quoted, r.line))
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("findDocRefs(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
