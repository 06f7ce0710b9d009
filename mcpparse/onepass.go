package mcpparse

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// PROTOTYPE, not wired in (issue 9): one strict pass over a JSON value that
// writes its RFC 8785 form into a reusable buffer and hashes it, without
// building a tree. It applies the checks of Canonicalize (limits, UTF-8,
// lone surrogates, duplicate and case-variant names, trailing data,
// canonical numbers) through the same parser helpers; FuzzOnePassDigest
// compares the two. Still missing for the Check path: locating the members
// the decision needs (method, params.name, arguments) and hashing while
// writing the top level.

// onePassBufs recycles the output and scratch buffers between calls.
var onePassBufs = sync.Pool{New: func() any { return new(onePassState) }}

type onePassState struct {
	out, tmp []byte
	spans    []memberSpan
}

// memberSpan is one member written into out: its decoded name and the bytes
// "name":value at out[start:end].
type memberSpan struct {
	key        string
	start, end int
}

// canonicalDigestOnePass returns the SHA-256 of the RFC 8785 form of value,
// with the errors Canonicalize gives (*ParseError, Index -1).
func canonicalDigestOnePass(value []byte, lim Limits) ([sha256.Size]byte, error) {
	lim = lim.withDefaults()
	p := parser{in: value, lim: lim, index: -1}
	if len(value) > lim.MaxBytes {
		return [32]byte{}, p.fail(ErrTooLarge, lim.MaxBytes, "body longer than "+strconv.Itoa(lim.MaxBytes)+" bytes")
	}
	if !utf8.Valid(value) {
		return [32]byte{}, p.fail(ErrInvalidUTF8, invalidUTF8At(value), "invalid UTF-8")
	}
	st := onePassBufs.Get().(*onePassState)
	defer onePassBufs.Put(st)
	p.skipWS()
	if p.pos == len(value) {
		return [32]byte{}, p.fail(ErrSyntax, p.pos, "empty input")
	}
	out, err := p.canonValue(st, st.out[:0])
	st.out = out[:0]
	if err != nil {
		return [32]byte{}, err
	}
	p.skipWS()
	if p.pos != len(value) {
		return [32]byte{}, p.fail(ErrTrailingData, p.pos, "data after the JSON value")
	}
	return sha256.Sum256(out), nil
}

// canonValue appends the RFC 8785 form of the value at p.pos to dst.
func (p *parser) canonValue(st *onePassState, dst []byte) ([]byte, *ParseError) {
	p.vals++
	if p.vals > p.lim.MaxElements {
		return dst, p.fail(ErrTooManyElements, p.pos, "more than "+strconv.Itoa(p.lim.MaxElements)+" values")
	}
	if p.pos >= len(p.in) {
		return dst, p.fail(ErrSyntax, p.pos, "unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.canonObject(st, dst)
	case c == '[':
		return p.canonArray(st, dst)
	case c == '"':
		return p.canonString(dst)
	case c == '-' || (c >= '0' && c <= '9'):
		if out, end, ok := appendShortDecimal(dst, p.in, p.pos); ok {
			p.pos = end
			return out, nil
		}
		v, err := p.parseNumber(false)
		if err != nil {
			return dst, err
		}
		if v.canonText {
			return append(dst, p.in[v.off:v.end]...), nil
		}
		return append(dst, v.s...), nil
	case c == 't':
		return p.canonLiteral(dst, "true")
	case c == 'f':
		return p.canonLiteral(dst, "false")
	case c == 'n':
		return p.canonLiteral(dst, "null")
	}
	return dst, p.fail(ErrSyntax, p.pos, "unexpected character")
}

func (p *parser) canonLiteral(dst []byte, lit string) ([]byte, *ParseError) {
	if _, err := p.parseLiteral(lit, vNull); err != nil {
		return dst, err
	}
	return append(dst, lit...), nil
}

// canonString appends the string at p.pos in RFC 8785 form. Without
// escapes the source text is already canonical (the input is valid UTF-8
// and has no raw control characters), so it is copied as is.
func (p *parser) canonString(dst []byte) ([]byte, *ParseError) {
	start := p.pos
	for i := start + 1; i < len(p.in); i++ {
		if i-start-1 > p.lim.MaxStringLen {
			return dst, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(p.lim.MaxStringLen)+" bytes")
		}
		switch c := p.in[i]; {
		case c == '"':
			p.pos = i + 1
			return append(dst, p.in[start:i+1]...), nil
		case c == '\\':
			s, err := p.parseString()
			if err != nil {
				return dst, err
			}
			return appendJCSString(dst, s), nil
		case c < 0x20:
			return dst, p.fail(ErrSyntax, i, "unescaped control character in string")
		}
	}
	return dst, p.fail(ErrSyntax, len(p.in), "unterminated string")
}

func (p *parser) canonArray(st *onePassState, dst []byte) ([]byte, *ParseError) {
	if err := p.enter(); err != nil {
		return dst, err
	}
	p.pos++ // '['
	dst = append(dst, '[')
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.depth--
		return append(dst, ']'), nil
	}
	for {
		p.skipWS()
		var err *ParseError
		if dst, err = p.canonValue(st, dst); err != nil {
			return dst, err
		}
		p.skipWS()
		if p.pos >= len(p.in) {
			return dst, p.fail(ErrSyntax, p.pos, "unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			dst = append(dst, ',')
		case ']':
			p.pos++
			p.depth--
			return append(dst, ']'), nil
		default:
			return dst, p.fail(ErrSyntax, p.pos, "expected ',' or ']'")
		}
	}
}

// canonObject writes the members in input order, then, unless they already
// are, rewrites them sorted by the UTF-16 code units of their names.
func (p *parser) canonObject(st *onePassState, dst []byte) ([]byte, *ParseError) {
	if err := p.enter(); err != nil {
		return dst, err
	}
	p.pos++ // '{'
	base := len(p.stack)
	sbase := len(st.spans)
	defer func() {
		p.stack = p.stack[:base]
		clear(st.spans[sbase:])
		st.spans = st.spans[:sbase]
	}()
	var sets *foldSets
	open := len(dst)
	dst = append(dst, '{')
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.depth--
		return append(dst, '}'), nil
	}
	for {
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return dst, p.fail(ErrSyntax, p.pos, "expected a member name")
		}
		p.keys++
		if p.keys > p.lim.MaxKeys {
			return dst, p.fail(ErrTooManyKeys, p.pos, "more than "+strconv.Itoa(p.lim.MaxKeys)+" object members")
		}
		keyOff := p.pos
		key, err := p.parseString()
		if err != nil {
			return dst, err
		}
		e := keyEntry{key: key}
		e.f1, e.f2 = foldKeys(key)
		if err := p.checkKey(base, &sets, e, keyOff); err != nil {
			return dst, err
		}
		p.stack = append(p.stack, e)
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return dst, p.fail(ErrSyntax, p.pos, "expected ':'")
		}
		p.pos++
		p.skipWS()
		span := memberSpan{key: key, start: len(dst)}
		dst = appendJCSString(dst, key)
		dst = append(dst, ':')
		if dst, err = p.canonValue(st, dst); err != nil {
			return dst, err
		}
		span.end = len(dst)
		st.spans = append(st.spans, span)
		p.skipWS()
		if p.pos >= len(p.in) {
			return dst, p.fail(ErrSyntax, p.pos, "unexpected end of input in object")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			dst = append(dst, ',')
		case '}':
			p.pos++
			p.depth--
			return p.sortMembers(st, dst, open, st.spans[sbase:]), nil
		default:
			return dst, p.fail(ErrSyntax, p.pos, "expected ',' or '}'")
		}
	}
}

// sortMembers closes the object opened at dst[open] whose members are
// spans, rewriting them in RFC 8785 order when the input order was not.
func (p *parser) sortMembers(st *onePassState, dst []byte, open int, spans []memberSpan) []byte {
	cmp := func(a, b memberSpan) int { return compareUTF16(a.key, b.key) }
	if slices.IsSortedFunc(spans, cmp) {
		return append(dst, '}')
	}
	st.tmp = append(st.tmp[:0], dst[open:]...)
	slices.SortFunc(spans, cmp)
	dst = append(dst[:open], '{')
	for i, s := range spans {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, st.tmp[s.start-open:s.end-open]...)
	}
	return append(dst, '}')
}

// appendShortDecimal is the fast path for a number literal at in[pos] with a
// fraction, no exponent, at most 15 significant digits and a magnitude of
// 1e-6 or more (or zero): every such decimal is the shortest text of the
// double nearest to it, so its RFC 8785 form is the literal without
// trailing fractional zeros (and without the sign of zero). It reports
// false, appending nothing, for any other literal, including invalid ones:
// parseNumber then decides.
func appendShortDecimal(dst, in []byte, pos int) ([]byte, int, bool) {
	i := pos
	neg := in[i] == '-'
	if neg {
		i++
	}
	intStart := i
	for i < len(in) && in[i] >= '0' && in[i] <= '9' {
		i++
	}
	intEnd := i
	if intEnd == intStart || (in[intStart] == '0' && intEnd-intStart > 1) || i >= len(in) || in[i] != '.' {
		return dst, 0, false
	}
	i++
	fracStart := i
	for i < len(in) && in[i] >= '0' && in[i] <= '9' {
		i++
	}
	fracEnd := i
	if fracEnd == fracStart || (i < len(in) && (in[i] == 'e' || in[i] == 'E' || in[i] == '.')) {
		return dst, 0, false
	}
	last := fracEnd // fraction without trailing zeros: in[fracStart:last]
	for last > fracStart && in[last-1] == '0' {
		last--
	}
	intZero := intEnd-intStart == 1 && in[intStart] == '0'
	sig := last - fracStart
	if intZero {
		lead := 0
		for lead < last-fracStart && in[fracStart+lead] == '0' {
			lead++
		}
		if last > fracStart && lead > 5 { // below 1e-6: exponent form
			return dst, 0, false
		}
		sig -= lead
	} else {
		sig += intEnd - intStart
	}
	if sig > 15 {
		return dst, 0, false
	}
	if !(intZero && last == fracStart) && neg { // -0.0 is 0
		dst = append(dst, '-')
	}
	dst = append(dst, in[intStart:intEnd]...)
	if last > fracStart {
		dst = append(dst, '.')
		dst = append(dst, in[fracStart:last]...)
	}
	return dst, fracEnd, true
}
