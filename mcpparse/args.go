package mcpparse

import (
	"math"
	"strconv"

	"github.com/gowebpki/jcs"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
)

// argIndex locates the top-level members of RawArguments.
type argIndex struct {
	names []byte // decoded names, joined
	ends  []int  // end of each name in names
	vals  []int  // offset of each value in RawArguments
}

// Arg returns the top-level argument name decoded as Args documents, and
// whether there is one, decoding that member only: a policy expression
// reading args.amount does not decode the rest. The first call indexes the
// top-level members (one scan that skips nested values).
func (m *Message) Arg(name string) (any, bool) {
	if m.args != nil {
		v, ok := m.args[name]
		return v, ok
	}
	if m.RawArguments == nil {
		return nil, false
	}
	p := getScanner(m.RawArguments, unlimited)
	defer putScanner(p)
	if m.argOffs != nil {
		for i := 0; i+1 < len(m.argOffs); i += 2 {
			p.pos = int(m.argOffs[i])
			key, _, err := p.scanString()
			if err == nil && string(key) == name {
				p.pos = int(m.argOffs[i+1])
				return p.build(), true
			}
		}
		return nil, false
	}
	if m.index == nil {
		m.index = p.indexMembers()
	}
	x := m.index
	start := 0
	for i, end := range x.ends {
		if string(x.names[start:end]) == name {
			p.pos = x.vals[i]
			return p.build(), true
		}
		start = end
	}
	return nil, false
}

// indexMembers indexes the top-level members of the object at p.in, which
// the scan accepted (bounds are checked all the same).
func (p *scanner) indexMembers() *argIndex {
	x := &argIndex{}
	p.skipWS()
	p.pos++ // '{'
	for {
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return x
		}
		key, _, err := p.scanString()
		if err != nil {
			return x
		}
		x.names = append(x.names, key...)
		x.ends = append(x.ends, len(x.names))
		p.skipWS()
		p.pos++ // ':'
		p.skipWS()
		x.vals = append(x.vals, p.pos)
		if p.pos = jsonscan.Skip(p.in, p.pos); p.pos < 0 {
			return x
		}
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != ',' {
			return x
		}
		p.pos++
	}
}

// unlimited lifts every limit, for re-reading bytes Parse already bounded.
var unlimited = Limits{MaxBytes: math.MaxInt, MaxDepth: math.MaxInt, MaxKeys: math.MaxInt,
	MaxElements: math.MaxInt, MaxStringLen: math.MaxInt, MaxBatch: math.MaxInt}

// Args returns the arguments decoded for policy expressions: objects
// map[string]any, arrays []any, strings string, booleans bool, null nil,
// numbers int64 when their RFC 8785 text is an integer that fits int64,
// else float64 (so 1E2 and 100 both give int64(100), since they have the
// same canonical form and digest). Never nil: no arguments give an empty
// map. It decodes on the first call and returns the same map after, so a
// request whose policy never reads args never pays for them; callers must
// not modify the map.
func (m *Message) Args() map[string]any {
	if m.args == nil {
		m.args = decodeArgs(m.RawArguments)
	}
	return m.args
}

// decodeArgs decodes raw, an object Parse accepted, as Args documents.
func decodeArgs(raw []byte) map[string]any {
	if raw == nil {
		return map[string]any{}
	}
	p := getScanner(raw, unlimited)
	defer putScanner(p)
	p.skipWS()
	m, ok := p.build().(map[string]any)
	if !ok { // unreachable: raw is an object Parse accepted
		return map[string]any{}
	}
	return m
}

// build decodes the value at p.pos from input the scan accepted, numbers
// by numberValue. See buildWith.
func (p *scanner) build() any { return p.buildWith(numberValue) }

// buildWith decodes the value at p.pos from input the scan accepted, each
// number literal through num. It checks bounds only, so that bytes changed
// since the scan cannot make it panic; what it returns for such bytes is
// unspecified.
func (p *scanner) buildWith(num func(lit []byte) any) any {
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
			m[k] = p.buildWith(num)
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
			a = append(a, p.buildWith(num))
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
	return num(p.in[start:p.pos])
}

// numberValue converts a number literal Parse accepted: int64 when its
// RFC 8785 text is an integer that fits int64, else float64.
func numberValue(lit []byte) any {
	if len(lit) <= 18 && isIntegerLiteral(lit) { // fits int64 as is
		n, neg := int64(0), false
		for i, c := range lit {
			if i == 0 && c == '-' {
				neg = true
				continue
			}
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n
	}
	f, _ := strconv.ParseFloat(string(lit), 64) // in range: checked by Parse
	// The integer is that of the RFC 8785 text, which above 2^53 need not
	// be f's exact value (8.0000000000001e16 is 80000000000001000, the
	// double 80000000000000992).
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if text, err := jcs.NumberToJSON(f); err == nil {
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return n
			}
		}
	}
	return f
}
