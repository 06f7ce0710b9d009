package extauthz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"

	"github.com/gowebpki/jcs"
)

// ConcealStyle names the MCP server SDK whose "unknown tool / prompt /
// resource" answer a concealed refusal reproduces (policy `refusal:
// conceal`): the HTTP status, the SDK's own response headers, the framing
// (an SSE `message` event or an application/json body), the JSON-RPC body
// byte for byte, and the request id as the SDK writes it back.
type ConcealStyle string

// The supported styles, taken from the SDKs' sources and checked against
// recorded answers of the real SDKs (testdata/conceal/observed.jsonl).
const (
	// ConcealGoSDK: github.com/modelcontextprotocol/go-sdk v1.8.0
	// (mcp/server.go, mcp/resource.go): -32602 `unknown tool "x"`,
	// `unknown prompt "x"`; resources -32602 "Resource not found" with data
	// {"uri": …}. The default.
	ConcealGoSDK ConcealStyle = "go-sdk"
	// ConcealTypeScriptSDK: @modelcontextprotocol/sdk 1.x McpServer
	// (src/server/mcp.ts, 1.32.2): an unknown tool is a tool result with
	// isError and the text "MCP error -32602: Tool x not found"; prompts and
	// resources are -32602 "MCP error -32602: Prompt x not found",
	// "MCP error -32602: Resource x not found".
	ConcealTypeScriptSDK ConcealStyle = "typescript-sdk"
	// ConcealTypeScriptSDKV2: @modelcontextprotocol/server 2.x: -32602
	// "Tool x not found", "Prompt x not found", and ResourceNotFoundError
	// -32602 "Resource not found: x" with data {"uri": …}.
	ConcealTypeScriptSDKV2 ConcealStyle = "typescript-sdk-v2"
)

// ParseConcealStyle parses the --conceal-as values: go-sdk, typescript-sdk,
// typescript-sdk-v2. The error names the valid ones.
func ParseConcealStyle(s string) (ConcealStyle, error) {
	styles := []ConcealStyle{ConcealGoSDK, ConcealTypeScriptSDK, ConcealTypeScriptSDKV2}
	for _, c := range styles {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("conceal style %q: want one of %v", s, styles)
}

// concealable reports whether d's refusal may be concealed: a policy
// outcome about the target (not a fault, a bad request or a bad token, which
// the client must be able to act on) of tools/call, prompts/get,
// resources/read or a task method (task_not_owned above all) under
// `refusal: conceal`.
func concealable(d *decision.Decision) bool {
	if !d.Conceal || d.Allowed() || len(d.RPCID) == 0 || !outcomeOf(d.Reason).concealable {
		return false
	}
	return mcpmethod.Concealable(d.Method)
}

// concealedAnswer is the HTTP answer an MCP server gives to a request for
// an unknown target: its status, its response headers (at most four; hop-by-hop
// headers such as Connection are left out, since Envoy removes them from
// every response it sends) and its body.
type concealedAnswer struct {
	status  int
	headers [4]headerKV
	n       int
	body    []byte
}

func (a *concealedAnswer) add(k, v string) {
	a.headers[a.n] = headerKV{k, v}
	a.n++
}

// The SDKs' response headers (go-sdk mcp/streamable.go servePOST;
// TypeScript WebStandardStreamableHTTPServerTransport.handlePostRequest).
const (
	cacheControlNoCache = "no-cache, no-transform"
	contentTypeSSE      = "text/event-stream"
	contentTypeJSON     = "application/json"
)

// protocolSEP2575 is the first MCP revision of the per-request protocol
// (SEP-2575), which both SDKs answer differently.
const protocolSEP2575 = mcpmethod.Revision20260728

// concealAnswer is the answer style's server gives to d's request, whose
// headers are h, when d's target does not exist. jsonResponse says the server
// answers POSTs with application/json rather than an SSE stream (go-sdk
// StreamableHTTPOptions.JSONResponse, TypeScript enableJsonResponse).
//
// By style and request:
//   - The id is written back as the SDK re-serializes it (sdkID). An id
//     the SDK cannot hold gets the SDK's refusal of the whole message
//     instead: go-sdk HTTP 400 text/plain "malformed payload: …" for an
//     integer beyond the double range; TypeScript HTTP 400 -32700 "Parse
//     error: Invalid JSON-RPC message" (id null) for one that is not a safe
//     integer (|n| > 2^53−1, after JSON.parse's rounding), and on 2026-07-28
//     with v2 -32600 "Bad Request: the request body is not a valid JSON-RPC
//     message" with the rounded id.
//   - go-sdk on 2026-07-28 (Mcp-Protocol-Version ≥ "2026-07-28", compared
//     as go-sdk does, as strings): HTTP 400 application/json, as SEP-2575
//     maps -32602 (mcp/streamable.go extractErrorStatus).
//   - TypeScript v2 on 2026-07-28 (createMcpHandler, responseMode auto):
//     HTTP 200 application/json.
//   - Otherwise, when the server streams and the request's Accept admits
//     text/event-stream as that SDK reads Accept (acceptsEventStream): HTTP
//     200 text/event-stream with one `event: message` event and no `id:`
//     line (go-sdk and TypeScript write one only with an event store).
//   - Otherwise HTTP 200 application/json. (A server that streams refuses
//     a request whose Accept lacks text/event-stream, 400 or 406; that
//     refusal is not reproduced.)
//
// TypeScript answers echo the request's Mcp-Session-Id (a stateful server
// sets its session id on every answer); go-sdk sets it only on initialize.
func concealAnswer(style ConcealStyle, jsonResponse bool, d *decision.Decision, h decision.Headers) concealedAnswer {
	var a concealedAnswer
	modern := protocolVersion(h) >= protocolSEP2575
	ts := style == ConcealTypeScriptSDK || style == ConcealTypeScriptSDKV2
	id, ok := sdkID(style, d.RPCID)
	if !ok {
		return refusedID(style, modern, d.RPCID)
	}
	if style == ConcealGoSDK && mcpmethod.Task(d.Method) {
		return goUnsupported(modern, d.Method, id)
	}
	body := concealedBody(style, d, id)
	switch {
	case style == ConcealGoSDK && modern:
		a.status = http.StatusBadRequest
		a.add("cache-control", cacheControlNoCache)
		a.add("content-type", contentTypeJSON)
		a.body = body
		return a
	case style == ConcealTypeScriptSDKV2 && modern:
		a.status = http.StatusOK
		a.add("content-type", contentTypeJSON)
		a.body = body
		return a
	}
	a.status = http.StatusOK
	sse := !jsonResponse && acceptsEventStream(style, h)
	switch {
	case sse && ts:
		a.add("cache-control", cacheControlNoCache)
		a.add("content-type", contentTypeSSE)
		a.add("x-accel-buffering", "no")
	case sse:
		a.add("cache-control", cacheControlNoCache)
		a.add("content-type", contentTypeSSE)
	case ts:
		a.add("content-type", contentTypeJSON)
	default:
		a.add("cache-control", cacheControlNoCache)
		a.add("content-type", contentTypeJSON)
	}
	if ts {
		if sid, n := h.Get("mcp-session-id"); n == 1 && visibleASCII(sid) {
			a.add("mcp-session-id", sid)
		}
	}
	if sse {
		a.body = sseMessage(body)
	} else {
		a.body = body
	}
	return a
}

// sseMessage frames a JSON-RPC message as both SDKs write one SSE event
// without an event store: "event: message\ndata: <json>\n\n".
func sseMessage(msg []byte) []byte {
	b := make([]byte, 0, len("event: message\ndata: \n\n")+len(msg))
	b = append(b, "event: message\ndata: "...)
	b = append(b, msg...)
	return append(b, "\n\n"...)
}

// protocolVersion is the request's Mcp-Protocol-Version, "" when absent or
// given more than once.
func protocolVersion(h decision.Headers) string {
	v, n := h.Get("mcp-protocol-version")
	if n != 1 {
		return ""
	}
	return v
}

// acceptsEventStream reports whether style's server reads the request's
// Accept as admitting text/event-stream: go-sdk (streamableAccepts) when a
// media range, parameters ignored, is text/event-stream, text/* or */* in
// any case; TypeScript when the Accept values joined with ", " contain
// "text/event-stream" (a case-sensitive substring test, as the SDK does).
// Neither SDK reads q, so "text/event-stream;q=0" admits it.
func acceptsEventStream(style ConcealStyle, h decision.Headers) bool {
	vals := h["accept"]
	if style == ConcealGoSDK {
		for _, v := range vals {
			for _, mr := range strings.Split(v, ",") {
				base, _, _ := strings.Cut(mr, ";")
				switch strings.ToLower(strings.TrimSpace(base)) {
				case "text/event-stream", "text/*", "*/*":
					return true
				}
			}
		}
		return false
	}
	return strings.Contains(strings.Join(vals, ", "), "text/event-stream")
}

// visibleASCII reports whether s is 1 or more of 0x21..0x7E, the characters
// an MCP session id may hold.
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return s != ""
}

// maxSafeInteger is Number.MAX_SAFE_INTEGER, 2^53−1.
const maxSafeInteger = 1<<53 - 1

// sdkID is raw, a request id mcpparse admitted (a JSON string or an integer
// literal of any length), as style's SDK writes it back after decoding it;
// false when the SDK refuses the message for its id.
//
//   - go-sdk decodes the id into an `any` (a float64 for a number) and
//     keeps int64(v) (internal/jsonrpc2 MakeID), then writes it with
//     encoding/json, HTML escaping off (internal/jsonrpc2 jsonMarshal): 2^53+1
//     becomes 9007199254740992, -0 becomes 0, and a value at or beyond
//     ±2^63 becomes -9223372036854775808, as int64 conversion gives on
//     amd64 (arm64 saturates instead; not modelled). Strings keep <, > and
//     & but escape U+2028 and U+2029.
//   - TypeScript parses with JSON.parse and writes with JSON.stringify: a
//     safe integer as its digits (-0 as 0); a string with '"', '\\' and
//     controls escaped (\b \t \n \f \r, else \u00xx) and everything else,
//     U+2028 included, as is (RFC 8785 section 3.2.2.2 uses the same rules).
func sdkID(style ConcealStyle, raw []byte) ([]byte, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return raw, true // not reached: mcpparse admitted it
		}
		if style == ConcealGoSDK {
			return jsonText(s), true
		}
		return appendJSStringify(nil, s), true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !math.IsInf(f, 0) {
		return raw, true // not reached: an integer literal parses or overflows
	}
	if math.IsInf(f, 0) {
		return nil, false // beyond the double range: neither SDK holds it
	}
	if style == ConcealGoSDK {
		return strconv.AppendInt(nil, goInt64(f), 10), true
	}
	if math.Abs(f) > maxSafeInteger {
		return nil, false
	}
	s, _ := jcs.NumberToJSON(f) // finite: no error
	return []byte(s), true
}

// goInt64 is int64(f) for an integral f as amd64 computes it: exact inside
// [-2^63, 2^63), else -2^63 (CVTTSD2SI's "integer indefinite").
func goInt64(f float64) int64 {
	if f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	return math.MinInt64
}

// goUnsupported is go-sdk's answer to a request for a method it does not
// implement, as it answers every task method (go-sdk has no tasks, so an
// unknown task and a foreign one look alike): its transport refuses the
// request before any session sees it (mcp/streamable.go servePOST,
// checkRequest's `JSON RPC not handled: "<method>" unsupported`). On
// 2026-07-28 and later HTTP 404 with a -32601 JSON-RPC error
// (writeJSONRPCError, Content-Type only); before, HTTP 400 text/plain
// (http.Error). idJSON is the id as go-sdk writes it (sdkID).
func goUnsupported(modern bool, method string, idJSON []byte) concealedAnswer {
	msg := "JSON RPC not handled: " + strconv.Quote(method) + " unsupported"
	if modern {
		a := concealedAnswer{status: http.StatusNotFound}
		a.add("content-type", contentTypeJSON)
		a.body = rpcErrorGo(idJSON, CodeMethodNotFound, msg, nil)
		return a
	}
	a := concealedAnswer{status: http.StatusBadRequest}
	a.add("content-type", "text/plain; charset=utf-8")
	a.add("x-content-type-options", "nosniff")
	a.body = []byte(msg + "\n")
	return a
}

// refusedID is style's answer to a message whose id it cannot hold
// (sdkID false); modern is a 2026-07-28 request.
func refusedID(style ConcealStyle, modern bool, raw []byte) concealedAnswer {
	a := concealedAnswer{status: http.StatusBadRequest}
	switch {
	case style == ConcealGoSDK:
		// servePOST: http.Error(w, "malformed payload: "+err, 400), err from
		// jsonrpc2.DecodeMessage over segmentio/encoding/json, which quotes
		// the first 32 bytes of the value and "..." (codec.go prefix).
		lit := string(raw)
		if len(lit) >= 32 {
			lit = lit[:32] + "..."
		}
		a.add("content-type", "text/plain; charset=utf-8")
		a.add("x-content-type-options", "nosniff")
		a.body = []byte("malformed payload: unmarshaling jsonrpc message: json: cannot unmarshal " +
			strconv.Quote(lit) + " into Go struct field jsonrpc2.wireDecode.id of type float64\n")
	case style == ConcealTypeScriptSDKV2 && modern:
		// createMcpHandler's inbound classification: the rounded id, or
		// null for one beyond the double range (JSON.stringify(Infinity)).
		id := "null"
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			id, _ = jcs.NumberToJSON(f)
		}
		a.add("content-type", contentTypeJSON)
		a.body = []byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: the request body is not a valid JSON-RPC message"},"id":` + id + `}`)
	default:
		// handlePostRequest: JSONRPCMessageSchema (zod 4 z.number().int(),
		// safe integers only) fails.
		a.add("content-type", contentTypeJSON)
		a.body = []byte(`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error: Invalid JSON-RPC message"},"id":null}`)
	}
	return a
}

// concealedBody is the JSON-RPC response the style's SDK gives for an
// unknown target of d's method (for a task method, an unknown task: TypeScript
// 1.x's task handlers in shared/protocol.ts; v2 has no tasks and answers
// -32601; go-sdk's answer is goUnsupported), answering the id idJSON (already as the SDK
// writes it, sdkID). Strings are escaped as each SDK's encoder does:
// go-sdk's encoding/json without HTML escaping (jsonText), TypeScript's
// JSON.stringify (appendJSStringify).
func concealedBody(style ConcealStyle, d *decision.Decision, idJSON []byte) []byte {
	const invalidParams = CodeInvalidParams
	target := d.Target
	switch style {
	case ConcealTypeScriptSDK:
		prefix := "MCP error -32602: "
		switch d.Method {
		case mcpmethod.TasksGet: // shared/protocol.ts, the GetTaskRequestSchema handler
			return rpcErrorJS(idJSON, invalidParams, prefix+"Failed to retrieve task: Task not found", nil)
		case mcpmethod.TasksResult, mcpmethod.TasksCancel: // the GetTaskPayload and CancelTask handlers
			return rpcErrorJS(idJSON, invalidParams, prefix+"Task not found: "+d.TaskID, nil)
		case mcpmethod.TasksUpdate: // no handler: Protocol._onrequest's own answer, no prefix
			return rpcErrorJS(idJSON, CodeMethodNotFound, "Method not found", nil)
		case mcpmethod.ToolsCall:
			text := appendJSStringify(nil, prefix+"Tool "+target+" not found")
			return jsonrpcEnvelope(idJSON, "result", []byte(`{"content":[{"type":"text","text":`+string(text)+`}],"isError":true}`), true)
		case mcpmethod.PromptsGet:
			return rpcErrorJS(idJSON, invalidParams, prefix+"Prompt "+target+" not found", nil)
		default:
			return rpcErrorJS(idJSON, invalidParams, prefix+"Resource "+target+" not found", nil)
		}
	case ConcealTypeScriptSDKV2:
		switch d.Method {
		case mcpmethod.TasksGet, mcpmethod.TasksResult, mcpmethod.TasksCancel, mcpmethod.TasksUpdate:
			// v2 has no tasks: every era answers tasks/* -32601 in band
			// (core-internal shared/protocol.ts, the era gate or no handler).
			return rpcErrorJS(idJSON, CodeMethodNotFound, "Method not found", nil)
		case mcpmethod.ToolsCall:
			return rpcErrorJS(idJSON, invalidParams, "Tool "+target+" not found", nil)
		case mcpmethod.PromptsGet:
			return rpcErrorJS(idJSON, invalidParams, "Prompt "+target+" not found", nil)
		default:
			return rpcErrorJS(idJSON, invalidParams, "Resource not found: "+target, []byte(`{"uri":`+string(appendJSStringify(nil, target))+`}`))
		}
	default: // ConcealGoSDK
		switch d.Method {
		case mcpmethod.ToolsCall:
			return rpcErrorGo(idJSON, invalidParams, "unknown tool "+strconv.Quote(target), nil)
		case mcpmethod.PromptsGet:
			return rpcErrorGo(idJSON, invalidParams, "unknown prompt "+strconv.Quote(target), nil)
		default:
			data := []byte(fmt.Sprintf(`{"uri":%q}`, target)) // as go-sdk writes it
			if !json.Valid(data) {
				data = []byte(`{"uri":` + string(jsonText(target)) + `}`)
			}
			return rpcErrorGo(idJSON, invalidParams, "Resource not found", data)
		}
	}
}

// rpcErrorGo is {"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…[,"data":…]}}
// with the message as go-sdk writes it.
func rpcErrorGo(id []byte, code int, message string, data []byte) []byte {
	return rpcError(id, code, jsonText(message), data)
}

// rpcErrorJS is rpcErrorGo with the message as JSON.stringify writes it.
func rpcErrorJS(id []byte, code int, message string, data []byte) []byte {
	return rpcError(id, code, appendJSStringify(nil, message), data)
}

// rpcError builds the error response around an already encoded message.
func rpcError(id []byte, code int, message, data []byte) []byte {
	e := `{"code":` + strconv.Itoa(code) + `,"message":` + string(message)
	if data != nil {
		e += `,"data":` + string(data)
	}
	return jsonrpcEnvelope(id, "error", []byte(e+"}"), false)
}

// jsonText is s as go-sdk's encoder writes a string (v1.3.0 and later:
// internal/jsonrpc2 jsonMarshal, json.Encoder with SetEscapeHTML(false)):
// '<', '>' and '&' as is; '"', '\\' and controls escaped; U+2028 and U+2029
// as \u2028 and \u2029 (encoding/json always escapes them); invalid UTF-8
// as \ufffd.
func jsonText(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// appendJSStringify appends s, valid UTF-8, as ECMAScript's JSON.stringify
// writes a string (ECMA-262 QuoteJSONString: '"' and '\\' escaped, \b \t
// \n \f \r, other code points below U+0020 as \u00xx in lowercase hex,
// every other character as is). For valid UTF-8 that is exactly RFC 8785's
// string form, so it is mcpparse.AppendJCSString.
func appendJSStringify(b []byte, s string) []byte { return mcpparse.AppendJCSString(b, s) }

// jsonrpcEnvelope wraps a result or error member; resultFirst puts it
// before jsonrpc and id, as the TypeScript SDK serializes results.
func jsonrpcEnvelope(id []byte, member string, v []byte, resultFirst bool) []byte {
	var b bytes.Buffer
	if resultFirst {
		b.WriteString(`{"` + member + `":`)
		b.Write(v)
		b.WriteString(`,"jsonrpc":"2.0","id":`)
		b.Write(id)
		b.WriteString("}")
		return b.Bytes()
	}
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"` + member + `":`)
	b.Write(v)
	b.WriteString("}")
	return b.Bytes()
}
