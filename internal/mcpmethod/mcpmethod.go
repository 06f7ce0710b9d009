// Package mcpmethod is the one table of the JSON-RPC methods MCP defines:
// each method's name, who sends it, the params member that names its target
// and the target's kind, and the MCP revisions whose schema.json defines it
// (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28; "tasks" for
// the tasks extension). The service's known-method set, its metrics labels,
// the Mcp-Name header check and the policy's method validation derive from
// it; mcpparse's target extraction is checked against it by a test. The
// method sets the layers decide by (Task, TaskIDInName, Paginated,
// OneResource, Concealable) and the revisions (Revisions, Revision20241105
// …) are defined here once; no other package spells a method or a revision
// in a literal (TestOnlyTableNamesMethods). Pure: no I/O.
package mcpmethod

import "sort"

// Sender says which side of an MCP session sends a method as a request or
// notification (the schema's ClientRequest/ClientNotification versus
// ServerRequest/ServerNotification unions).
type Sender uint8

// The senders; a method both sides send (ping, notifications/progress) has
// both bits.
const (
	Client Sender = 1 << iota
	Server
)

// TargetKind is what a method acts on, as the policy matches it.
type TargetKind uint8

// The target kinds.
const (
	// None: the method names no tool, prompt or resource.
	None TargetKind = iota
	// Tool: params.name is a tool name (tools/call).
	Tool
	// Prompt: params.name is a prompt name (prompts/get).
	Prompt
	// Resource: params.uri is one resource URI (resources/read, subscribe,
	// unsubscribe).
	Resource
	// ResourceList: params.notifications.resourceSubscriptions lists
	// resource URIs (subscriptions/listen, 2026-07-28).
	ResourceList
	// Reference: params.ref is a ref/prompt (name) or ref/resource (uri)
	// (completion/complete).
	Reference
)

// Method is one row of the table.
type Method struct {
	Name      string     // the JSON-RPC method, exact and case-sensitive
	From      Sender     // who sends it
	Target    TargetKind // what it acts on
	Member    string     // the params member naming the target, e.g. "params.name"; empty for None
	Revisions []string   // the revisions that define it, oldest first
}

// The names of the methods other packages decide on by name; every other
// name is only in Methods.
const (
	ToolsCall              = "tools/call"
	ToolsList              = "tools/list"
	PromptsGet             = "prompts/get"
	PromptsList            = "prompts/list"
	ResourcesRead          = "resources/read"
	ResourcesList          = "resources/list"
	ResourcesTemplatesList = "resources/templates/list"
	ResourcesSubscribe     = "resources/subscribe"
	ResourcesUnsubscribe   = "resources/unsubscribe"
	SubscriptionsListen    = "subscriptions/listen"
	CompletionComplete     = "completion/complete"
	TasksGet               = "tasks/get"
	TasksResult            = "tasks/result"
	TasksCancel            = "tasks/cancel"
	TasksUpdate            = "tasks/update"
	TasksList              = "tasks/list"
)

// The MCP revisions (the Mcp-Protocol-Version values and the
// protocolVersion of initialize), oldest first. A revision string orders
// as its date: compare with >= for "this revision or a later one".
const (
	Revision20241105 = "2024-11-05" // HTTP+SSE transport
	Revision20250326 = "2025-03-26" // Streamable HTTP; the only revision with JSON-RPC batches
	Revision20250618 = "2025-06-18"
	Revision20251125 = "2025-11-25" // tasks
	// Revision20260728: per-request protocol (SEP-2575), headers mirroring
	// params (Mcp-Method, Mcp-Name), CacheableResult's cacheScope and ttlMs.
	Revision20260728 = "2026-07-28"
)

// Revisions lists the MCP revisions, oldest first. Do not modify it.
var Revisions = []string{Revision20241105, Revision20250326, Revision20250618, Revision20251125, Revision20260728}

var (
	all   = Revisions
	upTo  = []string{Revision20241105, Revision20250326, Revision20250618, Revision20251125}
	tasks = []string{Revision20251125, "tasks"}
)

// Methods is the table, in name order. Do not modify it.
var Methods = sortedByName([]Method{
	// Client requests and notifications.
	{"initialize", Client, None, "", upTo},
	{"notifications/initialized", Client, None, "", upTo},
	{"server/discover", Client, None, "", []string{Revision20260728}},
	{"ping", Client | Server, None, "", upTo},
	{ToolsList, Client, None, "", all},
	{ToolsCall, Client, Tool, "params.name", all},
	{ResourcesList, Client, None, "", all},
	{ResourcesTemplatesList, Client, None, "", all},
	{ResourcesRead, Client, Resource, "params.uri", all},
	{ResourcesSubscribe, Client, Resource, "params.uri", upTo},
	{ResourcesUnsubscribe, Client, Resource, "params.uri", upTo},
	{SubscriptionsListen, Client, ResourceList, "params.notifications.resourceSubscriptions", []string{Revision20260728}},
	{PromptsList, Client, None, "", all},
	{PromptsGet, Client, Prompt, "params.name", all},
	{CompletionComplete, Client, Reference, "params.ref", all},
	{"logging/setLevel", Client, None, "", upTo},
	{"notifications/cancelled", Client | Server, None, "", all},
	{"notifications/progress", Client | Server, None, "", all},
	{"notifications/roots/list_changed", Client, None, "", upTo},
	{TasksGet, Client | Server, None, "", tasks},
	{TasksUpdate, Client | Server, None, "", []string{"tasks"}},
	{TasksCancel, Client | Server, None, "", tasks},
	{TasksResult, Client | Server, None, "", tasks},
	{TasksList, Client | Server, None, "", tasks},
	{"notifications/tasks/status", Client | Server, None, "", tasks},
	// Server requests and notifications (a client sends their responses).
	{"sampling/createMessage", Server, None, "", upTo},
	{"roots/list", Server, None, "", upTo},
	{"elicitation/create", Server, None, "", []string{Revision20250618, Revision20251125}},
	{"notifications/message", Server, None, "", all},
	{"notifications/resources/list_changed", Server, None, "", all},
	{"notifications/resources/updated", Server, None, "", all},
	{"notifications/prompts/list_changed", Server, None, "", all},
	{"notifications/tools/list_changed", Server, None, "", all},
	{"notifications/elicitation/complete", Server, None, "", []string{Revision20251125}},
	{"notifications/subscriptions/acknowledged", Server, None, "", []string{Revision20260728}},
})

func sortedByName(ms []Method) []Method {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return ms
}

// Lookup returns the row of method name (exact, case-sensitive) and whether
// some revision defines it.
func Lookup(name string) (Method, bool) {
	i := sort.Search(len(Methods), func(i int) bool { return Methods[i].Name >= name })
	if i < len(Methods) && Methods[i].Name == name {
		return Methods[i], true
	}
	return Method{}, false
}

// FromClient reports whether some revision defines name as a request or
// notification a client sends.
func FromClient(name string) bool {
	m, ok := Lookup(name)
	return ok && m.From&Client != 0
}

// The method sets the service decides by. Each is a switch, not a table
// lookup: they run on every request. TestSets checks each against Methods.

// Task reports a request on one task named by params.taskId: tasks/get,
// tasks/result, tasks/cancel (MCP 2025-11-25) and tasks/update (the tasks
// extension). tasks/list names none.
func Task(m string) bool {
	switch m {
	case TasksGet, TasksResult, TasksCancel, TasksUpdate:
		return true
	}
	return false
}

// TaskIDInName reports the task methods whose Mcp-Name header carries
// params.taskId (SEP-2663): tasks/get, tasks/update, tasks/cancel.
func TaskIDInName(m string) bool {
	switch m {
	case TasksGet, TasksUpdate, TasksCancel:
		return true
	}
	return false
}

// Paginated reports the list requests a client sends, paginated by
// params.cursor: tools/list, prompts/list, resources/list,
// resources/templates/list, tasks/list. roots/list, which a server sends,
// is not one.
func Paginated(m string) bool {
	switch m {
	case ToolsList, PromptsList, ResourcesList, ResourcesTemplatesList, TasksList:
		return true
	}
	return false
}

// OneResource reports the methods whose params.uri names one resource
// (TargetKind Resource): resources/read, resources/subscribe,
// resources/unsubscribe.
func OneResource(m string) bool {
	return m == ResourcesRead || m == ResourcesSubscribe || m == ResourcesUnsubscribe
}

// Concealable reports the methods whose refusal may be answered as the
// server answers an unknown target (refusal: conceal): tools/call,
// prompts/get, resources/read and the Task methods.
func Concealable(m string) bool {
	switch m {
	case ToolsCall, PromptsGet, ResourcesRead:
		return true
	}
	return Task(m)
}

// The pseudo-methods: names the service gives what it decides when no
// single JSON-RPC method names it. They are the method of a Decision, the
// method label of the metrics and log, and the policy's reserved method
// names (policy.OpResponse, OpHTTPGet, OpHTTPDelete). No MCP method is
// spelled like one (TestPseudoMethodsUnclaimed).
const (
	// Response is a client's JSON-RPC response (to a server request such as
	// sampling/createMessage or elicitation/create).
	Response = "response"
	// Batch is a JSON-RPC batch (MCP 2025-03-26 only) that was allowed as a
	// whole; a refused batch is named by its deciding element.
	Batch = "batch"
	// HTTPGet is a bodiless GET: the Streamable HTTP stream a client opens
	// to receive server messages (and, 2025, to resume one).
	HTTPGet = "GET"
	// HTTPDelete is a bodiless DELETE: the end of a session (Mcp-Session-Id).
	HTTPDelete = "DELETE"
)

// Pseudo reports whether name is one of the pseudo-methods.
func Pseudo(name string) bool {
	switch name {
	case Response, Batch, HTTPGet, HTTPDelete:
		return true
	}
	return false
}

// Label is name as a bounded metric label: a method MCP defines for
// clients or a pseudo-method as itself, "" as "none", anything else as
// "other".
func Label(name string) string {
	switch {
	case FromClient(name), Pseudo(name):
		return name
	case name == "":
		return "none"
	}
	return "other"
}
