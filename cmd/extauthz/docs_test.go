package main

import (
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

// The documentation is README.md (the front door) and docs/*.md (the
// reference), testkit.DocFiles. These tests keep it navigable and single:
// every relative link and #anchor resolves, every serve flag and every
// reason has exactly one reference row, and nothing finished is described
// as being built. The working directory is the repository root (TestMain).

// docFile reads one documentation file, relative to the repository root.
func docFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// outsideFences returns the lines of a Markdown text that are not inside
// a ``` fence, with their 1-based line numbers.
func outsideFences(s string) (lines []string, ns []int) {
	fenced := false
	for i, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines, ns = append(lines, line), append(ns, i+1)
		}
	}
	return lines, ns
}

// githubAnchors returns the anchors GitHub gives a Markdown text's
// headings: lower case, punctuation but - and _ dropped, spaces as -, a
// repeated anchor suffixed -1, -2, …; lines inside fences are no headings.
func githubAnchors(s string) map[string]bool {
	all := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	seen := map[string]int{}
	lines, _ := outsideFences(s)
	for _, line := range lines {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(line[level:])), ""), " ", "-")
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		all[a] = true
	}
	return all
}

// TestDocFilesComplete: testkit.DocFiles names README.md and every file
// under docs/, so Docs (and the tests below) read all of them.
func TestDocFilesComplete(t *testing.T) {
	got, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"README.md"}, got...)
	have := slices.Clone(testkit.DocFiles)
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		t.Errorf("testkit.DocFiles = %v, the tree has %v", have, want)
	}
}

// TestDocsLinks: every link of README.md and docs/*.md outside code
// fences that is not absolute (a scheme or a leading /) names a file or
// folder that exists, relative to the linking file, and its #anchor, if
// any, is a heading of the named Markdown file (of the linking file for a
// bare #anchor).
func TestDocsLinks(t *testing.T) {
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(name string) map[string]bool {
		if a, ok := anchors[name]; ok {
			return a
		}
		anchors[name] = githubAnchors(docFile(t, name))
		return anchors[name]
	}
	n := 0
	for _, f := range testkit.DocFiles {
		lines, ns := outsideFences(docFile(t, f))
		for i, line := range lines {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				u := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(u) || strings.HasPrefix(u, "/") {
					continue
				}
				n++
				target, anchor, _ := strings.Cut(u, "#")
				name := f
				if target != "" {
					name = path.Clean(path.Join(path.Dir(f), target))
					if _, err := os.Stat(filepath.FromSlash(name)); err != nil {
						t.Errorf("%s:%d: links %s: %v", f, ns[i], u, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(name, ".md") {
					t.Errorf("%s:%d: links %s: an anchor into a file that is not Markdown", f, ns[i], u)
					continue
				}
				if !anchorsOf(name)[anchor] {
					t.Errorf("%s:%d: links %s: %s has no heading #%s", f, ns[i], u, name, anchor)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("%d relative links found in the documentation; the pattern is wrong", n)
	}
}

// tableRows returns, for each documentation file, the body rows of its
// tables outside fences (lines starting with |, indented or not, but not
// a header row, the one above a |---| line) split into cells, GFM's \|
// kept inside a cell.
func tableRows(t *testing.T) map[string][][]string {
	t.Helper()
	out := map[string][][]string{}
	sepRE := regexp.MustCompile(`^\|[-:| ]+\|$`)
	for _, f := range testkit.DocFiles {
		lines, _ := outsideFences(docFile(t, f))
		for i, line := range lines {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "|") || sepRE.MatchString(line) {
				continue
			}
			if i+1 < len(lines) && sepRE.MatchString(strings.TrimSpace(lines[i+1])) {
				continue
			}
			cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
			if len(cells) < 3 {
				continue
			}
			out[f] = append(out[f], cells[1:])
		}
	}
	return out
}

// TestDocsServeFlagsOnce: every serve flag is named by the first cell of
// exactly one table body row that starts with a flag, and that row is in
// docs/configuration.md (the flag reference); other pages link there.
func TestDocsServeFlagsOnce(t *testing.T) {
	flagRE := regexp.MustCompile("`--([a-z0-9-]+)")
	where := map[string][]string{}
	for f, rows := range tableRows(t) {
		for _, cells := range rows {
			if !strings.HasPrefix(strings.TrimSpace(cells[0]), "`--") {
				continue // a row about something else that names a flag
			}
			for _, m := range flagRE.FindAllStringSubmatch(cells[0], -1) {
				where[m[1]] = append(where[m[1]], f)
			}
		}
	}
	n := 0
	commandFlags("serve").VisitAll(func(fl *flag.Flag) {
		n++
		if got := where[fl.Name]; len(got) != 1 || got[0] != "docs/configuration.md" {
			t.Errorf("--%s: reference rows in %v, want one, in docs/configuration.md", fl.Name, got)
		}
	})
	if n < 20 {
		t.Fatalf("serve has %d flags; commandFlags is wrong", n)
	}
}

// TestDocsReasonsOnce: every reason of Check's closed set
// (decision.Reasons) and of the signed-decision verifier
// (mcpdecision.Reasons) is the first cell of exactly one table row of the
// documentation: Check's in docs/reasons.md, the verifier's in
// docs/digests.md.
func TestDocsReasonsOnce(t *testing.T) {
	where := map[string][]string{}
	cellRE := regexp.MustCompile("^ `([a-z_0-9]+)` $")
	for f, rows := range tableRows(t) {
		for _, cells := range rows {
			if m := cellRE.FindStringSubmatch(cells[0]); m != nil {
				where[m[1]] = append(where[m[1]], f)
			}
		}
	}
	check := func(r, file string) {
		if got := where[r]; len(got) != 1 || got[0] != file {
			t.Errorf("reason %s: reference rows in %v, want one, in %s", r, got, file)
		}
	}
	for _, r := range decision.Reasons() {
		check(string(r), "docs/reasons.md")
	}
	for _, r := range mcpdecision.Reasons() {
		check(string(r), "docs/digests.md")
	}
}

// unfinishedRE matches the words that describe work in progress; a
// finished feature described so misleads the reader.
var unfinishedRE = regexp.MustCompile(`(?i)\b(?:is being built|are being built|being built|TODO|FIXME|XXX|coming soon|work in progress|WIP|not yet (?:built|implemented|wired|landed|done)|is landing|will land|to be built|under construction)\b`)

// TestDocsNothingBeingBuilt: the documentation describes what exists; no
// line of README.md or docs/*.md (code fences included) says a feature is
// being built, to do or not yet done.
func TestDocsNothingBeingBuilt(t *testing.T) {
	for _, f := range testkit.DocFiles {
		for i, line := range strings.Split(docFile(t, f), "\n") {
			if m := unfinishedRE.FindString(line); m != "" {
				t.Errorf("%s:%d: %q describes work in progress: %s", f, i+1, m, strings.TrimSpace(line))
			}
		}
	}
	for _, give := range []string{"The cache is being built.", "TODO: pinning", "Paging is not yet implemented"} {
		if !unfinishedRE.MatchString(give) {
			t.Errorf("unfinishedRE misses %q", give)
		}
	}
}

// TestReadmeFrontDoor: README stays a front door (at most 400 lines), its
// quick start says what to wait for on a cold start, and it keeps the test
// command .ci/run reads (the first sh fence after "Run the tests").
func TestReadmeFrontDoor(t *testing.T) {
	s := docFile(t, "README.md")
	if n := strings.Count(s, "\n"); n > 400 {
		t.Errorf("README.md has %d lines, want at most 400: move reference material to docs/", n)
	}
	qs := s[strings.Index(s, "\n## Quick start\n")+1:]
	qs = qs[:strings.Index(qs[3:], "\n## ")+3]
	if !strings.Contains(qs, `serving ext_authz`) {
		t.Error(`README's quick start does not say to wait for "serving ext_authz"`)
	}
	i := strings.Index(s, "\nRun the tests")
	if i < 0 {
		t.Fatal(`README has no "Run the tests" paragraph (.ci/run reads the command below it)`)
	}
	rest := s[i:]
	j := strings.Index(rest, "\n```sh\n")
	if j < 0 {
		t.Fatal(`no sh fence after "Run the tests"`)
	}
	cmd, _, _ := strings.Cut(rest[j+len("\n```sh\n"):], "\n")
	if want := "go vet ./... && go test -race ./... && (cd k8s && go vet ./... && go test ./...)"; cmd != want {
		t.Errorf("README's test command is %q, .ci/run knows %q", cmd, want)
	}
}
