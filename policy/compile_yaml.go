package policy

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
// fields returns m's members in order, refusing non-string and duplicate
// keys and, unless allowed is nil (any key: server ids, tool names), keys
// not in allowed.
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
		if allowed != nil && !slices.Contains(allowed, k.Value) {
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
