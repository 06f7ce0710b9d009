package mcpparse

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// This file holds the RFC 8785 output: object members put in UTF-16 code
// unit order (sortMembers, emit), strings written with RFC 8785's escapes,
// and the "sha256:" digest text.

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
