// Package sse frames a text/event-stream (HTML Living Standard, "Server-sent
// events", section 9.2.6 "Interpreting an event stream") incrementally, for a
// proxy that must rewrite some events and pass every other one byte for byte.
//
// It reads a stream as each MCP SDK client family does and reports every
// event with the three readings, so a caller never passes an event one client
// would read differently from what the caller inspected:
//
//   - TS, the TypeScript SDK 1.x (modelcontextprotocol/typescript-sdk:
//     src/client/streamableHttp.ts pipes the body through TextDecoderStream
//     into eventsource-parser ^3's EventSourceParserStream,
//     rexxars/eventsource-parser:src/parse.ts): the decoder strips a UTF-8
//     BOM (EF BB BF) at the start of the stream; feed then strips the
//     characters U+00EF U+00BB U+00BF (the BOM's bytes read as Latin-1, in
//     UTF-8 C3 AF C2 BB C2 BF: a "mojibake BOM") from the start of the first
//     chunk it is fed, and only there (3.0.6: newChunk.replace(/^\xEF\xBB\xBF/, ...)
//     while isFirstChunk; 3.1: three charCodeAt tests); lines end at CR, LF
//     or CRLF, a field value loses one leading space, data lines are joined
//     with LF, an event is dispatched at a blank line when it has a data
//     line; an event without its blank line at the end of the stream is
//     dropped (EventSourceParserStream has no flush).
//   - Go, the Go SDK (github.com/modelcontextprotocol/go-sdk v1.8.0,
//     mcp/event.go scanEventsLimited): lines end at LF, trailing CR and LF
//     bytes are trimmed, no BOM handling (a BOM is part of the first field
//     name), a line without ':' breaks the stream, field values are
//     bytes.TrimSpace'd, an event that is not empty is dispatched at a blank
//     line and at the end of the stream.
//   - Py, the Python SDK 1.x (modelcontextprotocol/python-sdk:
//     src/mcp/client/streamable_http.py _handle_sse_event and sse.py, over
//     httpx-sse >=0.4 and httpx >=0.27.1): httpx decodes the body as UTF-8
//     with errors="replace" and keeps a BOM, as U+FEFF in the first field
//     name (encode/httpx:httpx/_decoders.py TextDecoder); httpx-sse 0.4.0 and
//     0.4.1 take lines from Response.aiter_lines, httpx's LineDecoder, which
//     ends lines as str.splitlines does: at CR, LF, CRLF and also at VT, FF,
//     FS, GS, RS (0B, 0C, 1C-1E), NEL (C2 85), U+2028 (E2 80 A8) and U+2029
//     (E2 80 A9); from 0.4.2 its SSELineDecoder ends them at CR, LF, CRLF only
//     (florimondmanca/httpx-sse:src/httpx_sse/_api.py aiter_sse,
//     _decoders.py). SSEDecoder.decode drops one leading space of a value and
//     dispatches at a blank line when any of event, data, retry (a value
//     int() takes) or the last event id is set; it never resets the last
//     event id, which every later event carries. An event without its blank
//     line at the end of the stream is not dispatched. The client parses a
//     dispatched event as a JSON-RPC message when its event is "message"
//     (the default) and its data is not empty.
//
// Py is the pre-0.4.2 reading: where the two httpx-sse readings differ, it
// is the one that differs from TS. The 0.4.2 reading reads TS's data except
// in the stream's first line after a BOM, which it ignores as Go does.
//
// Events are framed by the TS reading (CR, LF, CRLF). An event is Ambiguous
// when the clients do not read its bytes as the same events, or when TS's
// reading of them is not decided by the bytes:
//
//   - it holds a CR not followed by LF (a "bare CR"), which ends a line for
//     TS and Py but not for Go;
//   - Py dispatches an event at a blank line made of Python-only line ends
//     before the end of the event TS frames;
//   - a mojibake BOM opens the stream and stripping it changes TS's reading:
//     feed strips it only when the first string TextDecoderStream yields
//     from the client's reads holds all three characters.
//
// A filtering caller must not pass an Ambiguous event that holds data.
// Outside such events the framings agree.
//
// What it does not do: it does not decode UTF-8 (data is bytes, as the Go SDK
// keeps it; TypeScript and Python replace invalid UTF-8 with U+FFFD), and it
// interprets no field but event, data, id and, for Py's dispatch, retry
// (unknown fields are left in Raw). It models eventsource-parser 3, not 4
// (which also strips a U+FEFF character opening the first chunk), and
// httpx-sse, not the parser of httpx2 that the Python SDK 2.x uses.
package sse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxEvent is the default cap on one event's raw bytes (4 MiB), below
// the Go SDK client's 16 MiB (mcp/event.go DefaultMaxEventSize).
const DefaultMaxEvent = 4 << 20

// ErrEventTooLarge is returned when an event grows past the cap before its
// blank line. The stream cannot be framed any further: fail closed.
var ErrEventTooLarge = errors.New("sse: event larger than the cap")

// bom is the UTF-8 byte order mark; mojibakeBOM is U+00EF U+00BB U+00BF in
// UTF-8, the BOM's three bytes read as Latin-1 characters.
const (
	bom         = "\xef\xbb\xbf"
	mojibakeBOM = "\xc3\xaf\xc2\xbb\xc2\xbf"
)

// View is one client family's reading of an event.
type View struct {
	// Dispatched reports that this client delivers the event to its
	// message handler's level (TS: at least one data line; Go: not all of
	// name, id, data empty; Py: any of name, data lines, retry, last id).
	Dispatched bool
	Name       string // the event field; "" when absent
	// ID is the id field; "" when absent. Py's is the last event id of the
	// stream so far, which Python keeps from earlier events.
	ID string
	// Data is the data lines joined with LF: a copy of the event's bytes,
	// valid after the callback returns. Views with equal data share one
	// copy (capped at its length): treat Data as read-only.
	Data []byte
	// Broken reports (Go only) a line without ':', on which the Go client
	// stops reading the stream.
	Broken bool

	needsData bool // Py: an event with empty data is not a message
}

// Message reports whether the client reads this event as a JSON-RPC
// message: dispatched, unnamed or named "message", and for Py with data
// (the Python client skips an empty one as a priming event).
func (v *View) Message() bool {
	return v.Dispatched && !v.Broken && (v.Name == "" || v.Name == "message") &&
		(!v.needsData || len(v.Data) > 0)
}

// Event is one framed event.
type Event struct {
	// Raw is the event's bytes exactly as received, its terminating blank
	// line included (and a leading BOM, for the first event). It is valid
	// until the next call to Write or Close.
	Raw []byte
	// TS, Go and Py are the three client readings (package doc). Py is
	// httpx-sse's reading before 0.4.2 (str.splitlines line ends).
	TS, Go, Py View
	// Ambiguous reports that the clients frame Raw into different events
	// (a bare CR; a Python-only blank line at which Py dispatches before
	// Raw's end) or that TS's reading depends on the client's chunking (a
	// mojibake BOM opening the stream): the views must not be trusted, and
	// a filtering caller must not pass Raw when it holds data. When Py
	// dispatches more than once in Raw, Py is the first of its events.
	Ambiguous bool
	// Unterminated reports an event ended by the end of the stream, with no
	// blank line (Go dispatches it, TypeScript drops it; Py dispatches it
	// only when its last line is blank for Python).
	Unterminated bool
	// First reports the stream's first event (the only one a BOM may open).
	First bool
}

// Framer splits a stream into events as chunks arrive. The zero value is
// not ready: use New. A Framer is not safe for concurrent use.
type Framer struct {
	max     int
	buf     []byte // the bytes taken and not released: buf[off:] is the current event so far
	off     int    // start of the current event in buf (buf is compacted after each Write)
	scan    int    // buf[:scan] is made of complete lines
	line    int    // start of the line being scanned
	bareCR  bool   // the current event holds a bare CR
	lineOne bool   // the line being scanned is the stream's first
	first   bool   // the current event is the stream's first
	pyID    string // Python's last event id, kept across events
	ev      Event
}

// New returns a Framer capping each event at max bytes (DefaultMaxEvent
// when max <= 0).
func New(max int) *Framer {
	if max <= 0 {
		max = DefaultMaxEvent
	}
	return &Framer{max: max, first: true, lineOne: true}
}

// Write frames chunk, calling fn for each event it completes, in order. An
// error from fn stops framing and is returned. ErrEventTooLarge is returned
// once the pending event passes the cap; the Framer must not be used after
// an error.
func (f *Framer) Write(chunk []byte, fn func(*Event) error) error {
	f.buf = append(f.buf, chunk...)
	defer f.compact()
	for {
		end, blank, ok := f.nextLine(false)
		if !ok {
			break
		}
		if blank {
			if err := f.emit(end, false, fn); err != nil {
				return err
			}
		}
	}
	if len(f.buf)-f.off > f.max {
		return ErrEventTooLarge
	}
	return nil
}

// compact drops the released bytes from buf, once per Write rather than
// once per event (a chunk of many small events would be moved as often).
func (f *Framer) compact() {
	if f.off == 0 {
		return
	}
	n := copy(f.buf, f.buf[f.off:])
	f.buf = f.buf[:n]
	f.scan -= f.off
	f.line -= f.off
	f.off = 0
}

// Close ends the stream: the bytes left (an event without its blank line,
// or a lone partial line) are reported as one Unterminated event unless
// they are empty. Close returns fn's error or nil.
func (f *Framer) Close(fn func(*Event) error) error {
	defer f.compact()
	for {
		end, blank, ok := f.nextLine(true)
		if !ok {
			break
		}
		if blank {
			// A CR that ends the stream never ends a TypeScript line: the
			// parser waits for a possible LF that never comes.
			if err := f.emit(end, end == len(f.buf) && f.buf[end-1] == '\r', fn); err != nil {
				return err
			}
		}
	}
	if len(f.buf) == f.off {
		return nil
	}
	if len(f.buf)-f.off > f.max {
		return ErrEventTooLarge
	}
	return f.emit(len(f.buf), true, fn)
}

// nextLine advances over the next complete line of buf. It reports the
// offset after the line's terminator and whether the line was blank for
// TS (the stream's first line also when it is only a BOM, a mojibake BOM
// or both); ok is false when no complete line is left. A CR at the very end
// of buf waits for the next byte (it may be half of CRLF) unless final.
func (f *Framer) nextLine(final bool) (end int, blank, ok bool) {
	rest := f.buf[f.scan:]
	i := indexLineEnd(rest)
	if i < 0 {
		f.scan = len(f.buf)
		return 0, false, false
	}
	i += f.scan
	end = i + 1
	if f.buf[i] == '\r' {
		switch {
		case i+1 < len(f.buf) && f.buf[i+1] == '\n':
			end = i + 2
		case i+1 < len(f.buf) || final:
			f.bareCR = true
		default:
			f.scan = i
			return 0, false, false
		}
	}
	blank = i == f.line || f.lineOne && onlyBOMs(f.buf[f.line:i])
	f.lineOne = false
	f.scan, f.line = end, end
	return end, blank, true
}

// indexLineEnd returns the index of the first CR or LF in b, or -1: two
// IndexByte scans, the one for CR bounded by the first LF, rather than
// bytes.IndexAny's byte-at-a-time loop.
func indexLineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	end := lf
	if lf < 0 {
		end = len(b)
	}
	if cr := bytes.IndexByte(b[:end], '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// onlyBOMs reports whether s is what TS strips from the stream's start.
func onlyBOMs(s []byte) bool {
	switch string(s) {
	case bom, mojibakeBOM, bom + mojibakeBOM:
		return true
	}
	return false
}

// emit reports buf[off:end] as an event and releases it.
func (f *Framer) emit(end int, unterminated bool, fn func(*Event) error) error {
	if end-f.off > f.max {
		return ErrEventTooLarge
	}
	raw := f.buf[f.off:end:end]
	f.ev = Event{Raw: raw, Ambiguous: f.bareCR, Unterminated: unterminated, First: f.first}
	f.parse(&f.ev, raw)
	err := fn(&f.ev)
	f.first, f.bareCR = false, false
	f.off, f.scan, f.line = end, end, end
	return err
}

// parse fills ev's three views from raw, one event's bytes, and keeps
// Python's last event id for the next event.
func (f *Framer) parse(ev *Event, raw []byte) {
	ts := raw
	moji := false
	if ev.First {
		ts = bytes.TrimPrefix(ts, []byte(bom))
		if bytes.HasPrefix(ts, []byte(mojibakeBOM)) {
			ts, moji = ts[len(mojibakeBOM):], true
		}
	}
	// Every view's data is at most len(raw) bytes: the three are written
	// to pooled scratch room, then each distinct one is copied out.
	var work, block []byte
	var room *[]byte
	var small [1 << 10]byte
	switch need := 3 * len(raw); {
	case !bytes.Contains(raw, []byte("data")): // no line is a data line
	case need <= len(small):
		work = small[:0]
	default:
		room = scratchPool.Get().(*[]byte)
		if cap(*room) < need {
			*room = make([]byte, 0, need)
		}
		work = (*room)[:0]
	}
	var tsR, goR, pyR reading
	pyR.idStr = f.pyID
	if len(ts) == len(raw) && !hasPyOnlyLineEnd(raw) {
		work = tsPy(&tsR, &pyR, ts, !ev.Unterminated, work)
	} else {
		work = tsR.ts(ts, !ev.Unterminated, work)
		work = pyR.py(raw, work)
	}
	work = goR.goSDK(raw, work)
	if work != nil {
		block = copyData(work, [3]*reading{&tsR, &goR, &pyR})
	}
	if room != nil && cap(*room) <= maxScratch {
		scratchPool.Put(room)
	}
	tsR.view(&ev.TS, ts, block, "", "")
	goR.view(&ev.Go, raw, block, ev.TS.ID, "")
	pyR.view(&ev.Py, raw, block, ev.TS.ID, ev.Go.ID)
	ev.Py.needsData = true
	if pyR.last.set {
		f.pyID = str(raw[pyR.last.off:pyR.last.end], ev.Py.ID, ev.TS.ID)
	}

	if moji && !ev.Ambiguous {
		// The client may feed the parser a first chunk holding only part
		// of the mojibake BOM, which then stays in the first field name.
		var alt reading
		in := raw[len(raw)-len(ts)-len(mojibakeBOM):]
		as := alt.ts(in, !ev.Unterminated, nil)
		var v View
		alt.view(&v, in, as, "", "")
		ev.Ambiguous = (v.Dispatched || ev.TS.Dispatched) && (v.Dispatched != ev.TS.Dispatched ||
			v.Name != ev.TS.Name || v.ID != ev.TS.ID || !bytes.Equal(v.Data, ev.TS.Data))
	}
	ev.Ambiguous = ev.Ambiguous || pyR.inner
}

// scratchPool holds room for the views' data of an event; maxScratch is
// the most room it keeps.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxScratch = 1 << 20

// span locates a name, an id or data in the bytes a reading read, or its
// data in the bytes it appended.
type span struct {
	off, end int
	set      bool
}

// spanOf locates sub, a subslice of b (or empty).
func spanOf(b, sub []byte) span {
	if len(sub) == 0 {
		return span{set: true}
	}
	off := cap(b) - cap(sub)
	return span{off, off + len(sub), true}
}

// reading is one client's reading of an event.
type reading struct {
	name, id, data span
	dispatched     bool
	broken         bool   // Go
	idStr          string // the id when id is not set (Py: the last event id before the event)
	last           span   // Py: the last id line's value, for the next event
	inner          bool   // Py: an event dispatched before the end of the bytes
}

// copyData copies the data the readings appended to s into one block, once
// for readings with equal data, and points their data spans into it.
func copyData(s []byte, rs [3]*reading) []byte {
	var same [3]int // an earlier reading with the same data, or -1
	n := 0
	for i, r := range rs {
		same[i] = -1
		if !r.data.set {
			continue
		}
		d := s[r.data.off:r.data.end]
		for j := range i {
			if o := rs[j].data; o.set && bytes.Equal(s[o.off:o.end], d) {
				same[i] = j
				break
			}
		}
		if same[i] < 0 {
			n += len(d)
		}
	}
	block := make([]byte, 0, n)
	for i, r := range rs {
		switch {
		case !r.data.set:
		case same[i] >= 0:
			r.data = rs[same[i]].data // already in block
		default:
			off := len(block)
			block = append(block, s[r.data.off:r.data.end]...)
			r.data = span{off, len(block), true}
		}
	}
	return block
}

// view fills v from r: b is the input r read, block the data r appended
// to; known strings are reused for an equal name or id.
func (r *reading) view(v *View, b, block []byte, known1, known2 string) {
	v.Dispatched, v.Broken = r.dispatched, r.broken
	if r.name.set {
		v.Name = str(b[r.name.off:r.name.end], known1, known2)
	}
	v.ID = r.idStr
	if r.id.set {
		v.ID = str(b[r.id.off:r.id.end], known1, known2)
	}
	if r.data.set {
		v.Data = block[r.data.off:r.data.end:r.data.end]
	}
}

// str returns b as a string, without allocating when it is "", "message"
// or one of the known strings.
func str(b []byte, known1, known2 string) string {
	switch string(b) {
	case "":
		return ""
	case "message":
		return "message"
	case known1:
		return known1
	case known2:
		return known2
	}
	return string(b)
}

// field splits a line at its first ':' into the field name and the value,
// without the one leading space TS and Py drop.
func field(line []byte) (name, value []byte) {
	c := bytes.IndexByte(line, ':')
	if c < 0 {
		return line, line[len(line):]
	}
	value = line[c+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return line[:c], value
}

// tsLines reads lines as eventsource-parser does (src/parse.ts parseLine,
// processField, dispatchEvent).
type tsLines struct {
	r     *reading
	in    []byte // the bytes read, which spans locate into
	lines int    // data lines
}

// line reads one line that is not blank; it appends data to s.
func (t *tsLines) line(line, s []byte) []byte {
	if line[0] == ':' {
		return s
	}
	name, value := field(line)
	switch string(name) {
	case "event":
		t.r.name = spanOf(t.in, value)
	case "data":
		if t.lines == 0 {
			t.r.data.off = len(s)
		} else {
			s = append(s, '\n')
		}
		s = append(s, value...)
		t.r.data.end = len(s)
		t.lines++
	case "id":
		t.r.id = spanOf(t.in, value)
		if bytes.IndexByte(value, 0) >= 0 {
			t.r.id = span{} // 3.0.6: id = undefined
		}
	}
	return s
}

// end closes the event: TS dispatches it at its blank line when it has
// data.
func (t *tsLines) end(terminated bool) {
	t.r.data.set = t.lines > 0
	t.r.dispatched = t.lines > 0 && terminated
}

// ts reads one event as eventsource-parser does; it appends the data to s.
func (r *reading) ts(b []byte, terminated bool, s []byte) []byte {
	t := tsLines{r: r, in: b}
	for len(b) > 0 {
		i, n := crlfLineEnd(b)
		line := b[:i]
		b = b[i+n:]
		if len(line) == 0 {
			break // the blank line that ends the event
		}
		s = t.line(line, s)
	}
	t.end(terminated)
	return s
}

// tsPy reads one event as ts (into t) and py (into p) do, in one pass: b's
// lines must be the same for both (no Python-only line end, no BOM), and
// Python's data is then TS's.
func tsPy(t, p *reading, b []byte, terminated bool, s []byte) []byte {
	tl := tsLines{r: t, in: b}
	pl := pyLines{r: p, in: b, recording: true, shared: true}
	for len(b) > 0 {
		i, n := crlfLineEnd(b)
		line := b[:i]
		b = b[i+n:]
		pl.line(line, len(b) > 0, nil)
		if len(line) == 0 {
			break
		}
		s = tl.line(line, s)
	}
	tl.end(terminated)
	pl.end()
	p.data = t.data
	return s
}

// goSDK reads one event as go-sdk's scanEventsLimited does; it appends the
// data to s.
func (r *reading) goSDK(b []byte, s []byte) []byte {
	in := b
	hasData := false
	r.data.off = len(s)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var line []byte
		if i < 0 {
			line, b = b, b[len(b):]
		} else {
			line, b = b[:i+1], b[i+1:]
		}
		for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
			line = line[:len(line)-1] // bytes.TrimRight(line, "\r\n")
		}
		if len(line) == 0 {
			break
		}
		before, after, found := bytes.Cut(line, []byte{':'})
		if !found {
			r.broken = true
			break
		}
		value := bytes.TrimSpace(after)
		switch string(before) {
		case "event":
			r.name = spanOf(in, value)
		case "id":
			r.id = spanOf(in, value)
		case "data":
			if hasData {
				s = append(s, '\n')
			}
			s = append(s, value...)
			hasData = true
		}
	}
	r.data.end, r.data.set = len(s), hasData
	r.dispatched = !r.broken && (r.name.end > r.name.off || r.id.end > r.id.off || r.data.end > r.data.off)
	return s
}

// pyStop marks the bytes that may begin a str.splitlines line end in
// UTF-8: LF, VT, FF, CR, FS, GS, RS, and the lead bytes of NEL (C2 85),
// U+2028 (E2 80 A8) and U+2029 (E2 80 A9). In UTF-8 decoded with
// errors="replace" these bytes always decode to those characters: C2 and
// E2 never continue a sequence, so an invalid one before them ends there.
var pyStop = [256]uint8{'\n': 1, '\v': 1, '\f': 1, '\r': 1, 0x1c: 1, 0x1d: 1, 0x1e: 1, 0xc2: 1, 0xe2: 1}

// pyOnly marks the bytes that may begin a str.splitlines line end other
// than CR and LF.
var pyOnly = [256]uint8{'\v': 1, '\f': 1, 0x1c: 1, 0x1d: 1, 0x1e: 1, 0xc2: 1, 0xe2: 1}

// hasPyOnlyLineEnd reports whether b holds a line end of str.splitlines
// that is not CR or LF. It reads eight bytes a step, looking closer only
// at a step holding a byte below 0x20 or above 0x7f.
func hasPyOnlyLineEnd(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if w := binary.LittleEndian.Uint64(b[i:]); (w-lo|w)&hi != 0 && pyOnlyAt(b, i, i+8) {
			return true
		}
	}
	return pyOnlyAt(b, i, len(b))
}

// pyOnlyAt reports whether a line end of str.splitlines other than CR and
// LF starts in b[from:to].
func pyOnlyAt(b []byte, from, to int) bool {
	for j := from; j < to; j++ {
		if pyOnly[b[j]] != 0 {
			if i, n := pyLineEnd(b[j:min(j+3, len(b))]); i == 0 && n > 0 {
				return true
			}
		}
	}
	return false
}

// crlfLineEnd is pyLineEnd for bytes whose only line ends are CR and LF.
func crlfLineEnd(b []byte) (int, int) {
	i := indexLineEnd(b)
	switch {
	case i < 0:
		return len(b), 0
	case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
		return i, 2
	}
	return i, 1
}

// pyLineEnd returns the offset of the first Python line end in b and its
// length; len(b), 0 when there is none.
func pyLineEnd(b []byte) (int, int) {
	i := 0
	for {
		for i+8 <= len(b) && pyStop[b[i]]|pyStop[b[i+1]]|pyStop[b[i+2]]|pyStop[b[i+3]]|
			pyStop[b[i+4]]|pyStop[b[i+5]]|pyStop[b[i+6]]|pyStop[b[i+7]] == 0 {
			i += 8
		}
		for i < len(b) && pyStop[b[i]] == 0 {
			i++
		}
		if i == len(b) {
			return i, 0
		}
		switch b[i] {
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				return i, 2
			}
			return i, 1
		case 0xc2:
			if i+1 < len(b) && b[i+1] == 0x85 {
				return i, 2
			}
		case 0xe2:
			if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xa8 || b[i+2] == 0xa9) {
				return i, 3
			}
		default:
			return i, 1
		}
		i++
	}
}

// pyLines reads lines as httpx-sse's SSEDecoder.decode does.
type pyLines struct {
	r         *reading
	in        []byte // the bytes read, which spans locate into
	name, id  span   // the pending event's field, the last id line's value
	lines     int    // the pending event's data lines
	retry     bool   // the pending event has a retry int() takes
	recording bool   // no event dispatched yet: data is appended
	shared    bool   // the data is TS's: not appended
}

// line reads one line; more reports bytes after it in the event. It
// appends data to s.
func (p *pyLines) line(line []byte, more bool, s []byte) []byte {
	if len(line) == 0 {
		hasID := p.id.set && p.id.end > p.id.off || !p.id.set && p.r.idStr != ""
		if p.name.end > p.name.off || p.lines > 0 || p.retry || hasID {
			if p.recording {
				p.r.dispatched, p.r.name, p.r.id = true, p.name, p.id
				p.r.data.end, p.r.data.set = len(s), p.lines > 0
				p.recording = false
			}
			p.r.inner = p.r.inner || more
		}
		p.name, p.lines, p.retry = span{}, 0, false
		return s
	}
	if line[0] == ':' {
		return s
	}
	name, value := field(line)
	switch string(name) {
	case "event":
		p.name = spanOf(p.in, value)
	case "data":
		if p.recording && !p.shared {
			if p.lines > 0 {
				s = append(s, '\n')
			}
			s = append(s, value...)
		}
		p.lines++
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.id = spanOf(p.in, value)
		}
	case "retry":
		p.retry = p.retry || pyInt(value)
	}
	return s
}

// end closes the event: without a dispatch the view holds the pending
// fields.
func (p *pyLines) end() {
	if p.recording {
		p.r.name, p.r.id = p.name, p.id
		p.r.data.set = p.lines > 0
	}
	p.r.last = p.id
}

// py reads one event as httpx-sse's SSEDecoder.decode does, over the lines
// str.splitlines cuts (httpx LineDecoder); r.idStr is the last event id
// before the event. It appends to s the data of the first event Python
// dispatches in b, or the pending data when none.
func (r *reading) py(b []byte, s []byte) []byte {
	p := pyLines{r: r, in: b, recording: true}
	r.data.off = len(s)
	for len(b) > 0 {
		i, n := pyLineEnd(b)
		line := b[:i]
		b = b[i+n:]
		s = p.line(line, len(b) > 0, s)
	}
	if p.recording {
		r.data.end = len(s)
	}
	p.end()
	return s
}

// pyInt reports whether Python's int(str) takes s (CPython
// Objects/longobject.c PyLong_FromUnicodeObject): whitespace (ASCII, or
// any Unicode space above U+007F), an optional sign, decimal digits (ASCII,
// or any Unicode Nd) with single underscores between them, at most 4,300
// of them (int_max_str_digits), whitespace.
func pyInt(s []byte) bool {
	digits, under := 0, false
	state := 0 // 0 leading space, 1 after the sign, 2 digits, 3 trailing space
	for len(s) > 0 {
		c, n := utf8.DecodeRune(s)
		if n == 1 && c == utf8.RuneError {
			return false
		}
		s = s[n:]
		space := c == ' ' || c == '\t' || c > 0x7f && unicode.IsSpace(c)
		digit := c >= '0' && c <= '9' || c > 0x7f && unicode.Is(unicode.Nd, c)
		switch {
		case space && (state == 0 || state == 3):
		case space && state == 2 && !under:
			state = 3
		case (c == '+' || c == '-') && state == 0:
			state = 1
		case digit && state < 3:
			state, under = 2, false
			digits++
		case c == '_' && state == 2 && !under:
			under = true
		default:
			return false
		}
	}
	return state >= 2 && !under && digits <= 4300
}

// AppendData appends an unnamed event carrying data as one data line,
// with the id line idLine (raw, its terminator excluded; nil for none):
// "id: …\ndata: <data>\n\n". data must not hold CR or LF; AppendData
// replaces each by a space (in JSON they are only ever whitespace).
func AppendData(dst, idLine, data []byte) []byte {
	if len(idLine) > 0 {
		dst = append(dst, idLine...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	for _, c := range data {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, "\n\n"...)
}

// String describes e for test failures.
func (e *Event) String() string {
	return "event{raw=" + strconv.Quote(string(e.Raw)) + "}"
}
