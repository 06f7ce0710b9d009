package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
	p.visCache = newVisibleCache(p)
	for d := range numDecisions {
		for _, ru := range p.rules[d][kindTool] {
			if len(ru.hints) > 0 || ru.when != nil && strings.Contains(ru.whenSrc, "annotations") {
				p.readsAnn = true
			}
		}
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
	// pinUses are the settings that mean something only with pinning on
	// (pins, trusted_servers, a rule's annotations, CEL's annotations),
	// checked against pin_mode once the whole file is read.
	pinUses []pinUse
}

// Keys a policy file may hold. To add a key, list it here and read it where
// the list is used (compile, compileRule); everything else is refused.
var (
	policyKeys  = []string{"default", "refusal", "deny", "ask", "allow", "methods", "scopes", "pin_mode", "pin_scope", "pins", "allow_new_tools", "trusted_servers", "arguments", "scope_hierarchy", "quotas"}
	methodsKeys = []string{"deny", "ask", "allow"}
	// toolRuleKeys are the keys of a rule in deny, ask and allow.
	toolRuleKeys = []string{"id", "match", "when", "shadow", "scopes", "refusal", "annotations", "recover_results"}
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
		case "pin_mode":
			c.compilePinMode(f.val)
		case "pin_scope":
			c.compilePinScope(f.val)
		case "pins":
			c.compilePins(f.val)
			c.usePinning(f.val, "", errPinsOff)
		case "allow_new_tools":
			c.p.allowNewTools, _ = c.boolean(f.val, "", "allow_new_tools")
		case "trusted_servers":
			c.compileTrusted(f.val)
			c.usePinning(f.val, "", errTrustedOff)
		case "arguments":
			c.compileArguments(f.val)
		case "scope_hierarchy":
			c.compileScopeHierarchy(f.val)
		case "quotas":
			c.compileQuotas(f.val)
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
	c.checkPinUses()
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

// ruleID checks a rule's `id` member (idNode; nil when absent) and
// records id, the rule's name, reporting one used before; false when the
// id member is not a usable id.
func (c *compiler) ruleID(idNode, item *yaml.Node, id string) bool {
	ok := true
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
	return ok
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
	ok := c.ruleID(f["id"], item, id)

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
	if n := f["annotations"]; n != nil {
		hs, hok := c.compileHints(n, id)
		ru.hints = hs
		c.usePinning(n, id, errAnnotationsOff)
		ok = ok && hok
		if hok && ru.kind != kindTool {
			c.addf(n, id, "annotations apply to tool rules only (match server/tool)")
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
	if n := f["recover_results"]; n != nil {
		b, bok := c.boolean(n, id, "recover_results")
		ok = ok && bok
		ru.recoverResults = b
		if bok && b && (d != Allow || ru.kind != kindTool) {
			c.addf(n, id, "recover_results applies to allow rules of tools only")
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
