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
	return p.buildExact()
}

// buildExact is build with numbers as json.Number.
func (p *scanner) buildExact() any {
	if p.pos >= len(p.in) {
		return nil
	}
	switch c := p.in[p.pos]; c {
	case '{':
		p.pos++
		m := map[string]any{}
		for {
			p.skipWS()
			if p.pos >= len(p.in) || p.in[p.pos] != '"' {
				p.pos++ // '}'
				return m
			}
			key, _, err := p.scanString()
			if err != nil {
				return m
			}
			k := string(key)
			p.skipWS()
			p.pos++ // ':'
			p.skipWS()
			m[k] = p.buildExact()
			p.skipWS()
			if p.pos < len(p.in) && p.in[p.pos] == ',' {
				p.pos++
			}
		}
	case '[':
		p.pos++
		a := []any{}
		for {
			p.skipWS()
			if p.pos >= len(p.in) || p.in[p.pos] == ']' {
				p.pos++
				return a
			}
			a = append(a, p.buildExact())
			p.skipWS()
			if p.pos < len(p.in) && p.in[p.pos] == ',' {
				p.pos++
			}
		}
	case '"':
		s, _, err := p.scanString()
		if err != nil {
			return nil
		}
		return string(s)
	case 't':
		p.pos += 4
		return true
	case 'f':
		p.pos += 5
		return false
	case 'n':
		p.pos += 4
		return nil
	}
	start := p.pos
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			break
		}
		p.pos++
	}
	if p.pos == start { // not a value the scan accepted: step over the byte
		p.pos++
		return nil
	}
	return json.Number(p.in[start:p.pos])
}
