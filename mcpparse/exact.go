package mcpparse

import "encoding/json"

// ExactArguments decodes m's params.arguments for JSON Schema validation:
// objects as map[string]any, arrays as []any, strings, booleans, nil, and
// every number as the json.Number of its literal as the body wrote it
// (never a float64), so a validator compares the exact decimal. Parse
// refused any literal whose value changes in RFC 8785 form
// (ErrNonCanonicalNumber), so the literal's decimal is the one the
// arguments digest covers. An absent arguments member is an empty object.
// Each call decodes afresh (validation runs once per message).
func (m *Message) ExactArguments() any {
	if m.RawArguments == nil {
		return map[string]any{}
	}
	return DecodeExact(m.RawArguments)
}

// DecodeExact decodes raw, one JSON value that Parse (or Canonicalize)
// accepted, as ExactArguments documents. Bytes no strict parse accepted
// decode to an unspecified value, never a panic.
func DecodeExact(raw []byte) any {
	p := getScanner(raw, unlimited)
	defer putScanner(p)
	p.skipWS()
	return p.buildWith(exactNumber)
}

// exactNumber is a number literal as its json.Number.
func exactNumber(lit []byte) any { return json.Number(lit) }
