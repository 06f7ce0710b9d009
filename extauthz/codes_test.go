package extauthz

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

// claimedCode is a JSON-RPC error code that a specification or an official
// MCP SDK gives its own meaning, with where it is defined. Sources were read
// at the commits named (GitHub, modelcontextprotocol/* unless noted) and,
// for the SDKs the e2e rig runs, in the released packages.
type claimedCode struct {
	code   int
	name   string
	source string
}

var claimedCodes = []claimedCode{
	// JSON-RPC 2.0 section 5.1.
	{-32700, "Parse error", "JSON-RPC 2.0 §5.1"},
	{-32600, "Invalid Request", "JSON-RPC 2.0 §5.1"},
	{-32601, "Method not found", "JSON-RPC 2.0 §5.1"},
	{-32602, "Invalid params", "JSON-RPC 2.0 §5.1"},
	{-32603, "Internal error", "JSON-RPC 2.0 §5.1"},
	// MCP revisions.
	{-32002, "resource not found", "modelcontextprotocol@b0f60ba5 docs/specification/2025-11-25/server/resources.mdx (Error Handling)"},
	{-32042, "URL_ELICITATION_REQUIRED", "modelcontextprotocol@b0f60ba5 schema/2025-11-25/schema.ts:181"},
	{-32020, "HEADER_MISMATCH", "modelcontextprotocol@b0f60ba5 schema/2026-07-28/schema.ts:434"},
	{-32021, "MISSING_REQUIRED_CLIENT_CAPABILITY", "modelcontextprotocol@b0f60ba5 schema/2026-07-28/schema.ts:442"},
	{-32022, "UNSUPPORTED_PROTOCOL_VERSION", "modelcontextprotocol@b0f60ba5 schema/2026-07-28/schema.ts:450"},
	// TypeScript SDK.
	{-32000, "ErrorCode.ConnectionClosed", "@modelcontextprotocol/sdk 1.32.2 dist/esm/types.js:161"},
	{-32001, "ErrorCode.RequestTimeout", "@modelcontextprotocol/sdk 1.32.2 dist/esm/types.js:162"},
	{-32042, "ErrorCode.UrlElicitationRequired", "@modelcontextprotocol/sdk 1.32.2 dist/esm/types.js:170; typescript-sdk@3924de99 packages/core-internal/src/types/enums.ts:36"},
	{-32003, "MissingRequiredClientCapability (pre-release, moved to -32021)", "typescript-sdk@3924de99 docs/migration/support-2026-07-28.md:375"},
	{-32004, "UnsupportedProtocolVersion (pre-release, moved to -32022)", "typescript-sdk@3924de99 docs/migration/support-2026-07-28.md:376"},
	// Python SDK.
	{-32000, "CONNECTION_CLOSED", "python-sdk@57394b05 src/mcp-types/mcp_types/jsonrpc.py:87"},
	{-32001, "REQUEST_TIMEOUT", "python-sdk@57394b05 src/mcp-types/mcp_types/jsonrpc.py:90"},
	{-32800, "REQUEST_CANCELLED", "python-sdk@57394b05 src/mcp/server/streamable_http.py:73"},
	// Go SDK (github.com/modelcontextprotocol/go-sdk v1.8.0).
	{-32001, "jsonrpc2.ErrUnknown", "go-sdk v1.8.0 internal/jsonrpc2/wire.go:32"},
	{-32003, "jsonrpc2.ErrClientClosing (reported as mcp.ErrConnectionClosed)", "go-sdk v1.8.0 internal/jsonrpc2/wire.go:36"},
	{-32004, "jsonrpc2.ErrServerClosing", "go-sdk v1.8.0 internal/jsonrpc2/wire.go:34"},
	{-32005, "jsonrpc2.ErrRejected", "go-sdk v1.8.0 internal/jsonrpc2/wire.go:47"},
	{-32002, "CodeResourceNotFound", "go-sdk v1.8.0 mcp/resource.go:50"},
	{-32020, "CodeHeaderMismatch", "go-sdk v1.8.0 mcp/shared.go:408"},
	{-32042, "CodeURLElicitationRequired", "go-sdk v1.8.0 mcp/shared.go:418"},
	{-31001, "codeUnsupportedMethod", "go-sdk@3d6450fc mcp/shared.go:446"},
	// Java SDK.
	{-32002, "ErrorCodes.RESOURCE_NOT_FOUND", "java-sdk@305e4cbd mcp-core/src/main/java/io/modelcontextprotocol/spec/McpSchema.java:154"},
	{-32042, "ErrorCodes.URL_ELICITATION_REQUIRED", "java-sdk@305e4cbd mcp-core/src/main/java/io/modelcontextprotocol/spec/McpSchema.java:159"},
	// C# SDK.
	{-32020, "McpErrorCode.HeaderMismatch", "csharp-sdk@609499b2 src/ModelContextProtocol.Core/McpErrorCode.cs:26"},
	{-32002, "McpErrorCode.ResourceNotFound", "csharp-sdk@609499b2 src/ModelContextProtocol.Core/McpErrorCode.cs:44"},
	{-32021, "McpErrorCode.MissingRequiredClientCapability", "csharp-sdk@609499b2 src/ModelContextProtocol.Core/McpErrorCode.cs:57"},
	{-32022, "McpErrorCode.UnsupportedProtocolVersion", "csharp-sdk@609499b2 src/ModelContextProtocol.Core/McpErrorCode.cs:69"},
	{-32042, "McpErrorCode.UrlElicitationRequired", "csharp-sdk@609499b2 src/ModelContextProtocol.Core/McpErrorCode.cs:85"},
	{-32001, "Session not found", "csharp-sdk@609499b2 src/ModelContextProtocol.AspNetCore/StreamableHttpHandler.cs:378"},
	// Rust SDK (rmcp).
	{-32022, "ErrorCode::UNSUPPORTED_PROTOCOL_VERSION", "rust-sdk@4a738b9d crates/rmcp/src/model.rs:546"},
	{-32021, "ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY", "rust-sdk@4a738b9d crates/rmcp/src/model.rs:548"},
	{-32020, "ErrorCode::HEADER_MISMATCH", "rust-sdk@4a738b9d crates/rmcp/src/model.rs:549"},
	{-32002, "ErrorCode::RESOURCE_NOT_FOUND", "rust-sdk@4a738b9d crates/rmcp/src/model.rs:550"},
	// Kotlin SDK.
	{-32000, "RPCError.ErrorCode.CONNECTION_CLOSED", "kotlin-sdk@a06d699d kotlin-sdk-core/src/commonMain/kotlin/io/modelcontextprotocol/kotlin/sdk/types/jsonRpc.kt:264"},
	{-32001, "RPCError.ErrorCode.REQUEST_TIMEOUT", "kotlin-sdk@a06d699d kotlin-sdk-core/src/commonMain/kotlin/io/modelcontextprotocol/kotlin/sdk/types/jsonRpc.kt:267"},
	{-32002, "RPCError.ErrorCode.RESOURCE_NOT_FOUND", "kotlin-sdk@a06d699d kotlin-sdk-core/src/commonMain/kotlin/io/modelcontextprotocol/kotlin/sdk/types/jsonRpc.kt:270"},
	{-32042, "RPCError.ErrorCode.URL_ELICITATION_REQUIRED", "kotlin-sdk@a06d699d kotlin-sdk-core/src/commonMain/kotlin/io/modelcontextprotocol/kotlin/sdk/types/jsonRpc.kt:277"},
	// Swift SDK.
	{-32042, "MCPError.urlElicitationRequired", "swift-sdk@6132fd4b Sources/MCP/Base/Error.swift:56"},
	{-32000, "MCPError.connectionClosed", "swift-sdk@6132fd4b Sources/MCP/Base/Error.swift:57"},
	{-32001, "MCPError.transportError", "swift-sdk@6132fd4b Sources/MCP/Base/Error.swift:58"},
	// Ruby SDK.
	{-32020, "ErrorCodes::HEADER_MISMATCH", "ruby-sdk@fcb1ac93 lib/mcp/error_codes.rb:23"},
	{-32021, "ErrorCodes::MISSING_REQUIRED_CLIENT_CAPABILITY", "ruby-sdk@fcb1ac93 lib/mcp/error_codes.rb:24"},
	{-32022, "ErrorCodes::UNSUPPORTED_PROTOCOL_VERSION", "ruby-sdk@fcb1ac93 lib/mcp/error_codes.rb:25"},
	{-32042, "URL elicitation required", "ruby-sdk@fcb1ac93 lib/mcp/server.rb:62"},
	{-32001, "request_timeout", "ruby-sdk@fcb1ac93 lib/mcp/server.rb:146"},
	// PHP SDK.
	{-32000, "Error::SERVER_ERROR", "php-sdk@c882401e src/Schema/JsonRpc/Error.php:38"},
	{-32002, "Error::RESOURCE_NOT_FOUND", "php-sdk@c882401e src/Schema/JsonRpc/Error.php:39"},
	{-32020, "Error::HEADER_MISMATCH", "php-sdk@c882401e src/Schema/JsonRpc/Error.php:45"},
	{-32021, "Error::MISSING_REQUIRED_CLIENT_CAPABILITY", "php-sdk@c882401e src/Schema/JsonRpc/Error.php:51"},
	{-32022, "Error::UNSUPPORTED_PROTOCOL_VERSION", "php-sdk@c882401e src/Schema/JsonRpc/Error.php:57"},
	// mark3labs/mcp-go.
	{-32800, "REQUEST_INTERRUPTED", "mark3labs/mcp-go@56af04b2 mcp/types.go:496"},
	{-32002, "RESOURCE_NOT_FOUND", "mark3labs/mcp-go@56af04b2 mcp/types.go:510"},
	{-32042, "URL_ELICITATION_REQUIRED", "mark3labs/mcp-go@56af04b2 mcp/types.go:513"},
	{-32020, "HEADER_MISMATCH", "mark3labs/mcp-go@56af04b2 mcp/types.go:518"},
	{-32021, "MISSING_REQUIRED_CLIENT_CAPABILITY", "mark3labs/mcp-go@56af04b2 mcp/types.go:522"},
	{-32022, "UNSUPPORTED_PROTOCOL_VERSION", "mark3labs/mcp-go@56af04b2 mcp/types.go:527"},
}

// ourCodes are the service's own denial codes.
var ourCodes = map[string]int{
	"CodeForbidden": CodeForbidden, "CodeAuthorizationRequired": CodeAuthorizationRequired,
	"CodeUnauthenticated": CodeUnauthenticated, "CodeRequestRejected": CodeRequestRejected,
	"CodeUnavailable": CodeUnavailable, "CodeInternal": CodeInternal,
	"CodeRateLimited": CodeRateLimited,
}

// TestCodesApartFromVerifier: no code Check sends is the one the MCP
// server's decision verifier sends (mcpdecision.CodeRefused), so a caller
// tells the two apart.
func TestCodesApartFromVerifier(t *testing.T) {
	for name, code := range ourCodes {
		if code == mcpdecision.CodeRefused {
			t.Errorf("%s = %d is mcpdecision.CodeRefused", name, code)
		}
	}
}

// TestJSONRPCCodesUnclaimed: the service's own codes are distinct, sit in
// the implementation-defined sub-range MCP 2026-07-28 leaves to
// implementations (-32000..-32019), and none is a code a specification or
// an official SDK gives a meaning (claimedCodes, with sources). Every other
// code a denial uses is a standard one used for its standard meaning.
func TestJSONRPCCodesUnclaimed(t *testing.T) {
	claimed := map[int][]claimedCode{}
	for _, c := range claimedCodes {
		claimed[c.code] = append(claimed[c.code], c)
	}
	seen := map[int]string{}
	for name, code := range ourCodes {
		if code < -32019 || code > -32000 {
			t.Errorf("%s = %d: outside -32000..-32019 (MCP 2026-07-28: implementation-defined)", name, code)
		}
		for _, c := range claimed[code] {
			t.Errorf("%s = %d is claimed: %s (%s)", name, code, c.name, c.source)
		}
		if other, dup := seen[code]; dup {
			t.Errorf("%s and %s share %d", name, other, code)
		}
		seen[code] = name
	}
	// Standard codes keep their standard meaning.
	standard := map[int]bool{CodeParseError: true, CodeInvalidRequest: true, CodeMethodNotFound: true, CodeInvalidParams: true}
	for _, r := range decision.Reasons() {
		o := outcomeOf(r)
		_, ours := seen[o.code]
		switch {
		case r == decision.ReasonAllowed, r == decision.ReasonResultRecovered: // answered with a result
		case r == decision.ReasonHeaderMismatch:
			if o.code != -32020 {
				t.Errorf("%s: code %d, want MCP HEADER_MISMATCH -32020", r, o.code)
			}
		case r == decision.ReasonUnknownMethod:
			if o.code != -32601 {
				t.Errorf("%s: code %d, want Method not found", r, o.code)
			}
		case o.class == classRequest:
			if !standard[o.code] && o.code != CodeRequestRejected {
				t.Errorf("%s: code %d is neither standard nor CodeRequestRejected", r, o.code)
			}
		case !ours:
			t.Errorf("%s: code %d is not one of the service's own codes", r, o.code)
		}
	}
	// The codes the e2e clients check for the policy and token denials.
	for r, want := range map[decision.Reason]int{decision.ReasonPolicyDenied: CodeForbidden, decision.ReasonDefaultDeny: CodeForbidden,
		decision.ReasonAuthorizationRequired: CodeAuthorizationRequired, decision.ReasonTokenMissing: CodeUnauthenticated, decision.ReasonTokenExpired: CodeUnauthenticated} {
		if got := outcomeOf(r).code; got != want {
			t.Errorf("%s: code %d, want %d", r, got, want)
		}
	}
}

// TestReadmeCodeTable keeps README's JSON-RPC code table true: each of the
// service's own codes listed with its constant.
func TestReadmeCodeTable(t *testing.T) {
	b := []byte(testkit.Docs(t, ".."))
	row := regexp.MustCompile("(?m)^\\| (-320[0-9]{2}) \\| `(Code[A-Za-z]+)` \\|")
	listed := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		code, _ := strconv.Atoi(m[1])
		want, ok := ourCodes[m[2]]
		if !ok || want != code {
			t.Errorf("README code table: %s %s; the service has %s = %d", m[1], m[2], m[2], want)
		}
		listed[m[2]] = true
	}
	for name := range ourCodes {
		if !listed[name] {
			t.Errorf("README code table lacks %s", name)
		}
	}
}
