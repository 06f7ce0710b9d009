package extauthz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ConcealStyle names the MCP server SDK whose "unknown tool / prompt /
// resource" answer a concealed refusal reproduces (policy `refusal:
// conceal`), byte for byte in the JSON-RPC body.
type ConcealStyle string

// The supported styles, taken from the SDKs' sources.
const (
	// ConcealGoSDK: github.com/modelcontextprotocol/go-sdk (mcp/server.go,
	// mcp/resource.go, v1.7 and later): -32602 `unknown tool "x"`,
	// `unknown prompt "x"`; resources -32602 "Resource not found" with data
	// {"uri": …}. The default.
	ConcealGoSDK ConcealStyle = "go-sdk"
	// ConcealTypeScriptSDK: @modelcontextprotocol/sdk 1.x McpServer
	// (src/server/mcp.ts): an unknown tool is a tool result with isError
	// and the text "MCP error -32602: Tool x not found"; prompts and
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
// the client must be able to act on) of tools/call, prompts/get or
// resources/read under `refusal: conceal`.
func concealable(d *Decision) bool {
	if !d.Conceal || d.Allowed() || len(d.RPCID) == 0 {
		return false
	}
	switch d.Method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return false
	}
	switch d.Reason {
	case ReasonPolicyDenied, ReasonDefaultDeny, ReasonAuthorizationRequired, ReasonInsufficientScope,
		ReasonApprovalUntrusted, ReasonApprovalExpired, ReasonApprovalAudienceMismatch,
		ReasonApprovalPrincipalMismatch, ReasonApprovalDigestMismatch, ReasonApprovalReplayed,
		ReasonReplaySubstitution:
		return true
	}
	return false
}

// concealedBody is the JSON-RPC response the style's SDK gives for an
// unknown target of d's method, answering d's id.
func concealedBody(style ConcealStyle, d *Decision) []byte {
	const invalidParams = CodeInvalidParams
	target := d.Target
	switch style {
	case ConcealTypeScriptSDK:
		prefix := "MCP error -32602: "
		switch d.Method {
		case "tools/call":
			text := jsonText(prefix + "Tool " + target + " not found")
			return jsonrpcEnvelope(d.RPCID, "result", []byte(`{"content":[{"type":"text","text":`+string(text)+`}],"isError":true}`), true)
		case "prompts/get":
			return rpcError(d.RPCID, invalidParams, prefix+"Prompt "+target+" not found", nil)
		default:
			return rpcError(d.RPCID, invalidParams, prefix+"Resource "+target+" not found", nil)
		}
	case ConcealTypeScriptSDKV2:
		switch d.Method {
		case "tools/call":
			return rpcError(d.RPCID, invalidParams, "Tool "+target+" not found", nil)
		case "prompts/get":
			return rpcError(d.RPCID, invalidParams, "Prompt "+target+" not found", nil)
		default:
			return rpcError(d.RPCID, invalidParams, "Resource not found: "+target, []byte(`{"uri":`+string(jsonText(target))+`}`))
		}
	default: // ConcealGoSDK
		switch d.Method {
		case "tools/call":
			return rpcError(d.RPCID, invalidParams, "unknown tool "+strconv.Quote(target), nil)
		case "prompts/get":
			return rpcError(d.RPCID, invalidParams, "unknown prompt "+strconv.Quote(target), nil)
		default:
			data := []byte(fmt.Sprintf(`{"uri":%q}`, target)) // as go-sdk writes it
			if !json.Valid(data) {
				data = []byte(`{"uri":` + string(jsonText(target)) + `}`)
			}
			return rpcError(d.RPCID, invalidParams, "Resource not found", data)
		}
	}
}

// rpcError is {"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…[,"data":…]}}.
func rpcError(id []byte, code int, message string, data []byte) []byte {
	e := `{"code":` + strconv.Itoa(code) + `,"message":` + string(jsonText(message))
	if data != nil {
		e += `,"data":` + string(data)
	}
	return jsonrpcEnvelope(id, "error", []byte(e+"}"), false)
}

// jsonText is s as a JSON string without HTML escaping, as both SDKs write
// it (go-sdk's encoder has SetEscapeHTML(false); JSON.stringify never
// escapes '<', '>', '&').
func jsonText(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

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
