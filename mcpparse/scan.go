package mcpparse

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// This file is the one strict pass: it validates a body, records where the
// members a decision needs are (vref), and writes the RFC 8785 form of the
// values it is asked to canonicalize into a reusable buffer that is hashed
// once. It builds no tree: objects keep their member names (for duplicate,
// case-variant and ordering checks) in a scratch arena only while open.

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
	p.inParams, p.proto, p.exactKeys = false, 0, false
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
// within strings, as the pass reaches them (see fail).
func (p *scanner) begin() *ParseError {
	if len(p.in) > p.lim.MaxBytes {
		return p.fail(ErrTooLarge, p.lim.MaxBytes, "body longer than "+strconv.Itoa(p.lim.MaxBytes)+" bytes")
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

// objState is the bookkeeping of one open object.
type objState struct {
	abase, nbase int       // p.arena and p.names lengths at its start
	sets         *foldSets // built once it grows past linearKeys members
	n            int       // members so far
	// d is the object's depth: p.shapes[d] is the shape of the previous
	// object at this depth (read through p.shape, never kept as a
	// pointer); match: the names so far are its first n names.
	d     int
	match bool
	lazy  int // leading names that matched sh and are not yet in p.names
}

// materialize adds the names that matched the shape to p.names.
func (p *scanner) materialize(o *objState) {
	if o.lazy == 0 {
		return
	}
	sh := p.shape(o)
	for i := range o.lazy {
		p.names = append(p.names, p.addName(sh.name(i)))
	}
	o.lazy = 0
}

// shape is the member names, in input order, of the last object
// completed at one depth, and (once known) their RFC 8785 order. Arrays of
// objects usually repeat one shape: a name that matches the shape's name
// at its position is known to collide with none before it, and an object
// of the same shape sorts the same way, so neither is done again.
type shape struct {
	names []byte  // the names, joined
	ends  []int32 // end of each name in names
	perm  []int32 // input positions in canonical order; nil until known
	// plain[i]: name i has no '"', '\\' or control byte, so input that
	// spells it byte for byte, then '"', is that name (shapeKey).
	plain []bool
	// words[i]: for a plain name of at most 7 bytes, the name and its
	// closing quote as a little-endian word (bytes past it zero), which
	// shapeKey compares with one load; 0 otherwise.
	words []uint64
	// fast[i]: how shaped matches name i.
	fast []shapeName
	// identity: perm is 0, 1, 2, … (the names are in canonical order).
	identity bool
}

// shapeName is how shaped matches one name of a shape with one load: word
// (masked by mask) is the bytes after the opening quote: the name, its
// closing quote and ':' when they fit in eight bytes (colon), else the
// name and its quote (a name of 7 bytes), else the name's first eight
// bytes (the rest is compared after it). ok: the name is plain and not
// empty, and not "__proto__" (memberName's to record).
type shapeName struct {
	word, mask uint64
	ok, colon  bool
	full       bool // word holds the closing quote
}

// newShapeName returns the shapeName of the name k.
func newShapeName(k []byte) shapeName {
	if len(k) == 0 || hasSpecial(k) || string(k) == reservedKey {
		return shapeName{}
	}
	var b [8]byte
	n := copy(b[:], k)
	sn := shapeName{ok: true}
	switch {
	case len(k) <= 6:
		b[n], b[n+1] = '"', ':'
		n += 2
		sn.colon, sn.full = true, true
	case len(k) == 7:
		b[n] = '"'
		n++
		sn.full = true
	}
	sn.word = binary.LittleEndian.Uint64(b[:])
	sn.mask = ^uint64(0)
	if n < 8 {
		sn.mask = 1<<(8*n) - 1
	}
	return sn
}

func (s *shape) name(i int) []byte {
	a := int32(0)
	if i > 0 {
		a = s.ends[i-1]
	}
	return s.names[a:s.ends[i]]
}

// growShapes makes room in p.shapes for depth d.
func (p *scanner) growShapes(d int) {
	for len(p.shapes) <= d {
		p.shapes = append(p.shapes, shape{})
	}
}

// shape returns the shape cache of o's depth. The pointer is valid until
// the next nested value is scanned (which may grow p.shapes): use it and
// drop it, never store it.
func (p *scanner) shape(o *objState) *shape { return &p.shapes[o.d] }

// shapeKey returns the member name at p.pos (its opening quote) when the
// input spells it exactly as the name at position o.n of the shape of o's
// depth, a plain one (no quote, backslash or control), followed by the
// closing quote: then it needs no scan (it is the same valid UTF-8, within
// the same limit, as when the shape was recorded in this pass). Else nil.
func (p *scanner) shapeKey(o *objState) []byte {
	if !o.match {
		return nil
	}
	sh := p.shape(o)
	if o.n >= len(sh.ends) || !sh.plain[o.n] {
		return nil
	}
	a := p.pos + 1
	if w := sh.words[o.n]; w != 0 && a+8 <= len(p.in) {
		// The name and its quote, at most eight bytes: one comparison.
		l := (bits.Len64(w) + 7) >> 3 // up to the quote, w's last non-zero byte
		if binary.LittleEndian.Uint64(p.in[a:])&(1<<(8*l)-1) != w {
			return nil
		}
		return p.in[a : a+l-1 : a+l-1]
	}
	name := sh.name(o.n)
	e := a + len(name)
	if e >= len(p.in) || p.in[e] != '"' || string(p.in[a:e]) != string(name) {
		return nil
	}
	return p.in[a:e:e]
}

// shapeHas reports whether key is the name at position o.n of the shape
// of o's depth (o.match objects only: members() objects have none).
func (p *scanner) shapeHas(o *objState, key []byte) bool {
	sh := p.shape(o)
	return o.n < len(sh.ends) && string(sh.name(o.n)) == string(key)
}

// record makes the shape of o's depth that of the object whose names are
// p.names[o.nbase:].
func (p *scanner) record(o *objState, perm []cmember) {
	sh, nbase := p.shape(o), o.nbase
	sh.names, sh.ends, sh.perm, sh.plain, sh.words = sh.names[:0], sh.ends[:0], sh.perm[:0], sh.plain[:0], sh.words[:0]
	sh.fast = sh.fast[:0]
	for _, nm := range p.names[nbase:] {
		k := p.bytes(nm.key)
		sh.fast = append(sh.fast, newShapeName(k))
		sh.names = append(sh.names, k...)
		sh.ends = append(sh.ends, int32(len(sh.names)))
		plain := len(k) > 0 && !hasSpecial(k)
		sh.plain = append(sh.plain, plain)
		var w uint64
		if plain && len(k) < 8 {
			var b [8]byte
			copy(b[:], k)
			b[len(k)] = '"'
			w = binary.LittleEndian.Uint64(b[:])
		}
		sh.words = append(sh.words, w)
	}
	if perm == nil {
		sh.perm = nil
		return
	}
	sh.identity = true
	for i, m := range perm {
		sh.perm = append(sh.perm, m.idx)
		sh.identity = sh.identity && int(m.idx) == i
	}
}

// open starts an object at p.pos ('{'). It reports empty when the object
// is `{}` (then already consumed).
func (p *scanner) open() (o objState, empty bool, err *ParseError) {
	if err := p.enter(); err != nil {
		return o, false, err
	}
	p.pos++ // '{'
	o = objState{abase: len(p.arena), nbase: len(p.names)}
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.depth--
		return o, true, nil
	}
	return o, false, nil
}

// close drops the object's names.
func (p *scanner) close(o *objState) {
	p.arena, p.names = p.arena[:o.abase], p.names[:o.nbase]
}

// shaped is memberName's fast path, for a name at p.pos (whitespace
// skipped) that the input spells exactly as the shape of o's depth has
// its name at position o.n, followed by ':' (and whitespace): such a name
// needs no scan and no check (it is distinct from the names before it, as
// in the shape), so only its bytes are compared, with one load when it is
// short. It records the member as memberName does, sets p.keyEnd and
// p.rawJCS, and leaves p.pos at the value. It returns false, having
// consumed nothing, for any other name, and when MaxKeys is reached (the
// fault is memberName's to report). word is the shapeName's word when it
// holds the colon (then `"` and word's bytes up to its last non-zero one
// are the member's `"name":`), else 0.
func (p *scanner) shaped(o *objState) (ok bool, word uint64) {
	if !o.match {
		return false, 0
	}
	sh := &p.shapes[o.d]
	if o.n >= len(sh.fast) {
		return false, 0
	}
	k := &sh.fast[o.n]
	in, i := p.in, p.pos
	if !k.ok || p.keys >= p.lim.MaxKeys || i+9 > len(in) || in[i] != '"' ||
		binary.LittleEndian.Uint64(in[i+1:])&k.mask != k.word {
		return false, 0
	}
	var e int // past the closing quote
	switch {
	case k.colon:
		e = i + 1 + (bits.Len64(k.mask)+7)>>3 - 1
	case k.full:
		e = i + 9
	default:
		name := sh.name(o.n)
		q := i + 1 + len(name)
		if q >= len(in) || in[q] != '"' || string(in[i+9:q]) != string(name[8:]) {
			return false, 0
		}
		e = q + 1
	}
	j := e
	if !k.colon {
		for j < len(in) && (in[j] == ' ' || in[j] == '\t' || in[j] == '\n' || in[j] == '\r') {
			j++
		}
		if j >= len(in) || in[j] != ':' {
			return false, 0
		}
	} else {
		word = k.word
	}
	p.keys++
	p.keyEnd, p.rawJCS = e, true
	o.lazy++
	o.n++
	p.pos = j + 1
	if p.pos < len(in) && in[p.pos] <= ' ' {
		p.skipWS()
	}
	return true, word
}

// memberName scans `"name" :` at p.pos (whitespace skipped before), checks
// the name against the object's other names and leaves p.pos at the value.
// key aliases the input or p.str: valid until the next string is scanned.
func (p *scanner) memberName(o *objState) (nm name, key []byte, keyOff int, esc bool, err *ParseError) {
	p.skipWS()
	if p.pos >= len(p.in) || p.in[p.pos] != '"' {
		return nm, nil, 0, false, p.fail(ErrSyntax, p.pos, "expected a member name")
	}
	p.keys++
	if p.keys > p.lim.MaxKeys {
		return nm, nil, 0, false, p.fail(ErrTooManyKeys, p.pos, "more than "+strconv.Itoa(p.lim.MaxKeys)+" object members")
	}
	keyOff = p.pos
	fromShape := false
	if key = p.shapeKey(o); key != nil {
		// The name the shape has here, written as it is: scanned.
		p.pos = keyOff + len(key) + 2
		p.rawJCS, fromShape = true, true
	} else if key, esc, err = p.scanString(); err != nil {
		return nm, nil, 0, false, err
	}
	p.keyEnd = p.pos
	if p.inParams && p.proto == 0 && string(key) == reservedKey {
		p.proto = keyOff + 1
	}
	if fromShape || o.match && p.shapeHas(o, key) {
		// Distinct from the names before it, as in the shape; its entry in
		// p.names is made only if needed (materialize).
		o.lazy++
	} else {
		p.materialize(o)
		o.match = false
		nm = p.addName(key)
		if err := p.checkName(o, nm, keyOff); err != nil {
			return nm, nil, 0, false, err
		}
		p.names = append(p.names, nm)
	}
	o.n++
	p.skipWS()
	if p.pos >= len(p.in) || p.in[p.pos] != ':' {
		return nm, nil, 0, false, p.fail(ErrSyntax, p.pos, "expected ':'")
	}
	p.pos++
	p.skipWS()
	return nm, key, keyOff, esc, nil
}

// next scans what follows a member's value: ',' (more) or '}' (the object
// is done).
func (p *scanner) next() (more bool, err *ParseError) {
	p.skipWS()
	if p.pos >= len(p.in) {
		return false, p.fail(ErrSyntax, p.pos, "unexpected end of input in object")
	}
	switch p.in[p.pos] {
	case ',':
		p.pos++
		return true, nil
	case '}':
		p.pos++
		p.depth--
		return false, nil
	default:
		return false, p.fail(ErrSyntax, p.pos, "expected ',' or '}'")
	}
}

// object scans an object, rejecting duplicate and case-variant member
// names; w: append its RFC 8785 form (members sorted by the UTF-16 code
// units of their names) to p.out.
func (p *scanner) object(w bool) *ParseError {
	o, empty, err := p.open()
	if err != nil {
		return err
	}
	if w {
		p.out = append(p.out, '{')
	}
	if empty {
		if w {
			p.out = append(p.out, '}')
		}
		return nil
	}
	o.d = p.depth
	p.growShapes(o.d)
	o.match = len(p.shapes[o.d].ends) > 0
	start, mbase := len(p.out), len(p.mems)
	for {
		var nm name
		var key []byte
		var esc bool
		if p.pos < len(p.in) && p.in[p.pos] <= ' ' {
			p.skipWS()
		}
		keyOff := p.pos
		fast, word := p.shaped(&o)
		if !fast {
			var err *ParseError
			if nm, key, keyOff, esc, err = p.memberName(&o); err != nil {
				return err
			}
		}
		if p.depth == p.argDepth {
			p.argMems = append(p.argMems, int32(keyOff), int32(p.pos))
		}
		var mstart int
		if w {
			if o.n > 1 {
				p.out = append(p.out, ',')
			}
			mstart = len(p.out)
			switch {
			case word != 0 && cap(p.out)-mstart >= 9: // `"name":` stored as two words
				out := p.out[:mstart+9]
				out[mstart] = '"'
				binary.LittleEndian.PutUint64(out[mstart+1:], word)
				p.out = out[:mstart+1+(bits.Len64(word)+7)>>3]
			case p.rawJCS && p.in[p.keyEnd] == ':': // `"name":` as it is
				p.out = append(p.out, p.in[keyOff:p.keyEnd+1]...)
			case p.rawJCS:
				p.out = append(append(p.out, p.in[keyOff:p.keyEnd]...), ':')
			default:
				p.out = append(appendJCSBytes(p.out, key, esc), ':')
			}
		}
		if err := p.value(w); err != nil {
			return err
		}
		if w {
			p.mems = append(p.mems, cmember{key: nm.key, idx: int32(o.n - 1), start: mstart, end: len(p.out)})
		}
		if i := p.pos; i < len(p.in) && p.in[i] == ',' {
			p.pos = i + 1
			continue
		}
		more, err := p.next()
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	// The member values are scanned: p.shapes no longer moves under sh.
	sh := p.shape(&o)
	same := o.match && o.n == len(sh.ends)
	if w {
		ms := p.mems[mbase:]
		if same && sh.perm != nil {
			if !sh.identity {
				p.emit(start, ms, sh.perm)
			}
		} else {
			// Names that matched the shape got their p.names entry late,
			// or not yet: take every member's name from p.names.
			p.materialize(&o)
			for i := range ms {
				ms[i].key = p.names[o.nbase+i].key
			}
			p.sortMembers(ms)
			p.record(&o, ms)
			if !sh.identity {
				p.emit(start, ms, nil)
			}
		}
		p.mems = p.mems[:mbase]
		p.out = append(p.out, '}')
	} else if !same {
		p.materialize(&o)
		p.record(&o, nil)
	}
	p.close(&o) // on errors the scan ends, and the pool resets the scratch
	return nil
}

// sortMembers sorts ms by name (RFC 8785 section 3.2.3); objects are
// small, so by insertion.
func (p *scanner) sortMembers(ms []cmember) {
	arena := p.arena
	for i := 1; i < len(ms); i++ {
		m := ms[i]
		k := arena[m.key.a:m.key.b]
		j := i
		for ; j > 0 && compareUTF16(arena[ms[j-1].key.a:ms[j-1].key.b], k) > 0; j-- {
			ms[j] = ms[j-1]
		}
		ms[j] = m
	}
}

// emit rewrites p.out[start:], the members ms joined by commas in input
// order, in the order of ms (perm nil) or of ms[perm[0]], ms[perm[1]], ….
//
// The members keep their bytes and the commas their number, so the object
// keeps its length. In a large object the largest member (often an array
// that is most of the arguments) is moved once, straight to its place,
// rather than out to p.tmp and back.
func (p *scanner) emit(start int, ms []cmember, perm []int32) {
	at := func(i int) *cmember {
		if perm != nil {
			return &ms[perm[i]]
		}
		return &ms[i]
	}
	if len(p.out)-start < emitInPlace {
		p.tmp = append(p.tmp[:0], p.out[start:]...)
		o := p.out[:start]
		for i := range ms {
			m := at(i)
			if i > 0 {
				o = append(o, ',')
			}
			o = append(o, p.tmp[m.start-start:m.end-start]...)
		}
		p.out = o
		return
	}
	big := &ms[0]
	for i := range ms {
		if ms[i].end-ms[i].start > big.end-big.start {
			big = &ms[i]
		}
	}
	// Save the rest, move the largest, then write the rest around it.
	p.tmp = append(append(p.tmp[:0], p.out[start:big.start]...), p.out[big.end:]...)
	gap := big.end - big.start
	src := func(m *cmember) []byte {
		if m.start < big.start {
			return p.tmp[m.start-start : m.end-start]
		}
		return p.tmp[m.start-start-gap : m.end-start-gap]
	}
	dst := start
	for i := range ms {
		if m := at(i); m == big {
			break
		} else {
			dst += m.end - m.start + 1 // and its comma
		}
	}
	copy(p.out[dst:], p.out[big.start:big.end]) // copy allows the overlap
	o := start
	for i := range ms {
		m := at(i)
		if i > 0 {
			p.out[o] = ','
			o++
		}
		if m == big {
			o += gap
			continue
		}
		o += copy(p.out[o:], src(m))
	}
}

// emitInPlace is the object size (bytes of canonical members) from which
// emit moves the largest member in place.
const emitInPlace = 4 << 10

func (p *scanner) bytes(s span) []byte { return p.arena[s.a:s.b] }

// addName copies a decoded member name and its case-fold key (fold.go)
// into the arena.
func (p *scanner) addName(key []byte) name {
	a := int32(len(p.arena))
	p.arena = append(p.arena, key...)
	k := span{a, int32(len(p.arena))}
	ascii, lower := true, true
	for _, c := range key {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	switch {
	case ascii && lower:
		return name{k, k}
	case ascii:
		f := int32(len(p.arena))
		for _, c := range key {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			p.arena = append(p.arena, c)
		}
		return name{k, span{f, int32(len(p.arena))}}
	}
	f := int32(len(p.arena))
	p.arena = appendFold(p.arena, key)
	return name{k, span{f, int32(len(p.arena))}}
}

// linearKeys is the member count up to which names are compared pairwise;
// larger objects use hash sets.
const linearKeys = 16

type foldSets struct {
	exact, fold map[string]struct{}
}

// checkName rejects nm when it duplicates an earlier name of the object,
// or (unless p.lenient or p.exactKeys) case-folds onto one.
func (p *scanner) checkName(o *objState, nm name, off int) *ParseError {
	prev := p.names[o.nbase:]
	key := p.bytes(nm.key)
	folds := !p.lenient && !p.exactKeys
	if len(prev) < linearKeys {
		// One loop: in an object with no case variants so far, a name
		// that equals an earlier one cannot also fold onto another.
		plain := nm.fold == nm.key // lowercase ASCII: its fold key is itself
		fold := p.bytes(nm.fold)
		for _, q := range prev {
			qk := p.bytes(q.key)
			if string(qk) == string(key) {
				return p.fail(ErrDuplicateKey, off, "duplicate member "+quoteKey(string(key)))
			}
			if !folds || plain && q.fold == q.key {
				continue
			}
			if string(p.bytes(q.fold)) == string(fold) {
				return p.fail(ErrCaseVariantKey, off, "member "+quoteKey(string(key))+" is a case variant of "+quoteKey(string(qk)))
			}
		}
		return nil
	}
	s := o.sets
	if s == nil {
		s = &foldSets{
			exact: make(map[string]struct{}, 2*len(prev)),
			fold:  make(map[string]struct{}, 2*len(prev)),
		}
		for _, q := range prev {
			s.exact[string(p.bytes(q.key))] = struct{}{}
			s.fold[string(p.bytes(q.fold))] = struct{}{}
		}
		o.sets = s
	}
	if _, ok := s.exact[string(key)]; ok {
		return p.fail(ErrDuplicateKey, off, "duplicate member "+quoteKey(string(key)))
	}
	fold := p.bytes(nm.fold)
	if _, ok := s.fold[string(fold)]; ok && folds {
		return p.fail(ErrCaseVariantKey, off, "member "+quoteKey(string(key))+" is a case variant of another member")
	}
	s.exact[string(key)] = struct{}{}
	s.fold[string(fold)] = struct{}{}
	return nil
}

// variantOf returns the protocol member (from names, all lowercase ASCII)
// that nm case-folds onto without being it, or "".
func (p *scanner) variantOf(nm name, names []string) string {
	key, fold := p.bytes(nm.key), p.bytes(nm.fold)
	for _, n := range names {
		if string(key) != n && string(fold) == n {
			return n
		}
	}
	return ""
}

// Bit masks for scanning eight string bytes at once.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special has the top bit set of each byte of x (little-endian) that is
// '"', '\\' or below 0x20, and possibly of bytes above the first such one
// (a borrow), never below it.
func special(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	// A byte is zero in q or b, or below 0x20 in x: (v - 0x01..) & ^v & 0x80..
	// finds zero bytes; x - 0x20.. & ^x finds bytes below 0x20 (bytes of
	// 0x80 and above never match, since ^x clears their top bit).
	return ((q-lsb)&^q | (b-lsb)&^b | (x-lsb*0x20)&^x) & msb
}

// hasSpecial reports whether s has a '"', '\\' or control byte.
func hasSpecial(s []byte) bool {
	for _, c := range s {
		if c == '"' || c == '\\' || c < 0x20 {
			return true
		}
	}
	return false
}

// specialOrHigh reports whether any byte of x is '"', '\\', below 0x20 or
// above 0x7F (the start of a UTF-8 sequence to validate).
func specialOrHigh(x uint64) bool { return specialMask(x) != 0 }

// specialMask has the top bit set of each byte of x (little-endian) that
// is '"', '\\', below 0x20 or above 0x7F, and possibly of bytes above the
// first such one (a borrow), never below it: the lowest set bit locates
// the first.
func specialMask(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b | (x - lsb*0x20) | x) & msb
}

// runeLen returns the length of the valid UTF-8 sequence that starts at
// in[i] (a byte above 0x7F), or 0 when it is invalid or truncated: no
// overlong form, no surrogate, nothing above U+10FFFF (RFC 3629).
func runeLen(in []byte, i int) int {
	c := in[i]
	switch {
	case c < 0xC2:
		return 0
	case c < 0xE0:
		if i+1 < len(in) && in[i+1]&0xC0 == 0x80 {
			return 2
		}
	case c < 0xF0:
		if i+2 < len(in) {
			lo, hi := byte(0x80), byte(0xBF)
			if c == 0xE0 {
				lo = 0xA0
			} else if c == 0xED {
				hi = 0x9F
			}
			if b := in[i+1]; b >= lo && b <= hi && in[i+2]&0xC0 == 0x80 {
				return 3
			}
		}
	case c < 0xF5:
		if i+3 < len(in) {
			lo, hi := byte(0x80), byte(0xBF)
			if c == 0xF0 {
				lo = 0x90
			} else if c == 0xF4 {
				hi = 0x8F
			}
			if b := in[i+1]; b >= lo && b <= hi && in[i+2]&0xC0 == 0x80 && in[i+3]&0xC0 == 0x80 {
				return 4
			}
		}
	}
	return 0
}

// skipRunes moves past the valid multi-byte UTF-8 sequences from in[i] on
// and returns where they stop: at an ASCII byte, at the end, or at an
// invalid sequence. Two- and three-byte sequences (Latin, Cyrillic, CJK)
// are matched four bytes at a time.
func skipRunes(in []byte, i int) int {
	for i+4 <= len(in) {
		x := binary.LittleEndian.Uint32(in[i:])
		switch {
		case x&0xC0C0F0 == 0x8080E0: // 1110xxxx 10xxxxxx 10xxxxxx
			if c, b := byte(x), byte(x>>8); c == 0xE0 && b < 0xA0 || c == 0xED && b > 0x9F {
				return i // overlong or surrogate
			}
			i += 3
		case x&0xC0E0 == 0x80C0 && byte(x) >= 0xC2: // 110xxxxx 10xxxxxx
			i += 2
		case byte(x) < 0x80:
			return i
		default:
			n := runeLen(in, i)
			if n == 0 {
				return i
			}
			i += n
		}
	}
	for i < len(in) && in[i] >= 0x80 {
		n := runeLen(in, i)
		if n == 0 {
			return i
		}
		i += n
	}
	return i
}

// scanString scans the string at p.pos (the opening quote) and returns it
// decoded, aliasing the input when it has no escapes (esc false), else
// p.str. It must be UTF-8; control characters must be escaped; a \u
// escape must not leave a lone surrogate; the decoded length is bounded by
// MaxStringLen. ASCII is read eight bytes at a time, other text a
// sequence at a time, each byte once.
func (p *scanner) scanString() (s []byte, esc bool, err *ParseError) {
	return p.scanStringKeep(true)
}

// scanStringKeep is scanString; keep false checks a string with escapes
// without decoding it (s is then nil), for a value that is only written
// out when its source text is already its RFC 8785 form (p.rawJCS).
func (p *scanner) scanStringKeep(keep bool) (s []byte, esc bool, err *ParseError) {
	start := p.pos
	in := p.in
	i := start + 1
	max := p.lim.MaxStringLen
	for i < len(in) {
		if i+8 <= len(in) {
			m := specialMask(binary.LittleEndian.Uint64(in[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first byte to look at
		}
		if i-start-1 > max {
			return nil, false, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		c := in[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.rawJCS = true
			return in[start+1 : i], false, nil
		case c >= 0x80:
			j := skipRunes(in, i)
			if j == i {
				return nil, false, p.fail(ErrInvalidUTF8, i, "invalid UTF-8")
			}
			i = j
		case c == '\\':
			s, err := p.scanEscaped(start, i, keep)
			return s, true, err
		case c < 0x20:
			return nil, false, p.fail(ErrSyntax, i, "unescaped control character in string")
		default:
			i++
		}
	}
	if len(in)-start-1 > max {
		return nil, false, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
	}
	return nil, false, p.fail(ErrSyntax, len(in), "unterminated string")
}

// scanEscaped continues scanString from the first backslash at i; keep:
// decode into p.str (else only n, the decoded length, is kept, for the
// same limit checks at the same points).
func (p *scanner) scanEscaped(start, i int, keep bool) ([]byte, *ParseError) {
	max := p.lim.MaxStringLen
	in := p.in
	var buf []byte
	if keep {
		buf = append(p.str[:0], in[start+1:i]...)
	}
	n := i - start - 1 // decoded length so far
	raw := true        // every escape so far is the one RFC 8785 writes
	put := func(b ...byte) {
		if keep {
			buf = append(buf, b...)
		}
		n += len(b)
	}
	for i < len(in) {
		if n > max {
			return nil, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
		}
		// Copy a run of up to eight plain ASCII bytes at once while it
		// stays within the limit, so the check above sees the same
		// lengths.
		if i+8 <= len(in) {
			if l := bits.TrailingZeros64(specialMask(binary.LittleEndian.Uint64(in[i:]))) >> 3; l > 0 && n+l <= max {
				put(in[i : i+l]...)
				i += l
				continue
			}
		}
		c := in[i]
		switch {
		case c == '"':
			p.pos = i + 1
			if keep {
				p.str = buf[:0]
			}
			p.rawJCS = raw
			return buf, nil
		case c >= 0x80:
			if j := skipRunes(in, i); j > i && n+j-i <= max {
				put(in[i:j]...)
				i = j
				continue
			}
			r := runeLen(in, i)
			if r == 0 {
				return nil, p.fail(ErrInvalidUTF8, i, "invalid UTF-8")
			}
			for k := range r { // byte by byte near the limit, checked as above
				if k > 0 && n > max {
					return nil, p.fail(ErrStringTooLong, start, "string longer than "+strconv.Itoa(max)+" bytes")
				}
				put(in[i+k])
			}
			i += r
			continue
		case c < 0x20:
			return nil, p.fail(ErrSyntax, i, "unescaped control character in string")
		case c != '\\':
			put(c)
			i++
			continue
		}
		if i+1 >= len(in) {
			return nil, p.fail(ErrSyntax, i, "unterminated escape")
		}
		e := in[i+1]
		switch e {
		case '"', '\\':
			put(e)
		case '/':
			put(e)
			raw = false
		case 'b':
			put('\b')
		case 'f':
			put('\f')
		case 'n':
			put('\n')
		case 'r':
			put('\r')
		case 't':
			put('\t')
		case 'u':
			r, ok := hex4(in, i+2)
			if !ok {
				return nil, p.fail(ErrSyntax, i, "invalid \\u escape")
			}
			w := 6
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00: // high surrogate
				r2, ok2 := rune(0), false
				if i+12 <= len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
					r2, ok2 = hex4(in, i+8)
				}
				if !ok2 || r2 < 0xDC00 || r2 > 0xDFFF {
					return nil, p.fail(ErrInvalidUTF8, i, "lone high surrogate in \\u escape")
				}
				r = utf16.DecodeRune(r, r2)
				w = 12
			case utf16.IsSurrogate(r):
				return nil, p.fail(ErrInvalidUTF8, i, "lone low surrogate in \\u escape")
			}
			// RFC 8785 writes \u00xx, lowercase, only for the controls
			// that have no short escape.
			raw = raw && r < 0x20 && r != '\b' && r != '\t' && r != '\n' && r != '\f' && r != '\r' &&
				in[i+2] == '0' && in[i+3] == '0' && (in[i+5] < 'A' || in[i+5] > 'F')
			if keep {
				buf = utf8.AppendRune(buf, r)
			}
			n += utf8.RuneLen(r)
			i += w
			continue
		default:
			return nil, p.fail(ErrSyntax, i, "invalid escape")
		}
		i += 2
	}
	return nil, p.fail(ErrSyntax, len(in), "unterminated string")
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

// appendJCSBytes appends a decoded string s as an RFC 8785 string. esc
// false promises s has no '"', '\' or control character (it came from
// the input without escapes), so it is copied as is.
func appendJCSBytes(dst, s []byte, esc bool) []byte {
	dst = append(dst, '"')
	if !esc {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	return appendJCSEscaped(dst, s)
}

// appendJCSEscaped appends s (valid UTF-8) with RFC 8785's escapes and the
// closing quote.
func appendJCSEscaped(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	last := 0
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) {
			if m := special(binary.LittleEndian.Uint64(s[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		var e string
		switch {
		case c == '"':
			e = `\"`
		case c == '\\':
			e = `\\`
		case c == '\b':
			e = `\b`
		case c == '\t':
			e = `\t`
		case c == '\n':
			e = `\n`
		case c == '\f':
			e = `\f`
		case c == '\r':
			e = `\r`
		case c < 0x20:
			dst = append(dst, s[last:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			last = i + 1
			continue
		default:
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, e...)
		last = i + 1
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}

// number scans a number by the RFC 8259 grammar
//
//	-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
//
// and, unless exempt, rejects it when its exact decimal value differs from
// the value of its RFC 8785 serialization; w: append that serialization.
// The one pass over the literal also reads its significant digits into an
// integer (decimal), so that the usual number, already in its RFC 8785
// form, is copied as it is, and the others are compared as integers.
func (p *scanner) number(exempt, w bool) *ParseError {
	in := p.in
	off := p.pos
	i := off
	var d decimal
	if in[i] == '-' {
		d.neg = true
		i++
	}
	if i >= len(in) || in[i] < '0' || in[i] > '9' {
		return p.fail(ErrSyntax, i, "invalid number")
	}
	intStart := i
	intDigits := 0 // digits of the integer part, unless it is "0"
	if in[i] == '0' {
		i++
	} else {
		j := digitsEnd(in, i)
		intDigits, i = j-i, j
	}
	intEnd := i
	fracEnd := i
	fracSig := i // the fraction's digits from its first significant one (after lead zeros)
	lead := 0    // fraction zeros before the first significant digit
	if i < len(in) && in[i] == '.' {
		i++
		j := digitsEnd(in, i)
		if j == i {
			return p.fail(ErrSyntax, i, "invalid number: no digits after '.'")
		}
		a := i
		if intDigits == 0 {
			for a < j && in[a] == '0' {
				a++
			}
			lead = a - i
		}
		i, fracEnd, fracSig = j, j, a
	}
	expOff := i
	exp, bigExp := 0, false
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		negExp := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			negExp = in[i] == '-'
			i++
		}
		s := i
		for ; i < len(in) && in[i] >= '0' && in[i] <= '9'; i++ {
			if exp = exp*10 + int(in[i]-'0'); exp > 1000 {
				exp, bigExp = 1000, true
			}
		}
		if i == s {
			return p.fail(ErrSyntax, i, "invalid number: no exponent digits")
		}
		if negExp {
			exp = -exp
		}
	}
	p.pos = i
	lit := in[off:i]
	if exempt {
		return nil // only used as an id, byte for byte
	}
	if expOff == i {
		if fracEnd == intEnd {
			if nsig := intDigits; nsig <= exactDigits || nsig == 16 && string(in[intEnd-16:intEnd]) <= "9007199254740992" {
				// Integers up to 2^53 are exact doubles and ES6 prints them
				// unchanged; only "-0" becomes "0".
				if w {
					if nsig == 0 {
						p.out = append(p.out, '0')
					} else {
						p.out = append(p.out, lit...)
					}
				}
				return nil
			}
		} else if frac := fracEnd - intEnd - 1; in[fracEnd-1] != '0' && (intDigits > 0 && intDigits+frac <= exactDigits || intDigits == 0 && frac-lead <= exactDigits && lead < 6) {
			// A decimal of at most 15 significant digits, the last of its
			// fraction not zero, no exponent, and at least 1e-6: as below
			// (its value is that of its RFC 8785 form), and already laid
			// out as ES6 prints it (es6Layout), so copied as it is.
			if w {
				p.out = append(p.out, lit...)
			}
			return nil
		}
	}
	// The significant digits, read only now: the usual integer above
	// needs none of them.
	var acc digitAcc
	if intDigits > 0 {
		acc.add(in, intStart, intEnd)
	}
	if fracEnd > intEnd {
		acc.add(in, fracSig, fracEnd)
	}
	if acc.m == 0 && !acc.over { // zero: its RFC 8785 form is 0
		if w {
			p.out = append(p.out, '0')
		}
		return nil
	}
	d.m, d.k = acc.trim()
	d.n = intDigits - lead + exp
	ok := !acc.over && d.k <= maxDigits && !bigExp
	if ok && d.k <= exactDigits && d.n > -290 && d.n < 290 {
		// With at most 15 significant digits (DBL_DIG) in that range, the
		// shortest decimal that round-trips the nearest double is lit's own
		// digits: lit is exactly the value of its RFC 8785 form, and only
		// the layout of the digits can change.
		if w {
			p.out = d.appendCanonical(p.out, lit, intEnd-off, fracEnd-off, expOff-off, lead)
		}
		return nil
	}
	if p.lenient {
		return p.numberLenient(lit, off, w)
	}
	f, exact := 0.0, false
	if ok {
		if f, exact = d.float(); !exact {
			f, exact = eiselLemire(d.m, d.n-d.k, d.neg)
		}
	}
	if !exact {
		var err error
		if f, err = strconv.ParseFloat(string(lit), 64); err != nil { // out of range: ±Inf has no JSON form
			return p.fail(ErrNonCanonicalNumber, off, "number out of the IEEE 754 double range")
		}
	}
	// The RFC 8785 form of f has the shortest digits that round-trip f
	// (at most 17). lit denotes exactly that value only if it has the same
	// digits and exponent; a literal of more than 17 significant digits,
	// or one that rounded to zero, never does.
	var s decimal
	s.shortest(f)
	if !ok || d != s {
		return p.fail(ErrNonCanonicalNumber, off, "number is not exactly representable as an IEEE 754 double")
	}
	if w { // d is s: lit has its digits
		p.out = d.appendCanonical(p.out, lit, intEnd-off, fracEnd-off, expOff-off, lead)
	}
	return nil
}

// numberLenient is number's path for the RFC 8785 test vectors (lenient):
// any literal in the double range, written as RFC 8785 prints its nearest
// double.
func (p *scanner) numberLenient(lit []byte, off int, w bool) *ParseError {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil { // out of range: ±Inf has no JSON form
		return p.fail(ErrNonCanonicalNumber, off, "number out of the IEEE 754 double range")
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return p.fail(ErrNonCanonicalNumber, off, "number has no RFC 8785 form")
	}
	if w {
		p.out = append(p.out, text...)
	}
	return nil
}

// exactDigits is DBL_DIG: every decimal of at most 15 significant digits
// (within the normal range) survives a round trip through a double.
const exactDigits = 15

// maxDigits is the most significant digits the shortest round-trip form
// of a double has.
const maxDigits = 17

// decimal is a number literal of at most 17 significant digits (the most a
// shortest round-trip form of a double has), as ±0.d₁d₂…d_k × 10^n
// (ES6 Number::toString's s, k and n), the digits as the integer m.
type decimal struct {
	neg bool
	m   uint64 // the k significant digits, the last non-zero; 0 for zero
	k   int
	n   int
}

// digitAcc reads the significant digits of a literal, run by run: the
// first 19 into m (trailing zeros included), over when a non-zero digit
// lies past them.
type digitAcc struct {
	m    uint64
	nsig int // significant digits so far (m holds min(nsig, 19) of them)
	over bool
}

// accDigits is how many decimal digits a uint64 always holds.
const accDigits = 19

// add appends the digits in[a:b] (the first a significant one, unless
// nsig is 0 and in[a] is the integer part's first digit), eight at a time.
func (acc *digitAcc) add(in []byte, a, b int) {
	n := acc.nsig
	acc.nsig += b - a
	m := acc.m
	if l := b - a; l <= 8 && a+8 <= len(in) && n+l <= accDigits {
		// The usual run: one load, the bytes past it shifted out (they
		// read as leading zeros).
		x := binary.LittleEndian.Uint64(in[a:]) << (64 - 8*l)
		acc.m = m*pow10u[l] + eightDigitsWord(x)
		return
	}
	for ; a+8 <= b && n+8 <= accDigits; a, n = a+8, n+8 {
		m = m*1e8 + eightDigits(in[a:])
	}
	for ; a < b && n < accDigits; a, n = a+1, n+1 {
		m = m*10 + uint64(in[a]-'0')
	}
	acc.m = m
	for ; a < b; a++ { // past 19 digits: only zeros keep the value exact
		if in[a] != '0' {
			acc.over = true
			return
		}
	}
}

// trim returns m without its trailing zeros and its digit count (for
// nsig > 19, over false, the dropped digits were zeros).
func (acc *digitAcc) trim() (m uint64, k int) {
	if acc.m%10 != 0 {
		return acc.m, min(acc.nsig, accDigits)
	}
	m, z := trimZeros(acc.m)
	return m, min(acc.nsig, accDigits) - z
}

// digitsEnd returns the end of the run of ASCII digits at in[i:], eight
// bytes at a time.
func digitsEnd(in []byte, i int) int {
	for i+8 <= len(in) {
		x := binary.LittleEndian.Uint64(in[i:])
		t := x &^ msb
		// Top bit of each byte that is above '9' (t + 0x46 > 0x7F), below
		// '0' (0xAF - t > 0x7F) or not ASCII; no byte carries or borrows
		// into the next, since t <= 0x7F.
		m := ((t + lsb*0x46) | (lsb*0xAF - t) | x) & msb
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(in) && in[i] >= '0' && in[i] <= '9' {
		i++
	}
	return i
}

// eightDigits returns the value of the eight ASCII digits b[:8], the
// first the most significant, with three multiplications (SWAR).
func eightDigits(b []byte) uint64 { return eightDigitsWord(binary.LittleEndian.Uint64(b)) }

// eightDigitsWord is eightDigits of the bytes of v, little-endian; a zero
// byte reads as the digit 0.
func eightDigitsWord(v uint64) uint64 {
	v = (v & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
	v = (v & 0x00FF00FF00FF00FF) * 6553601 >> 16
	return (v & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
}

// pow10f are the powers of ten that doubles hold exactly.
var pow10f = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float returns the double nearest d when it can be had exactly with one
// IEEE 754 operation (Clinger's fast path, as strconv takes it: digits
// below 2^53 and a power of ten of at most 22); exact false otherwise.
func (d *decimal) float() (f float64, exact bool) {
	e := d.n - d.k
	if d.m > 1<<53 || e < -22 || e > 22 {
		return 0, false
	}
	f = float64(d.m)
	if e < 0 {
		f /= pow10f[-e]
	} else {
		f *= pow10f[e]
	}
	if d.neg {
		f = -f
	}
	return f, true
}

// shortest sets d to the shortest decimal that round-trips f (finite,
// nonzero or zero), as strconv and RFC 8785 choose it.
func (d *decimal) shortest(f float64) {
	*d = decimal{}
	if f == 0 {
		return
	}
	d.neg = f < 0
	q, e := shortestDigits(f)
	d.m, d.k = q, digitCount(q)
	d.n = d.k + e
}

// es6Layout reports whether lit (read by parse into d, at most 15
// significant digits) is already laid out as appendES6 prints d: no
// exponent, no trailing zero in a fraction, not zero, and a magnitude
// ES6 prints without an exponent (1e-6 <= |lit| < 1e21).
func (d *decimal) es6Layout(lit []byte, intEnd, fracEnd, expOff int) bool {
	return expOff == len(lit) && (fracEnd == intEnd || lit[fracEnd-1] != '0') &&
		d.k > 0 && d.n > -6 && d.n <= 21
}

// appendCanonical appends d, read from lit (its integer part ending at
// intEnd, its fraction at fracEnd after lead zeros, its exponent at
// expOff), in its RFC 8785 form: lit itself when es6Layout says so, else
// appendES6 of lit's digits.
func (d *decimal) appendCanonical(dst, lit []byte, intEnd, fracEnd, expOff, lead int) []byte {
	if d.es6Layout(lit, intEnd, fracEnd, expOff) {
		return append(dst, lit...)
	}
	ip := lit[:intEnd]
	if d.neg {
		ip = ip[1:]
	}
	var digits []byte
	switch {
	case ip[0] == '0': // 0.000ddd
		digits = lit[intEnd+1+lead:][:d.k]
	case len(ip) >= d.k:
		digits = ip[:d.k]
	default:
		var buf [maxDigits]byte
		n := copy(buf[:], ip)
		copy(buf[n:d.k], lit[intEnd+1:])
		digits = buf[:d.k]
	}
	return d.appendES6(dst, digits)
}

// appendES6 appends d, whose k significant digits are s, as ECMAScript's
// Number::toString prints it (RFC 8785 section 3.2.2.3).
func (d *decimal) appendES6(dst, s []byte) []byte {
	if d.k == 0 {
		return append(dst, '0')
	}
	if d.neg {
		dst = append(dst, '-')
	}
	k, n := d.k, d.n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, s...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, s[:n]...)
		dst = append(dst, '.')
		dst = append(dst, s[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	default:
		dst = append(dst, s[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, s[1:]...)
		}
		e, sign := n-1, byte('+')
		if e < 0 {
			e, sign = -e, '-'
		}
		dst = append(dst, 'e', sign) // |e| <= 324
		switch {
		case e >= 100:
			dst = append(dst, byte('0'+e/100), byte('0'+e/10%10), byte('0'+e%10))
		case e >= 10:
			dst = append(dst, byte('0'+e/10), byte('0'+e%10))
		default:
			dst = append(dst, byte('0'+e))
		}
	}
	return dst
}

// digestLen is the length of a digest: "sha256:" and 64 hex digits.
const digestLen = len("sha256:") + 2*sha256.Size

// digestOf returns "sha256:" + lowercase hex of sum.
func digestOf(sum [sha256.Size]byte) string {
	var b [digestLen]byte
	return string(appendDigest(b[:0], sum))
}

// appendDigest appends "sha256:" + lowercase hex of sum to dst.
func appendDigest(dst []byte, sum [sha256.Size]byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, "sha256:"...)
	for _, c := range sum {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xF])
	}
	return dst
}
