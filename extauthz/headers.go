package extauthz

import (
	"encoding/base64"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/byteset"
)

// headerKV is one header the service sets on an allowed request.
type headerKV struct{ k, v string }

// setsHeader reports whether name is one of set's names.
func setsHeader(set []headerKV, name string) bool {
	for _, h := range set {
		if strings.EqualFold(h.k, name) { // Envoy's header map is lower case: X-MCP-Method is x-mcp-method
			return true
		}
	}
	return false
}

// decidedHeaders are the request headers the service decides on (besides
// the mcp-* family): a client spelling that an upstream folds onto one of
// them could make it read a value the service never saw.
var decidedHeaders = []string{"authorization", "dpop", "content-type", "content-length", "content-encoding", "transfer-encoding",
	decision.DefaultIdempotencyHeader}

// foldsOntoOurs reports whether a client header name (lower-cased, as Envoy
// sends it) may reach an upstream as a header the service sets or decides
// on. Names are compared folded: any character other than a letter or digit
// reads as '-', in any case, as CGI, WSGI, PHP and Rack fold '_' and '-' into
// one variable (HTTP_X_MCP_PRINCIPAL). Every spelling in the x-mcp-* family
// the service sets folds onto it (x_mcp_principal, X.MCP.Tool,
// x-mcp-approved; the names the service sets exactly are overwritten
// instead); for the mcp-* family and decidedHeaders only spellings other
// than the canonical one do (mcp_method, authori_zation is not one).
// extra are further decided headers (lower-case): Responder.DecidedHeaders.
func foldsOntoOurs(name string, extra []string) bool {
	if foldedHasPrefix(name, "x-mcp-") {
		return true
	}
	if canonicalName(name) {
		return false
	}
	if foldedHasPrefix(name, "mcp-") {
		return true
	}
	for _, hs := range [2][]string{decidedHeaders, extra} {
		for _, h := range hs {
			if len(name) == len(h) && foldedHasPrefix(name, h) {
				return true
			}
		}
	}
	return false
}

// foldedHasPrefix reports whether name, folded as foldsOntoOurs folds it,
// begins with prefix (lower-case letters, digits and '-').
func foldedHasPrefix(name, prefix string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			c = '-'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// canonicalName reports whether name is already in folded form: lower-case
// letters, digits and '-' only.
func canonicalName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// headerValue returns v when it is plain header-safe ASCII (visible
// characters and inner spaces, RFC 9110 section 5.5), else v in MCP
// 2026-07-28's header encoding "=?base64?<standard base64 of the UTF-8>?=".
// A token's sub or a tool name can thus never inject CR/LF or reach the
// upstream as different bytes.
func headerValue(v string) string {
	if !strings.HasPrefix(v, "=?base64?") && v != "" && v[0] != ' ' && v[len(v)-1] != ' ' && plainByte.All(v) {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// plainByte holds 0x20..0x7e.
var plainByte = byteset.Of(func(c byte) bool { return c >= 0x20 && c < 0x7f })
