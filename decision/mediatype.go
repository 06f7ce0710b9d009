package decision

import "strings"

// checkBodyEncoding admits exactly the POST bodies whose bytes every MCP
// server decodes as the one UTF-8 JSON text the service parses (RFC 8259
// section 8.1), and refuses the rest with unsupported_media_type:
//
//   - Content-Type, given once, is application/json (type and subtype in
//     any case, RFC 9110 section 8.3.1) with no parameter but at most one
//     charset whose value is utf-8 (any case, token or quoted-string). Any
//     other charset (utf-7, iso-8859-1, utf-16: the server would decode
//     other text), any other parameter, +json suffixes,
//     application/json-seq and other types are refused.
//   - Content-Encoding, when present, is given once and is identity: a
//     gzip, deflate, br or zstd body is bytes the service would not read as
//     the server does.
//   - Transfer-Encoding, when present, is chunked, which Envoy has already
//     removed from the body it forwards.
//
// A byte-order mark, comments or JSON5 syntax are refused later by the
// strict parser (parse_error).
func checkBodyEncoding(h Headers) Reason {
	ct, n := h.Get("content-type")
	if n != 1 || !isJSONUTF8(ct) {
		return ReasonUnsupportedMediaType
	}
	if v, n := h.Get("content-encoding"); n > 1 || (n == 1 && !strings.EqualFold(trimOWS(v), "identity")) {
		return ReasonUnsupportedMediaType
	}
	if v, n := h.Get("transfer-encoding"); n > 1 || (n == 1 && !strings.EqualFold(trimOWS(v), "chunked")) {
		return ReasonUnsupportedMediaType
	}
	return ""
}

// isJSONUTF8 reports whether ct is
//
//	"application/json" *( OWS ";" OWS [ "charset=" ( "utf-8" / DQUOTE "utf-8" DQUOTE ) ] )
//
// with the type, the parameter name and the value in any case, quoted-pairs
// in a quoted value decoded, and charset given at most once.
func isJSONUTF8(ct string) bool {
	mt, params, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(trimOWS(mt), "application/json") {
		return false
	}
	charset := false
	for rest := params; ; {
		var p string
		var more bool
		p, rest, more = cutParam(rest)
		if p = trimOWS(p); p != "" {
			name, val, ok := strings.Cut(p, "=")
			if !ok || charset || !strings.EqualFold(name, "charset") {
				return false
			}
			v, ok := paramValue(val)
			if !ok || !strings.EqualFold(v, "utf-8") {
				return false
			}
			charset = true
		}
		if !more {
			return true
		}
	}
}

// cutParam splits s at the first ';' outside a quoted-string.
func cutParam(s string) (param, rest string, more bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ';':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// paramValue decodes a parameter value: an RFC 9110 token, or a
// quoted-string with its quoted-pairs decoded.
func paramValue(v string) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var b strings.Builder
		for i := 1; i < len(v)-1; i++ {
			c := v[i]
			switch {
			case c == '\\' && i+1 < len(v)-1:
				i++
				c = v[i]
			case c == '\\' || c == '"':
				return "", false
			}
			b.WriteByte(c)
		}
		return b.String(), true
	}
	for i := 0; i < len(v); i++ {
		if !isTokenChar(v[i]) {
			return "", false
		}
	}
	return v, v != ""
}

// isTokenChar reports whether c is an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// trimOWS removes RFC 9110 optional whitespace (SP, HTAB) around s.
func trimOWS(s string) string { return strings.Trim(s, " \t") }
