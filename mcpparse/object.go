package mcpparse

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// This file holds the scanner's objects: opening and closing one, member
// names (scanned, copied to the arena with their case-fold key, checked
// for duplicates and case variants) and object itself. The shape cache
// that lets repeated objects skip those checks is in shape.go; the RFC 8785
// member order is in jcs.go.

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
