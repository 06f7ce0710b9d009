package decision

import (
	"github.com/mcp-extauthz/mcp-extauthz/internal/byteset"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// requestDigestVersion is the "v" member of the request digest envelope.
// v2 (issue 9) carries the arguments' digest where v1 carried the canonical
// arguments themselves, so a body is hashed once; v3 (issue 30) adds the
// token's client (policy.ClientOf), so an approval binds the principal and
// the agent acting for it.
const requestDigestVersion = "mcp-extauthz/request/v3"

// requestEnvelope holds what a request digest covers.
type requestEnvelope struct {
	Audience   string // the token audience the decision used (RFC 8707 resource URI)
	Client     string // the token's client (policy.ClientOf): client_id, else azp, else ""
	Server     string // MCP server id
	Method     string // JSON-RPC method, or GET / DELETE / response
	Target     string // tool name, resource URI or prompt name; "" when none
	ArgsDigest string // mcpparse.Message.ArgsDigest; "" means that of `{}`
	Issuer     string // token iss
	Subject    string // token sub
}

// emptyArgsDigest is the digest of absent arguments, `{}`.
var emptyArgsDigest = mcpparse.Digest([]byte("{}"))

// requestDigest returns "sha256:" + lowercase hex of the SHA-256 of the
// RFC 8785 serialization of this JSON object (members in canonical order):
//
//	{"args_digest":<ArgsDigest>,"aud":<Audience>,"client":<Client>,
//	 "iss":<Issuer>,"method":<Method>,"server":<Server>,"sub":<Subject>,
//	 "target":<Target>,"v":"mcp-extauthz/request/v3"}
//
// every member a JSON string as RFC 8785 writes it (only '"', '\' and
// U+0000..U+001F escaped), no whitespace. An upstream recomputes it with
// any RFC 8785 implementation from the same nine values (docs/digests.md,
// "Digests").
// Strings that are not valid UTF-8 have each invalid byte written as
// U+FFFD and may collide; token claims and parsed names always are UTF-8.
func requestDigest(e requestEnvelope) string {
	if e.ArgsDigest == "" {
		e.ArgsDigest = emptyArgsDigest
	}
	n := len(e.ArgsDigest) + len(e.Audience) + len(e.Client) + len(e.Issuer) + len(e.Method) + len(e.Server) +
		len(e.Subject) + len(e.Target) + 144
	var buf [512]byte // the usual envelope fits: no allocation
	b := buf[:0]
	if n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = append(b, `{"args_digest":`...)
	b = appendJCS(b, e.ArgsDigest)
	b = append(b, `,"aud":`...)
	b = appendJCS(b, e.Audience)
	b = append(b, `,"client":`...)
	b = appendJCS(b, e.Client)
	b = append(b, `,"iss":`...)
	b = appendJCS(b, e.Issuer)
	b = append(b, `,"method":`...)
	b = appendJCS(b, e.Method)
	b = append(b, `,"server":`...)
	b = appendJCS(b, e.Server)
	b = append(b, `,"sub":`...)
	b = appendJCS(b, e.Subject)
	b = append(b, `,"target":`...)
	b = appendJCS(b, e.Target)
	b = append(b, `,"v":"`+requestDigestVersion+`"}`...)
	return mcpparse.Digest(b)
}

// appendJCS is mcpparse.AppendJCSString, copying s between its quotes at
// once when no byte of it needs escaping or a UTF-8 check (the digests, ids
// and names an envelope mostly holds).
func appendJCS(b []byte, s string) []byte {
	if !jcsPlain.All(s) {
		return mcpparse.AppendJCSString(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jcsPlain holds the bytes RFC 8785 writes as they are in a string without
// looking further: ASCII from 0x20 but '"' and '\\'.
var jcsPlain = byteset.Of(func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' })
