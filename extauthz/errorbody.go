package extauthz

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
)

// errorBody is the JSON-RPC 2.0 error response of a denial:
//
//	{"jsonrpc":"2.0","id":<id byte for byte, or null>,"error":{"code":<int>,
//	 "message":<text>,"data":{"decision":"deny"|"ask","reason":<Reason>,
//	 "rule_id":<id or "">,"request_digest":<sha256:… or "">,
//	 "decision_id":<hex>,"policy_version":<sha256:… or "">}}}
//
// data also carries "batch_index" when a batch element decided,
// "approval_url" on asks when --approval-url is set, "scope" (the
// scopes needed, space-separated) on insufficient_scope, and
// "tool_fingerprint" (what an approval's tooldef claim must name) on
// definition_changed, "keyword" and "pointer" (the JSON Schema keyword
// and the RFC 6901 pointer into params.arguments of the failing value,
// never the value) on arguments_invalid, and "retry_after" (whole
// seconds, as the Retry-After header) on rate_limited.
func errorBody(d *decision.Decision) []byte {
	o := outcomeOf(d.Reason)
	b := make([]byte, 0, 384+len(d.RPCID)+len(o.message)+len(d.RuleID)+len(d.ApprovalURL))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if len(d.RPCID) > 0 {
		b = append(b, d.RPCID...) // validated by mcpparse: a JSON string or integer literal
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(o.code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, o.message)
	// data's members in name order, as encoding/json writes a map.
	b = append(b, `,"data":{`...)
	if d.ApprovalURL != "" {
		b = append(b, `"approval_url":`...)
		b = appendJSONString(b, d.ApprovalURL)
		b = append(b, ',')
	}
	if d.BatchIndex >= 0 {
		b = append(b, `"batch_index":`...)
		b = strconv.AppendInt(b, int64(d.BatchIndex), 10)
		b = append(b, ',')
	}
	b = append(b, `"decision":`...)
	b = appendJSONString(b, d.Reason.Verdict().String())
	b = append(b, `,"decision_id":`...)
	b = appendJSONString(b, d.ID)
	if d.Reason == decision.ReasonArgumentsInvalid {
		b = append(b, `,"keyword":`...)
		b = appendJSONString(b, d.ArgumentsKeyword)
		b = append(b, `,"pointer":`...)
		b = appendJSONString(b, d.ArgumentsPointer)
	}
	b = append(b, `,"policy_version":`...)
	b = appendJSONString(b, d.PolicyVersion)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, string(d.Reason))
	b = append(b, `,"request_digest":`...)
	b = appendJSONString(b, d.RequestDigest)
	if d.Reason == decision.ReasonRateLimited {
		b = append(b, `,"retry_after":`...) // seconds, as Retry-After
		b = strconv.AppendInt(b, int64(retryAfterSeconds(d.RetryAfter)), 10)
	}
	b = append(b, `,"rule_id":`...)
	b = appendJSONString(b, d.RuleID)
	if d.Reason == decision.ReasonInsufficientScope {
		b = append(b, `,"scope":`...)
		b = appendJSONString(b, strings.Join(d.RequiredScopes, " "))
	}
	if d.Reason == decision.ReasonDefinitionChanged && d.ToolFingerprint != "" {
		b = append(b, `,"tool_fingerprint":`...) // what an approval must name (tooldef)
		b = appendJSONString(b, d.ToolFingerprint)
	}
	return append(b, "}}}"...)
}

// appendJSONString appends s as encoding/json.Marshal writes a string:
// '"', '\\' and controls escaped (\b, \f, \n, \r, \t, else \u00xx), '<', '>' and '&'
// as \u003c, \u003e, \u0026, U+2028 and U+2029 as \u2028 and \u2029, and
// each byte that is not UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
