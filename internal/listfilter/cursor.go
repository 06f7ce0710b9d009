package listfilter

import (
	"bytes"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// ReplaceCursor rewrites the params.cursor of every list request in body
// (one JSON-RPC message or a batch, validated by mcpparse.Parse) to
// open(method, cursor): the request side of sealed cursors, where the
// client's sealed cursor becomes the upstream's own. Only the cursor's
// string literal changes (its replacement is written in RFC 8785 string
// form); a body without a cursor is returned as is, changed false. A cursor
// that is not a string, open's error and a body that does not parse are
// errors (*Error kind "cursor" or "parse").
func ReplaceCursor(body []byte, lim mcpparse.Limits, open func(method, cursor string) (string, error)) (out []byte, changed bool, err error) {
	parsed, perr := mcpparse.Parse(body, mcpparse.ParseOptions{Limits: lim, AllowBatch: true})
	if perr != nil {
		return nil, false, &Error{Kind: "parse", Msg: "not a strict JSON-RPC message", Err: perr}
	}
	var edits []edit
	for i := range parsed.Messages {
		m := &parsed.Messages[i]
		if _, list := KindOf(m.Method); !list || m.Kind != mcpparse.KindRequest || m.Params == nil {
			continue
		}
		off := offsetIn(body, m.Params)
		v, ok := jsonscan.Member(body, off, "cursor", true)
		if !ok {
			continue
		}
		c := member{off: offsetIn(body, v), end: offsetIn(body, v) + len(v)}
		if body[c.off] != '"' {
			return nil, false, &Error{Kind: "cursor", Msg: "params.cursor is not a string"}
		}
		sealed, err := decodeString(v)
		if err != nil {
			return nil, false, &Error{Kind: "cursor", Msg: "undecodable params.cursor", Err: err}
		}
		up, err := open(m.Method, sealed)
		if err != nil {
			return nil, false, &Error{Kind: "cursor", Msg: "params.cursor refused", Err: err}
		}
		edits = append(edits, edit{c.off, c.end, mcpparse.AppendJCSString(nil, up)})
	}
	if len(edits) == 0 {
		return body, false, nil
	}
	out = apply(body, edits)
	return out, !bytes.Equal(out, body), nil
}
