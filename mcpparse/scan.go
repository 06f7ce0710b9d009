package mcpparse

import (
	"strconv"
	"sync"
	"unicode/utf8"
)

// The scanner is the one strict pass: it validates a body, records where
// the members a decision needs are (vref), and writes the RFC 8785 form of the
// values it is asked to canonicalize into a reusable buffer that is hashed
// once. It builds no tree: objects keep their member names (for duplicate,
// case-variant and ordering checks) in a scratch arena only while open.
//
// The pass is split by concern: this file holds the scanner, its pool,
// faults and limits, and values and arrays; string.go strings and UTF-8,
// number.go numbers, object.go objects and member names, shape.go the
// shape cache, and jcs.go the RFC 8785 output and digest text.

// vkind is the type of a JSON value.
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

// vref locates one value: its kind and source text in[off:end].
type vref struct {
	kind     vkind
	off, end int
}

// span is a byte range of scanner.arena.
type span struct{ a, b int32 }

// name is one member name of an open object: the decoded name and its
// case-fold key (fold.go), both in scanner.arena.
type name struct{ key, fold span }

// cmember is one member of an open object being canonicalized: its name and
// the range of `"name":value` in scanner.out.
type cmember struct {
	key        span
	idx        int32 // position in the object
	start, end int
}

// scanner is one strict pass over an input. Scanners are pooled; every
// slice is scratch reused across passes.
type scanner struct {
	in    []byte
	pos   int
	lim   Limits
	depth int
	keys  int
	vals  int
	// index of the top-level array element being scanned; -1 outside.
	index int
	// lenient switches off the checks that go beyond RFC 8785 (case-variant
	// names, non-canonical numbers); tests only, for the RFC vectors.
	lenient bool
	// exactKeys admits case-variant names outside the protocol objects
	// (ParseOptions.CaseSensitiveKeys).
	exactKeys bool
	// scalar: this scanner takes the scalar path even where the vectorized
	// one runs (simd.go); tests set it to compare the two. reset keeps it.
	scalar bool
	// valid: stage 1 found p.in valid UTF-8 (simd.go), so strings are
	// scanned without validating their runes.
	valid bool

	arena []byte // names (and fold keys) of the open objects' members
	names []name // members of the open objects, innermost last
	str   []byte // a decoded string with escapes
	// rawJCS: the last string scanned, in[strOff:p.pos], is already in its
	// RFC 8785 form (no escapes, or only those RFC 8785 writes), so it is
	// copied rather than decoded and escaped again.
	rawJCS bool
	keyEnd int       // end of the member name memberName scanned last
	out    []byte    // RFC 8785 form of the value being canonicalized
	mems   []cmember // canonicalized members of the open objects
	tmp    []byte    // scratch for reordering an object's members
	// shapes[d] is the shape of the last object completed at depth d. It
	// grows while a deeper object is scanned, so it is only ever indexed:
	// a *shape kept across a nested value would point into the old array
	// after an append moved it (cases-3 E01).
	shapes []shape

	envs []envRec // one per JSON-RPC message, in body order
	subs []vref   // resourceSubscriptions elements, of all messages

	// argDepth is the depth of a params.arguments object being scanned (0:
	// none); object records its members' name and value offsets in argMems
	// (pairs), so Message.Arg needs no second scan.
	argDepth int
	argMems  []int32

	// inParams: a message's params object is being scanned; proto is then
	// 1 + the offset of its first member named "__proto__" (0: none).
	inParams bool
	proto    int
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}

// maxPooledBuf bounds the scratch a pooled scanner keeps between passes.
const maxPooledBuf = 4 << 20

func getScanner(in []byte, lim Limits) *scanner {
	p := scanners.Get().(*scanner)
	p.reset(in, lim)
	return p
}

// reset readies p, fresh or reused, for a pass over in.
func (p *scanner) reset(in []byte, lim Limits) {
	p.in, p.pos, p.lim, p.index = in, 0, lim, -1
	p.depth, p.keys, p.vals, p.lenient, p.argDepth = 0, 0, 0, false, 0
	p.inParams, p.proto, p.exactKeys, p.valid = false, 0, false, false
	for i := range p.shapes { // a shape is only valid within one pass (lenient or not)
		p.shapes[i].ends = p.shapes[i].ends[:0]
	}
}

func putScanner(p *scanner) {
	if cap(p.out) > maxPooledBuf || cap(p.tmp) > maxPooledBuf || cap(p.arena) > maxPooledBuf || cap(p.str) > maxPooledBuf {
		p.in = nil
		return // let a scanner grown by one large body go
	}
	p.truncate()
	scanners.Put(p)
}

// truncate empties p's scratch, keeping its capacity, for the next pass.
func (p *scanner) truncate() {
	p.in = nil
	p.arena, p.names, p.str, p.out, p.mems, p.tmp = p.arena[:0], p.names[:0], p.str[:0], p.out[:0], p.mems[:0], p.tmp[:0]
	clear(p.envs)
	p.envs, p.subs, p.argMems = p.envs[:0], p.subs[:0], p.argMems[:0]
}

// fail returns the error of a pass that stops at in[off]. Invalid UTF-8
// anywhere in the input is reported before any fault but its size: the
// pass validates UTF-8 only inside strings, as it reaches them (outside
// them only ASCII is valid JSON), so on the way out the whole input is
// checked once, to find the first invalid sequence.
func (p *scanner) fail(k ErrorKind, off int, msg string) *ParseError {
	if k != ErrTooLarge && !utf8.Valid(p.in) {
		return &ParseError{Kind: ErrInvalidUTF8, Offset: int64(invalidUTF8At(p.in)), Index: -1, Msg: "invalid UTF-8"}
	}
	return &ParseError{Kind: k, Offset: int64(off), Index: p.index, Msg: msg}
}

// begin checks the size and skips leading whitespace. UTF-8 is checked
// within strings, as the pass reaches them (see fail), or on the
// vectorized path all at once here (simd.go).
func (p *scanner) begin() *ParseError {
	if len(p.in) > p.lim.MaxBytes {
		return p.fail(ErrTooLarge, p.lim.MaxBytes, "body longer than "+strconv.Itoa(p.lim.MaxBytes)+" bytes")
	}
	if !p.prevalidate() {
		return p.fail(ErrInvalidUTF8, 0, "invalid UTF-8") // fail finds the offset
	}
	p.skipWS()
	if p.pos == len(p.in) {
		return p.fail(ErrSyntax, p.pos, "empty input")
	}
	return nil
}

// end rejects anything but whitespace after the value.
func (p *scanner) end() *ParseError {
	p.skipWS()
	if p.pos != len(p.in) {
		p.index = -1
		return p.fail(ErrTrailingData, p.pos, "data after the JSON value")
	}
	return nil
}

func (p *scanner) skipWS() {
	for p.pos < len(p.in) {
		// Every whitespace byte is at most ' ': one comparison settles
		// the usual case, compact JSON.
		if c := p.in[p.pos]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return
		}
		p.pos++
	}
}

// count counts one value against MaxElements and checks that one starts
// at p.pos.
func (p *scanner) count() *ParseError {
	if p.vals++; p.vals > p.lim.MaxElements || p.pos >= len(p.in) {
		return p.countFault()
	}
	return nil
}

// countFault is count's fault, apart so that count inlines.
func (p *scanner) countFault() *ParseError {
	if p.vals > p.lim.MaxElements {
		return p.fail(ErrTooManyElements, p.pos, "more than "+strconv.Itoa(p.lim.MaxElements)+" values")
	}
	return p.fail(ErrSyntax, p.pos, "unexpected end of input")
}

func (p *scanner) enter() *ParseError {
	if p.depth++; p.depth > p.lim.MaxDepth {
		return p.fail(ErrTooDeep, p.pos, "nested deeper than "+strconv.Itoa(p.lim.MaxDepth))
	}
	return nil
}

// value scans the value at p.pos (whitespace skipped); w: append its
// RFC 8785 form to p.out.
func (p *scanner) value(w bool) *ParseError {
	if err := p.count(); err != nil {
		return err
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(w)
	case c == '[':
		return p.array(w)
	case c == '"':
		off := p.pos
		if _, _, err := p.scanStringKeep(false); err != nil {
			return err
		}
		if w {
			if p.rawJCS {
				p.out = append(p.out, p.in[off:p.pos]...)
				return nil
			}
			p.pos = off // escapes RFC 8785 writes otherwise: decode and write them
			s, esc, _ := p.scanString()
			p.out = appendJCSBytes(p.out, s, esc)
		}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(false, w)
	case c == 't':
		return p.literal("true", w)
	case c == 'f':
		return p.literal("false", w)
	case c == 'n':
		return p.literal("null", w)
	default:
		return p.fail(ErrSyntax, p.pos, "unexpected character")
	}
}

// ref scans the value at p.pos without writing it and returns where it is.
// exempt: a number here is an envelope id, checked for grammar only.
func (p *scanner) ref(exempt bool) (vref, *ParseError) {
	off := p.pos
	if err := p.count(); err != nil {
		return vref{}, err
	}
	var k vkind
	var err *ParseError
	switch c := p.in[p.pos]; {
	case c == '{':
		k, err = vObject, p.object(false)
	case c == '[':
		k, err = vArray, p.array(false)
	case c == '"':
		k = vString
		_, _, err = p.scanStringKeep(false)
	case c == '-' || (c >= '0' && c <= '9'):
		k, err = vNumber, p.number(exempt, false)
	case c == 't':
		k, err = vTrue, p.literal("true", false)
	case c == 'f':
		k, err = vFalse, p.literal("false", false)
	case c == 'n':
		k, err = vNull, p.literal("null", false)
	default:
		err = p.fail(ErrSyntax, p.pos, "unexpected character")
	}
	return vref{kind: k, off: off, end: p.pos}, err
}

func (p *scanner) literal(lit string, w bool) *ParseError {
	if len(p.in)-p.pos < len(lit) || string(p.in[p.pos:p.pos+len(lit)]) != lit {
		return p.fail(ErrSyntax, p.pos, "invalid literal")
	}
	p.pos += len(lit)
	if w {
		p.out = append(p.out, lit...)
	}
	return nil
}

// array scans an array (not a batch).
func (p *scanner) array(w bool) *ParseError {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '['
	if w {
		p.out = append(p.out, '[')
	}
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.depth--
		if w {
			p.out = append(p.out, ']')
		}
		return nil
	}
	for {
		p.skipWS()
		if err := p.value(w); err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.in) {
			return p.fail(ErrSyntax, p.pos, "unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			if w {
				p.out = append(p.out, ',')
			}
		case ']':
			p.pos++
			p.depth--
			if w {
				p.out = append(p.out, ']')
			}
			return nil
		default:
			return p.fail(ErrSyntax, p.pos, "expected ',' or ']'")
		}
	}
}
