package mcpparse

// The tree-building parser that Parse used before issue 9, kept as the
// oracle the one-pass scanner is fuzzed against (FuzzParseDifferential):
// it parses the whole body into a tree of values, then checks the
// envelope and canonicalizes the arguments by walking the tree again.

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// refBody is Body as the reference parser returns it.
type refBody struct {
	Batch    bool
	Messages []refMessage
}

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

// keyEntry is one member name on the parser's key stack.
type keyEntry struct {
	key string
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
	// exactKeys: ParseOptions.CaseSensitiveKeys.
	exactKeys bool
	stack     []keyEntry
	buf       []byte // scratch for decoding strings with escapes
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
	return parseDocumentKeys(in, lim, envelope, lenient, false)
}

// parseDocumentKeys is parseDocument; exactKeys admits case variants.
func parseDocumentKeys(in []byte, lim Limits, envelope, lenient, exactKeys bool) (value, *ParseError) {
	p := parser{in: in, lim: lim, index: -1, envelope: envelope, lenient: lenient, exactKeys: exactKeys}
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
		if err := p.checkKey(base, e, keyOff); err != nil {
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

// checkKey rejects e when it duplicates or (refEqualFold) case-folds onto
// a name already in the current object (p.stack[base:]), comparing it with
// each of them.
func (p *parser) checkKey(base int, e keyEntry, off int) *ParseError {
	prev := p.stack[base:]
	for _, o := range prev {
		if o.key == e.key {
			return p.fail(ErrDuplicateKey, off, "duplicate member "+quoteKey(e.key))
		}
	}
	if !p.lenient && !p.exactKeys {
		for _, o := range prev {
			if refEqualFold(o.key, e.key) {
				return p.fail(ErrCaseVariantKey, off, "member "+quoteKey(e.key)+" is a case variant of "+quoteKey(o.key))
			}
		}
	}
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

// Canonicalize returns the RFC 8785 (JCS) form of one JSON value, after the
// same strict checks as Parse: size and nesting limits, invalid UTF-8, lone
// surrogates, duplicate and case-variant member names, trailing data, and
// numbers whose exact value differs from their RFC 8785 serialization. No
// member of value is exempt from the number rule (Parse exempts only the
// envelope's "id"). Errors are *ParseError, with Index -1.
//
// Because of the case-variant and number rules, some inputs that RFC 8785
// itself would canonicalize are rejected (an object with both "a" and "A";
// 333333333.33333329, which RFC 8785 rounds to 333333333.3333333).
func refCanonicalize(value []byte, lim Limits) ([]byte, error) {
	v, err := parseDocument(value, lim.withDefaults(), false, false)
	if err != nil {
		return nil, err
	}
	return appendCanonical(make([]byte, 0, len(value)), value, &v), nil
}

// appendCanonical appends the RFC 8785 serialization of v (parsed from in)
// to dst. Object members are sorted by the UTF-16 code units of their
// names, in place.
func appendCanonical(dst, in []byte, v *value) []byte {
	switch v.kind {
	case vNull:
		return append(dst, "null"...)
	case vTrue:
		return append(dst, "true"...)
	case vFalse:
		return append(dst, "false"...)
	case vNumber:
		if v.canonText {
			return append(dst, in[v.off:v.end]...)
		}
		return append(dst, v.s...)
	case vString:
		return AppendJCSString(dst, v.s)
	case vArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, in, &v.elems[i])
		}
		return append(dst, ']')
	case vObject:
		slices.SortFunc(v.mems, func(a, b member) int { return refCompareUTF16(a.key, b.key) })
		dst = append(dst, '{')
		for i := range v.mems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJCSString(dst, v.mems[i].key)
			dst = append(dst, ':')
			dst = appendCanonical(dst, in, &v.mems[i].val)
		}
		return append(dst, '}')
	}
	panic("mcpparse: unknown value kind") // unreachable: the parser sets every kind
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// as RFC 8785 section 3.2.3 sorts member names. UTF-8 byte order equals
// code point order, which differs from UTF-16 order only between U+E000..
// U+FFFF and the supplementary planes (encoded as surrogates D800..DFFF).
func refCompareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	// Back up to the start of the rune that differs.
	for i > 0 && a[i]&0xC0 == 0x80 {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if (ra >= 0x10000) == (rb >= 0x10000) {
		return int(ra) - int(rb) // same plane kind: code point order is UTF-16 order
	}
	return int(utf16First(ra)) - int(utf16First(rb))
}

// refMessage is one JSON-RPC message, validated.
type refMessage struct {
	Kind Kind
	// ID is the id exactly as it appeared in the body: `7`, `"abc"`,
	// `12345678901234567890123`, or `null` (responses with null id only).
	// Nil when absent (notifications). Integer ids of any size are kept
	// byte for byte; they are exempt from the canonical-number rule.
	ID []byte
	// Method is the method name, byte-exact and case-sensitive; "" for
	// responses. Unknown methods are not an error here.
	Method string
	// Tool, URI, Prompt and RefType are the call's target, filled per method:
	//   tools/call                                -> Tool = params.name
	//   resources/read|subscribe|unsubscribe      -> URI = params.uri
	//   prompts/get                               -> Prompt = params.name
	//   completion/complete                       -> RefType = params.ref.type,
	//       and Prompt = ref.name ("ref/prompt") or URI = ref.uri ("ref/resource")
	// Each named member is required and must be a non-empty string
	// (else ErrInvalidParams).
	Tool, URI, Prompt, RefType string
	// URIs are the resource URIs of subscriptions/listen (MCP 2026-07-28)
	// params.notifications.resourceSubscriptions, in body order: each a
	// non-empty string, at most MaxSubscriptions of them
	// (ErrTooManyElements). params.notifications is required and must be
	// an object (else ErrInvalidParams). Nil for other methods.
	URIs []string
	// Arguments is params.arguments in RFC 8785 canonical form for
	// tools/call and prompts/get, and `{}` when absent, for every other
	// method, and for responses. Never nil.
	Arguments []byte
	// ArgsDigest is Digest(Arguments): "sha256:" + lowercase hex.
	ArgsDigest string
	// Args is Arguments decoded for policy expressions: objects
	// map[string]any, arrays []any, strings string, booleans bool, null nil,
	// numbers int64 when their canonical text is an integer that fits int64,
	// else float64 (so 1E2 and 100 both give int64(100), since they have the
	// same canonical form and digest). Never nil: `{}` gives an empty map.
	Args map[string]any
	// Params is the params object exactly as in the body; nil when absent.
	// It aliases the body passed to Parse.
	Params []byte
}

// Parse validates body strictly, as one JSON-RPC 2.0 message (or, with
// AllowBatch, a non-empty array of them), and returns its messages. The
// rules, each with its ErrorKind:
//
//   - JSON (RFC 8259, I-JSON RFC 7493): valid UTF-8 with no BOM, no lone
//     surrogates in \u escapes, no duplicate member names and no names that
//     are equal under Unicode case folding in one object (at any depth),
//     nothing after the value but whitespace, every number except the
//     envelope id exactly equal to its RFC 8785 serialization, all within
//     opt.Limits.
//   - Envelope: an object with "jsonrpc":"2.0" and only the members jsonrpc,
//     id, method, params, result, error (a name that case-folds onto one of
//     those is ErrCaseVariantKey). method is a non-empty string; id is a
//     string, an integer literal, or null.
//   - A message with method and id is a request (id not null). A message
//     with method and no id is a notification, and only methods starting
//     with "notifications/" may be one; such methods must not have an id.
//     A message without method is a response: an id (null only with
//     error), exactly one of result (any value) and error (an object with
//     integer code and string message), no params.
//   - params, when present, is an object (JSON-RPC also allows arrays; MCP
//     never uses them, so they are ErrInvalidRequest). In params and
//     params.ref, a name that case-folds onto name, uri, arguments, ref,
//     argument, cursor, task or _meta (or onto type in ref) without being
//     it is ErrCaseVariantKey.
//   - Targets per method, as documented on refMessage (ErrInvalidParams).
//
// Errors are always *ParseError. Parse does not decide whether a method is
// known or allowed; that is the policy's job.
func refParse(body []byte, opt ParseOptions) (*refBody, error) {
	lim := opt.Limits.withDefaults()
	if len(body) > lim.MaxBytes {
		return nil, &ParseError{Kind: ErrTooLarge, Offset: int64(lim.MaxBytes), Index: -1,
			Msg: "body longer than " + strconv.Itoa(lim.MaxBytes) + " bytes"}
	}
	if !opt.AllowBatch {
		if i := firstNonWS(body); i < len(body) && body[i] == '[' {
			return nil, &ParseError{Kind: ErrBatchNotSupported, Offset: int64(i), Index: -1,
				Msg: "JSON-RPC batches are not supported (removed in MCP 2025-06-18)"}
		}
	}
	root, perr := parseDocumentKeys(body, lim, true, false, opt.CaseSensitiveKeys)
	if perr != nil {
		return nil, perr
	}
	if root.kind != vArray {
		m, perr := refNewMessage(body, &root, -1)
		if perr != nil {
			return nil, perr
		}
		return &refBody{Messages: []refMessage{m}}, nil
	}
	if len(root.elems) == 0 {
		return nil, &ParseError{Kind: ErrBatchEmpty, Offset: int64(root.off), Index: -1, Msg: "empty batch"}
	}
	out := &refBody{Batch: true, Messages: make([]refMessage, len(root.elems))}
	for i := range root.elems {
		m, perr := refNewMessage(body, &root.elems[i], i)
		if perr != nil {
			return nil, perr
		}
		out.Messages[i] = m
	}
	return out, nil
}

// variantOf returns the protocol member (from names, all lowercase ASCII)
// that key case-folds onto without being equal to it, or "".
func refVariantOf(key string, names []string) string {
	for _, n := range names {
		if key != n && refEqualFold(key, n) {
			return n
		}
	}
	return ""
}

func member1(v *value, key string) *value {
	for i := range v.mems {
		if v.mems[i].key == key {
			return &v.mems[i].val
		}
	}
	return nil
}

// refNewMessage validates one envelope. index is the batch index or -1.
func refNewMessage(in []byte, v *value, index int) (refMessage, *ParseError) {
	fail := func(k ErrorKind, off int, msg string) (refMessage, *ParseError) {
		return refMessage{}, &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if v.kind != vObject {
		return fail(ErrInvalidRequest, v.off, "a JSON-RPC message must be an object")
	}
	var jsonrpc, id, method, params, result, errv *value
	for i := range v.mems {
		mb := &v.mems[i]
		switch mb.key {
		case "jsonrpc":
			jsonrpc = &mb.val
		case "id":
			id = &mb.val
		case "method":
			method = &mb.val
		case "params":
			params = &mb.val
		case "result":
			result = &mb.val
		case "error":
			errv = &mb.val
		default:
			if n := refVariantOf(mb.key, envelopeMembers); n != "" {
				return fail(ErrCaseVariantKey, mb.keyOff, "member "+quoteKey(mb.key)+" is a case variant of "+quoteKey(n))
			}
			return fail(ErrInvalidRequest, mb.keyOff, "unknown member "+quoteKey(mb.key)+" in a JSON-RPC message")
		}
	}
	if jsonrpc == nil {
		return fail(ErrInvalidRequest, v.off, `missing "jsonrpc"`)
	}
	if jsonrpc.kind != vString || jsonrpc.s != "2.0" {
		return fail(ErrInvalidRequest, jsonrpc.off, `"jsonrpc" must be "2.0"`)
	}
	var m refMessage
	if id != nil {
		switch {
		case id.kind == vString, id.kind == vNull:
		case id.kind == vNumber && isIntegerLiteral(in[id.off:id.end]):
		default:
			return fail(ErrInvalidRequest, id.off, `"id" must be a string, an integer or null`)
		}
		m.ID = in[id.off:id.end]
	}
	if params != nil {
		if params.kind != vObject {
			return fail(ErrInvalidRequest, params.off, `"params" must be an object`)
		}
		m.Params = in[params.off:params.end]
		if off, ok := refFindReserved(params); ok {
			return fail(ErrReservedKey, off, `a member named "__proto__" in params`)
		}
	}

	if method == nil { // response
		m.Kind = KindResponse
		switch {
		case id == nil:
			return fail(ErrInvalidRequest, v.off, `a response needs an "id"`)
		case params != nil:
			return fail(ErrInvalidRequest, params.off, `a response must not carry "params"`)
		case (result == nil) == (errv == nil):
			return fail(ErrInvalidRequest, v.off, `a response needs exactly one of "result" and "error"`)
		case id.kind == vNull && errv == nil:
			return fail(ErrInvalidRequest, id.off, `a null "id" is only allowed on an error response`)
		}
		if errv != nil {
			if errv.kind != vObject {
				return fail(ErrInvalidRequest, errv.off, `"error" must be an object`)
			}
			code, msg := member1(errv, "code"), member1(errv, "message")
			if code == nil || code.kind != vNumber || !isIntegerLiteral(in[code.off:code.end]) {
				return fail(ErrInvalidRequest, errv.off, `"error.code" must be an integer`)
			}
			if msg == nil || msg.kind != vString {
				return fail(ErrInvalidRequest, errv.off, `"error.message" must be a string`)
			}
		}
		refSetArgs(&m, nil, in)
		return m, nil
	}

	if method.kind != vString || method.s == "" {
		return fail(ErrInvalidRequest, method.off, `"method" must be a non-empty string`)
	}
	m.Method = method.s
	if result != nil || errv != nil {
		off := v.off
		if result != nil {
			off = result.off
		} else {
			off = errv.off
		}
		return fail(ErrInvalidRequest, off, `a request or notification must not carry "result" or "error"`)
	}
	notif := strings.HasPrefix(m.Method, "notifications/")
	switch {
	case id == nil && !notif:
		return fail(ErrInvalidRequest, v.off, `missing "id": only "notifications/" methods may be notifications`)
	case id == nil:
		m.Kind = KindNotification
	case notif:
		return fail(ErrInvalidRequest, id.off, `a "notifications/" method must not carry an "id"`)
	case id.kind == vNull:
		return fail(ErrInvalidRequest, id.off, `a request "id" must not be null`)
	default:
		m.Kind = KindRequest
	}
	if perr := refTarget(&m, in, params, index); perr != nil {
		return refMessage{}, perr
	}
	return m, nil
}

// target checks params' member names and fills the method's target and
// arguments.
func refTarget(m *refMessage, in []byte, params *value, index int) *ParseError {
	fail := func(k ErrorKind, off int, msg string) *ParseError {
		return &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if params != nil {
		if perr := refCheckVariants(params, paramsMembers, index); perr != nil {
			return perr
		}
	}
	// str returns params[key] (or obj[key]) as a required non-empty string.
	str := func(obj *value, where, key string, off int) (string, *ParseError) {
		if obj == nil {
			return "", fail(ErrInvalidParams, off, `missing "`+where+`"`)
		}
		f := member1(obj, key)
		if f == nil {
			return "", fail(ErrInvalidParams, obj.off, `missing "`+where+"."+key+`"`)
		}
		if f.kind != vString || f.s == "" {
			return "", fail(ErrInvalidParams, f.off, `"`+where+"."+key+`" must be a non-empty string`)
		}
		return f.s, nil
	}
	msgOff := 0
	if params != nil {
		msgOff = params.off
	}
	var perr *ParseError
	var args *value
	switch m.Method {
	case "tools/call":
		m.Tool, perr = str(params, "params", "name", msgOff)
		if perr == nil && utf8.RuneCountInString(m.Tool) > MaxToolNameLen {
			perr = fail(ErrInvalidParams, member1(params, "name").off, `"params.name" is longer than `+strconv.Itoa(MaxToolNameLen)+" characters")
		}
		args = argsOf(params)
	case "prompts/get":
		m.Prompt, perr = str(params, "params", "name", msgOff)
		if perr == nil && utf8.RuneCountInString(m.Prompt) > MaxPromptNameLen {
			perr = fail(ErrInvalidParams, member1(params, "name").off, `"params.name" is longer than `+strconv.Itoa(MaxPromptNameLen)+" characters")
		}
		args = argsOf(params)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		m.URI, perr = str(params, "params", "uri", msgOff)
	case "subscriptions/listen":
		if perr := refSubscriptions(m, params, msgOff, index); perr != nil {
			return perr
		}
	case "completion/complete":
		if params == nil {
			return fail(ErrInvalidParams, msgOff, `missing "params"`)
		}
		ref := member1(params, "ref")
		if ref == nil || ref.kind != vObject {
			return fail(ErrInvalidParams, params.off, `"params.ref" must be an object`)
		}
		if perr := refCheckVariants(ref, refMembers, index); perr != nil {
			return perr
		}
		m.RefType, perr = str(ref, "params.ref", "type", ref.off)
		if perr != nil {
			return perr
		}
		switch m.RefType {
		case "ref/prompt":
			m.Prompt, perr = str(ref, "params.ref", "name", ref.off)
			if perr == nil && utf8.RuneCountInString(m.Prompt) > MaxPromptNameLen {
				perr = fail(ErrInvalidParams, member1(ref, "name").off, `"params.ref.name" is longer than `+strconv.Itoa(MaxPromptNameLen)+" characters")
			}
		case "ref/resource":
			m.URI, perr = str(ref, "params.ref", "uri", ref.off)
		default:
			return fail(ErrInvalidParams, member1(ref, "type").off, `unknown "params.ref.type"`)
		}
	}
	if perr != nil {
		return perr
	}
	if args != nil && args.kind != vObject {
		return fail(ErrInvalidParams, args.off, `"params.arguments" must be an object`)
	}
	refSetArgs(m, args, in)
	return nil
}

// subscriptions fills m.URIs from params.notifications.resourceSubscriptions.
func refSubscriptions(m *refMessage, params *value, msgOff, index int) *ParseError {
	fail := func(k ErrorKind, off int, msg string) *ParseError {
		return &ParseError{Kind: k, Offset: int64(off), Index: index, Msg: msg}
	}
	if params == nil {
		return fail(ErrInvalidParams, msgOff, `missing "params"`)
	}
	if perr := refCheckVariants(params, []string{"notifications"}, index); perr != nil {
		return perr
	}
	n := member1(params, "notifications")
	if n == nil || n.kind != vObject {
		return fail(ErrInvalidParams, params.off, `"params.notifications" must be an object`)
	}
	const key = "resourceSubscriptions"
	for i := range n.mems {
		if k := n.mems[i].key; k != key {
			if refEqualFold(k, key) {
				return &ParseError{Kind: ErrCaseVariantKey, Offset: int64(n.mems[i].keyOff), Index: index,
					Msg: "member " + quoteKey(k) + " is a case variant of " + quoteKey(key)}
			}
		}
	}
	subs := member1(n, key)
	if subs == nil {
		return nil
	}
	if subs.kind != vArray {
		return fail(ErrInvalidParams, subs.off, `"params.notifications.resourceSubscriptions" must be an array`)
	}
	if len(subs.elems) > MaxSubscriptions {
		return fail(ErrTooManyElements, subs.off, "more than "+strconv.Itoa(MaxSubscriptions)+" resource subscriptions")
	}
	m.URIs = make([]string, 0, len(subs.elems))
	for i := range subs.elems {
		e := &subs.elems[i]
		if e.kind != vString || e.s == "" {
			return fail(ErrInvalidParams, e.off, `"params.notifications.resourceSubscriptions" holds a non-string or empty URI`)
		}
		m.URIs = append(m.URIs, e.s)
	}
	return nil
}

func argsOf(params *value) *value {
	if params == nil {
		return nil
	}
	return member1(params, "arguments")
}

// checkVariants rejects a member of obj that case-folds onto one of names
// without being equal to it.
func refCheckVariants(obj *value, names []string, index int) *ParseError {
	for i := range obj.mems {
		mb := &obj.mems[i]
		if n := refVariantOf(mb.key, names); n != "" {
			return &ParseError{Kind: ErrCaseVariantKey, Offset: int64(mb.keyOff), Index: index,
				Msg: "member " + quoteKey(mb.key) + " is a case variant of " + quoteKey(n)}
		}
	}
	return nil
}

// setArgs fills Arguments, ArgsDigest and Args from args (an object, or
// nil for `{}`).
func refSetArgs(m *refMessage, args *value, in []byte) {
	if args == nil {
		m.Arguments = emptyObject[:len(emptyObject):len(emptyObject)]
		m.ArgsDigest = emptyObjectDigest
		m.Args = map[string]any{}
		return
	}
	m.Arguments = appendCanonical(make([]byte, 0, args.end-args.off), in, args)
	m.ArgsDigest = Digest(m.Arguments)
	m.Args = decodeObject(in, args)
}

func decodeObject(in []byte, v *value) map[string]any {
	out := make(map[string]any, len(v.mems))
	for i := range v.mems {
		out[v.mems[i].key] = decode(in, &v.mems[i].val)
	}
	return out
}

// decode converts a parsed value to the types documented on refMessage.Args.
func decode(in []byte, v *value) any {
	switch v.kind {
	case vNull:
		return nil
	case vTrue:
		return true
	case vFalse:
		return false
	case vString:
		return v.s
	case vNumber:
		text := v.numText(in)
		if !strings.ContainsAny(text, ".eE") {
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return n
			}
		}
		f, _ := strconv.ParseFloat(text, 64) // checked by the parser
		return f
	case vArray:
		out := make([]any, len(v.elems))
		for i := range v.elems {
			out[i] = decode(in, &v.elems[i])
		}
		return out
	case vObject:
		return decodeObject(in, v)
	}
	return nil
}

// refEqualFold reports whether two member names are case variants as
// fold.go defines them, by other means: strings.EqualFold (simple case
// folding, as encoding/json matches names) after mapping "ı" to "i".
func refEqualFold(a, b string) bool {
	undot := func(r rune) rune {
		if r == '\u0131' {
			return 'i'
		}
		return r
	}
	return strings.EqualFold(strings.Map(undot, a), strings.Map(undot, b))
}

// utf16First returns the first UTF-16 code unit of r: r itself in the BMP,
// the high surrogate above it. It never equals a BMP rune of valid UTF-8.
func utf16First(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// refFindReserved returns the offset of the first member named
// "__proto__" in v, in document order (a member's name before its value).
func refFindReserved(v *value) (int, bool) {
	for i := range v.mems {
		if v.mems[i].key == "__proto__" {
			return v.mems[i].keyOff, true
		}
		if off, ok := refFindReserved(&v.mems[i].val); ok {
			return off, true
		}
	}
	for i := range v.elems {
		if off, ok := refFindReserved(&v.elems[i]); ok {
			return off, true
		}
	}
	return 0, false
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
