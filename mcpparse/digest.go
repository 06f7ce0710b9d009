package mcpparse

// RequestEnvelopeVersion is the "v" member of the request digest envelope.
const RequestEnvelopeVersion = "mcp-extauthz/request/v1"

// RequestEnvelope holds what a request digest covers.
type RequestEnvelope struct {
	// Audience is the token audience (the MCP server's canonical URI).
	Audience string
	// Server names the upstream MCP server.
	Server string
	// Method is the JSON-RPC method, e.g. "tools/call".
	Method string
	// Target is the tool name, resource URI or prompt name ("" when none).
	Target string
	// Arguments is the canonical (RFC 8785) arguments object as in
	// Message.Arguments; nil or empty means `{}`. It is embedded as is, not
	// re-checked: passing non-canonical bytes gives a digest no one else
	// can recompute.
	Arguments []byte
	// Issuer and Subject are the token's iss and sub claims.
	Issuer, Subject string
}

// RequestDigest returns Digest of the RFC 8785 serialization of this JSON
// object (members shown in their canonical order):
//
//	{"args":<Arguments, as a JSON value>,"aud":<Audience>,"iss":<Issuer>,
//	 "method":<Method>,"server":<Server>,"sub":<Subject>,"target":<Target>,
//	 "v":"mcp-extauthz/request/v1"}
//
// with every string member a JSON string serialized per RFC 8785 (only '"',
// '\' and U+0000..U+001F escaped, as \" \\ \b \t \n \f \r or \u00xx with
// lowercase hex; everything else raw UTF-8), no whitespace. An upstream
// recomputes it with any RFC 8785 implementation from the same eight
// values. Strings that are not valid UTF-8 have each invalid byte written as
// U+FFFD, so such inputs may collide; callers pass UTF-8 (token claims and
// parsed names always are).
func RequestDigest(e RequestEnvelope) string {
	args := e.Arguments
	if len(args) == 0 {
		args = emptyObject
	}
	n := len(args) + len(e.Audience) + len(e.Issuer) + len(e.Method) + len(e.Server) +
		len(e.Subject) + len(e.Target) + 128
	b := make([]byte, 0, n)
	b = append(b, `{"args":`...)
	b = append(b, args...)
	b = append(b, `,"aud":`...)
	b = appendJCSString(b, e.Audience)
	b = append(b, `,"iss":`...)
	b = appendJCSString(b, e.Issuer)
	b = append(b, `,"method":`...)
	b = appendJCSString(b, e.Method)
	b = append(b, `,"server":`...)
	b = appendJCSString(b, e.Server)
	b = append(b, `,"sub":`...)
	b = appendJCSString(b, e.Subject)
	b = append(b, `,"target":`...)
	b = appendJCSString(b, e.Target)
	b = append(b, `,"v":`...)
	b = appendJCSString(b, RequestEnvelopeVersion)
	b = append(b, '}')
	return Digest(b)
}
