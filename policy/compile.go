package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"go.yaml.in/yaml/v3"
)

// CompileError is the error Compile returns. It holds every problem found,
// sorted by position.
type CompileError struct {
	Problems []Problem
}

// Error returns all problems, one per line.
func (e *CompileError) Error() string {
	var sb strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.String())
	}
	return sb.String()
}

// Problem is one compile problem. Line and Column are 1-based (Column
// counts Unicode code points) and 0 when unknown; RuleID is "" for a
// problem outside any rule.
type Problem struct {
	File         string
	Line, Column int
	RuleID       string
	Msg          string
}

// String formats p as `file:line:col: rule "id": message`, leaving out the
// column, line or rule part when unknown.
func (p Problem) String() string {
	var sb strings.Builder
	sb.WriteString(p.File)
	if p.Line > 0 {
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(p.Line))
		if p.Column > 0 {
			sb.WriteByte(':')
			sb.WriteString(strconv.Itoa(p.Column))
		}
	}
	sb.WriteString(": ")
	if p.RuleID != "" {
		sb.WriteString("rule ")
		sb.WriteString(strconv.Quote(p.RuleID))
		sb.WriteString(": ")
	}
	sb.WriteString(p.Msg)
	return sb.String()
}

// Compile parses and compiles the YAML policy src (format in the package
// doc). filename is used only in error messages. The error, if any, is a
// *CompileError listing every problem found, not only the first.
func Compile(filename string, src []byte) (*Policy, error) {
	c := &compiler{file: filename, src: src, ids: map[string]int{}}
	p := c.compile()
	if len(c.problems) > 0 {
		sort.SliceStable(c.problems, func(i, j int) bool {
			a, b := c.problems[i], c.problems[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		return nil, &CompileError{Problems: c.problems}
	}
	return p, nil
}

type compiler struct {
	file     string
	src      []byte
	lines    []string // src split into lines, without line breaks; lazily
	problems []Problem
	ids      map[string]int // rule id -> line of its first use
	p        Policy
}

func (c *compiler) addf(n *yaml.Node, ruleID, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	c.addAt(line, col, ruleID, fmt.Sprintf(format, args...))
}

func (c *compiler) addAt(line, col int, ruleID, msg string) {
	c.problems = append(c.problems, Problem{File: c.file, Line: line, Column: col, RuleID: ruleID, Msg: msg})
}

// yamlQuoteHint follows every YAML syntax error: most come from a `when`
// expression or a pattern written as a plain scalar.
const yamlQuoteHint = " (quote a value that starts with [ { ! & * ' \" | > % @ or holds \": \" or \" #\"; or write when: | and the expression on the next line)"

var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// addYAMLError records a yaml.v3 parse error, with its line when it has one.
func (c *compiler) addYAMLError(err error) {
	msg := err.Error()
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		c.addAt(line, 0, "", "invalid YAML: "+m[2]+yamlQuoteHint)
		return
	}
	c.addAt(0, 0, "", "invalid YAML: "+strings.TrimPrefix(msg, "yaml: ")+yamlQuoteHint)
}

// Keys a policy file may hold. To add a key, list it here and read it where
// the list is used (compile, compileRule); everything else is refused.
var (
	policyKeys  = []string{"default", "refusal", "deny", "ask", "allow", "methods", "scopes"}
	methodsKeys = []string{"deny", "ask", "allow"}
	// toolRuleKeys are the keys of a rule in deny, ask and allow.
	toolRuleKeys = []string{"id", "match", "when", "shadow", "scopes", "refusal"}
	// methodRuleKeys are the keys of a rule in methods.deny|ask|allow.
	methodRuleKeys = []string{"id", "method", "when", "shadow", "custom", "scopes", "refusal"}
)

// errEmpty is the message for a policy file without content. An empty file
// is refused rather than read as "deny everything": a truncated write or an
// unrendered template must not replace the live policy.
const errEmpty = "empty policy: write at least `default: deny`"

func (c *compiler) compile() *Policy {
	c.p.def = Deny
	dec := yaml.NewDecoder(bytes.NewReader(c.src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.addAt(1, 1, "", errEmpty)
		} else {
			c.addYAMLError(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		c.addf(&extra, "", "more than one YAML document")
		return nil
	case !errors.Is(err, io.EOF):
		c.addYAMLError(err)
		return nil
	}
	if c.findAliases(&doc) {
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			c.addf(root, "", errEmpty)
			return nil
		}
		root = root.Content[0]
	}
	if isNull(root) || (root.Kind == yaml.MappingNode && len(root.Content) == 0) {
		c.addf(root, "", errEmpty)
		return nil
	}
	if root.Kind != yaml.MappingNode {
		c.addf(root, "", "policy must be a mapping with keys %s", strings.Join(policyKeys, ", "))
		return nil
	}
	for _, f := range c.fields(root, "", policyKeys) {
		switch f.key {
		case "scopes":
			c.compileScopesSupported(f.val)
		case "default":
			c.compileDefault(f.val)
		case "refusal":
			if r := c.compileRefusal(f.val, ""); r != nil {
				c.p.refusal = *r
			}
		case "deny":
			c.compileList(f.val, "deny", Deny, false)
		case "ask":
			c.compileList(f.val, "ask", Ask, false)
		case "allow":
			c.compileList(f.val, "allow", Allow, false)
		case "methods":
			if isNull(f.val) {
				continue
			}
			if f.val.Kind != yaml.MappingNode {
				c.addf(f.val, "", "methods must be a mapping with keys %s", strings.Join(methodsKeys, ", "))
				continue
			}
			for _, m := range c.fields(f.val, "", methodsKeys) {
				d := map[string]Decision{"deny": Deny, "ask": Ask, "allow": Allow}[m.key]
				c.compileList(m.val, "methods."+m.key, d, true)
			}
		}
	}
	c.p.scopes = appendRuleScopes(c.p.scopes, &c.p)
	return &c.p
}

// appendRuleScopes appends to scopes, once each and in file order, the
// scopes that p's rules require (rule `scopes`), so scopes_supported names
// every scope a client may be asked to step up to.
func appendRuleScopes(scopes []string, p *Policy) []string {
	seen := map[string]bool{}
	for _, s := range scopes {
		seen[s] = true
	}
	add := func(rs []*rule) {
		for _, r := range rs {
			for _, s := range r.scopes {
				if !seen[s] {
					seen[s] = true
					scopes = append(scopes, s)
				}
			}
		}
	}
	for d := range p.rules {
		for k := range p.rules[d] {
			add(p.rules[d][k])
		}
	}
	add(p.shadow)
	return scopes
}

// findAliases reports every alias in the tree and whether there was one.
// Aliases are refused: they let a small file expand into a large policy
// and make positions ambiguous.
func (c *compiler) findAliases(n *yaml.Node) bool {
	found := false
	if n.Kind == yaml.AliasNode {
		c.addf(n, "", "YAML aliases are not allowed")
		found = true
	}
	for _, ch := range n.Content {
		if c.findAliases(ch) {
			found = true
		}
	}
	return found
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

type field struct {
	key string
	val *yaml.Node
}

// fields returns the entries of mapping m in document order, reporting
// non-string keys, duplicate keys and keys not in allowed (with a hint when
// one differs only in case).
func (c *compiler) fields(m *yaml.Node, ruleID string, allowed []string) []field {
	var out []field
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			c.addf(k, ruleID, "keys must be strings")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			c.addf(k, ruleID, "duplicate key %q (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		if !slices.Contains(allowed, k.Value) {
			hint := ""
			for _, a := range allowed {
				if strings.EqualFold(a, k.Value) {
					hint = fmt.Sprintf(": did you mean %q?", a)
				}
			}
			c.addf(k, ruleID, "unknown key %q (want one of %s)%s", k.Value, strings.Join(allowed, ", "), hint)
			continue
		}
		out = append(out, field{key: k.Value, val: v})
	}
	return out
}

// compileScopesSupported reads the top-level scopes list: OAuth scope tokens (RFC 6749
// section 3.3: printable ASCII without space, '"' or '\\'), each once.
func (c *compiler) compileScopesSupported(n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.addf(n, "", "scopes must be a list of OAuth scope tokens")
		return
	}
	seen := map[string]bool{}
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" || !isScopeToken(item.Value) {
			c.addf(item, "", "scope %q is not an OAuth scope token (RFC 6749 section 3.3)", item.Value)
			continue
		}
		if seen[item.Value] {
			c.addf(item, "", "duplicate scope %q", item.Value)
			continue
		}
		seen[item.Value] = true
		c.p.scopes = append(c.p.scopes, item.Value)
	}
}

// isScopeToken reports whether s is a scope-token: 1*( %x21 / %x23-5B / %x5D-7E ).
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b < 0x21 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

func (c *compiler) compileDefault(n *yaml.Node) {
	s, ok := c.str(n, "", "default")
	if !ok {
		return
	}
	switch s {
	case "deny":
		c.p.def = Deny
	case "ask":
		c.p.def = Ask
	case "allow":
		c.addf(n, "", "default: allow is not permitted (fail closed): use deny or ask")
	default:
		c.addf(n, "", "default must be deny or ask, not %q", s)
	}
}

// compileList compiles the rule list n named list (as in rule ids:
// "deny", "methods.allow") deciding d.
func (c *compiler) compileList(n *yaml.Node, list string, d Decision, methods bool) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.addf(n, "", "%s must be a list of rules", list)
		return
	}
	for i, item := range n.Content {
		c.compileRule(item, list+"["+strconv.Itoa(i)+"]", d, methods)
	}
}

// ruleName returns the name every message about rule item uses: its id
// when it has a usable one, else pos ("deny[0]").
func ruleName(item *yaml.Node, pos string) string {
	if item.Kind != yaml.MappingNode {
		return pos
	}
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!str" && k.Value == "id" &&
			v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && validID(v.Value) {
			return v.Value
		}
	}
	return pos
}

func validID(s string) bool { return s != "" && strings.IndexFunc(s, isControl) < 0 }

// compileRule compiles one rule item, a string or a mapping; pos is its
// place ("deny[0]").
func (c *compiler) compileRule(item *yaml.Node, pos string, d Decision, methods bool) {
	patKey, keys := "match", toolRuleKeys
	if methods {
		patKey, keys = "method", methodRuleKeys
	}
	id := ruleName(item, pos)
	f := map[string]*yaml.Node{}
	switch {
	case item.Kind == yaml.ScalarNode && item.ShortTag() == "!!str":
		f[patKey] = item
	case item.Kind == yaml.MappingNode:
		for _, kv := range c.fields(item, id, keys) {
			f[kv.key] = kv.val
		}
	case item.Kind == yaml.ScalarNode && !isNull(item):
		c.addf(item, id, "a rule must be a string or a mapping with %s; %s", patKey, notString(item))
		return
	default:
		c.addf(item, id, "a rule must be a string or a mapping with %s", patKey)
		return
	}
	ok := true
	idNode := f["id"]
	if idNode != nil {
		if s, sok := c.str(idNode, id, "id"); !sok {
			ok = false
		} else if !validID(s) {
			c.addf(idNode, id, "id must be non-empty and printable")
			ok = false
		}
	}
	if line, dup := c.ids[id]; dup {
		c.addf(orNode(idNode, item), id, "duplicate rule id (first at line %d)", line)
	} else {
		c.ids[id] = orNode(idNode, item).Line
	}

	ru := &rule{id: id, decision: d, loose: d != Allow, line: item.Line, col: item.Column}
	if n := f["shadow"]; n != nil {
		b, bok := c.boolean(n, id, "shadow")
		ok = ok && bok
		ru.shadow = b
	}
	custom := false
	if n := f["custom"]; n != nil {
		b, bok := c.boolean(n, id, "custom")
		ok = ok && bok
		custom = b || !bok // reported already
	}
	if pat := f[patKey]; pat == nil {
		c.addf(item, id, "missing %s", patKey)
		ok = false
	} else if s, sok := c.str(pat, id, patKey); !sok {
		ok = false
	} else {
		ru.pattern = s
		var msg string
		if methods {
			msg = compileMethod(ru, s)
			if msg == "" && ru.kind == kindMethod && !custom && !matchesMCPMethod(ru.name) {
				msg = fmt.Sprintf("no MCP version defines a method matching %q (a typo? for your own method add custom: true)", s)
			}
		} else {
			msg = compileMatch(ru, s)
		}
		if msg != "" {
			c.addf(pat, id, "%s", msg)
			ok = false
		}
	}
	if n := f["when"]; n != nil {
		prg, wok := c.compileWhen(n, id)
		ru.when, ru.whenSrc = prg, n.Value
		ok = ok && wok
	}
	if scopes := f["scopes"]; scopes != nil {
		var sok bool
		ru.scopes, sok = c.compileScopes(scopes, id, d)
		ok = ok && sok
	}
	if refusal := f["refusal"]; refusal != nil {
		ru.refusal = c.compileRefusal(refusal, id)
		ok = ok && ru.refusal != nil
		if methods {
			c.addf(refusal, id, "refusal applies to tool, prompt and resource rules, not method rules")
			ok = false
		}
	}
	if !ok {
		return
	}
	if ru.shadow {
		c.p.shadow = append(c.p.shadow, ru)
	} else {
		c.p.rules[d][ru.kind] = append(c.p.rules[d][ru.kind], ru)
	}
}

// compileScopes compiles a rule's `scopes`: a non-empty list of OAuth scope
// tokens (RFC 6749 section 3.3: printable ASCII without space, '"' or '\\').
// A deny rule never admits, so scopes on it are an error.
func (c *compiler) compileScopes(n *yaml.Node, id string, d Decision) ([]string, bool) {
	if d == Deny {
		c.addf(n, id, "scopes on a deny rule have no effect: a deny rule never admits")
		return nil, false
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		c.addf(n, id, "scopes must be a non-empty list of scope names")
		return nil, false
	}
	var out []string
	ok := true
	for _, e := range n.Content {
		s, sok := c.str(e, id, "a scope")
		if !sok {
			ok = false
			continue
		}
		valid := s != ""
		for i := 0; i < len(s); i++ {
			b := s[i]
			valid = valid && b > 0x20 && b < 0x7f && b != '"' && b != '\\'
		}
		if !valid {
			c.addf(e, id, "scope %q: want printable ASCII without space, '\"' or '\\' (RFC 6749 section 3.3)", s)
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

// compileRefusal compiles `refusal: explain | conceal`; nil after a problem.
func (c *compiler) compileRefusal(n *yaml.Node, id string) *Refusal {
	r := RefusalExplain
	switch {
	case n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str":
	case n.Value == "explain":
		return &r
	case n.Value == "conceal":
		r = RefusalConceal
		return &r
	}
	c.addf(n, id, "refusal must be explain or conceal")
	return nil
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// str returns the decoded string value of scalar n (quotes and escapes
// resolved; a YAML 1.2 string: `no` and `on` are strings, `404` and `true`
// are not), reporting anything else.
func (c *compiler) str(n *yaml.Node, id, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		c.addf(n, id, "%s must be a string; %s", what, notString(n))
		return "", false
	}
	return n.Value, true
}

// boolean returns the value of a YAML 1.2 boolean scalar (true, True, TRUE,
// false, False, FALSE), reporting anything else: YAML 1.1's yes, no, on,
// off, y and n are strings, and refused rather than guessed.
func (c *compiler) boolean(n *yaml.Node, id, what string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			c.addf(n, id, "%s must be true or false, not the string %q", what, n.Value)
		} else {
			c.addf(n, id, "%s must be true or false", what)
		}
		return false, false
	}
	return b, true
}

// notString says what n is instead of a string, and how to fix it.
func notString(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "found a mapping (a `{` or a `key: value` inside an unquoted value? quote it)"
	case n.Kind == yaml.SequenceNode:
		return "found a list (an unquoted value that starts with `[`? quote it)"
	case n.Kind != yaml.ScalarNode:
		return "found " + n.ShortTag()
	case isNull(n):
		return "found null (an empty value or ~)"
	case strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!"):
		return fmt.Sprintf("found the YAML tag %s (an unquoted value that starts with `!`? quote it)", n.Tag)
	}
	return fmt.Sprintf("found the YAML %s %s: quote it (%q)", strings.TrimPrefix(n.ShortTag(), "!!"), n.Value, n.Value)
}

// anyGlob matches everything; it is the server of a bare `tool` pattern.
var anyGlob = glob{toks: []tok{{kind: tokAny}}}

// compileMatch fills in ru from a tool, resource or prompt pattern and
// returns a problem message, or "".
func compileMatch(ru *rule, s string) string {
	if s == "" {
		return "empty match"
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		return "match has a control character"
	}
	// Deny and ask fold literals and let '*' cross '/' inside a name (fail
	// closed); allow compares exactly and '*' stops at '/'.
	nameOpts := globOptions{starCrossesSlash: ru.loose}
	if ru.loose {
		nameOpts.fold = loose
	}
	switch {
	case strings.HasPrefix(s, "resource:"):
		ru.kind = kindResource
		rest := s[len("resource:"):]
		i := strings.IndexByte(rest, '/')
		if i <= 0 || i == len(rest)-1 {
			return fmt.Sprintf("resource pattern %q: want resource:server/URI", s)
		}
		server, uri := rest[:i], rest[i+1:]
		if hasDoubleStar(server) {
			return "'**' is only allowed in the URI of a resource pattern"
		}
		pat, problem := compileURIPattern(uri, ru.loose)
		if problem != "" {
			return problem
		}
		ru.server = parseGlob(server, nameOpts)
		ru.uri = pat
		return ""
	case strings.HasPrefix(s, "prompt:"):
		ru.kind = kindPrompt
		return compileName(ru, s, s[len("prompt:"):], nameOpts)
	default:
		ru.kind = kindTool
		return compileName(ru, s, s, nameOpts)
	}
}

// compileName compiles a `server/name` or bare `name` pattern.
func compileName(ru *rule, full, s string, o globOptions) string {
	if hasDoubleStar(s) {
		return "'**' is only allowed in the URI of a resource pattern"
	}
	server, name, split := strings.Cut(s, "/")
	if !split {
		if s == "" {
			return fmt.Sprintf("%q: empty name", full)
		}
		ru.server, ru.name = anyGlob, parseGlob(s, o)
		return ""
	}
	if strings.Contains(name, "/") {
		return fmt.Sprintf("%q has more than one '/': want server/name or name", full)
	}
	if server == "" || name == "" {
		return fmt.Sprintf("%q: empty server or name", full)
	}
	ru.server, ru.name = parseGlob(server, o), parseGlob(name, o)
	return ""
}

// compileMethod fills in ru from a method pattern and returns a problem
// message, or "".
func compileMethod(ru *rule, s string) string {
	switch s {
	case "":
		return "empty method"
	case reservedGET:
		ru.kind = kindGET
		return ""
	case reservedDELETE:
		ru.kind = kindDELETE
		return ""
	case reservedResponse:
		ru.kind = kindResponse
		return ""
	case methodToolsCall:
		return "tools/call is decided by tool rules (deny/ask/allow match), not method rules"
	case methodResRead, methodResSub, methodResUnsub:
		return s + " is decided by resource rules (match: resource:server/URI), not method rules"
	case methodPromptsGet:
		return "prompts/get is decided by prompt rules (match: prompt:server/name), not method rules"
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		return "method has a control character"
	}
	if hasDoubleStar(s) {
		return "'**' is only allowed in the URI of a resource pattern"
	}
	ru.kind = kindMethod
	ru.name = parseGlob(s, globOptions{})
	return ""
}

// compileWhen compiles a `when` expression, reporting problems at their
// place in the file.
func (c *compiler) compileWhen(n *yaml.Node, id string) (cel.Program, bool) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!str" || isNull(n)) && strings.TrimSpace(n.Value) == "" {
		c.addf(n, id, "when must be a non-empty CEL expression")
		return nil, false
	}
	if _, ok := c.str(n, id, "when"); !ok {
		return nil, false
	}
	env, err := celEnv()
	if err != nil { // a bug in this package, not in the policy
		c.addf(n, id, "CEL environment: %v", err)
		return nil, false
	}
	ast, iss := env.Compile(n.Value)
	if iss != nil && iss.Err() != nil {
		for _, e := range iss.Errors() {
			line, col := c.celPos(n, e.Location.Line(), e.Location.Column())
			msg := strings.TrimSuffix(e.Message, " (in container '')")
			c.addAt(line, col, id, msg)
		}
		return nil, false
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		c.addf(n, id, "when has type %s, want bool", t)
		return nil, false
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(maxEvalCost))
	if err != nil {
		c.addf(n, id, "when: %v", err)
		return nil, false
	}
	return prg, true
}

// celPos maps a position in the expression held by scalar n (CEL: line
// 1-based, column 0-based, in code points) to the file. It handles
// single-line plain and quoted scalars and literal block scalars ("|"),
// checking the file text; anything else (folded or multi-line flow
// scalars, escapes before the column) maps to the start of n.
func (c *compiler) celPos(n *yaml.Node, line, col int) (int, int) {
	exprLines := strings.Split(n.Value, "\n")
	if line < 1 || line > len(exprLines) || col < 0 {
		return n.Line, n.Column
	}
	want := exprLines[line-1]
	if col > utf8.RuneCountInString(want) {
		return n.Line, n.Column
	}
	wantPrefix := want[:runeOffset(want, col)]
	switch n.Style {
	case 0, yaml.TaggedStyle, yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		if line != 1 {
			break
		}
		startCol := n.Column
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			startCol++
		}
		src := c.line(n.Line)
		start := runeOffset(src, startCol-1)
		if start >= 0 && strings.HasPrefix(src[start:], wantPrefix) {
			return n.Line, startCol + col
		}
	case yaml.LiteralStyle:
		fileLine := n.Line + line
		src := c.line(fileLine)
		if strings.HasSuffix(src, want) {
			indent := utf8.RuneCountInString(src[:len(src)-len(want)])
			return fileLine, indent + col + 1
		}
	}
	return n.Line, n.Column
}

// line returns line n (1-based) of the source, or "".
func (c *compiler) line(n int) string {
	if c.lines == nil {
		c.lines = strings.Split(string(c.src), "\n")
		for i, l := range c.lines {
			c.lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	if n < 1 || n > len(c.lines) {
		return ""
	}
	return c.lines[n-1]
}

// runeOffset returns the byte offset of the n-th code point of s, len(s)
// if s is shorter, or -1 if n < 0.
func runeOffset(s string, n int) int {
	if n < 0 {
		return -1
	}
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
