// Package mcpparse parses and validates the body of an MCP (Model Context
// Protocol) HTTP POST strictly, and computes the canonical forms and digests
// that authorization decisions and approvals are keyed on.
//
// It implements:
//   - JSON-RPC 2.0 (https://www.jsonrpc.org/specification): request,
//     notification and response envelopes, ids, and (only where the caller
//     allows them) batches;
//   - MCP revisions 2025-06-18, 2025-11-25 and 2026-07-28: the targets of
//     tools/call, resources/read|subscribe|unsubscribe, prompts/get and
//     completion/complete, the rule that request ids are never null, the
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
// a single strict tokenizer pass of its own rejects each of those instead, so
// that this service and every backend read a body the same way.
//
// Every error from Parse and Canonicalize is a *ParseError carrying an
// ErrorKind, the byte offset of the fault, and the JSON-RPC error code the
// kind maps to.
package mcpparse
