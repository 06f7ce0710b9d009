package decision

import "github.com/mcp-extauthz/mcp-extauthz/mcpparse"

// parseDetail is the Detail of a body the strict parse refused: the
// ParseError (its kind, offset and limit, or the member name it found
// twice) and, but for a body over the size limit, the JSON Pointer of the
// member or value where the parse stopped (mcpparse.PointerAt: names and
// indices, never a value), e.g. `mcpparse: too_deep at offset 84: nested
// deeper than 2 (at /params/arguments/filters)`.
func parseDetail(pe *mcpparse.ParseError, body []byte) string {
	if pe.Kind == mcpparse.ErrTooLarge {
		return pe.Error()
	}
	p := mcpparse.PointerAt(body, int(pe.Offset))
	if p == "" {
		return pe.Error()
	}
	return pe.Error() + " (at " + p + ")"
}
