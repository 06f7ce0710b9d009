package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// runPin prints the fingerprints (toolpin.Version: tooldef-v2) of the
// tools in captured tools/list responses as a policy `pins:` block to paste
// (issue 18; this is how pins of tooldef-v1, which never match since
// issue 26, are renewed). Each FILE (or -
// for stdin) holds one JSON-RPC response (application/json), a batch of
// them, or a text/event-stream body whose events carry them; every response
// whose result has a tools array counts. A tool listed twice with two
// definitions gets both fingerprints (the policy then approves either).
// With --decision-log FILE it reads the fingerprints the processor logged
// instead (pinDecisionLog): every server and tool of the log. A tool whose
// definition cannot be fingerprinted (toolpin.Parse refuses it, e.g. over
// its limits, in an answer the seam passes; the processor would pin its raw
// bytes, and it reads as changed whatever the pins say)
// becomes a comment, on stderr too, and the other tools are printed, as
// with a decision log's "raw" entries. Exit 0; 1 when a file holds no
// tools/list result or no tool can be pinned; 2 on bad usage or a file
// that cannot be read.
func runPin(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "serve's config file, for the MCP server id (default $EXTAUTHZ_CONFIG)")
	serverID := fs.String("server-id", "", "MCP server id the tools belong to (default: the --config server-id); with --decision-log, print only this server's pins")
	decisionLog := fs.String("decision-log", "", "read the fingerprints of every tools/list in this decision log (JSON Lines, as serve --decision-log writes them; - reads stdin) instead of RESPONSE files")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz pin [--server-id ID | --config FILE] RESPONSE...   (fingerprint the tools of captured tools/list responses; - reads stdin)")
		fmt.Fprintln(stderr, "       extauthz pin --decision-log FILE [--server-id ID]       (the fingerprints of every tools/list the decision log saw, per server)")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bad := func(err error) error { return &exitError{code: 2, err: fmt.Errorf("pin: %w", err)} }
	if *decisionLog != "" {
		switch {
		case fs.NArg() > 0:
			return bad(errors.New("--decision-log reads no RESPONSE files: give one or the other"))
		case *configFile != "":
			return bad(errors.New("--config names the server of captured responses; a decision log names its own (--server-id ID keeps one)"))
		}
		return pinDecisionLog(*decisionLog, *serverID, stdout, stderr)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &exitError{code: 2, err: argCountError("pin", "a RESPONSE file at least, or --decision-log FILE", nil)}
	}
	if *serverID == "" {
		cfg, _, err := toolConfig(*configFile, os.Getenv)
		if err != nil {
			return bad(err)
		}
		if cfg != nil {
			*serverID = cfg.ServerID
		}
	}
	if *serverID == "" {
		return bad(errors.New("no MCP server id: give --server-id ID, or --config FILE (serve's config)"))
	}
	pins := pinSet{}
	var notes []string
	for _, name := range fs.Args() {
		b, err := readInput(name)
		if err != nil {
			return bad(err)
		}
		defs, err := listedTools(b)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("pin: %s: %w", name, err)}
		}
		for i, def := range defs {
			d, err := toolpin.Parse(def, nil)
			if err != nil {
				// As the processor does: such a tool reads as changed
				// whatever the pins say; say so and pin the others.
				n := fmt.Sprintf("%s: %s (%s, tools[%d]: %v)", yamlKey(laxToolName(def)), rawNote, name, i, err)
				notes = append(notes, n)
				fmt.Fprintf(stderr, "pin: %s\n", n)
				continue
			}
			pins.add(d.Name, d.Fingerprint, "")
		}
	}
	if len(pins) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("pin: no tool definition can be pinned (%s)", plural(len(notes), "tool"))}
	}
	writePins(stdout, map[string]pinSet{*serverID: pins}, map[string][]string{*serverID: notes})
	return nil
}

// laxToolName is the name member of def as encoding/json reads it (the
// last of duplicates), for messages about a definition that is not strict
// JSON; "?" when there is none.
func laxToolName(def []byte) string {
	var t struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(def, &t) != nil || t.Name == "" {
		return "?"
	}
	return t.Name
}

// readInput reads the file name, or stdin for "-".
func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

// pinSet is the fingerprints seen of one server's tools: per tool, each
// fingerprint once, first seen first, with the decision log line it was
// first seen at ("" for captured responses).
type pinSet map[string][]seenPin

type seenPin struct{ fingerprint, where string }

func (p pinSet) add(tool, fp, where string) {
	for _, s := range p[tool] {
		if s.fingerprint == fp {
			return
		}
	}
	p[tool] = append(p[tool], seenPin{fp, where})
}

// writePins prints one pins: block of every server and tool, sorted by
// name, each tool's fingerprints as a YAML flow sequence in first-seen
// order; a tool seen with more than one gets a comment saying so (and
// where each was first seen), and notes[server] are comment lines printed
// under the server's key.
func writePins(w io.Writer, servers map[string]pinSet, notes map[string][]string) {
	fmt.Fprintln(w, "pins:")
	for _, server := range slices.Sorted(maps.Keys(servers)) {
		if len(servers[server]) == 0 { // only tools that cannot be pinned: a key without tools would not compile
			fmt.Fprintf(w, "  # %s: no tool that can be pinned\n", yamlKey(server))
			for _, n := range notes[server] {
				fmt.Fprintf(w, "  # %s\n", n)
			}
			continue
		}
		fmt.Fprintf(w, "  %s:\n", yamlKey(server))
		for _, n := range notes[server] {
			fmt.Fprintf(w, "    # %s\n", n)
		}
		tools := servers[server]
		for _, tool := range slices.Sorted(maps.Keys(tools)) {
			seen := tools[tool]
			fps := make([]string, len(seen))
			var where []string
			for i, s := range seen {
				fps[i] = s.fingerprint
				if s.where != "" {
					where = append(where, s.where)
				}
			}
			if len(seen) > 1 {
				c := fmt.Sprintf("%s was listed with %d definitions", yamlKey(tool), len(seen))
				if len(where) == len(seen) {
					c += " (first seen at lines " + strings.Join(where, ", ") + ", in this order)"
				}
				fmt.Fprintf(w, "    # %s: keep only those you reviewed\n", c)
			}
			fmt.Fprintf(w, "    %s: [%s]\n", yamlKey(tool), strings.Join(fps, ", "))
		}
	}
}

// maxPinLogErrors bounds the malformed lines pinDecisionLog names.
const maxPinLogErrors = 10

// pinDecisionLog prints the pins of every tools/list "list filtered" line
// of a decision log (name, or - for stdin): JSON Lines as serve writes them
// (--decision-log), whose kind "list_filter" lines of list "tools" carry
// the fingerprints of every tool the processor saw listed (with pinning
// on). Other lines (Check decisions, receipts, other lists, refused lists)
// are skipped; blank lines too. Only server's when server is not "".
// Every line must be strict JSON (mcpparse.Canonicalize: no duplicate or
// case-variant member names, which encoding/json would resolve last-wins
// or by case folding, valid UTF-8, no trailing data). A tool the processor
// pinned by its raw bytes ("raw": true: its definition is not strict JSON)
// cannot be pinned by content: it becomes a comment, on stderr too, and the
// other tools are printed, as the response mode does with such a
// definition. A list line whose tools were cut at the line's budget
// (tools_omitted) is reported on stderr and in a comment. Entries of a
// superseded fingerprint version (tooldef-v1, logged before tooldef-v2)
// are left out, with a comment per line saying how to pin those tools
// again: such a pin would never match.
// Exit 1: a malformed line (each named by line number, up to ten), a tools
// entry that is not a name and a fingerprint, or nothing that can be
// pinned. Exit 2: the file cannot be read.
func pinDecisionLog(name, server string, stdout, stderr io.Writer) error {
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("pin: %w", err)}
		}
		defer f.Close()
		in = f
	}
	if name == "-" {
		name = "stdin"
	}
	servers := map[string]pinSet{}
	notes := map[string][]string{}
	var problems []string
	var c pinLogCounts
	r := bufio.NewReader(in)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return &exitError{code: 2, err: fmt.Errorf("pin: %s: %w", name, err)}
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if perr := pinLogLine(t, n, server, servers, notes, &c); perr != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s", name, n, perr))
				if len(problems) == maxPinLogErrors {
					problems = append(problems, "(more not shown)")
					break
				}
			}
		}
		if err != nil {
			break
		}
	}
	if len(problems) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("pin: %s", strings.Join(problems, "\n  "))}
	}
	pinned := 0
	for _, set := range servers {
		pinned += len(set)
	}
	if pinned == 0 && c.raw+c.superseded > 0 {
		var why []string
		if c.raw > 0 {
			why = append(why, plural(c.raw, "tool")+" not strict JSON")
		}
		if c.superseded > 0 {
			why = append(why, plural(c.superseded, "tool")+" of a superseded fingerprint version, logged before "+toolpin.Version+": pin from a log of this version or a captured tools/list answer")
		}
		return &exitError{code: 1, err: fmt.Errorf("pin: %s: no tool definition can be pinned (%s)", name, strings.Join(why, "; "))}
	}
	if len(servers) == 0 {
		what := "no tools/list line"
		if c.lists > 0 {
			what = plural(c.lists, "tools/list line") + " but no fingerprint (pinning was off: pin_mode off)"
		}
		if server != "" {
			what += " of server " + strconv.Quote(server)
		}
		return &exitError{code: 1, err: fmt.Errorf("pin: %s: %s", name, what)}
	}
	if c.unpinned > 0 {
		fmt.Fprintf(stderr, "pin: %s: %s without fingerprints (pinning was off for them)\n", name, plural(c.unpinned, "tools/list line"))
	}
	for _, s := range slices.Sorted(maps.Keys(notes)) {
		for _, n := range notes[s] {
			fmt.Fprintf(stderr, "pin: %s: %s: %s\n", name, s, n)
		}
	}
	writePins(stdout, servers, notes)
	return nil
}

// pinLogCounts are what pinDecisionLog counts of a log's lines: tools/list
// lines (of the server asked for), those without fingerprints, and tool
// entries that cannot be pinned (raw; superseded: of an earlier
// fingerprint version).
type pinLogCounts struct{ lists, unpinned, raw, superseded int }

// pinLogLine reads one line of a decision log into servers (and notes);
// it returns what is wrong with the line, "" when nothing is.
func pinLogLine(line []byte, n int, only string, servers map[string]pinSet, notes map[string][]string, c *pinLogCounts) string {
	if !utf8.Valid(line) {
		return "not UTF-8"
	}
	var l struct {
		Kind         string          `json:"kind"`
		List         string          `json:"list"`
		Server       *string         `json:"server"`
		Tools        json.RawMessage `json:"tools"`
		ToolsOmitted int             `json:"tools_omitted"`
	}
	if len(line) == 0 || line[0] != '{' {
		return "not a JSON object (a decision log holds one per line)"
	}
	if _, err := mcpparse.Canonicalize(line, pinLogLimits); err != nil {
		return "not a strict JSON line: " + err.Error()
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return "not a JSON line: " + err.Error()
	}
	if l.Kind != "list_filter" || l.List != "tools" {
		return ""
	}
	if l.Server == nil || *l.Server == "" {
		return "a tools/list line without a server"
	}
	if only != "" && *l.Server != only {
		return ""
	}
	c.lists++
	if l.Tools == nil && l.ToolsOmitted == 0 {
		c.unpinned++
		return ""
	}
	var tools []struct {
		Name        *string `json:"name"`
		Fingerprint string  `json:"fingerprint"`
		Raw         bool    `json:"raw"`
	}
	if l.Tools != nil {
		if err := json.Unmarshal(l.Tools, &tools); err != nil {
			return "tools is not a list of {name, fingerprint}: " + err.Error()
		}
	}
	set := servers[*l.Server]
	if set == nil {
		set = pinSet{}
		servers[*l.Server] = set
	}
	old := 0
	for i, t := range tools {
		switch {
		case t.Name == nil || *t.Name == "":
			return fmt.Sprintf("tools[%d] has no name", i)
		case toolpin.Superseded(t.Fingerprint):
			// Logged by a processor before tooldef-v2: a pin of it would
			// never match what is observed now.
			old++
			continue
		case !toolpin.Valid(t.Fingerprint):
			return fmt.Sprintf("tools[%d] (%s): %q is not a %s fingerprint", i, *t.Name, t.Fingerprint, toolpin.Version)
		case t.Raw:
			// The processor fingerprinted its bytes: a pin of that would
			// hold only while the upstream sends them byte for byte.
			c.raw++
			notes[*l.Server] = append(notes[*l.Server], fmt.Sprintf("%s: %s (line %d; capture the tools/list answer and run extauthz pin on it to see why)", yamlKey(*t.Name), rawNote, n))
			continue
		}
		set.add(*t.Name, t.Fingerprint, strconv.Itoa(n))
	}
	if old > 0 {
		c.superseded += old
		notes[*l.Server] = append(notes[*l.Server], fmt.Sprintf("line %d: %s of an earlier fingerprint version (tooldef-v1, logged before %s) left out: such pins never match; pin those tools from a tools/list this version logged, or capture the answer and run extauthz pin on it", n, plural(old, "tool"), toolpin.Version))
	}
	if l.ToolsOmitted > 0 {
		notes[*l.Server] = append(notes[*l.Server], fmt.Sprintf("line %d: %d more tools of that list were not logged (over the line's budget): capture the tools/list answer and run extauthz pin on it", n, l.ToolsOmitted))
	}
	return ""
}

// rawNote is what pin says of a tool whose definition is not strict JSON.
const rawNote = "definition is not strict JSON; cannot be pinned by content"

// pinLogLimits bound the strict parse of one decision log line (far above
// what the processor writes: a line's tools stop at 128 KiB) and of one
// captured answer.
var pinLogLimits = mcpparse.Limits{MaxBytes: 16 << 20, MaxKeys: 1 << 20, MaxElements: 1 << 22, MaxStringLen: 16 << 20}

// yamlKey writes s as a YAML key: plain when it is a name no YAML 1.1 or
// 1.2 (core schema) reader takes for anything but that string: a letter or
// _ first, then letters, digits, _, . and -, and none of the keywords null,
// true, false, yes, no, on, off, y, n (in any case). Anything else (a
// number such as 123, 1.5, 0x1F or 2026, ~, an empty or non-ASCII name) is
// a double-quoted JSON string, which YAML 1.2 reads as the same string.
func yamlKey(s string) string {
	if plainYAMLKey(s) {
		return s
	}
	return string(mcpparse.AppendJCSString(nil, s))
}

// yamlKeywords are the plain scalars YAML 1.1 or 1.2 resolves to null or a
// boolean (compared in lower case): never written plain.
var yamlKeywords = map[string]bool{"null": true, "true": true, "false": true, "yes": true, "no": true,
	"on": true, "off": true, "y": true, "n": true}

func plainYAMLKey(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z' || s[0] == '_') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return !yamlKeywords[strings.ToLower(s)]
}

// listedTools returns the raw Tool objects of every tools/list result in b:
// a JSON-RPC response, a batch, or an SSE body (events' data lines joined
// with LF, as the SDK clients read them), each message strict JSON-RPC as
// the seam requires (mcpparse.Parse). Errors: no tools/list result, or a
// body that is none of these.
func listedTools(b []byte) ([]json.RawMessage, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var msgs [][]byte
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		msgs = append(msgs, t)
	} else {
		for _, ev := range bytes.Split(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
			var data [][]byte
			for _, line := range bytes.Split(ev, []byte("\n")) {
				if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
					data = append(data, bytes.TrimPrefix(v, []byte(" ")))
				}
			}
			if len(data) > 0 {
				msgs = append(msgs, bytes.Join(data, []byte("\n")))
			}
		}
	}
	var out []json.RawMessage
	for _, m := range msgs {
		// As the seam reads an answer: one it refuses (a duplicate or
		// case-variant member anywhere, a lossy number, ...) never reaches
		// a client, so it has nothing to pin.
		if _, err := mcpparse.Parse(m, mcpparse.ParseOptions{Limits: pinLogLimits, AllowBatch: true}); err != nil {
			return nil, fmt.Errorf("not a strict JSON-RPC message, which the seam refuses (response_unfilterable): %w", err)
		}
		var batch []json.RawMessage
		if len(m) > 0 && m[0] == '[' {
			if err := json.Unmarshal(m, &batch); err != nil {
				return nil, fmt.Errorf("not a JSON-RPC batch: %w", err)
			}
		} else {
			batch = []json.RawMessage{m}
		}
		for _, one := range batch {
			var resp struct {
				Result *struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if json.Unmarshal(one, &resp) == nil && resp.Result != nil && resp.Result.Tools != nil {
				out = append(out, resp.Result.Tools...)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no tools/list result (a JSON-RPC response whose result has a tools array)")
	}
	return out, nil
}
