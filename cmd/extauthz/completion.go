package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// flagValues are the values offered for flags with a closed set.
var flagValues = map[string][]string{
	"log-level":             {"debug", "info", "warn", "error"},
	"denial-status":         {"auto", "http-error"},
	"conceal-as":            {"go-sdk", "typescript-sdk", "typescript-sdk-v2"},
	"decision-log":          {"stdout", "file", "otlp"},
	"decision-log-overflow": {"drop", "block"},
}

// commandFileFlags are flags that name a file under one command although
// another command's flag of that name takes a closed set: pin
// --decision-log FILE, serve --decision-log stdout|file|otlp.
var commandFileFlags = map[string]bool{"pin:decision-log": true}

// valuesOf returns the closed set of values of cmd's flag name; nil when
// it has none.
func valuesOf(cmd, name string) []string {
	if commandFileFlags[cmd+":"+name] {
		return nil
	}
	return flagValues[name]
}

// fileFlagOf reports whether cmd's flag name names a file or directory.
func fileFlagOf(cmd, name string) bool { return commandFileFlags[cmd+":"+name] || fileFlag(name) }

// fileFlag reports whether a flag names a file or directory.
func fileFlag(name string) bool {
	return pathFlags[name] || strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "-dir") || name == "config" || name == "policy"
}

// takesValue reports whether f needs a value (every flag but booleans).
func takesValue(f *flag.Flag) bool {
	b, ok := f.Value.(boolFlag)
	return !ok || !b.IsBoolFlag()
}

// fileArgs are the commands whose arguments are files.
var fileArgs = map[string]bool{"check": true, "test": true, "approve": true, "pin": true, "validate": true}

// completionFlags returns every command's flags, sorted by name.
func completionFlags() map[string][]*flag.Flag {
	out := map[string][]*flag.Flag{}
	for _, c := range commands {
		fs := commandFlags(c.name)
		if fs == nil {
			continue
		}
		fs.VisitAll(func(f *flag.Flag) { out[c.name] = append(out[c.name], f) })
		sort.Slice(out[c.name], func(i, j int) bool { return out[c.name][i].Name < out[c.name][j].Name })
	}
	return out
}

// runCompletion prints the completion script of shell (bash, zsh, fish):
// the commands, each command's flags (from their definitions), the values
// of flags with a closed set, and files where a flag or argument names one.
func runCompletion(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return &exitError{code: 2, err: fmt.Errorf("completion: want one of bash, zsh, fish (e.g. source <(extauthz completion bash))")}
	}
	switch args[0] {
	case "bash":
		writeBash(stdout)
	case "zsh":
		writeZsh(stdout)
	case "fish":
		writeFish(stdout)
	default:
		return &exitError{code: 2, err: fmt.Errorf("completion: shell %q, want bash, zsh or fish", args[0])}
	}
	return nil
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, " ")
}

// valueCases returns, per kind of value flag, the "cmd:--flag" patterns
// joined by sep: files, each closed set, and other value flags.
func valueCases(flags map[string][]*flag.Flag, sep string) (files string, sets map[string]string, other string) {
	var fl, ot []string
	sets = map[string]string{}
	for _, c := range commands {
		for _, f := range flags[c.name] {
			if !takesValue(f) {
				continue
			}
			pat := c.name + ":--" + f.Name
			switch {
			case valuesOf(c.name, f.Name) != nil:
				v := strings.Join(valuesOf(c.name, f.Name), " ")
				if sets[v] != "" {
					sets[v] += sep
				}
				sets[v] += pat
			case fileFlagOf(c.name, f.Name):
				fl = append(fl, pat)
			default:
				ot = append(ot, pat)
			}
		}
	}
	return strings.Join(fl, sep), sets, strings.Join(ot, sep)
}

func flagWords(fs []*flag.Flag) string {
	w := make([]string, len(fs))
	for i, f := range fs {
		w[i] = "--" + f.Name
	}
	return strings.Join(w, " ")
}

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for v := range m {
		k = append(k, v)
	}
	sort.Strings(k)
	return k
}

// shellDialect is what bash and zsh scripts differ in; the script's logic
// (writeCaseScript) is one.
type shellDialect struct {
	head   string              // up to and including the opening of case "$cmd:$prev"; %s: the commands
	offer  func(string) string // offer these space-separated words
	files  string              // offer file names
	none   string              // offer nothing
	footer string              // after the function
}

var (
	bashDialect = shellDialect{
		head: `# bash completion for extauthz (extauthz completion bash).
#   source <(extauthz completion bash)
_extauthz() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    if [[ $COMP_CWORD -eq 1 && "$cur" != -* ]]; then
        COMPREPLY=($(compgen -W "%s" -- "$cur"))
        return
    fi
    local cmd="${COMP_WORDS[1]}"
    [[ "$cmd" == -* ]] && cmd=serve
    case "$cmd:$prev" in
`,
		offer:  func(words string) string { return fmt.Sprintf(`COMPREPLY=($(compgen -W %q -- "$cur"))`, words) },
		files:  `COMPREPLY=($(compgen -f -- "$cur"))`,
		none:   `COMPREPLY=()`,
		footer: "complete -o filenames -F _extauthz extauthz\n",
	}
	zshDialect = shellDialect{
		head: `#compdef extauthz
# zsh completion for extauthz (extauthz completion zsh).
#   source <(extauthz completion zsh)   or save as _extauthz in $fpath
_extauthz() {
    local cur="${words[CURRENT]}" prev="${words[CURRENT-1]}"
    if (( CURRENT == 2 )) && [[ "$cur" != -* ]]; then
        compadd -- %s
        return
    fi
    local cmd="${words[2]}"
    [[ "$cmd" == -* ]] && cmd=serve
    case "$cmd:$prev" in
`,
		offer:  func(words string) string { return "compadd -- " + words },
		files:  "_files",
		none:   ":",
		footer: "if (( $+functions[compdef] )); then compdef _extauthz extauthz; fi\n",
	}
)

func writeBash(w io.Writer) { writeCaseScript(w, bashDialect) }
func writeZsh(w io.Writer)  { writeCaseScript(w, zshDialect) }

// writeCaseScript writes a completion function in d's dialect: commands
// first; after a flag with a closed set, its values; after a file flag,
// files; after another value flag, nothing; else the command's flags, or
// files for commands that take files.
func writeCaseScript(w io.Writer, d shellDialect) {
	flags := completionFlags()
	files, sets, other := valueCases(flags, "|")
	fmt.Fprintf(w, d.head, commandNames())
	for _, v := range sortedKeys(sets) {
		fmt.Fprintf(w, "        %s) %s; return ;;\n", sets[v], d.offer(v))
	}
	if files != "" {
		fmt.Fprintf(w, "        %s) %s; return ;;\n", files, d.files)
	}
	if other != "" {
		fmt.Fprintf(w, "        %s) %s; return ;;\n", other, d.none)
	}
	fmt.Fprint(w, "    esac\n    case \"$cmd\" in\n")
	for _, c := range commands {
		switch {
		case c.name == "completion":
			fmt.Fprintf(w, "        completion) %s ;;\n", d.offer("bash zsh fish"))
		case flags[c.name] != nil:
			fmt.Fprintf(w, "        %s)\n            if [[ \"$cur\" == -* ]]; then %s", c.name, d.offer(flagWords(flags[c.name])))
			if fileArgs[c.name] {
				fmt.Fprintf(w, "\n            else %s", d.files)
			}
			fmt.Fprint(w, "; fi ;;\n")
		case fileArgs[c.name]: // files and no flags: validate
			fmt.Fprintf(w, "        %s) %s ;;\n", c.name, d.files)
		}
	}
	fmt.Fprint(w, "    esac\n}\n"+d.footer)
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// summary is the first clause of a flag's usage, for fish's descriptions.
func summary(usage string) string {
	s, _, _ := strings.Cut(usage, "; ")
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return s
}

func writeFish(w io.Writer) {
	flags := completionFlags()
	fmt.Fprint(w, "# fish completion for extauthz (extauthz completion fish).\n#   extauthz completion fish | source\ncomplete -c extauthz -f\n")
	for _, c := range commands {
		fmt.Fprintf(w, "complete -c extauthz -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.what))
	}
	fmt.Fprint(w, "complete -c extauthz -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
	for _, c := range commands {
		if fileArgs[c.name] {
			fmt.Fprintf(w, "complete -c extauthz -n '__fish_seen_subcommand_from %s' -F\n", c.name)
		}
		for _, f := range flags[c.name] {
			cond := "'__fish_seen_subcommand_from " + c.name + "'"
			if c.name == "serve" { // serve is also the default command
				cond = "'__fish_seen_subcommand_from serve; or not __fish_seen_subcommand_from " + commandNames() + "'"
			}
			_, usage := flag.UnquoteUsage(f)
			line := fmt.Sprintf("complete -c extauthz -n %s -l %s -d %s", cond, f.Name, fishQuote(summary(usage)))
			switch {
			case !takesValue(f):
			case valuesOf(c.name, f.Name) != nil:
				line += " -x -a " + fishQuote(strings.Join(valuesOf(c.name, f.Name), " "))
			case fileFlagOf(c.name, f.Name):
				line += " -r -F"
			default:
				line += " -x"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// boolFlag is the flag package's own (unexported) test for a flag that
// takes no value.
type boolFlag interface{ IsBoolFlag() bool }
