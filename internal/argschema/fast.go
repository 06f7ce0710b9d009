package argschema

import (
	"encoding/binary"
	"encoding/json"
	"math/big"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
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
// all in properties. FuzzValidate checks that both paths agree on
// validity for random schemas of this subset and random arguments.
//
// What keeps the walk near the cost of reading the bytes: no location is
// kept (a failure's JSON Pointer is found by a second walk, locate);
// strings are scanned 8 bytes at a time, and a member name is compared
// as raw bytes with the keys (length, first word, closing quote: no scan)
// starting after the key found last; code points are counted only when
// the byte length does not settle minLength or maxLength; numbers of up
// to 19 significant digits are read in one pass into small (64-bit
// mantissa and exponent) and compared and divided in integer arithmetic,
// decimal and big.Rat past that; enum values are kept by kind, strings
// with their first word.

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
	// The fields every value reads first.
	never                          bool  // the schema false
	types                          uint8 // 0: any type
	hasNum, hasStr, hasArr, hasObj bool  // assertions beyond type of that kind
	numSmall                       bool  // see sMin
	maxLenOnly                     bool  // maxLength is the only string keyword
	enumKeyword                    string
	neverKw                        string // the keyword that applied never (items, properties, …)
	props                          map[string]*fastNode
	// keys is props in a slice, matched against raw member names by
	// length and first 8 bytes when it holds at most maxKeys (cheaper than
	// hashing each name); nil otherwise.
	keys []propKey
	// reqOutside: some required name is not in properties (keys' bits do
	// not cover it).
	reqOutside bool
	required   []string
	// closedBy is the keyword that refuses members outside props when
	// addl is nil ("additionalProperties" or "unevaluatedProperties"), ""
	// when they are allowed.
	closedBy           string
	addl               *fastNode
	items              *fastNode
	minItems, maxItems int // -1: unbounded
	minProps, maxProps int
	minLen, maxLen     int
	pattern            *regexp.Regexp
	minimum, maximum   *decimal
	exclMin, exclMax   *decimal
	multipleOf         *big.Rat
	multipleDec        *decimal // multipleOf as a decimal
	enum               []scalar // enumKeyword "enum" or "const"
	// enum by kind: its strings, its numbers, and whether null, true and
	// false are in it.
	enumStrs                      []string
	enumWords                     []uint64 // nameWord of each of enumStrs
	enumNums                      []decimal
	enumNull, enumTrue, enumFalse bool
	// numSmall: minimum… multipleOf and enum's numbers (the fast form of
	// each is in the s fields) have at most 19 significant digits, so a
	// number of as many is checked in the fast form (an enum number with
	// more equals none of them: not in enumSmall).
	sMin, sMax, sExclMin, sExclMax small
	sMult                          small
	enumSmall                      []small
	format                         *jsonschema.Schema
}

// maxKeys is the most properties matched through fastNode.keys.
const maxKeys = 16

// propKey is one member of fastNode.keys.
type propKey struct {
	w    uint64 // the name's first 8 bytes, little-endian, zero-padded
	mask uint64 // the bits of w the name fills
	n    int    // its length in bytes
	// plain: the name is its own JSON string content (no '"', '\\' or
	// control character to escape), so it is matched in the raw bytes.
	plain bool
	name  string
	node  *fastNode
	req   uint64 // its bit in required (the first 64), 0 when not required
}

// nameWord is the first min(n, 8) bytes of in[at:] as a little-endian
// word, zero-padded: propKey.w of a raw member name of n bytes at at.
func nameWord(in []byte, at, n int) uint64 {
	if at+8 <= len(in) {
		w := binary.LittleEndian.Uint64(in[at:])
		if n < 8 {
			w &= 1<<(8*uint(n)) - 1
		}
		return w
	}
	var w uint64
	for i := 0; i < n && i < 8; i++ {
		w |= uint64(in[at+i]) << (8 * i)
	}
	return w
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
		if len(n.props) <= maxKeys && len(n.required) <= 64 {
			n.keys = []propKey{}
			for name, c := range n.props {
				k := propKey{w: nameWord([]byte(name), 0, len(name)), mask: ^uint64(0), n: len(name), name: name, node: c, plain: true}
				if k.n < 8 {
					k.mask = 1<<(8*uint(k.n)) - 1
				}
				for i := 0; i < len(name); i++ {
					if name[i] == '"' || name[i] == '\\' || name[i] < ' ' {
						k.plain = false
					}
				}
				for i, r := range n.required {
					if r == name {
						k.req |= 1 << i
					}
				}
				n.keys = append(n.keys, k)
			}
			// In name order: members written in a fixed order (sorted, as
			// RFC 8785 writes them, or any other) are then mostly found
			// at the first key tried (object: after the last one found).
			slices.SortFunc(n.keys, func(a, b propKey) int { return strings.Compare(a.name, b.name) })
			// Required names outside properties are matched one by one.
			for _, r := range n.required {
				if _, ok := n.props[r]; !ok {
					n.reqOutside = true
				}
			}
		}
		n.maxLenOnly = n.maxLen >= 0 && n.minLen < 0 && n.pattern == nil && n.format == nil
		n.numSmall = true
		for _, b := range []struct {
			d *decimal
			s *small
		}{{n.minimum, &n.sMin}, {n.maximum, &n.sMax}, {n.exclMin, &n.sExclMin}, {n.exclMax, &n.sExclMax}, {n.multipleDec, &n.sMult}} {
			if b.d != nil {
				var ok bool
				if *b.s, ok = b.d.small(); !ok {
					n.numSmall = false
				}
			}
		}
		for _, e := range n.enum {
			switch e.kind {
			case 'n':
				n.enumNull = true
			case 'b':
				n.enumTrue, n.enumFalse = n.enumTrue || e.b, n.enumFalse || !e.b
			case 's':
				n.enumStrs = append(n.enumStrs, e.s)
				n.enumWords = append(n.enumWords, nameWord([]byte(e.s), 0, len(e.s)))
			case 'd':
				n.enumNums = append(n.enumNums, e.d)
				if x, ok := e.d.small(); ok {
					n.enumSmall = append(n.enumSmall, x)
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
// It keeps no path: on a failure it records where the failing value
// starts, and validateFast finds its JSON Pointer in a second walk
// (locate), so a valid call pays nothing for locations.
type fastValidator struct {
	in   []byte
	pos  int
	fail *Failure // Keyword only until validateFast sets Pointer
	// failAt is the offset in in of the value that failed; failMember,
	// when hasMember, the member of that object the failure names.
	failPos    int
	failMember string
	hasMember  bool
	bail       bool // a number past decimal's digits: ask the library
}

var emptyObject = []byte("{}")

// validateFast validates raw (a JSON value; nil is the empty object)
// against n; ok false when it cannot decide (a number with more digits
// than decimal holds, which mcpparse never passes): then the library
// must.
func validateFast(n *fastNode, raw []byte) (f *Failure, ok bool) {
	if raw == nil {
		raw = emptyObject
	}
	v := fastValidator{in: raw}
	v.ws()
	v.value(n)
	if v.bail {
		return nil, false
	}
	if v.fail != nil {
		v.fail.Pointer = locate(raw, v.failPos)
		if v.hasMember {
			v.fail.Pointer += "/" + escapeToken(v.failMember)
		}
	}
	return v.fail, true
}

// isSpace marks JSON white space; literalEnd the bytes that end a
// literal (true, 12.5, …); numByte the bytes of a number literal.
var isSpace, literalEnd, numByte [256]bool

func init() {
	for _, c := range []byte(" \t\n\r") {
		isSpace[c], literalEnd[c] = true, true
	}
	for _, c := range []byte(",}]") {
		literalEnd[c] = true
	}
	for _, c := range []byte("0123456789+-.eE") {
		numByte[c] = true
	}
}

func (v *fastValidator) ws() {
	for v.pos < len(v.in) && isSpace[v.in[v.pos]] {
		v.pos++
	}
}

// colonSpaced steps over the white space, the ':' and the white space
// after a member name (the loops handle compact JSON themselves).
//
//go:noinline
func (v *fastValidator) colonSpaced() {
	v.ws()
	v.pos++
	v.ws()
}

// moreSpaced steps over what follows a member or element: white space,
// then a ',' and the white space after it (true), or nothing more (false:
// at the closing '}' or ']'). The loops handle compact JSON themselves.
//
//go:noinline
func (v *fastValidator) moreSpaced() bool {
	v.ws()
	if v.pos < len(v.in) && v.in[v.pos] == ',' {
		v.pos++
		v.ws()
		return true
	}
	return false
}

// failAt records a failure of keyword at the value starting at offset at.
func (v *fastValidator) failAt(at int, keyword string) bool {
	v.fail, v.failPos = &Failure{Keyword: keyword}, at
	return false
}

// failMemberAt records a failure of keyword at member (decoded) of the
// object starting at offset at.
func (v *fastValidator) failMemberAt(at int, keyword, member string) bool {
	v.failAt(at, keyword)
	v.failMember, v.hasMember = strings.Clone(member), true
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

// Bytes repeated in each of a word's 8 lanes.
const (
	lanes01    = 0x0101010101010101
	lanes80    = 0x8080808080808080
	lanesQuote = '"' * lanes01
	lanesSlash = '\\' * lanes01
)

// zeroLanes has the high bit set in the lowest lane of x that is zero
// (and possibly in lanes above it; never below).
func zeroLanes(x uint64) uint64 { return (x - lanes01) &^ x & lanes80 }

// str scans the string at v.pos and returns its raw content (between the
// quotes) and whether it holds an escape. It looks at 8 bytes at a time
// for a quote or a backslash.
func (v *fastValidator) str() (raw []byte, esc bool) {
	in := v.in
	start := v.pos + 1
	i := start
	for {
		found := false
		for i+8 <= len(in) {
			x := binary.LittleEndian.Uint64(in[i:])
			if m := zeroLanes(x^lanesQuote) | zeroLanes(x^lanesSlash); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				found = true
				break
			}
			i += 8
		}
		if !found {
			for i < len(in) && !strSpecial[in[i]] {
				i++
			}
			if i >= len(in) {
				v.pos = len(in)
				return in[start:], esc
			}
		}
		if in[i] == '"' {
			v.pos = i + 1
			return in[start:i], esc
		}
		esc = true
		i += 2 // the backslash and the byte it escapes
	}
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

// skip steps over the value at v.pos and any white space before it
// (jsonscan.Skip: the arguments are JSON mcpparse validated); to the end of
// the input when it cannot.
func (v *fastValidator) skip() {
	if v.pos = jsonscan.Skip(v.in, jsonscan.SkipSpace(v.in, v.pos)); v.pos < 0 {
		v.pos = len(v.in)
	}
}

// value validates the value at v.pos against n and steps over it; false
// (v.fail set) on the first failure.
func (v *fastValidator) value(n *fastNode) bool {
	if n == nil {
		v.skip()
		return true
	}
	at := v.pos
	if n.never {
		if n.neverKw == "" {
			return v.failAt(at, "schema")
		}
		return v.failAt(at, n.neverKw)
	}
	if at >= len(v.in) {
		return v.failAt(at, "type")
	}
	switch c := v.in[at]; c {
	case '{':
		return v.object(n, at)
	case '[':
		return v.array(n, at)
	case '"':
		var raw []byte
		esc := false
		if p := at + 1; p+8 <= len(v.in) {
			// A string that ends within the next 8 bytes, without an
			// escape: the common short one, found without a call.
			x := binary.LittleEndian.Uint64(v.in[p:])
			q, b := zeroLanes(x^lanesQuote), zeroLanes(x^lanesSlash)
			if q != 0 && (b == 0 || bits.TrailingZeros64(q) < bits.TrailingZeros64(b)) {
				e := p + bits.TrailingZeros64(q)>>3
				raw, v.pos = v.in[p:e], e+1
			} else {
				raw, esc = v.str()
			}
		} else {
			raw, esc = v.str()
		}
		if n.types != 0 && n.types&tString == 0 {
			return v.failAt(at, "type")
		}
		if !n.hasStr && n.enumKeyword == "" {
			return true
		}
		s := unsafeString(raw)
		if esc {
			s = unquote(raw)
		}
		// maxLength alone, settled by the byte length, needs no call.
		if n.hasStr && !(n.maxLenOnly && len(s) <= n.maxLen) && !v.stringValue(n, s, at) {
			return false
		}
		if n.enumKeyword != "" {
			w := nameWord(v.in, at+1, len(s))
			if esc {
				w = nameWord(unsafe.Slice(unsafe.StringData(s), len(s)), 0, len(s))
			}
			if !n.inEnumStr(s, w) {
				return v.failAt(at, n.enumKeyword)
			}
		}
		return true
	case 't', 'f':
		b := c == 't'
		if b {
			v.pos += 4
		} else {
			v.pos += 5
		}
		if n.types != 0 && n.types&tBool == 0 {
			return v.failAt(at, "type")
		}
		if n.enumKeyword != "" && !(b && n.enumTrue || !b && n.enumFalse) {
			return v.failAt(at, n.enumKeyword)
		}
		return true
	case 'n':
		v.pos += 4
		if n.types != 0 && n.types&tNull == 0 {
			return v.failAt(at, "type")
		}
		if n.enumKeyword != "" && !n.enumNull {
			return v.failAt(at, n.enumKeyword)
		}
		return true
	default:
		if n.numSmall && (n.hasNum || n.enumKeyword != "" || n.types&tNumber == 0 && n.types != 0) {
			// Read and checked in one pass in the fast form.
			if x, end, ok := parseSmallAt(v.in, at); ok && (end == len(v.in) || literalEnd[v.in[end]]) {
				v.pos = end
				needInt := n.types != 0 && n.types&tNumber == 0
				if needInt && n.types&tInteger == 0 {
					return v.failAt(at, "type")
				}
				return v.smallNumber(n, &x, v.in[at:end], at, needInt)
			}
		}
		end := at
		for end < len(v.in) && numByte[v.in[end]] {
			end++
		}
		v.pos = end
		if end == at {
			return v.failAt(at, "type")
		}
		return v.number(n, v.in[at:end], at)
	}
}

// stringValue checks s, the string at offset at, against n's string
// keywords (enum and const apart).
func (v *fastValidator) stringValue(n *fastNode, s string, at int) bool {
	// A code point is 1 to 4 bytes: count them only when the byte length
	// does not settle minLength and maxLength.
	if n.minLen > 0 && len(s) < 4*n.minLen || n.maxLen >= 0 && len(s) > n.maxLen {
		l := utf8.RuneCountInString(s)
		if n.minLen >= 0 && l < n.minLen {
			return v.failAt(at, "minLength")
		}
		if n.maxLen >= 0 && l > n.maxLen {
			return v.failAt(at, "maxLength")
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return v.failAt(at, "pattern")
	}
	if n.format != nil && n.format.Validate(strings.Clone(s)) != nil {
		return v.failAt(at, "format")
	}
	return true
}

// inEnumStr reports whether s, whose first 8 bytes are w (nameWord), is
// one of enum's strings.
func (n *fastNode) inEnumStr(s string, w uint64) bool {
	for i, e := range n.enumStrs {
		if n.enumWords[i] == w && len(e) == len(s) && (len(s) <= 8 || e[8:] == s[8:]) {
			return true
		}
	}
	return false
}

func (n *fastNode) inEnumNum(d *decimal) bool {
	for i := range n.enumNums {
		if n.enumNums[i].cmp(d) == 0 {
			return true
		}
	}
	return false
}

func (v *fastValidator) number(n *fastNode, lit []byte, at int) bool {
	needInt := n.types != 0 && n.types&tNumber == 0
	if needInt && n.types&tInteger == 0 {
		return v.failAt(at, "type")
	}
	if !needInt && !n.hasNum && n.enumKeyword == "" {
		return true // any number will do
	}
	if needInt && !n.hasNum && n.enumKeyword == "" && plainInteger(lit) {
		return true
	}
	if n.numSmall {
		if x, ok := parseSmall(lit); ok {
			return v.smallNumber(n, &x, lit, at, needInt)
		}
	}
	var d decimal
	if !d.parse(lit) {
		v.bail = true
		return false
	}
	if needInt && !d.isInteger() {
		return v.failAt(at, "type")
	}
	if n.hasNum {
		switch {
		case n.minimum != nil && d.cmp(n.minimum) < 0:
			return v.failAt(at, "minimum")
		case n.maximum != nil && d.cmp(n.maximum) > 0:
			return v.failAt(at, "maximum")
		case n.exclMin != nil && d.cmp(n.exclMin) <= 0:
			return v.failAt(at, "exclusiveMinimum")
		case n.exclMax != nil && d.cmp(n.exclMax) >= 0:
			return v.failAt(at, "exclusiveMaximum")
		}
		if n.multipleOf != nil {
			multiple, ok := d.multipleOf(n.multipleDec)
			if !ok {
				r, rok := new(big.Rat).SetString(string(lit))
				multiple = rok && r.Quo(r, n.multipleOf).IsInt()
			}
			if !multiple {
				return v.failAt(at, "multipleOf")
			}
		}
	}
	if n.enumKeyword != "" && !n.inEnumNum(&d) {
		return v.failAt(at, n.enumKeyword)
	}
	return true
}

// smallNumber is number for x, lit in the fast form (n.numSmall).
func (v *fastValidator) smallNumber(n *fastNode, x *small, lit []byte, at int, needInt bool) bool {
	if needInt && !x.isInteger() {
		return v.failAt(at, "type")
	}
	if n.hasNum {
		switch {
		case n.minimum != nil && x.cmp(&n.sMin) < 0:
			return v.failAt(at, "minimum")
		case n.maximum != nil && x.cmp(&n.sMax) > 0:
			return v.failAt(at, "maximum")
		case n.exclMin != nil && x.cmp(&n.sExclMin) <= 0:
			return v.failAt(at, "exclusiveMinimum")
		case n.exclMax != nil && x.cmp(&n.sExclMax) >= 0:
			return v.failAt(at, "exclusiveMaximum")
		}
		if n.multipleOf != nil {
			multiple, ok := x.multipleOf(&n.sMult)
			if !ok {
				r, rok := new(big.Rat).SetString(string(lit))
				multiple = rok && r.Quo(r, n.multipleOf).IsInt()
			}
			if !multiple {
				return v.failAt(at, "multipleOf")
			}
		}
	}
	if n.enumKeyword != "" && !n.inEnumSmall(x) {
		return v.failAt(at, n.enumKeyword)
	}
	return true
}

func (n *fastNode) inEnumSmall(x *small) bool {
	for i := range n.enumSmall {
		if e := &n.enumSmall[i]; e.mant == x.mant && e.exp == x.exp && e.neg == x.neg {
			return true
		}
	}
	return false
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

func (v *fastValidator) object(n *fastNode, at int) bool {
	if n.types != 0 && n.types&tObject == 0 {
		return v.failAt(at, "type")
	}
	if n.enumKeyword != "" {
		return v.failAt(at, n.enumKeyword)
	}
	if !n.hasObj {
		v.skip()
		return true
	}
	in := v.in
	v.pos++ // '{'
	var seen uint64
	var seenMore map[string]bool // past 64 required names
	members := 0
	next := 0 // the key after the last one found: tried first
	v.ws()
	for v.pos < len(in) && in[v.pos] != '}' {
		members++
		var sub *fastNode
		var bit uint64
		var raw []byte
		known, esc := false, false
		// The member name as a plain key: its bytes, then the closing
		// quote, with no scan for the string's end.
		if p := v.pos + 1; n.keys != nil && p+8 <= len(in) {
			w := binary.LittleEndian.Uint64(in[p:])
			for j := range n.keys {
				i := next + j
				if i >= len(n.keys) {
					i -= len(n.keys)
				}
				k := &n.keys[i]
				if w&k.mask != k.w || !k.plain || p+k.n >= len(in) || in[p+k.n] != '"' {
					continue
				}
				if k.n > 8 && k.name[8:] != unsafeString(in[p+8:p+k.n]) {
					continue
				}
				sub, bit, known = k.node, k.req, true
				raw = in[p : p+k.n]
				v.pos = p + k.n + 1
				next = i + 1
				break
			}
		}
		if !known {
			nameAt := v.pos + 1
			raw, esc = v.str()
			if n.keys != nil && !esc {
				w, l := nameWord(in, nameAt, len(raw)), len(raw)
				for i := range n.keys {
					if k := &n.keys[i]; k.w == w && k.n == l && (l <= 8 || k.name[8:] == unsafeString(raw[8:])) {
						sub, bit, known = k.node, k.req, true
						break
					}
				}
			} else {
				name := unsafeString(raw)
				if esc {
					name = unquote(raw)
				}
				sub, known = n.props[name]
			}
		}
		if p := v.pos; p+1 < len(in) && in[p] == ':' && !isSpace[in[p+1]] {
			v.pos = p + 1
		} else {
			v.colonSpaced()
		}
		seen |= bit
		if (n.keys == nil || n.reqOutside || !known || esc) && len(n.required) > 0 {
			name := unsafeString(raw)
			if esc {
				name = unquote(raw)
			}
			for i, r := range n.required {
				if r == name {
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
			return v.failMemberAt(at, n.closedBy, unquote(raw))
		}
		if !known && n.addl == nil {
			v.skip()
		} else if !v.value(sub) {
			return false
		}
		if p := v.pos; p+1 < len(in) && in[p] == ',' && !isSpace[in[p+1]] {
			v.pos = p + 1
		} else if !v.moreSpaced() {
			break
		}
	}
	v.pos++ // '}'
	for i, r := range n.required {
		if i < 64 && seen&(1<<i) == 0 || i >= 64 && !seenMore[r] {
			return v.failMemberAt(at, "required", r)
		}
	}
	if n.minProps >= 0 && members < n.minProps {
		return v.failAt(at, "minProperties")
	}
	if n.maxProps >= 0 && members > n.maxProps {
		return v.failAt(at, "maxProperties")
	}
	return true
}

func (v *fastValidator) array(n *fastNode, at int) bool {
	if n.types != 0 && n.types&tArray == 0 {
		return v.failAt(at, "type")
	}
	if n.enumKeyword != "" {
		return v.failAt(at, n.enumKeyword)
	}
	if !n.hasArr {
		v.skip()
		return true
	}
	in := v.in
	v.pos++ // '['
	i := 0
	v.ws()
	for v.pos < len(in) && in[v.pos] != ']' {
		if !v.value(n.items) {
			return false
		}
		i++
		if p := v.pos; p+1 < len(in) && in[p] == ',' && !isSpace[in[p+1]] {
			v.pos = p + 1
		} else if !v.moreSpaced() {
			break
		}
	}
	v.pos++ // ']'
	if n.minItems >= 0 && i < n.minItems {
		return v.failAt(at, "minItems")
	}
	if n.maxItems >= 0 && i > n.maxItems {
		return v.failAt(at, "maxItems")
	}
	return true
}

// locate returns the JSON Pointer of the value that starts at offset
// target of in (strict JSON), found by walking in again: the failure
// path's cost, so that validation keeps no path.
func locate(in []byte, target int) string {
	l := locator{fastValidator: fastValidator{in: in}, target: target}
	l.ws()
	l.value()
	var b strings.Builder
	for _, t := range l.toks {
		b.WriteByte('/')
		b.WriteString(t)
	}
	return b.String()
}

type locator struct {
	fastValidator
	target int
	toks   []string // escaped reference tokens down to pos
	found  bool
}

func (l *locator) value() {
	if l.pos == l.target {
		l.found = true
		return
	}
	if l.pos >= len(l.in) {
		return
	}
	switch l.in[l.pos] {
	case '{':
		l.pos++
		for {
			l.ws()
			if l.pos >= len(l.in) || l.in[l.pos] == '}' {
				l.pos++
				return
			}
			raw, _ := l.str()
			l.ws()
			l.pos++ // ':'
			l.ws()
			l.toks = append(l.toks, escapeToken(unquote(raw)))
			if l.value(); l.found {
				return
			}
			l.toks = l.toks[:len(l.toks)-1]
			l.ws()
			if l.pos < len(l.in) && l.in[l.pos] == ',' {
				l.pos++
			}
		}
	case '[':
		l.pos++
		for i := 0; ; i++ {
			l.ws()
			if l.pos >= len(l.in) || l.in[l.pos] == ']' {
				l.pos++
				return
			}
			l.toks = append(l.toks, itoa(i))
			if l.value(); l.found {
				return
			}
			l.toks = l.toks[:len(l.toks)-1]
			l.ws()
			if l.pos < len(l.in) && l.in[l.pos] == ',' {
				l.pos++
			}
		}
	default:
		l.skip()
	}
}
