package argschema

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// HeaderParam is one parameter a tool's inputSchema marks with
// x-mcp-header (MCP 2026-07-28 Streamable HTTP, "Custom Headers from Tool
// Parameters", SEP-2243): a client mirrors its value into the request
// header Mcp-Param-{Header}.
type HeaderParam struct {
	// Header is the x-mcp-header value, as declared (header names compare
	// case-insensitively).
	Header string
	// Path are the property names from the arguments object to the
	// parameter: properties reachable through properties alone.
	Path []string
	// Type is the declared type: string, integer, boolean or number
	// ("" or another when the annotation is not the spec's).
	Type string
}

// headerParams reads the x-mcp-header annotations of schema v. Only
// properties statically reachable through properties members count; an
// annotation reached otherwise (items, allOf, $ref, …) is not the spec's
// and is ignored. An annotation the spec does not allow on a property
// reached through properties is still enforced when its value is an HTTP
// token (RFC 9110 section 5.6.2), a header a client can send: a type that
// is not string, integer, boolean or number (the value compares unequal
// to any header: present in the body, the call is refused), two names
// equal but for case (each parameter compares with that one header). The
// Go MCP SDK's server compares every annotation it finds so, and an
// intermediary may route by the header: admitting a header the body
// disagrees with because a sibling annotation is invalid would let the
// two differ. A value that is not a token (no header can carry it) is
// ignored, and the error says the annotations are not all valid.
func headerParams(v any) ([]HeaderParam, error) {
	var out []HeaderParam
	var bad error
	seen := map[string]bool{}
	var walk func(m map[string]any, path []string)
	walk = func(m map[string]any, path []string) {
		props, _ := m["properties"].(map[string]any)
		for name, sub := range props {
			sm, ok := sub.(map[string]any)
			if !ok {
				continue
			}
			p := append(append([]string(nil), path...), name)
			if h, ok := sm["x-mcp-header"]; ok {
				hs, ok := h.(string)
				t, _ := sm["type"].(string)
				switch {
				case !ok || !isToken(hs):
					bad = errors.New("x-mcp-header is not an HTTP token")
				default:
					switch t {
					case "string", "integer", "boolean", "number":
					default:
						bad = errors.New("x-mcp-header on a parameter that is not a string, integer, boolean or number")
					}
					if seen[strings.ToLower(hs)] {
						bad = errors.New("x-mcp-header names one header twice")
					}
					seen[strings.ToLower(hs)] = true
					out = append(out, HeaderParam{Header: hs, Path: p, Type: t})
				}
			}
			walk(sm, p)
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	walk(m, nil)
	return out, bad
}

// isToken reports whether s is an RFC 9110 token: 1*tchar.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// HeaderGetter reads a request header by its lower-case name: the first
// value and how many there are (decision.Headers).
type HeaderGetter interface {
	Get(name string) (string, int)
}

// CheckHeaders compares the Mcp-Param-{Header} headers of s's parameters
// with args (ExactArguments) and returns "" when they agree, else the
// header that disagrees ("Mcp-Param-" + Header). A parameter whose value
// is absent or null must have no header; one whose value is present must
// have one (when expect is set: the client speaks MCP 2026-07-28, which
// makes mirroring a MUST) equal to it: the value after the
// =?base64?…?= form is decoded (mcpparse.DecodeHeaderValue; an invalid
// one disagrees); a string byte for byte, a boolean as true or false, a
// number as the same exact decimal (42 and 42.0 agree). A header given
// twice disagrees. Headers of parameters s does not mark are not looked
// at.
func (s *Schema) CheckHeaders(h HeaderGetter, args any, expect bool) string {
	for _, p := range s.Headers {
		name := "mcp-param-" + strings.ToLower(p.Header)
		raw, n := h.Get(name)
		v, present := lookup(args, p.Path)
		switch {
		case !present || v == nil:
			if n > 0 {
				return "Mcp-Param-" + p.Header
			}
			continue
		case n == 0:
			if expect {
				return "Mcp-Param-" + p.Header
			}
			continue
		case n > 1:
			return "Mcp-Param-" + p.Header
		}
		got, err := mcpparse.DecodeHeaderValue(raw)
		if err != nil || !sameValue(got, v) {
			return "Mcp-Param-" + p.Header
		}
	}
	return ""
}

// lookup follows path through the objects of args.
func lookup(args any, path []string) (any, bool) {
	v := args
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// sameValue compares a decoded header value with a body value.
func sameValue(h string, v any) bool {
	switch v := v.(type) {
	case string:
		return h == v
	case bool:
		return h == "true" && v || h == "false" && !v
	case json.Number:
		if !isJSONNumber(h) {
			return false
		}
		a, ok1 := new(big.Rat).SetString(h)
		b, ok2 := new(big.Rat).SetString(string(v))
		return ok1 && ok2 && a.Cmp(b) == 0
	}
	return false // objects and arrays are never mirrored
}

// isJSONNumber reports whether s is an RFC 8259 number of at most 64
// bytes with an exponent of at most three digits (so big.Rat's work is
// bounded).
func isJSONNumber(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	i := 0
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	switch n := digits(); {
	case n == 0, n > 1 && s[i-n] == '0':
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if n := digits(); n == 0 || n > 3 {
			return false
		}
	}
	return i == len(s)
}
