package extproc

import (
	"mime"
	"strings"
)

// bodyKind is how a client reads an answer's body.
type bodyKind int

const (
	kindOther bodyKind = iota // read as no JSON-RPC message (the client fails the request)
	kindJSON                  // one JSON-RPC message or a batch
	kindSSE                   // a text/event-stream
)

func (k bodyKind) String() string {
	switch k {
	case kindJSON:
		return "json"
	case kindSSE:
		return "sse"
	}
	return "other"
}

// contentReading is what the three modelled MCP clients make of a POST
// answer's Content-Type values (every entry Envoy forwarded):
//
//   - TypeScript SDK (@modelcontextprotocol/sdk, mediaTypeEssence in
//     packages/core-internal/src/shared/mediaType.ts): the RFC 9110 parse of
//     the `content-type` npm package; on a malformed parameter section the
//     lower-cased segment before the first ';', unless the tail holds a
//     comma (joined duplicates: no type). Headers.get joins repeated
//     headers with ", ".
//   - Go SDK (mcp/streamable.go baseMediaType): mime.ParseMediaType of the
//     first value (http.Header.Get), "" on error.
//   - Python SDK (src/mcp/client/streamable_http.py): the lower-cased value
//     (httpx joins repeated headers with ", ") tested with
//     startswith("application/json") and startswith("text/event-stream").
//
// kind is the reading they share; agree is false when they differ or
// there is more than one value (the caller refuses: one of them would read
// what the others' framing hides).
// charsetOK is false when a charset parameter of any value names anything
// but UTF-8: the Python client decodes text by the joined values' charset
// (httpx), the others always read UTF-8. What it does not model: the GET stream, which the TypeScript
// client reads as SSE whatever its type (the caller decides GET apart).
func contentReading(values []string) (kind bodyKind, agree, charsetOK bool) {
	switch {
	case len(values) == 0:
		return kindOther, true, true
	case len(values) == 1 && (values[0] == "application/json" || values[0] == "application/json; charset=utf-8"):
		return kindJSON, true, true // what the SDK servers send, read alike by all three
	case len(values) == 1 && (values[0] == "text/event-stream" || values[0] == "text/event-stream; charset=utf-8"):
		return kindSSE, true, true
	}
	joined := strings.Join(values, ", ")
	ts := essenceKind(tsEssence(joined))
	goKind := kindOther
	base, params, err := mime.ParseMediaType(values[0])
	if err == nil {
		goKind = essenceKind(base)
	}
	py := kindOther
	switch l := strings.ToLower(joined); {
	case strings.HasPrefix(l, "application/json"):
		py = kindJSON
	case strings.HasPrefix(l, "text/event-stream"):
		py = kindSSE
	}
	charsetOK = charsetUTF8(values[0], params, err)
	for _, v := range values[1:] {
		// The Python client decodes by the charset of the joined values
		// (httpx: email.message's get_content_charset): every entry counts.
		_, p, perr := mime.ParseMediaType(v)
		charsetOK = charsetOK && charsetUTF8(v, p, perr)
	}
	return ts, ts == goKind && goKind == py && len(values) == 1, charsetOK
}

// charsetUTF8 reports whether value (its parameters params, or perr when
// they did not parse) names no charset but UTF-8.
func charsetUTF8(value string, params map[string]string, perr error) bool {
	if perr != nil {
		// No parameters to trust: a charset anywhere in the value is one
		// some client may decode by.
		return !strings.Contains(strings.ToLower(value), "charset")
	}
	for k, v := range params {
		if strings.Contains(k, "charset") && (k != "charset" || !isUTF8Label(v)) {
			return false
		}
	}
	return true
}

// isUTF8Label reports whether a charset parameter's value names UTF-8 (the
// WHATWG Encoding labels "utf-8", "utf8", "unicode-1-1-utf-8"; Python's
// codec names "utf-8", "utf8", "utf_8", "u8").
func isUTF8Label(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "utf-8", "utf8", "utf_8", "u8", "unicode-1-1-utf-8":
		return true
	}
	return false
}

func essenceKind(e string) bodyKind {
	switch e {
	case "application/json":
		return kindJSON
	case "text/event-stream":
		return kindSSE
	}
	return kindOther
}

// tsEssence is the TypeScript SDK's mediaTypeEssence: the content-type
// package's parse (type "/" subtype tokens, then "; name=token-or-quoted"
// parameters, OWS around the semicolons), lower-cased; on a parse error the
// segment before the first ';' trimmed and lower-cased, or "" when that is
// empty or the rest of the value holds a comma.
func tsEssence(h string) string {
	if h == "" {
		return ""
	}
	if t, ok := parseContentType(h); ok {
		return t
	}
	seg, _, _ := strings.Cut(h, ";")
	e := latin1Lower(jsTrim(seg))
	if e == "" || strings.Contains(h[len(e):], ",") {
		return ""
	}
	return e
}

// parseContentType is the content-type npm package's parse (v1.0.5,
// index.js): TYPE_REGEXP /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// on the trimmed segment before the first ';', then each parameter matched
// by PARAM_REGEXP from that ';' on, which must consume the whole rest.
func parseContentType(h string) (string, bool) {
	seg, rest, hasParams := strings.Cut(h, ";")
	t := latin1Lower(jsTrim(seg))
	slash := strings.IndexByte(t, '/')
	if slash <= 0 || slash == len(t)-1 || !allToken(t[:slash]) || !allToken(t[slash+1:]) {
		return "", false
	}
	if !hasParams {
		return t, true
	}
	// PARAM_REGEXP: /; *([token]+) *= *("(?:[\u000b\u0020\u0021\u0023-\u005b\u005d-\u007e\u0080-\u00ff]|\\[\u000b\u0020-\u00ff])*"|[token]+) */g
	s := ";" + rest
	for len(s) > 0 {
		if s[0] != ';' {
			return "", false
		}
		s = strings.TrimLeft(s[1:], " ")
		n := tokenLen(s)
		if n == 0 {
			return "", false
		}
		s = strings.TrimLeft(s[n:], " ")
		if s == "" || s[0] != '=' {
			return "", false
		}
		s = strings.TrimLeft(s[1:], " ")
		if s != "" && s[0] == '"' {
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				c := s[i]
				if c == '\\' {
					if i+1 == len(s) || s[i+1] != '\v' && s[i+1] < 0x20 {
						return "", false
					}
					i++
					continue
				}
				if c != '\v' && c < 0x20 || c == 0x7f {
					return "", false
				}
			}
			if i >= len(s) {
				return "", false
			}
			s = s[i+1:]
		} else {
			n = tokenLen(s)
			if n == 0 {
				return "", false
			}
			s = s[n:]
		}
		s = strings.TrimLeft(s, " ")
	}
	return t, true
}

// jsTrim is JavaScript's String.prototype.trim on a header value, which
// fetch's Headers hold as a ByteString (one character per byte): it trims
// TAB, LF, VT, FF, CR, SPACE and NBSP (byte A0).
func jsTrim(s string) string {
	space := func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' || c == 0xa0 }
	for len(s) > 0 && space(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && space(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// latin1Lower is JavaScript's toLowerCase on a ByteString: A-Z and the
// latin1 capitals (bytes C0-DE but D7) lowered, one byte each, so the
// result is as long as s (strings.ToLower would turn a byte that is not
// UTF-8 into three).
func latin1Lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' || c >= 0xc0 && c <= 0xde && c != 0xd7 {
			b[i] = c + 0x20
		}
	}
	return string(b)
}

func allToken(s string) bool { return s != "" && tokenLen(s) == len(s) }

// tokenLen is the length of the RFC 9110 token at the start of s.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+.^_`|~-", c) >= 0 {
			continue
		}
		return i
	}
	return len(s)
}

// codingsIdentity reports whether every content-encoding value (each entry,
// each comma-separated coding) is identity: the only coding the processor
// reads. An empty list is identity.
func codingsIdentity(values []string) bool {
	for _, v := range values {
		for _, c := range strings.Split(v, ",") {
			c = strings.TrimSpace(c)
			if c != "" && !strings.EqualFold(c, "identity") {
				return false
			}
		}
	}
	return true
}
