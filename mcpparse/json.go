package mcpparse

import (
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// vkind is the type of a parsed JSON value.
type vkind uint8

const (
	vNull vkind = iota + 1
	vFalse
	vTrue
	vNumber
	vString
	vArray
	vObject
)

// value is one parsed JSON value. The tree refers back to the input by
// offsets; strings are decoded.
type value struct {
	kind vkind
	// canonText: for vNumber, true when the literal is already its own
	// RFC 8785 serialization (s is then empty and the text is in[off:end]).
	canonText bool
	off, end  int // input[off:end] is the value's source text
	// s is the decoded string (vString) or the RFC 8785 number text
	// (vNumber, when canonText is false and the number was checked).
	s     string
	elems []value  // vArray
	mems  []member // vObject, in input order
}

// member is one object member.
type member struct {
	key    string // decoded name
	keyOff int    // offset of the name's opening quote
	val    value
}

// numText returns the RFC 8785 text of a checked number.
func (v *value) numText(in []byte) string {
	if v.canonText {
		return string(in[v.off:v.end])
	}
	return v.s
}

// keyEntry is one member name on the parser's key stack, with its two
// case-fold keys (simple folding as encoding/json uses, and full folding).
type keyEntry struct {
	key, f1, f2 string
}

// parser is one strict pass over an input.
type parser struct {
	in    []byte
	pos   int
	lim   Limits
	depth int
	keys  int
	vals  int
	// index of the top-level array element being parsed; -1 outside.
	index int
	// envelope: the input is a JSON-RPC body, so the "id" member of an
	// envelope object is exempt from the canonical-number rule, and the top
	// level array is a batch bounded by MaxBatch.
	envelope bool
	// lenient switches off the checks that go beyond RFC 8785 (case-variant
	// names, non-canonical numbers); tests only, for the RFC vectors.
	lenient bool
	stack   []keyEntry
	buf     []byte // scratch for decoding strings with escapes
	// Children of the open containers, innermost last; a container copies
	// its own out once, at its end, so each costs one exact allocation.
	elemStack []value
	memStack  []member
}

func (p *parser) fail(k ErrorKind, off int, msg string) *ParseError {
	return &ParseError{Kind: k, Offset: int64(off), Index: p.index, Msg: msg}
}

// parseDocument checks size and UTF-8, parses one value and rejects
// trailing data. in must already be within lim.MaxBytes.
func parseDocument(in []byte, lim Limits, envelope, lenient bool) (value, *ParseError) {
	p := parser{in: in, lim: lim, index: -1, envelope: envelope, lenient: lenient}
	if len(in) > lim.MaxBytes {
		return value{}, p.fail(ErrTooLarge, lim.MaxBytes, "body longer than "+strconv.Itoa(lim.MaxBytes)+" bytes")
	}
	if !utf8.Valid(in) {
		return value{}, p.fail(ErrInvalidUTF8, invalidUTF8At(in), "invalid UTF-8")
	}
	p.skipWS()
	if p.pos == len(in) {
		return value{}, p.fail(ErrSyntax, p.pos, "empty input")
	}
	v, err := p.parseValue(envelope, false)
	if err != nil {
		return value{}, err
	}
	p.skipWS()
	if p.pos != len(in) {
		p.index = -1
		return value{}, p.fail(ErrTrailingData, p.pos, "data after the JSON value")
	}
	return v, nil
}

// invalidUTF8At returns the offset of the first invalid UTF-8 sequence.
func invalidUTF8At(in []byte) int {
	for i := 0; i < len(in); {
		if in[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(in)
}

func (p *parser) skipWS() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// parseValue parses the value at p.pos (whitespace already skipped).
// envObj: an object here is a JSON-RPC envelope. exemptNum: a number here is
// an envelope id, checked for grammar only.
func (p *parser) parseValue(envObj, exemptNum bool) (value, *ParseError) {
	p.vals++
	if p.vals > p.lim.MaxElements {
		return value{}, p.fail(ErrTooManyElements, p.pos, "more than "+strconv.Itoa(p.lim.MaxElements)+" values")
	}
	if p.pos >= len(p.in) {
		return value{}, p.fail(ErrSyntax, p.pos, "unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.parseObject(envObj)
	case c == '[':
		return p.parseArray(envObj && p.depth == 0)
	case c == '"':
		off := p.pos
		s, err := p.parseString()
		if err != nil {
			return value{}, err
		}
		return value{kind: vString, off: off, end: p.pos, s: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.parseNumber(exemptNum)
	case c == 't':
		return p.parseLiteral("true", vTrue)
	case c == 'f':
		return p.parseLiteral("false", vFalse)
	case c == 'n':
		return p.parseLiteral("null", vNull)
	default:
		return value{}, p.fail(ErrSyntax, p.pos, "unexpected character")
	}
}

func (p *parser) parseLiteral(lit string, k vkind) (value, *ParseError) {
	off := p.pos
	if len(p.in)-p.pos < len(lit) || string(p.in[p.pos:p.pos+len(lit)]) != lit {
		return value{}, p.fail(ErrSyntax, p.pos, "invalid literal")
	}
	p.pos += len(lit)
	return value{kind: k, off: off, end: p.pos}, nil
}

func (p *parser) enter() *ParseError {
	p.depth++
	if p.depth > p.lim.MaxDepth {
		return p.fail(ErrTooDeep, p.pos, "nested deeper than "+strconv.Itoa(p.lim.MaxDepth))
	}
	return nil
}

// parseArray parses an array. batch: this is the top level of a JSON-RPC
// body, so elements are envelopes and carry a batch index.
func (p *parser) parseArray(batch bool) (value, *ParseError) {
	off := p.pos
	if err := p.enter(); err != nil {
		return value{}, err
	}
	p.pos++ // '['
	v := value{kind: vArray, off: off}
	base := len(p.elemStack)
	defer func() { clear(p.elemStack[base:]); p.elemStack = p.elemStack[:base] }()
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.depth--
		v.end = p.pos
		return v, nil
	}
	for {
		p.skipWS()
		if batch {
			p.index = len(p.elemStack) - base
			if len(p.elemStack)-base >= p.lim.MaxBatch {
				return value{}, p.fail(ErrTooManyElements, p.pos, "more than "+strconv.Itoa(p.lim.MaxBatch)+" messages in the batch")
			}
		}
		e, err := p.parseValue(batch, false)
		if err != nil {
			return value{}, err
		}
		p.elemStack = appendDoubling(p.elemStack, e)
		p.skipWS()
		if p.pos >= len(p.in) {
			return value{}, p.fail(ErrSyntax, p.pos, "unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			v.end = p.pos
			v.elems = slices.Clone(p.elemStack[base:])
			if batch {
				p.index = -1
			}
			return v, nil
		default:
			return value{}, p.fail(ErrSyntax, p.pos, "expected ',' or ']'")
		}
	}
}

// parseObject parses an object, rejecting duplicate and case-variant
// member names. env: the object is a JSON-RPC envelope.
func (p *parser) parseObject(env bool) (value, *ParseError) {
	off := p.pos
	if err := p.enter(); err != nil {
		return value{}, err
	}
	p.pos++ // '{'
	v := value{kind: vObject, off: off}
	base := len(p.stack)
	mbase := len(p.memStack)
	defer func() {
		p.stack = p.stack[:base]
		clear(p.memStack[mbase:])
		p.memStack = p.memStack[:mbase]
	}()
	var sets *foldSets // built once an object grows past linearKeys members
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.depth--
		v.end = p.pos
		return v, nil
	}
	for {
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return value{}, p.fail(ErrSyntax, p.pos, "expected a member name")
		}
		p.keys++
		if p.keys > p.lim.MaxKeys {
			return value{}, p.fail(ErrTooManyKeys, p.pos, "more than "+strconv.Itoa(p.lim.MaxKeys)+" object members")
		}
		keyOff := p.pos
		key, err := p.parseString()
		if err != nil {
			return value{}, err
		}
		e := keyEntry{key: key}
		e.f1, e.f2 = foldKeys(key)
		if err := p.checkKey(base, &sets, e, keyOff); err != nil {
			return value{}, err
		}
		p.stack = append(p.stack, e)
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return value{}, p.fail(ErrSyntax, p.pos, "expected ':'")
		}
		p.pos++
		p.skipWS()
		val, err := p.parseValue(false, env && key == "id")
		if err != nil {
			return value{}, err
		}
		p.memStack = appendDoubling(p.memStack, member{key: key, keyOff: keyOff, val: val})
		p.skipWS()
		if p.pos >= len(p.in) {
			return value{}, p.fail(ErrSyntax, p.pos, "unexpected end of input in object")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			v.end = p.pos
			v.mems = slices.Clone(p.memStack[mbase:])
			return v, nil
		default:
			return value{}, p.fail(ErrSyntax, p.pos, "expected ',' or '}'")
		}
	}
}

// appendDoubling appends like append, but doubles the capacity of a large
// slice where the runtime would grow it by a quarter: the number of
// children is the sender's choice, and quarter steps allocate about five
// times the final size in all, doubling about twice.
func appendDoubling[T any](s []T, x T) []T {
	if len(s) == cap(s) && cap(s) >= 256 {
		n := make([]T, len(s), 2*cap(s))
		copy(n, s)
		s = n
	}
	return append(s, x)
}

// linearKeys is the member count up to which names are compared pairwise;
// larger objects use hash sets.
const linearKeys = 16

type foldSets struct {
	exact, f1, f2 map[string]struct{}
}

// checkKey rejects e when it duplicates or case-folds onto a name already
// in the current object (p.stack[base:]).
func (p *parser) checkKey(base int, sets **foldSets, e keyEntry, off int) *ParseError {
	prev := p.stack[base:]
	if len(prev) < linearKeys {
		for _, o := range prev {
			if o.key == e.key {
				return p.fail(ErrDuplicateKey, off, "duplicate member "+quoteKey(e.key))
			}
		}
		if !p.lenient {
			for _, o := range prev {
				if o.f1 == e.f1 || o.f2 == e.f2 {
					return p.fail(ErrCaseVariantKey, off, "member "+quoteKey(e.key)+" is a case variant of "+quoteKey(o.key))
				}
			}
		}
		return nil
	}
	s := *sets
	if s == nil {
		s = &foldSets{
			exact: make(map[string]struct{}, 2*len(prev)),
			f1:    make(map[string]struct{}, 2*len(prev)),
			f2:    make(map[string]struct{}, 2*len(prev)),
		}
		for _, o := range prev {
			s.exact[o.key] = struct{}{}
			s.f1[o.f1] = struct{}{}
			s.f2[o.f2] = struct{}{}
		}
		*sets = s
	}
	if _, ok := s.exact[e.key]; ok {
		return p.fail(ErrDuplicateKey, off, "duplicate member "+quoteKey(e.key))
	}
	if !p.lenient {
		_, ok1 := s.f1[e.f1]
		_, ok2 := s.f2[e.f2]
		if ok1 || ok2 {
			return p.fail(ErrCaseVariantKey, off, "member "+quoteKey(e.key)+" is a case variant of another member")
		}
	}
	s.exact[e.key] = struct{}{}
	s.f1[e.f1] = struct{}{}
	s.f2[e.f2] = struct{}{}
	return nil
}

// parseString parses the string at p.pos (the opening quote) and returns it
// decoded. Control characters must be escaped; a \u escape must not leave a
// lone surrogate; the decoded length is bounded by MaxStringLen.
func (p *parser) parseString() (string, *ParseError) {
	start := p.pos
	p.pos++
	max := p.lim.MaxStringLen
	// Fast path: no escapes.
	for i := p.pos; i < len(p.in); i++ {
		c := p.in[i]
		if i-p.pos > max {
			return "", p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		switch {
		case c == '"':
			s := string(p.in[p.pos:i])
			p.pos = i + 1
			return s, nil
		case c == '\\':
			return p.parseEscapedString(start, i)
		case c < 0x20:
			return "", p.fail(ErrSyntax, i, "unescaped control character in string")
		}
	}
	return "", p.fail(ErrSyntax, len(p.in), "unterminated string")
}

// parseEscapedString continues parseString from the first backslash at i.
func (p *parser) parseEscapedString(start, i int) (string, *ParseError) {
	max := p.lim.MaxStringLen
	buf := append(p.buf[:0], p.in[p.pos:i]...)
	defer func() {
		if cap(buf) <= 64<<10 { // keep a modest scratch buffer for reuse
			p.buf = buf[:0]
		}
	}()
	for i < len(p.in) {
		if len(buf) > max {
			return "", p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		c := p.in[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			return "", p.fail(ErrSyntax, i, "unescaped control character in string")
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		// Escape sequence.
		if i+1 >= len(p.in) {
			return "", p.fail(ErrSyntax, i, "unterminated escape")
		}
		esc := p.in[i+1]
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(p.in, i+2)
			if !ok {
				return "", p.fail(ErrSyntax, i, "invalid \\u escape")
			}
			n := 6
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00: // high surrogate
				r2, ok2 := rune(0), false
				if i+12 <= len(p.in) && p.in[i+6] == '\\' && p.in[i+7] == 'u' {
					r2, ok2 = hex4(p.in, i+8)
				}
				if !ok2 || r2 < 0xDC00 || r2 > 0xDFFF {
					return "", p.fail(ErrInvalidUTF8, i, "lone high surrogate in \\u escape")
				}
				r = utf16.DecodeRune(r, r2)
				n = 12
			case utf16.IsSurrogate(r):
				return "", p.fail(ErrInvalidUTF8, i, "lone low surrogate in \\u escape")
			}
			buf = utf8.AppendRune(buf, r)
			i += n
			continue
		default:
			return "", p.fail(ErrSyntax, i, "invalid escape")
		}
		i += 2
	}
	return "", p.fail(ErrSyntax, len(p.in), "unterminated string")
}

// hex4 decodes the four hex digits at in[i:i+4].
func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// parseNumber parses a number by the RFC 8259 grammar
//
//	-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
//
// and, unless exempt, rejects it when its exact decimal value differs from
// the value of its RFC 8785 serialization.
func (p *parser) parseNumber(exempt bool) (value, *ParseError) {
	in := p.in
	off := p.pos
	i := off
	if in[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		return i - s
	}
	if i >= len(in) || in[i] < '0' || in[i] > '9' {
		return value{}, p.fail(ErrSyntax, i, "invalid number")
	}
	integer := true
	if in[i] == '0' {
		i++
	} else {
		digits()
	}
	intEnd := i
	if i < len(in) && in[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return value{}, p.fail(ErrSyntax, i, "invalid number: no digits after '.'")
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		integer = false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if digits() == 0 {
			return value{}, p.fail(ErrSyntax, i, "invalid number: no exponent digits")
		}
	}
	p.pos = i
	v := value{kind: vNumber, off: off, end: i}
	lit := in[off:i]
	if exempt {
		v.canonText = true // not checked; only used as an id, byte for byte
		return v, nil
	}
	// Fast path: integers of up to 15 digits are exact doubles and ES6
	// prints them unchanged; only "-0" becomes "0".
	if integer && intEnd-off <= 15 {
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			v.s = "0"
		} else {
			v.canonText = true
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil { // out of range: ±Inf has no JSON form
		return value{}, p.fail(ErrNonCanonicalNumber, off, "number out of the IEEE 754 double range")
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return value{}, p.fail(ErrNonCanonicalNumber, off, "number has no RFC 8785 form")
	}
	if !p.lenient && !decimalEqual(lit, []byte(text)) {
		return value{}, p.fail(ErrNonCanonicalNumber, off, "number is not exactly representable as an IEEE 754 double")
	}
	if text == string(lit) {
		v.canonText = true
	} else {
		v.s = text
	}
	return v, nil
}

// decimalEqual reports whether two RFC 8259 number literals denote the
// same exact decimal value (-0 equals 0).
func decimalEqual(a, b []byte) bool {
	an, ad, ae := normDecimal(a)
	bn, bd, be := normDecimal(b)
	return an == bn && ae == be && string(ad) == string(bd)
}

// normDecimal returns a literal as sign, significant digits (no leading or
// trailing zeros) and exponent, so that value = ±digits × 10^exp. Zero is
// (false, nil, 0). Exponents saturate at ±1e15, far beyond any double, so
// the comparison stays exact for every literal that fits in memory.
func normDecimal(s []byte) (neg bool, digits []byte, exp int) {
	if len(s) > 0 && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	mant := s
	for i, c := range s {
		if c == 'e' || c == 'E' {
			mant = s[:i]
			exp = parseExp(s[i+1:])
			break
		}
	}
	digits = make([]byte, 0, len(mant))
	seenDot := false
	for _, c := range mant {
		if c == '.' {
			seenDot = true
			continue
		}
		if seenDot {
			exp--
		}
		if c == '0' && len(digits) == 0 {
			continue // leading zero
		}
		digits = append(digits, c)
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if len(digits) == 0 {
		return false, nil, 0
	}
	return neg, digits, exp
}

// parseExp parses an exponent ([+-]?digits), saturating at ±1e15.
func parseExp(s []byte) int {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	const sat = 1_000_000_000_000_000
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
		if n > sat {
			n = sat
		}
	}
	if neg {
		return -n
	}
	return n
}
