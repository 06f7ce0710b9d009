package policytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"go.yaml.in/yaml/v3"
)

// A test file is YAML, next to the policy it tests:
//
//	policy: policy.yaml        # relative to this file; default: this file's name without _test
//	server: payments           # MCP server id of every test (a test may set its own)
//	principal:                 # optional, for every test (a test may set its own)
//	  sub: alice
//	  claims: {groups: [payments-admins]}
//	tests:
//	  - name: search is allowed
//	    body: {jsonrpc: "2.0", id: 1, method: tools/call, params: {name: search, arguments: {query: x}}}
//	    want: {decision: allow, reason: allowed, rule: search}
//	  - name: exact bytes
//	    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}'   # a string is the body byte for byte
//	    headers: {mcp-protocol-version: "2025-11-25"}
//	    want: {decision: allow}
//	  - name: the SSE stream
//	    http_method: GET
//	    want: {decision: allow, rule: sse-stream}
//
// want.decision is required; want.reason, want.rule (the deciding rule id;
// "" for none) and want.shadow (the ids of matching shadow rules, in
// order) are checked when present.
var (
	fileKeys      = []string{"policy", "server", "principal", "tests"}
	testKeys      = []string{"name", "http_method", "headers", "body", "server", "principal", "want"}
	principalKeys = []string{"iss", "sub", "aud", "claims"}
	wantKeys      = []string{"decision", "reason", "rule", "shadow"}
)

// File is a parsed test file.
type File struct {
	Path       string // as given
	PolicyPath string // the policy it tests
	Tests      []Test
}

// Test is one test case.
type Test struct {
	Name      string
	Line      int // of the test in its file
	Request   Request
	Principal Principal
	Want      Want
}

// Want is what a test expects. Nil fields are not checked.
type Want struct {
	Decision string
	Reason   *string
	Rule     *string
	Shadow   *[]string
}

// LoadError is a test file that cannot be read or parsed; Problems hold
// file:line: messages.
type LoadError struct{ Problems []string }

// Error returns the problems, one per line.
func (e *LoadError) Error() string { return strings.Join(e.Problems, "\n") }

type loader struct {
	path     string
	problems []string
}

func (l *loader) addf(n *yaml.Node, format string, args ...any) {
	pos := l.path
	if n != nil && n.Line > 0 {
		pos += ":" + strconv.Itoa(n.Line) + ":" + strconv.Itoa(n.Column)
	}
	l.problems = append(l.problems, pos+": "+fmt.Sprintf(format, args...))
}

// LoadFile reads and parses the test file at path. Errors are *LoadError
// (or the read error).
func LoadFile(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse parses src, the test file at path. Unknown and duplicate keys are
// errors, as in policies.
func Parse(path string, src []byte) (*File, error) {
	l := &loader{path: path}
	f := &File{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty test file")
		}
		return nil, &LoadError{Problems: []string{path + ": " + err.Error()}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		l.addf(root, "a test file is a mapping with keys %s", strings.Join(fileKeys, ", "))
		return nil, &LoadError{Problems: l.problems}
	}
	var server string
	var principal Principal
	var tests *yaml.Node
	for _, kv := range l.fields(root, fileKeys) {
		switch kv[0].Value {
		case "policy":
			f.PolicyPath = l.str(kv[1], "policy")
		case "server":
			server = l.str(kv[1], "server")
		case "principal":
			principal = l.principal(kv[1])
		case "tests":
			tests = kv[1]
		}
	}
	if f.PolicyPath == "" {
		base := filepath.Base(path)
		ext := filepath.Ext(base)
		f.PolicyPath = strings.TrimSuffix(strings.TrimSuffix(base, ext), "_test") + ext
	}
	if !filepath.IsAbs(f.PolicyPath) {
		f.PolicyPath = filepath.Join(filepath.Dir(path), f.PolicyPath)
	}
	if tests == nil || tests.Kind != yaml.SequenceNode || len(tests.Content) == 0 {
		l.addf(orNode(tests, root), "tests must be a non-empty list")
	} else {
		names := map[string]int{}
		for i, n := range tests.Content {
			t := l.test(n, i, server, principal)
			if t == nil {
				continue
			}
			if line, dup := names[t.Name]; dup {
				l.addf(n, "test %q: duplicate name (first at line %d)", t.Name, line)
			}
			names[t.Name] = t.Line
			f.Tests = append(f.Tests, *t)
		}
	}
	if len(l.problems) > 0 {
		return nil, &LoadError{Problems: l.problems}
	}
	return f, nil
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

// fields returns the key/value pairs of mapping m, reporting unknown,
// duplicate and non-string keys.
func (l *loader) fields(m *yaml.Node, allowed []string) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		switch {
		case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
			l.addf(k, "keys must be strings")
		case seen[k.Value]:
			l.addf(k, "duplicate key %q", k.Value)
		case !slices.Contains(allowed, k.Value):
			l.addf(k, "unknown key %q (want one of %s)", k.Value, strings.Join(allowed, ", "))
		default:
			seen[k.Value] = true
			out = append(out, [2]*yaml.Node{k, m.Content[i+1]})
		}
	}
	return out
}

func (l *loader) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		l.addf(n, "%s must be a string (quote it)", what)
		return ""
	}
	return n.Value
}

func (l *loader) principal(n *yaml.Node) Principal {
	var p Principal
	if n.Kind != yaml.MappingNode {
		l.addf(n, "principal must be a mapping with keys %s", strings.Join(principalKeys, ", "))
		return p
	}
	for _, kv := range l.fields(n, principalKeys) {
		switch kv[0].Value {
		case "iss":
			p.Issuer = l.str(kv[1], "iss")
		case "sub":
			p.Subject = l.str(kv[1], "sub")
		case "aud":
			p.Audience = l.str(kv[1], "aud")
		case "claims":
			var c map[string]any
			if err := kv[1].Decode(&c); err != nil {
				l.addf(kv[1], "claims: %v", err)
				continue
			}
			var err error
			if p.Claims, err = JSONClaims(c); err != nil {
				l.addf(kv[1], "%v", err)
			}
		}
	}
	return p
}

func (l *loader) test(n *yaml.Node, i int, server string, principal Principal) *Test {
	t := &Test{Name: "tests[" + strconv.Itoa(i) + "]", Line: n.Line, Principal: principal}
	t.Request.Server = server
	if n.Kind != yaml.MappingNode {
		l.addf(n, "a test must be a mapping with keys %s", strings.Join(testKeys, ", "))
		return nil
	}
	var want *yaml.Node
	for _, kv := range l.fields(n, testKeys) {
		k, v := kv[0].Value, kv[1]
		switch k {
		case "name":
			t.Name = l.str(v, "name")
		case "http_method":
			t.Request.HTTPMethod = l.str(v, "http_method")
		case "server":
			t.Request.Server = l.str(v, "server")
		case "principal":
			p := l.principal(v)
			// A test's principal replaces the file's, field by field.
			if p.Issuer != "" {
				t.Principal.Issuer = p.Issuer
			}
			if p.Subject != "" {
				t.Principal.Subject = p.Subject
			}
			if p.Audience != "" {
				t.Principal.Audience = p.Audience
			}
			if p.Claims != nil {
				t.Principal.Claims = p.Claims
			}
		case "headers":
			if v.Kind != yaml.MappingNode {
				l.addf(v, "headers must be a mapping of names to strings")
				continue
			}
			t.Request.Headers = map[string]string{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				name := strings.ToLower(l.str(v.Content[j], "a header name"))
				if _, dup := t.Request.Headers[name]; dup {
					l.addf(v.Content[j], "duplicate header %q", name)
				}
				t.Request.Headers[name] = l.str(v.Content[j+1], "header "+name)
			}
		case "body":
			t.Request.Body = l.body(v)
		case "want":
			want = v
		}
	}
	if t.Request.Server == "" {
		l.addf(n, "test %q: no server (set server: in the file or the test)", t.Name)
	}
	if t.Request.HTTPMethod == "" && t.Request.Body == nil {
		l.addf(n, "test %q: no body (a POST needs one; set http_method: GET or DELETE for bodiless requests)", t.Name)
	}
	if want == nil {
		l.addf(n, "test %q: no want", t.Name)
		return t
	}
	if want.Kind != yaml.MappingNode {
		l.addf(want, "want must be a mapping with keys %s", strings.Join(wantKeys, ", "))
		return t
	}
	for _, kv := range l.fields(want, wantKeys) {
		v := kv[1]
		switch kv[0].Value {
		case "decision":
			t.Want.Decision = l.str(v, "want.decision")
			if d := t.Want.Decision; d != "allow" && d != "deny" && d != "ask" {
				l.addf(v, "want.decision must be allow, deny or ask, not %q", d)
			}
		case "reason":
			s := l.str(v, "want.reason")
			if !slices.Contains(decision.Reasons(), decision.Reason(s)) {
				l.addf(v, "want.reason %q is not a reason (docs/reasons.md lists them)", s)
			}
			t.Want.Reason = &s
		case "rule":
			s := ""
			if v.ShortTag() != "!!null" {
				s = l.str(v, "want.rule")
			}
			t.Want.Rule = &s
		case "shadow":
			var ids []string
			if err := v.Decode(&ids); err != nil {
				l.addf(v, "want.shadow must be a list of rule ids")
			}
			t.Want.Shadow = &ids
		}
	}
	if t.Want.Decision == "" {
		l.addf(want, "test %q: want.decision is required", t.Name)
	}
	return t
}

// body returns the body a test gives: a string byte for byte, anything
// else encoded as JSON.
func (l *loader) body(n *yaml.Node) []byte {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return []byte(n.Value)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		l.addf(n, "body: %v", err)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		l.addf(n, "body cannot be JSON: %v", err)
		return nil
	}
	return b
}

// Result is the outcome of one test.
type Result struct {
	File     *File
	Test     *Test
	Decision *decision.Decision
	// Failures say what differs from want; none means the test passed.
	Failures []string
}

// Passed reports whether the test passed.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

// Pos is the test's file:line.
func (r *Result) Pos() string { return r.File.Path + ":" + strconv.Itoa(r.Test.Line) }

// NewDecider builds the Decider of one test: the compiled policy lp, the
// test's MCP server id and principal. RunWith takes it so that `extauthz
// test --config` decides with serve's settings (limits, case-sensitive
// keys, cursor keys, …); Run decides with the defaults (Decide).
type NewDecider func(lp *decision.LoadedPolicy, server string, p Principal) (*decision.Decider, error)

// Run compiles f's policy and runs its tests. A policy that cannot be read
// or compiled is an error (a *policy.CompileError for a bad one).
func Run(ctx context.Context, f *File) (*decision.LoadedPolicy, []Result, error) {
	return RunWith(ctx, f, nil)
}

// RunWith is Run deciding each test with the Decider nd builds; nil is
// Decide's. A Decider nd cannot build fails its test (internal_error with
// the error in Detail).
func RunWith(ctx context.Context, f *File, nd NewDecider) (*decision.LoadedPolicy, []Result, error) {
	src, err := os.ReadFile(f.PolicyPath)
	if err != nil {
		return nil, nil, err
	}
	lp, err := decision.CompilePolicy(f.PolicyPath, src)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Result, len(f.Tests))
	for i := range f.Tests {
		t := &f.Tests[i]
		var d *decision.Decision
		if nd == nil {
			d = Decide(ctx, lp, t.Request.Server, t.Principal, t.Request.Captured())
		} else if dec, err := nd(lp, t.Request.Server, t.Principal); err != nil {
			d = decision.Internal(err.Error())
		} else {
			d = dec.Decide(ctx, requestOf(t.Request.Captured()))
		}
		out[i] = Result{File: f, Test: t, Decision: d, Failures: compare(t.Want, d)}
	}
	return lp, out, nil
}

func compare(w Want, d *decision.Decision) []string {
	var out []string
	if got := d.Reason.Verdict().String(); got != w.Decision {
		out = append(out, fmt.Sprintf("decision %s, want %s", got, w.Decision))
	}
	if w.Reason != nil && string(d.Reason) != *w.Reason {
		out = append(out, fmt.Sprintf("reason %s, want %s", d.Reason, *w.Reason))
	}
	if w.Rule != nil && d.RuleID != *w.Rule {
		out = append(out, fmt.Sprintf("rule %q, want %q", d.RuleID, *w.Rule))
	}
	if w.Shadow != nil {
		got := []string{}
		for _, s := range d.Shadow {
			got = append(got, s.RuleID)
		}
		if !slices.Equal(got, *w.Shadow) {
			out = append(out, fmt.Sprintf("shadow %q, want %q", got, *w.Shadow))
		}
	}
	return out
}

// Find returns the test files named by args: files as given, and every
// *_test.yaml or *_test.yml below a directory (hidden directories skipped),
// in lexical order; arguments keep their order, and a file named twice runs
// once. No args means the current directory.
func Find(args []string) ([]string, error) {
	if len(args) == 0 {
		args = []string{"."}
	}
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && p != a && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			if !e.IsDir() && (strings.HasSuffix(p, "_test.yaml") || strings.HasSuffix(p, "_test.yml")) {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(p string) bool {
		dup := seen[filepath.Clean(p)]
		seen[filepath.Clean(p)] = true
		return dup
	}), nil
}
