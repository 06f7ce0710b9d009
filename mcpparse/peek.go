package mcpparse

import (
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
)

// MaxPeekID bounds the id PeekEnvelope returns, in bytes.
const MaxPeekID = 256

// PeekEnvelope reads the top-level "id" and "method" of body in one pass
// without building anything, so that a request denied before it is parsed
// (no valid token, wrong media type) can be answered with its id at a cost
// independent of the body's shape: it allocates at most the method string,
// and reads at most len(body) bytes once.
//
// It is not validation. id is returned (aliasing body) only when body is
// one JSON object with exactly one "id" member whose value is a string of
// printable UTF-8 without escapes or an integer literal, at most MaxPeekID
// bytes, and the scan reaches the object's end with only whitespace after
// it; else id is nil (the caller answers id null). method is the single
// "method" member's string value under the same conditions (at most
// MaxPeekID bytes, no escapes), "response" for an object with "result" or
// "error" and no method, else "". A key written with escapes makes both
// unknown, since it might spell "id".
func PeekEnvelope(body []byte) (id []byte, method string) {
	var ids, methods, results int
	var methodRaw []byte
	it := jsonscan.Members(body, jsonscan.SkipSpace(body, 0))
	for it.Next() {
		key := it.Name()
		key = key[1 : len(key)-1]
		for _, c := range key { // names are short: no IndexByte call
			if c == '\\' {
				return nil, ""
			}
		}
		val := it.Value()
		if val == nil {
			return nil, ""
		}
		switch string(key) {
		case "id":
			ids++
			id = val
		case "method":
			methods++
			methodRaw = val
		case "result", "error":
			results++
		}
	}
	if it.End() < 0 || jsonscan.SkipSpace(body, it.End()) != len(body) {
		return nil, ""
	}
	if ids != 1 || !echoableID(id) {
		id = nil
	}
	switch {
	case methods == 1 && len(methodRaw) <= MaxPeekID+2 && echoableString(methodRaw):
		method = string(methodRaw[1 : len(methodRaw)-1])
	case methods == 0 && results > 0:
		method = "response"
	}
	return id, method
}

// echoableID reports whether v is a JSON string without escapes of
// printable UTF-8, or an integer literal, of at most MaxPeekID bytes.
func echoableID(v []byte) bool {
	if len(v) == 0 || len(v) > MaxPeekID {
		return false
	}
	if v[0] == '"' {
		return echoableString(v)
	}
	i := 0
	if v[0] == '-' {
		i++
	}
	if i == len(v) || (v[i] == '0' && i+1 != len(v)) {
		return false
	}
	for ; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// echoableString reports whether v is `"…"` with valid UTF-8 inside and no
// escape, quote or control character.
func echoableString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	in := v[1 : len(v)-1]
	for _, c := range in {
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(in)
}
