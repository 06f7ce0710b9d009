package argschema

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path. The library validates a decoded tree (map[string]any,
// json.Number) and allocates per value: about 100 ns and a few allocations
// per argument value, decoding included, far over issue 30's budget of
// 3 µs per KiB of arguments. Most inputSchemas use a small set of
// keywords, and for a schema that uses only these, Compile also builds a
// fastNode tree that checks the raw argument bytes (which mcpparse.Parse
// accepted: strict JSON) in one pass, without building a tree or
// allocating on success:
//
//	type, properties, required, additionalProperties (boolean or schema),
//	unevaluatedProperties (boolean), items (one schema), minItems,
//	maxItems, minProperties, maxProperties, minLength, maxLength (code
//	points), pattern (Go regexp, as the library compiles it), minimum,
//	maximum, exclusiveMinimum, exclusiveMaximum (compared as exact
//	decimals), multipleOf (big.Rat), enum and const of strings, numbers,
//	booleans and null, format (the library's check of that one keyword),
//	boolean schemas, and the annotations (title, description, default,
//	examples, $comment, deprecated, readOnly, writeOnly, x-*), with $schema
//	absent, 2020-12, 2019-09 or draft-07 at the root (zod-to-json-schema,
//	behind many TypeScript servers, writes draft-07).
//
// Any other keyword anywhere ($ref, allOf, anyOf, oneOf, if,
// patternProperties, prefixItems, dependentRequired, …) sends the whole
// schema to the library. With none of the composition keywords, a closed
// object (unevaluatedProperties: false) is exactly one whose members are
// all in properties. FuzzFastPath checks that both paths agree on
// validity for random schemas of this subset and random arguments.

// Type bits of fastNode.types.
const (
	tNull uint8 = 1 << iota
	tBool
	tInteger
	tNumber
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBool, "integer": tInteger, "number": tNumber,
	"string": tString, "array": tArray, "object": tObject}

// fastNode is one compiled schema of the fast path.
type fastNode struct {
	never   bool   // the schema false
	neverKw string // the keyword that applied it (items, properties, …)
	types   uint8  // 0: any type
	props   map[string]*fastNode
	// propList is props in a slice, searched instead of the map when it
	// holds at most 8 (cheaper than hashing each member name).
	propList []namedNode
	// reqOutside: some required name is not in properties (propList's
	// bits do not cover it).
	reqOutside bool
	required   []string
	// closedBy is the keyword that refuses members outside props when
	// addl is nil ("additionalProperties" or "unevaluatedProperties"), ""
	// when they are allowed.
	closedBy                       string
	addl                           *fastNode
	items                          *fastNode
	minItems, maxItems             int // -1: unbounded
	minProps, maxProps             int
	minLen, maxLen                 int
	pattern                        *regexp.Regexp
	minimum, maximum               *decimal
	exclMin, exclMax               *decimal
	multipleOf                     *big.Rat
	multipleDec                    *decimal // multipleOf as a decimal
	enum                           []scalar
	enumKeyword                    string // "enum" or "const"
	format                         *jsonschema.Schema
	hasNum, hasStr, hasArr, hasObj bool // assertions beyond type of that kind
}

type namedNode struct {
	name string
	node *fastNode
	req  uint64 // its bit in required (the first 64), 0 when not required
}

// prop returns the properties schema of member name, and its required
// bit when propList holds it (0 otherwise).
func (n *fastNode) prop(name string) (*fastNode, uint64, bool) {
	if n.propList != nil {
		for i := range n.propList {
			if p := &n.propList[i]; len(p.name) == len(name) && p.name == name {
				return p.node, p.req, true
			}
		}
		return nil, 0, false
	}
	c, ok := n.props[name]
	return c, 0, ok
}

// scalar is one enum or const value.
type scalar struct {
	kind byte // 'n' null, 'b' boolean, 's' string, 'd' number
	b    bool
	s    string
	d    decimal
}

var fastAnnotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// fastDrafts are the $schema values the fast path takes: within its
// keywords draft-07, 2019-09 and 2020-12 mean the same (but for
// unevaluatedProperties, which draft-07 lacks).
var fastDrafts = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema": true, "https://json-schema.org/draft/2020-12/schema#": true,
	"https://json-schema.org/draft/2019-09/schema": true, "https://json-schema.org/draft/2019-09/schema#": true,
	"http://json-schema.org/draft-07/schema": true, "http://json-schema.org/draft-07/schema#": true,
	"https://json-schema.org/draft-07/schema": true, "https://json-schema.org/draft-07/schema#": true,
}

// compileFast builds the fast path of schema v (closeObjects done), or
// reports false when v uses a keyword outside the subset. legacy: the
// schema is draft-07.
func compileFast(v any, root, legacy bool) (*fastNode, bool) {
	switch v := v.(type) {
	case bool:
		return &fastNode{never: !v, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1, minLen: -1, maxLen: -1}, true
	case map[string]any:
		n := &fastNode{minItems: -1, maxItems: -1, minProps: -1, maxProps: -1, minLen: -1, maxLen: -1}
		ap, hasAP := v["additionalProperties"]
		up := v["unevaluatedProperties"]
		for k, x := range v {
			switch {
			case fastAnnotations[k] || strings.HasPrefix(k, "x-"):
			case k == "$schema":
				if s, _ := x.(string); !root || !fastDrafts[s] {
					return nil, false
				}
			case k == "type":
				switch t := x.(type) {
				case string:
					if typeBits[t] == 0 {
						return nil, false
					}
					n.types |= typeBits[t]
				case []any:
					for _, e := range t {
						s, _ := e.(string)
						if typeBits[s] == 0 {
							return nil, false
						}
						n.types |= typeBits[s]
					}
				default:
					return nil, false
				}
			case k == "properties":
				m, ok := x.(map[string]any)
				if !ok {
					return nil, false
				}
				n.props = make(map[string]*fastNode, len(m))
				for name, sub := range m {
					c, ok := compileFast(sub, false, legacy)
					if !ok {
						return nil, false
					}
					c.neverKw = "properties"
					n.props[name] = c
				}
				n.hasObj = true
			case k == "required":
				l, ok := x.([]any)
				if !ok {
					return nil, false
				}
				for _, e := range l {
					s, ok := e.(string)
					if !ok {
						return nil, false
					}
					n.required = append(n.required, s)
				}
				n.hasObj = true
			case k == "additionalProperties":
				switch a := ap.(type) {
				case bool:
					if !a {
						n.closedBy = "additionalProperties"
					}
				case map[string]any:
					c, ok := compileFast(a, false, legacy)
					if !ok {
						return nil, false
					}
					c.neverKw = "additionalProperties"
					n.addl = c
				default:
					return nil, false
				}
				n.hasObj = true
			case k == "unevaluatedProperties":
				b, ok := up.(bool)
				if !ok || legacy {
					return nil, false // draft-07 has no unevaluatedProperties: the library ignores it
				}
				if !b && !hasAP {
					n.closedBy = "unevaluatedProperties"
				}
				n.hasObj = true
			case k == "items":
				c, ok := compileFast(x, false, legacy)
				if !ok {
					return nil, false
				}
				c.neverKw = "items"
				n.items, n.hasArr = c, true
			case k == "minItems", k == "maxItems", k == "minProperties", k == "maxProperties", k == "minLength", k == "maxLength":
				i, ok := count(x)
				if !ok {
					return nil, false
				}
				switch k {
				case "minItems":
					n.minItems, n.hasArr = i, true
				case "maxItems":
					n.maxItems, n.hasArr = i, true
				case "minProperties":
					n.minProps, n.hasObj = i, true
				case "maxProperties":
					n.maxProps, n.hasObj = i, true
				case "minLength":
					n.minLen, n.hasStr = i, true
				case "maxLength":
					n.maxLen, n.hasStr = i, true
				}
			case k == "pattern":
				s, ok := x.(string)
				if !ok {
					return nil, false
				}
				re, err := regexp.Compile(s)
				if err != nil {
					return nil, false
				}
				n.pattern, n.hasStr = re, true
			case k == "minimum", k == "maximum", k == "exclusiveMinimum", k == "exclusiveMaximum":
				num, ok := x.(json.Number)
				if !ok {
					return nil, false
				}
				d, ok := parseDecimal([]byte(num))
				if !ok {
					return nil, false
				}
				switch k {
				case "minimum":
					n.minimum = &d
				case "maximum":
					n.maximum = &d
				case "exclusiveMinimum":
					n.exclMin = &d
				case "exclusiveMaximum":
					n.exclMax = &d
				}
				n.hasNum = true
			case k == "multipleOf":
				num, ok := x.(json.Number)
				if !ok {
					return nil, false
				}
				r, ok := new(big.Rat).SetString(string(num))
				if !ok || r.Sign() <= 0 {
					return nil, false
				}
				d, ok := parseDecimal([]byte(num))
				if !ok {
					return nil, false
				}
				n.multipleOf, n.multipleDec, n.hasNum = r, &d, true
			case k == "enum", k == "const":
				vals := []any{x}
				if k == "enum" {
					l, ok := x.([]any)
					if !ok || n.enumKeyword != "" {
						return nil, false
					}
					vals = l
				} else if n.enumKeyword != "" {
					return nil, false
				}
				// Non-nil even when empty: an empty enum admits nothing,
				// and n.enum != nil is what the walk tests.
				n.enum = make([]scalar, 0, len(vals))
				for _, e := range vals {
					s, ok := toScalar(e)
					if !ok {
						return nil, false
					}
					n.enum = append(n.enum, s)
				}
				n.enumKeyword = k
			case k == "format":
				f, ok := x.(string)
				if !ok {
					return nil, false
				}
				s, err := formatSchema(f)
				if err != nil {
					return nil, false
				}
				n.format, n.hasStr = s, true
			default:
				return nil, false
			}
		}
		if len(n.props) <= 8 && len(n.required) <= 64 {
			for name, c := range n.props {
				nn := namedNode{name: name, node: c}
				for i, r := range n.required {
					if r == name {
						nn.req |= 1 << i
					}
				}
				n.propList = append(n.propList, nn)
			}
			// Required names outside properties are matched one by one.
			for _, r := range n.required {
				if _, ok := n.props[r]; !ok {
					n.reqOutside = true
				}
			}
		}
		return n, true
	}
	return nil, false
}

// count reads a non-negative integer keyword value.
func count(x any) (int, bool) {
	num, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := num.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		return 0, false
	}
	return int(i), true
}

func toScalar(e any) (scalar, bool) {
	switch e := e.(type) {
	case nil:
		return scalar{kind: 'n'}, true
	case bool:
		return scalar{kind: 'b', b: e}, true
	case string:
		return scalar{kind: 's', s: e}, true
	case json.Number:
		d, ok := parseDecimal([]byte(e))
		return scalar{kind: 'd', d: d}, ok
	}
	return scalar{}, false
}

// formatSchemas are the compiled schemas {"format": name}, by name: the
// library's check of one format, for the fast path's strings.
var formatSchemas sync.Map // string → *jsonschema.Schema

func formatSchema(name string) (*jsonschema.Schema, error) {
	if s, ok := formatSchemas.Load(name); ok {
		return s.(*jsonschema.Schema), nil
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, map[string]any{"format": name}); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	formatSchemas.Store(name, s)
	return s, nil
}

// fastValidator walks raw argument bytes (strict JSON) against a fastNode.
type fastValidator struct {
	in   []byte
	pos  int
	path []pathTok // the location being validated
	fail *Failure
	bail bool // a number past decimal's digits: ask the library
}

// pathTok is one step of the location: a member name (raw, as between its
// quotes) or an array index.
type pathTok struct {
	name []byte
	idx  int
}

var fastPool = sync.Pool{New: func() any { return &fastValidator{path: make([]pathTok, 0, 16)} }}

// validateFast validates raw (a JSON value; nil is the empty object)
// against n; ok false when it cannot decide (a number with more digits
// than decimal holds, which mcpparse never passes): then the library
// must.
func validateFast(n *fastNode, raw []byte) (f *Failure, ok bool) {
	if raw == nil {
		raw = []byte("{}")
	}
	v := fastPool.Get().(*fastValidator)
	v.in, v.pos, v.path, v.fail, v.bail = raw, 0, v.path[:0], nil, false
	v.ws()
	v.value(n)
	f, ok = v.fail, !v.bail
	v.in = nil
	fastPool.Put(v)
	return f, ok
}

func (v *fastValidator) ws() {
	if v.pos < len(v.in) && v.in[v.pos] > ' ' { // the common case: no white space
		return
	}
	for v.pos < len(v.in) {
		switch v.in[v.pos] {
		case ' ', '\t', '\n', '\r':
			v.pos++
		default:
			return
		}
	}
}

// failAt records a failure of keyword at the current location plus, when
// member is not nil, that member.
func (v *fastValidator) failAt(keyword string, member []byte) bool {
	var b strings.Builder
	for _, t := range v.path {
		b.WriteByte('/')
		if t.name != nil {
			b.WriteString(escapeToken(unquote(t.name)))
		} else {
			b.WriteString(itoa(t.idx))
		}
	}
	if member != nil {
		b.WriteByte('/')
		b.WriteString(escapeToken(unquote(member)))
	}
	v.fail = &Failure{Pointer: b.String(), Keyword: keyword}
	return false
}

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func itoa(i int) string {
	var b [20]byte
	p := len(b)
	if i == 0 {
		return "0"
	}
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	return string(b[p:])
}

// str scans the string at v.pos and returns its raw content (between the
// quotes) and whether it holds an escape.
func (v *fastValidator) str() (raw []byte, esc bool) {
	v.pos++ // '"'
	start := v.pos
	in := v.in
	for i := start; i < len(in); i++ {
		if !strSpecial[in[i]] {
			continue
		}
		switch in[i] {
		case '"':
			if !esc {
				v.pos = i + 1
				return in[start:i], false
			}
			v.pos = i + 1
			return in[start:i], true
		case '\\':
			esc = true
			i++
		}
	}
	v.pos = len(in)
	return in[start:], esc
}

// strSpecial marks the bytes str stops at.
var strSpecial = [256]bool{'"': true, '\\': true}

// unquote decodes raw string content (escapes resolved).
func unquote(raw []byte) string {
	if !containsByte(raw, '\\') {
		return string(raw)
	}
	var s string
	b := make([]byte, 0, len(raw)+2)
	b = append(append(append(b, '"'), raw...), '"')
	if json.Unmarshal(b, &s) != nil {
		return string(raw)
	}
	return s
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// skip steps over the value at v.pos.
func (v *fastValidator) skip() {
	depth := 0
	for v.pos < len(v.in) {
		switch c := v.in[v.pos]; c {
		case '"':
			v.str()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				v.pos++
				return
			}
		default:
			if depth == 0 && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				for v.pos < len(v.in) && !strings.ContainsRune(",}] \t\n\r", rune(v.in[v.pos])) {
					v.pos++
				}
				return
			}
		}
		v.pos++
	}
}

// value validates the value at v.pos against n and steps over it; false
// (v.fail set) on the first failure.
func (v *fastValidator) value(n *fastNode) bool {
	if n == nil {
		v.skip()
		return true
	}
	if n.never {
		if n.neverKw == "" {
			return v.failAt("schema", nil)
		}
		return v.failAt(n.neverKw, nil)
	}
	if v.pos >= len(v.in) {
		return v.failAt("type", nil)
	}
	switch c := v.in[v.pos]; {
	case c == '{':
		return v.object(n)
	case c == '[':
		return v.array(n)
	case c == '"':
		raw, esc := v.str()
		if n.types != 0 && n.types&tString == 0 {
			return v.failAt("type", nil)
		}
		if !n.hasStr && n.enum == nil {
			return true
		}
		s := unsafeString(raw)
		if esc {
			s = unquote(raw)
		}
		return v.stringValue(n, s)
	case c == 't' || c == 'f':
		b := c == 't'
		if b {
			v.pos += 4
		} else {
			v.pos += 5
		}
		if n.types != 0 && n.types&tBool == 0 {
			return v.failAt("type", nil)
		}
		if n.enum != nil && !n.inEnum(scalar{kind: 'b', b: b}) {
			return v.failAt(n.enumKeyword, nil)
		}
		return true
	case c == 'n':
		v.pos += 4
		if n.types != 0 && n.types&tNull == 0 {
			return v.failAt("type", nil)
		}
		if n.enum != nil && !n.inEnum(scalar{kind: 'n'}) {
			return v.failAt(n.enumKeyword, nil)
		}
		return true
	default:
		start := v.pos
		for v.pos < len(v.in) {
			c := v.in[v.pos]
			if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
				break
			}
			v.pos++
		}
		if v.pos == start {
			return v.failAt("type", nil)
		}
		return v.number(n, v.in[start:v.pos])
	}
}

func (v *fastValidator) stringValue(n *fastNode, s string) bool {
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLen >= 0 && l < n.minLen {
			return v.failAt("minLength", nil)
		}
		if n.maxLen >= 0 && l > n.maxLen {
			return v.failAt("maxLength", nil)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return v.failAt("pattern", nil)
	}
	if n.format != nil && n.format.Validate(strings.Clone(s)) != nil {
		return v.failAt("format", nil)
	}
	if n.enum != nil && !n.inEnum(scalar{kind: 's', s: s}) {
		return v.failAt(n.enumKeyword, nil)
	}
	return true
}

func (v *fastValidator) number(n *fastNode, lit []byte) bool {
	needInt := n.types != 0 && n.types&tNumber == 0
	if needInt && n.types&tInteger == 0 {
		return v.failAt("type", nil)
	}
	if !needInt && !n.hasNum && n.enum == nil {
		return true // any number will do
	}
	if needInt && !n.hasNum && n.enum == nil && plainInteger(lit) {
		return true
	}
	var d decimal
	if !d.parse(lit) {
		v.bail = true
		return false
	}
	if needInt && !d.isInteger() {
		return v.failAt("type", nil)
	}
	if n.hasNum {
		switch {
		case n.minimum != nil && d.cmp(n.minimum) < 0:
			return v.failAt("minimum", nil)
		case n.maximum != nil && d.cmp(n.maximum) > 0:
			return v.failAt("maximum", nil)
		case n.exclMin != nil && d.cmp(n.exclMin) <= 0:
			return v.failAt("exclusiveMinimum", nil)
		case n.exclMax != nil && d.cmp(n.exclMax) >= 0:
			return v.failAt("exclusiveMaximum", nil)
		}
		if n.multipleOf != nil {
			multiple, ok := d.multipleOf(n.multipleDec)
			if !ok {
				r, rok := new(big.Rat).SetString(string(lit))
				multiple = rok && r.Quo(r, n.multipleOf).IsInt()
			}
			if !multiple {
				return v.failAt("multipleOf", nil)
			}
		}
	}
	if n.enum != nil && !n.inEnum(scalar{kind: 'd', d: d}) {
		return v.failAt(n.enumKeyword, nil)
	}
	return true
}

// plainInteger reports whether lit is digits with an optional sign: no
// fraction, no exponent (an integer whatever its size).
func plainInteger(lit []byte) bool {
	for i, c := range lit {
		if !(c >= '0' && c <= '9' || i == 0 && c == '-') {
			return false
		}
	}
	return len(lit) > 0
}

func (n *fastNode) inEnum(x scalar) bool {
	for i := range n.enum {
		e := &n.enum[i]
		if e.kind != x.kind {
			continue
		}
		switch x.kind {
		case 'n':
			return true
		case 'b':
			if e.b == x.b {
				return true
			}
		case 's':
			if e.s == x.s {
				return true
			}
		case 'd':
			if e.d.cmp(&x.d) == 0 {
				return true
			}
		}
	}
	return false
}

func (v *fastValidator) object(n *fastNode) bool {
	if n.types != 0 && n.types&tObject == 0 {
		return v.failAt("type", nil)
	}
	if n.enum != nil {
		return v.failAt(n.enumKeyword, nil)
	}
	if !n.hasObj {
		v.skip()
		return true
	}
	v.pos++ // '{'
	var seen uint64
	var seenMore map[string]bool // past 64 required names
	members := 0
	for {
		v.ws()
		if v.pos >= len(v.in) || v.in[v.pos] == '}' {
			v.pos++
			break
		}
		raw, esc := v.str()
		name := unsafeString(raw)
		if esc {
			name = unquote(raw)
		}
		v.ws()
		v.pos++ // ':'
		v.ws()
		members++
		sub, bit, known := n.prop(name)
		seen |= bit
		if n.propList == nil || n.reqOutside || !known {
			for i, r := range n.required {
				if len(r) == len(name) && r == name {
					if i < 64 {
						seen |= 1 << i
					} else {
						if seenMore == nil {
							seenMore = map[string]bool{}
						}
						seenMore[r] = true
					}
				}
			}
		}
		switch {
		case known:
		case n.addl != nil:
			sub = n.addl
		case n.closedBy != "":
			return v.failAt(n.closedBy, raw)
		}
		if !known && n.addl == nil {
			v.skip()
		} else {
			v.path = append(v.path, pathTok{name: raw})
			if !v.value(sub) {
				return false
			}
			v.path = v.path[:len(v.path)-1]
		}
		v.ws()
		if v.pos < len(v.in) && v.in[v.pos] == ',' {
			v.pos++
		}
	}
	for i, r := range n.required {
		if i < 64 && seen&(1<<i) == 0 || i >= 64 && !seenMore[r] {
			return v.failAt("required", []byte(escapeJSON(r)))
		}
	}
	if n.minProps >= 0 && members < n.minProps {
		return v.failAt("minProperties", nil)
	}
	if n.maxProps >= 0 && members > n.maxProps {
		return v.failAt("maxProperties", nil)
	}
	return true
}

// escapeJSON is s as raw string content (so failAt's unquote gives s).
func escapeJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func (v *fastValidator) array(n *fastNode) bool {
	if n.types != 0 && n.types&tArray == 0 {
		return v.failAt("type", nil)
	}
	if n.enum != nil {
		return v.failAt(n.enumKeyword, nil)
	}
	if !n.hasArr {
		v.skip()
		return true
	}
	v.pos++ // '['
	i := 0
	for {
		v.ws()
		if v.pos >= len(v.in) || v.in[v.pos] == ']' {
			v.pos++
			break
		}
		v.path = append(v.path, pathTok{idx: i})
		if !v.value(n.items) {
			return false
		}
		v.path = v.path[:len(v.path)-1]
		i++
		v.ws()
		if v.pos < len(v.in) && v.in[v.pos] == ',' {
			v.pos++
		}
	}
	if n.minItems >= 0 && i < n.minItems {
		return v.failAt("minItems", nil)
	}
	if n.maxItems >= 0 && i > n.maxItems {
		return v.failAt("maxItems", nil)
	}
	return true
}
