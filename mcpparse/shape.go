package mcpparse

import (
	"encoding/binary"
	"math/bits"
)

// This file holds the shape cache: the member names of the last object
// completed at each depth, so that an object repeating them (arrays of
// objects) skips the name scan, the duplicate checks and the sort.

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
