package policy

import "sort"

// mcpMethods are the JSON-RPC methods some MCP revision defines, in either
// direction (schema.json of 2025-06-18, 2025-11-25 and 2026-07-28, plus
// 2025-03-26 and the tasks extension). A method rule must match at least one
// of them unless it is marked `custom: true`, so a typo such as
// "tool/list" is a compile error rather than a rule that never matches.
var mcpMethods = []string{
	// Client requests and notifications.
	"initialize", "notifications/initialized", "server/discover", "ping",
	"tools/list", "tools/call",
	"resources/list", "resources/templates/list", "resources/read",
	"resources/subscribe", "resources/unsubscribe", "subscriptions/listen",
	"prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
	"notifications/cancelled", "notifications/progress", "notifications/roots/list_changed",
	"tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list",
	"notifications/tasks/status",
	// Server requests and notifications (a client sends their responses,
	// decided by the reserved word response).
	"sampling/createMessage", "roots/list", "elicitation/create",
	"notifications/message", "notifications/resources/list_changed",
	"notifications/resources/updated", "notifications/prompts/list_changed",
	"notifications/tools/list_changed", "notifications/elicitation/complete",
	"notifications/subscriptions/acknowledged",
}

func init() { sort.Strings(mcpMethods) }

// IsMCPMethod reports whether some MCP revision defines method m (exact,
// case-sensitive).
func IsMCPMethod(m string) bool {
	i := sort.SearchStrings(mcpMethods, m)
	return i < len(mcpMethods) && mcpMethods[i] == m
}

// matchesMCPMethod reports whether method pattern g matches at least one
// method an MCP revision defines.
func matchesMCPMethod(g glob) bool {
	for _, m := range mcpMethods {
		if g.match(m) {
			return true
		}
	}
	return false
}
