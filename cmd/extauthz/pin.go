package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// runPin prints the fingerprints of the tools in captured tools/list
// responses as a policy `pins:` block to paste (issue 18). Each FILE (or -
// for stdin) holds one JSON-RPC response (application/json), a batch of
// them, or a text/event-stream body whose events carry them; every response
// whose result has a tools array counts. A tool listed twice with two
// definitions gets both fingerprints (the policy then approves either).
// Exit 0; 1 when a file holds no tools/list result or a tool that cannot be
// fingerprinted; 2 on bad usage or a file that cannot be read.
func runPin(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "serve's config file, for the MCP server id (default $EXTAUTHZ_CONFIG)")
	serverID := fs.String("server-id", "", "MCP server id the tools belong to (default: the --config server-id)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz pin [--server-id ID | --config FILE] RESPONSE...   (fingerprint the tools of captured tools/list responses; - reads stdin)")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &exitError{code: 2}
	}
	bad := func(err error) error { return &exitError{code: 2, err: fmt.Errorf("pin: %w", err)} }
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
	pins := map[string][]string{}
	for _, name := range fs.Args() {
		var b []byte
		var err error
		if name == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(name)
		}
		if err != nil {
			return bad(err)
		}
		defs, err := listedTools(b)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("pin: %s: %w", name, err)}
		}
		for _, def := range defs {
			d, err := toolpin.Parse(def, nil)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("pin: %s: a tool definition cannot be fingerprinted (it would read as changed): %w", name, err)}
			}
			if !contains(pins[d.Name], d.Fingerprint) {
				pins[d.Name] = append(pins[d.Name], d.Fingerprint)
			}
		}
	}
	names := make([]string, 0, len(pins))
	for n := range pins {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(stdout, "pins:")
	fmt.Fprintf(stdout, "  %s:\n", yamlKey(*serverID))
	for _, n := range names {
		fmt.Fprintf(stdout, "    %s: [%s]\n", yamlKey(n), strings.Join(pins[n], ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// yamlKey writes s as a YAML key: plain when it is a simple name, else a
// double-quoted JSON string (YAML 1.2 reads it as the same string).
func yamlKey(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			plain = false
		}
	}
	if plain && !strings.ContainsAny(s[:1], "-.") {
		return s
	}
	return string(mcpparse.AppendJCSString(nil, s))
}

// listedTools returns the raw Tool objects of every tools/list result in b:
// a JSON-RPC response, a batch, or an SSE body (events' data lines joined
// with LF, as the SDK clients read them). Errors: no tools/list result, or a
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
