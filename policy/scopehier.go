package policy

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Scope hierarchies (issue 30; MCP 2026-07-28 authorization: a broader
// scope satisfies a narrower one). Format:
//
//	scope_hierarchy:
//	  implies:                       # broader: [narrower, …]; transitive
//	    mcp:admin: [mcp:tools, mcp:resources]
//	  actions: [admin, write, read]  # resource:action forms, broadest first
//
// With actions, for every resource R (the scope up to its last ':'),
// R:admin implies R:write and R:read, R:write implies R:read, and R:*
// implies R:<each listed action>. A bare R implies nothing by itself (name
// it in implies). Rule `scopes` are satisfied by a token scope that is the
// scope or implies it (ScopeSatisfied); the insufficient_scope challenge
// still names the scopes as the rule wrote them.

// scopeHierarchy is the compiled scope_hierarchy.
type scopeHierarchy struct {
	implies map[string][]string
	actions []string // broadest first
}

// ScopeSatisfied reports whether the token scopes have grant need: one of
// them is need, or implies it through scope_hierarchy (at most 64 steps).
func (p *Policy) ScopeSatisfied(have []string, need string) bool {
	if slices.Contains(have, need) {
		return true
	}
	h := p.hier
	if h == nil {
		return false
	}
	seen := map[string]bool{}
	queue := append([]string(nil), have...)
	for len(queue) > 0 && len(seen) < maxImplied {
		s := queue[0]
		queue = queue[1:]
		if s == need {
			return true
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		queue = append(queue, h.implies[s]...)
		queue = h.appendActionImplied(queue, s)
	}
	return false
}

// maxImplied bounds the scopes ScopeSatisfied visits for one need.
const maxImplied = 1024

// appendActionImplied appends the scopes s implies by the actions order:
// for s = R:a, R:b for every action b listed after a (every action for
// a = *).
func (h *scopeHierarchy) appendActionImplied(out []string, s string) []string {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || len(h.actions) == 0 {
		return out
	}
	a := s[i+1:]
	from := 0
	if a != "*" {
		ia := slices.Index(h.actions, a)
		if ia < 0 {
			return out
		}
		from = ia + 1
	}
	for _, b := range h.actions[from:] {
		out = append(out, s[:i+1]+b)
	}
	return out
}

var scopeHierarchyKeys = []string{"implies", "actions"}

// compileScopeHierarchy reads `scope_hierarchy`.
func (c *compiler) compileScopeHierarchy(n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.addf(n, "", "scope_hierarchy must be a mapping with keys %s", strings.Join(scopeHierarchyKeys, ", "))
		return
	}
	h := &scopeHierarchy{implies: map[string][]string{}}
	c.p.hier = h
	for _, f := range c.fields(n, "", scopeHierarchyKeys) {
		switch f.key {
		case "implies":
			if f.val.Kind != yaml.MappingNode {
				c.addf(f.val, "", "scope_hierarchy.implies must be a mapping of a scope to the scopes it implies")
				continue
			}
			for _, e := range c.fields(f.val, "", nil) {
				if !isScopeToken(e.key) {
					c.addf(e.val, "", "scope_hierarchy.implies: %q is not an OAuth scope token (RFC 6749 section 3.3)", e.key)
					continue
				}
				h.implies[e.key] = c.scopeList(e.val, "scope_hierarchy.implies."+e.key)
			}
		case "actions":
			h.actions = c.scopeList(f.val, "scope_hierarchy.actions")
			for _, a := range h.actions {
				if strings.ContainsRune(a, ':') || a == "*" {
					c.addf(f.val, "", "scope_hierarchy.actions: %q: an action has no ':' and is not *", a)
				}
			}
		}
	}
}

// scopeList reads a list of scope tokens, each once.
func (c *compiler) scopeList(n *yaml.Node, where string) []string {
	if n.Kind != yaml.SequenceNode {
		c.addf(n, "", "%s must be a list of OAuth scope tokens", where)
		return nil
	}
	var out []string
	for _, item := range n.Content {
		s, ok := c.str(item, "", where)
		if !ok {
			continue
		}
		if !isScopeToken(s) || slices.Contains(out, s) {
			c.addf(item, "", "%s: %q is not an OAuth scope token or is listed twice", where, s)
			continue
		}
		out = append(out, s)
	}
	return out
}
