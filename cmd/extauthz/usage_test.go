package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestServeFlagsGrouped: every serve flag belongs to a group of serve -h.
// A new flag whose name no group knows fails here: add it to
// serveFlagGroup.
func TestServeFlagsGrouped(t *testing.T) {
	commandFlags("serve").VisitAll(func(f *flag.Flag) {
		if g := serveFlagGroup(f.Name); !slices.Contains(serveGroups, g) {
			t.Errorf("--%s is in no group of serve -h (serveFlagGroup)", f.Name)
		}
	})
}

// TestServeHelp: serve -h lists every flag once, under the groups in
// order, each with its EXTAUTHZ_* variable and its default, and ends with
// examples that parse.
func TestServeHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"serve", "-h"}, io.Discard, &out); exitCode(err) != 0 {
		t.Fatalf("serve -h: %v", err)
	}
	help := out.String()
	last := -1
	for _, g := range serveGroups {
		i := strings.Index(help, "\n"+g+":\n")
		if i < 0 || i < last {
			t.Errorf("group %s missing or out of order", g)
		}
		last = i
	}
	commandFlags("serve").VisitAll(func(f *flag.Flag) {
		re := regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(f.Name) + `( \S+)?  \(` + envName(f.Name) + `(, default ([^)]*))?\)$`)
		m := re.FindAllStringSubmatch(help, -1)
		if len(m) != 1 {
			t.Errorf("--%s: %d lines naming it with %s, want 1", f.Name, len(m), envName(f.Name))
			return
		}
		if d := f.DefValue; d != "" && d != "[]" && d != "0" && m[0][3] != d {
			t.Errorf("--%s: default %q in the help, want %q", f.Name, m[0][3], d)
		}
	})
	if !strings.Contains(help, "\nexamples:\n") {
		t.Fatal("no examples")
	}
	// Every example's flags exist.
	for _, name := range regexp.MustCompile(`--([a-z0-9-]+)`).FindAllStringSubmatch(help[strings.Index(help, "\nexamples:\n"):], -1) {
		if commandFlags("serve").Lookup(name[1]) == nil {
			t.Errorf("example uses --%s, which serve does not have", name[1])
		}
	}
}

// readmeFlagRows returns the rows of the serve flag table
// (docs/configuration.md, "Configuration (`extauthz serve`)"): the flags
// of each row's first column and the backquoted values of its second.
func readmeFlagRows(t *testing.T) (rows [][2][]string) {
	t.Helper()
	b := []byte(testkit.Docs(t, "."))
	sec := string(b)
	i := strings.Index(sec, "## Configuration (`extauthz serve`)")
	if i < 0 {
		t.Fatal("README has no Configuration section")
	}
	sec = sec[i:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	flagRE, tickRE := regexp.MustCompile("`--([a-z0-9-]+)"), regexp.MustCompile("`([^`]*)`")
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")[1:] // GFM: \| is a | inside a cell
		if len(cells) < 3 {
			t.Fatalf("README row %q: want | flags | default | what |", line)
		}
		var r [2][]string
		for _, m := range flagRE.FindAllStringSubmatch(cells[0], -1) {
			r[0] = append(r[0], m[1])
		}
		for _, m := range tickRE.FindAllStringSubmatch(cells[1], -1) {
			r[1] = append(r[1], m[1])
		}
		rows = append(rows, r)
	}
	return rows
}

// sameDefault compares a README default with a flag's: durations by
// value (README's 5m is the flag's 5m0s).
func sameDefault(readme, def string) bool {
	if readme == def {
		return true
	}
	a, errA := time.ParseDuration(readme)
	b, errB := time.ParseDuration(def)
	return errA == nil && errB == nil && a == b
}

// TestREADMEFlagTable: the serve flag table (docs/configuration.md) names every flag of
// serve exactly once and nothing else, with the flags' defaults (a row
// of several flags lists their defaults in order; a row without one is
// a flag whose default is empty, zero or false).
func TestREADMEFlagTable(t *testing.T) {
	fs := commandFlags("serve")
	seen := map[string]int{}
	for _, r := range readmeFlagRows(t) {
		for i, name := range r[0] {
			seen[name]++
			f := fs.Lookup(name)
			if f == nil {
				t.Errorf("README lists --%s, which serve does not have", name)
				continue
			}
			switch {
			case len(r[1]) == len(r[0]):
				if !sameDefault(r[1][i], f.DefValue) {
					t.Errorf("README: --%s defaults to %q, the flag to %q", name, r[1][i], f.DefValue)
				}
			case len(r[1]) == 0:
				if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
					t.Errorf("README: --%s has no default, the flag has %q", name, f.DefValue)
				}
			default:
				t.Errorf("README: the row of %v has %d defaults", r[0], len(r[1]))
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("README's flag table names --%s %d times, want once", f.Name, seen[f.Name])
		}
	})
}

// TestHelpListsEveryCommand: help names every command completion knows.
func TestHelpListsEveryCommand(t *testing.T) {
	for _, c := range commands {
		if !regexp.MustCompile(`(?m)^  `+c.name+` `).MatchString(usage) && c.name != "help" {
			t.Errorf("help does not list %s", c.name)
		}
	}
}

// shell returns the path of shell, skipping when it is missing outside CI
// (.ci/run installs bash, zsh and fish).
func shell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not on PATH under CI (.ci/run installs it)", name)
		}
		t.Skipf("%s not on PATH", name)
	}
	return p
}

func completionScript(t *testing.T, sh string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"completion", sh}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestCompletionBash: the bash script completes commands, serve's flags
// (serve being the default command too), a flag's closed set of values,
// and other commands' flags, as bash itself computes them.
func TestCompletionBash(t *testing.T) {
	bash := shell(t, "bash")
	script := completionScript(t, "bash")
	tests := []struct {
		give string // the words typed; the last is the one completed
		want []string
		not  []string
	}{
		{"extauthz se", []string{"serve"}, []string{"check"}},
		{"extauthz serve --decision-log-o", []string{"--decision-log-overflow"}, []string{"--decision-log"}},
		{"extauthz --otlp-e", []string{"--otlp-endpoint"}, nil},
		{"extauthz serve --log-level ", []string{"debug", "info", "warn", "error"}, []string{"--policy"}},
		{"extauthz serve --decision-log ", []string{"stdout", "file", "otlp"}, nil},
		{"extauthz serve --grpc-addr ", nil, []string{"--policy"}},
		{"extauthz check --ex", []string{"--explain"}, nil},
		{"extauthz completion ", []string{"bash", "zsh", "fish"}, nil},
		{"extauthz serve --policy examples/pol", []string{"examples/policy.yaml"}, nil},
		{"extauthz pin --de", []string{"--decision-log"}, nil},
		{"extauthz pin --decision-log cmd/extauthz/testdata/pin/dec", []string{"cmd/extauthz/testdata/pin/decisions.jsonl"}, []string{"stdout", "file"}},
		{"extauthz approve --tool", []string{"--tooldef"}, nil},
		{"extauthz approve --tooldef ", nil, []string{"--tooldef", "examples/"}},
		{"extauthz approve examples/requests/big", []string{"examples/requests/big-refund-ask.json"}, nil},
		{"extauthz pin cmd/extauthz/testdata/pin/dec", []string{"cmd/extauthz/testdata/pin/decisions.jsonl"}, nil},
		{"extauthz validate examples/pol", []string{"examples/policy.yaml"}, nil},
	}
	for _, tt := range tests {
		words := strings.Split(tt.give, " ")
		prog := script + "\nCOMP_WORDS=(" + quoteWords(words) + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"\n_extauthz\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.give, err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: completions %v lack %s", tt.give, got, w)
			}
		}
		for _, w := range tt.not {
			if slices.Contains(got, w) {
				t.Errorf("%q: completions %v hold %s", tt.give, got, w)
			}
		}
	}
}

func quoteWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}

// TestCompletionZsh: the zsh script parses and defines its function.
func TestCompletionZsh(t *testing.T) {
	zsh := shell(t, "zsh")
	script := completionScript(t, "zsh")
	out, err := exec.Command(zsh, "-f", "-c", script+"\nwhence -w _extauthz").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "_extauthz: function") {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
}

// TestCompletionFish: fish itself completes from the script: commands,
// serve's flags, a flag's closed set of values.
func TestCompletionFish(t *testing.T) {
	fish := shell(t, "fish")
	script := completionScript(t, "fish")
	tests := []struct {
		give string
		want []string
	}{
		{"extauthz se", []string{"serve"}},
		{"extauthz serve --decision-log-ov", []string{"--decision-log-overflow"}},
		{"extauthz serve --decision-log-overflow ", []string{"drop", "block"}},
		{"extauthz check --ex", []string{"--explain"}},
		{"extauthz completion ", []string{"bash", "zsh", "fish"}},
	}
	for _, tt := range tests {
		cmd := exec.Command(fish, "--no-config", "-c", script+"\ncomplete -C '"+tt.give+"'")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.give, err, out)
		}
		var got []string
		for _, l := range strings.Split(string(out), "\n") {
			if w, _, _ := strings.Cut(l, "\t"); w != "" {
				got = append(got, w)
			}
		}
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: completions %v lack %s", tt.give, got, w)
			}
		}
	}
}

func TestCompletionErrors(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); exitCode(err) != 2 {
			t.Errorf("%v: exit %d, want 2", args, exitCode(err))
		}
	}
}
