package mcpparse

import (
	"strconv"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
)

// maxPointerLen bounds the pointer PointerAt returns (bytes, "/…" past it).
const maxPointerLen = 256

// PointerAt returns the RFC 6901 JSON Pointer of the place at byte offset
// off of in, for a ParseError's Offset: the value that starts there, or the
// member whose name starts there (its name the last segment); "" for the
// top level. It reads in up to off only, as JSON of any depth, tolerating
// what the strict parse refuses (it never validates). Member names are
// decoded and cut to 32 bytes ("…" marks a cut, as in ParseError
// messages); the pointer to at most maxPointerLen bytes. Never a value:
// only names and array indices. Linear in off, allocating per open
// container; meant for a denial's detail, not for the hot path.
func PointerAt(in []byte, off int) string {
	if off > len(in) {
		off = len(in)
	}
	type frame struct {
		obj   bool
		key   []byte // raw name of the current member (between the quotes)
		value bool   // past the member's colon
		index int
	}
	var stack []frame
	i := 0
	for i < off {
		c := in[i]
		switch {
		case c == '{' || c == '[':
			stack = append(stack, frame{obj: c == '{'})
			i++
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case c == ',':
			if n := len(stack); n > 0 {
				if stack[n-1].obj {
					stack[n-1].key, stack[n-1].value = nil, false
				} else {
					stack[n-1].index++
				}
			}
			i++
		case c == ':':
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].value = true
			}
			i++
		case c == '"':
			end := stringEnd(in, i)
			if n := len(stack); n > 0 && stack[n-1].obj && !stack[n-1].value {
				stack[n-1].key = in[i+1 : max(i+1, end-1)]
			}
			i = end
		default:
			i++
		}
	}
	var b strings.Builder
	for _, f := range stack {
		switch {
		case f.obj && f.value:
			appendSegment(&b, f.key)
		case !f.obj:
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(f.index))
		}
	}
	// A member name starting at off: the member it names.
	if n := len(stack); off < len(in) && in[off] == '"' && n > 0 && stack[n-1].obj && !stack[n-1].value {
		end := stringEnd(in, off)
		appendSegment(&b, in[off+1:max(off+1, end-1)])
	}
	p := b.String()
	if len(p) > maxPointerLen {
		cut := strings.LastIndexByte(p[:maxPointerLen], '/')
		p = p[:cut] + "/…"
	}
	return p
}

// pointerEscaper escapes a reference token (RFC 6901 section 3).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// stringEnd returns the offset just past the string starting at in[i]
// (a quote), or len(in) when it does not end (jsonscan.String).
func stringEnd(in []byte, i int) int {
	if end := jsonscan.String(in, i); end >= 0 {
		return end
	}
	return len(in)
}

// appendSegment appends "/" and the member name raw (JSON string contents,
// escapes undecoded) decoded, cut to 32 bytes, with "~" and "/" escaped
// (RFC 6901 section 3). A name that does not decode is written raw.
func appendSegment(b *strings.Builder, raw []byte) {
	name := string(raw)
	if strings.IndexByte(name, '\\') >= 0 {
		if s, ok := jsonscan.Unquote([]byte(`"` + name + `"`)); ok {
			name = s
		}
	}
	const maxName = 32
	cut := false
	if len(name) > maxName {
		n := maxName
		for n > 0 && name[n]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			n--
		}
		name, cut = name[:n], true
	}
	b.WriteByte('/')
	b.WriteString(pointerEscaper.Replace(name))
	if cut {
		b.WriteString("…")
	}
}
