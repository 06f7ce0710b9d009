package policy

import "github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"

// A method rule must match at least one method some MCP revision defines, in
// either direction (the table in internal/mcpmethod), unless it is marked
// `custom: true`, so a typo such as "tool/list" is a compile error rather
// than a rule that never matches.

// matchesMCPMethod reports whether method pattern g matches at least one
// method an MCP revision defines.
func matchesMCPMethod(g glob) bool {
	for _, m := range mcpmethod.Methods {
		if g.match(m.Name) {
			return true
		}
	}
	return false
}
