package k8s

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// dockerfile returns the Dockerfile's instructions, one per line (the file
// uses no line continuations; a trailing backslash is an error here).
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			t.Fatalf("line continuation in %q: .ci/run reads single lines", l)
		}
		lines = append(lines, l)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// buildLine is how .ci/run finds the command: grep -E '^RUN .*go build'.
var buildLine = regexp.MustCompile(`^RUN .*go build`)

func TestDockerfileBuildLine(t *testing.T) {
	var runs []string
	for _, l := range dockerfile(t) {
		if buildLine.MatchString(l) {
			runs = append(runs, strings.TrimSpace(strings.TrimPrefix(l, "RUN")))
		}
	}
	if len(runs) != 1 {
		t.Fatalf("%d RUN lines with go build, want exactly 1 (.ci/run runs it): %q", len(runs), runs)
	}
	cmd := runs[0]
	fields := strings.Fields(cmd)
	for _, want := range []string{"CGO_ENABLED=0", "go", "build", "-trimpath", `-ldflags="-s`, "-w",
		"main.buildVersion=${VERSION:-devel}", `main.buildCommit=${COMMIT:-unknown}"`, "-o", "/out/extauthz", "./cmd/extauthz"} {
		found := false
		for _, f := range fields {
			if f == want {
				found = true
			}
		}
		if !found {
			t.Errorf("build line %q lacks %q", cmd, want)
		}
	}
	if fields[0] != "CGO_ENABLED=0" {
		t.Errorf("build line %q: CGO_ENABLED=0 must prefix the go command", cmd)
	}
	// .ci/run replaces every "/out" with a temporary directory.
	if n := strings.Count(cmd, "/out"); n != 1 {
		t.Errorf("build line mentions /out %d times, want once (the -o path)", n)
	}
	if strings.ContainsAny(cmd, "&|;") || strings.Contains(cmd, "--mount") {
		t.Errorf("build line %q must be one plain command", cmd)
	}
}

func TestDockerfileImage(t *testing.T) {
	lines := dockerfile(t)
	var froms []string
	has := map[string]bool{}
	for _, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, l)
		}
		has[l] = true
	}
	// Both stages pinned by digest (the tag stays for humans).
	pinned := regexp.MustCompile(`^FROM \S+:\S+@sha256:[0-9a-f]{64}( AS \w+)?$`)
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "FROM golang:1.26@") || !strings.HasPrefix(froms[1], "FROM gcr.io/distroless/static-debian12:nonroot@") {
		t.Errorf("stages %q, want golang:1.26 then distroless static nonroot", froms)
	}
	for _, f := range froms {
		if !pinned.MatchString(f) {
			t.Errorf("%q is not pinned by digest", f)
		}
	}
	// Everything after the last FROM is the shipped image.
	final := lines[len(lines)-1]
	for i, l := range lines {
		if l == froms[len(froms)-1] {
			final = strings.Join(lines[i:], "\n")
		}
	}
	for _, want := range []string{
		`LABEL org.opencontainers.image.version="${VERSION}"`,
		`LABEL org.opencontainers.image.revision="${COMMIT}"`,
		"LABEL org.opencontainers.image.source=",
		"COPY --from=build /out/extauthz /extauthz",
		"USER 65532:65532",
		"EXPOSE 9191 9192",
		`ENTRYPOINT ["/extauthz"]`,
		`CMD ["serve"]`,
	} {
		if !strings.Contains(final, want) {
			t.Errorf("final stage lacks %q", want)
		}
	}
	if strings.Contains(final, "RUN ") {
		t.Error("final stage runs commands: distroless has no shell")
	}
}

func TestDockerignoreKeepsTheSources(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ignored[l] = true
		}
	}
	for _, p := range []string{".git", "**/*_test.go"} {
		if !ignored[p] {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
	// The build needs these; an allow-list or a '*' would drop new packages.
	for _, p := range []string{"*", "go.mod", "go.sum", "cmd", "extauthz", "mcpparse", "policy"} {
		if ignored[p] {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
}
