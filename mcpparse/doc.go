// Package mcpparse parses and validates the body of an MCP (Model Context
// Protocol) HTTP POST strictly, and computes the canonical forms and digests
// that authorization decisions and approvals are keyed on.
//
// It implements:
//   - JSON-RPC 2.0 (https://www.jsonrpc.org/specification): request,
//     notification and response envelopes, ids, and (only where the caller
//     allows them) batches;
//   - MCP revisions 2025-06-18, 2025-11-25 and 2026-07-28: the targets of
//     tools/call, resources/read|subscribe|unsubscribe, subscriptions/listen,
//     prompts/get and completion/complete (see Targets), the rule that request ids are never null, the
//     removal of batches in 2025-06-18, and the `=?base64?…?=` header value
//     encoding of 2026-07-28;
//   - RFC 8259 (JSON) grammar, with its interoperability advice turned into
//     errors where parsers are known to disagree: duplicate member names,
//     invalid UTF-8, lone surrogates, trailing data;
//   - RFC 7493 (I-JSON): no duplicate names, no surrogates, numbers that are
//     exactly representable as IEEE 754 doubles;
//   - RFC 8785 (JCS, JSON Canonicalization Scheme) for the canonical form of
//     tool and prompt arguments, and SHA-256 digests of it.
//
// The package is pure: bytes in, values out; no I/O, no logging, no clock. It
// does not use encoding/json to validate, because encoding/json accepts
// duplicate keys, binds keys case-insensitively and replaces invalid UTF-8;
// a single strict pass of its own rejects each of those instead, so that
// this service and every backend read a body the same way. That pass builds
// no tree: it records where the members a decision needs are, and writes
// the RFC 8785 form of the arguments into a reusable buffer that is hashed
// once (BenchmarkParse: linear in the body, a few allocations per body).
//
// Every error from Parse and Canonicalize is a *ParseError carrying an
// ErrorKind, the byte offset of the fault, and the JSON-RPC error code the
// kind maps to.
//
// # Targets
//
// What each client method of MCP 2025-06-18, 2025-11-25 and 2026-07-28
// (../shared/mcp-schema) names, where, and what Parse does with it. "Method
// rules" means the policy sees the method only.
//
//	method                          versions          target                 carried in                                  Parse
//	tools/call                      all               tool                   params.name                                 Tool (1-128 characters)
//	                                                  arguments              params.arguments                            ArgsDigest, RawArguments (Arguments(), Args() on demand)
//	                                2025-11-25        task augmentation      params.task {ttl}                           none: decided as the tool call it is
//	                                2026-07-28        input responses        params.inputResponses, params.requestState  none: not a target, not in the digest
//	prompts/get                     all               prompt                 params.name                                 Prompt (at most 1024 characters)
//	                                                  arguments              params.arguments                            ArgsDigest, RawArguments (Arguments(), Args() on demand)
//	resources/read                  all               resource               params.uri                                  URI
//	resources/subscribe|unsubscribe 2025-06-18, -11-25 resource              params.uri                                  URI
//	subscriptions/listen            2026-07-28        resources              params.notifications.resourceSubscriptions  URIs, each decided as resources/subscribe
//	completion/complete             all               prompt or resource     params.ref.name / params.ref.uri            RefType and Prompt or URI (method rules; the ref is the logged target)
//	tasks/get|result|cancel         2025-11-25        a task                 params.taskId                               none: method rules; the server binds tasks to their creator
//	notifications/tasks/status      2025-11-25        a task                 params.taskId                               none: method rules
//	notifications/cancelled         all               a request              params.requestId                            none: method rules (same session)
//	notifications/progress          all               a progress token       params.progressToken                        none: method rules
//	logging/setLevel                2025-06-18, -11-25 log level             params.level                                none: method rules
//	any request                     2026-07-28        client info, log level params._meta["io.modelcontextprotocol/…"]  none: per-request metadata, not a target
//	initialize, ping, server/discover, */list, tasks/list, notifications/initialized,
//	notifications/roots/list_changed                  none (cursor is opaque pagination)
//	responses (roots/list, sampling/createMessage, elicitation/create results)  root URIs, content   none: decided as "response"
//
// Names the policy folds are bounded before folding: tool names at most 128
// characters (MCP 2025-11-25), prompt names at most 1024, at most
// MaxSubscriptions URIs per subscriptions/listen; longer is ErrInvalidParams
// (ErrTooManyElements for the list).
package mcpparse
