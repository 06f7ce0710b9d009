// Package sse frames a text/event-stream (HTML Living Standard, "Server-sent
// events", section 9.2.6 "Interpreting an event stream") incrementally, for a
// proxy that must rewrite some events and pass every other one byte for byte.
//
// It reads a stream as both MCP SDK client families do and reports each event
// with both readings, so a caller never passes an event one client would read
// differently from what the caller inspected:
//
//   - the TypeScript SDK 1.x (modelcontextprotocol/typescript-sdk:
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
//     dropped (EventSourceParserStream has no flush);
//   - the Go SDK (github.com/modelcontextprotocol/go-sdk v1.8.0, mcp/event.go
//     scanEventsLimited): lines end at LF, trailing CR and LF bytes are
//     trimmed, no BOM handling (a BOM is part of the first field name), a
//     line without ':' breaks the stream, field values are
//     bytes.TrimSpace'd, an event that is not empty is dispatched at a blank
//     line and at the end of the stream.
//
// Events are framed by the first reading (CR, LF, CRLF). An event is
// Ambiguous when the two clients do not read its bytes as the same events,
// or when TypeScript's reading of them is not decided by the bytes:
//
//   - it holds a CR not followed by LF (a "bare CR"), which ends a line for
//     TypeScript but not for Go;
//   - a mojibake BOM opens the stream and stripping it changes TypeScript's
//     reading: feed strips it only when the first string TextDecoderStream
//     yields from the client's reads holds all three characters.
//
// A filtering caller must not pass an Ambiguous event that holds data.
// Outside such events the two framings agree (CRLF and LF end the same
// lines for both).
//
// What it does not do: it does not decode UTF-8 (data is bytes, as the Go SDK
// keeps it; TypeScript decodes lossily), and it interprets no field but
// event, data, id (retry and unknown fields are left in Raw).
package sse

import (
	"bytes"
	"errors"
	"strconv"
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
	// message handler's level (TypeScript: at least one data line; Go: not
	// all of name, id, data empty). A dispatched event with Name "" or
	// "message" is one the MCP client parses as a JSON-RPC message.
	Dispatched bool
	Name       string // the event field; "" when absent
	ID         string // the id field; "" when absent
	// Data is the data lines joined with LF. It aliases nothing: a copy.
	Data []byte
	// Broken reports (Go only) a line without ':', on which the Go client
	// stops reading the stream.
	Broken bool
}

// Message reports whether the client reads this event as a JSON-RPC
// message: dispatched, and unnamed or named "message".
func (v *View) Message() bool {
	return v.Dispatched && !v.Broken && (v.Name == "" || v.Name == "message")
}

// Event is one framed event.
type Event struct {
	// Raw is the event's bytes exactly as received, its terminating blank
	// line included (and a leading BOM, for the first event). It is valid
	// until the next call to Write or Close.
	Raw []byte
	// TS and Go are the two client readings (package doc).
	TS, Go View
	// Ambiguous reports that the clients frame Raw into different events (a
	// bare CR) or that TS's reading depends on the client's chunking (a
	// mojibake BOM opening the stream): the views must not be trusted, and a
	// filtering caller must not pass Raw when it holds data.
	Ambiguous bool
	// Unterminated reports an event ended by the end of the stream, with no
	// blank line (Go dispatches it, TypeScript drops it).
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

// Pending returns the bytes Write took and no event has released yet (the
// pending event, after ErrEventTooLarge): the caller's to pass on when it
// gives up framing. The slice is the Framer's own.
func (f *Framer) Pending() []byte { return f.buf[f.off:] }

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
// offset after the line's terminator and whether the line was blank; ok is
// false when no complete line is left. A CR at the very end of buf waits
// for the next byte (it may be half of CRLF) unless final.
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

// onlyBOMs reports whether s is what TS strips from the stream's start.
func onlyBOMs(s []byte) bool {
	switch string(s) {
	case bom, mojibakeBOM, bom + mojibakeBOM:
		return true
	}
	return false
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

// emit reports buf[off:end] as an event and releases it.
func (f *Framer) emit(end int, unterminated bool, fn func(*Event) error) error {
	if end-f.off > f.max {
		return ErrEventTooLarge
	}
	raw := f.buf[f.off:end:end]
	f.ev = Event{Raw: raw, Ambiguous: f.bareCR, Unterminated: unterminated, First: f.first}
	parse(&f.ev, raw)
	err := fn(&f.ev)
	f.first, f.bareCR = false, false
	f.off, f.scan, f.line = end, end, end
	return err
}

// parse fills ev.TS and ev.Go from raw, one event's bytes.
func parse(ev *Event, raw []byte) {
	ts := raw
	moji := false
	if ev.First {
		ts = bytes.TrimPrefix(ts, []byte(bom))
		if bytes.HasPrefix(ts, []byte(mojibakeBOM)) {
			ts, moji = ts[len(mojibakeBOM):], true
		}
	}
	parseTS(&ev.TS, ts, !ev.Unterminated)
	parseGo(&ev.Go, raw)
	if moji && !ev.Ambiguous {
		// The client may feed the parser a first chunk holding only part
		// of the mojibake BOM, which then stays in the first field name.
		var v View
		parseTS(&v, raw[len(raw)-len(ts)-len(mojibakeBOM):], !ev.Unterminated)
		ev.Ambiguous = (v.Dispatched || ev.TS.Dispatched) && (v.Dispatched != ev.TS.Dispatched ||
			v.Name != ev.TS.Name || v.ID != ev.TS.ID || !bytes.Equal(v.Data, ev.TS.Data))
	}
}

// parseTS reads one event as eventsource-parser does.
func parseTS(v *View, b []byte, terminated bool) {
	var data []byte
	lines := 0
	for len(b) > 0 {
		i := indexLineEnd(b)
		var line []byte
		if i < 0 {
			line, b = b, nil
		} else {
			line = b[:i]
			if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			b = b[i+1:]
		}
		if len(line) == 0 {
			break // the blank line that ends the event
		}
		field, value := line, []byte(nil)
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			field, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			v.Name = string(value)
		case "data":
			if lines > 0 {
				data = append(data, '\n')
			}
			data = append(data, value...)
			lines++
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				v.ID = string(value)
			} else {
				v.ID = ""
			}
		}
	}
	v.Data = data
	if data == nil && lines > 0 {
		v.Data = []byte{}
	}
	v.Dispatched = lines > 0 && terminated
}

// parseGo reads one event as go-sdk's scanEventsLimited does.
func parseGo(v *View, b []byte) {
	var data []byte
	hasData := false
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var line []byte
		if i < 0 {
			line, b = b, nil
		} else {
			line, b = b[:i+1], b[i+1:]
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		before, after, found := bytes.Cut(line, []byte{':'})
		if !found {
			v.Broken = true
			break
		}
		switch string(before) {
		case "event":
			v.Name = string(bytes.TrimSpace(after))
		case "id":
			v.ID = string(bytes.TrimSpace(after))
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimSpace(after)...)
			hasData = true
		}
	}
	v.Data = data
	v.Dispatched = !v.Broken && (v.Name != "" || v.ID != "" || len(data) > 0)
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

// IDLine returns the last raw "id:" line of an unambiguous event (its
// terminator excluded), or nil: a rewritten event keeps it so a client's
// Last-Event-ID still names the event it replaced.
func IDLine(raw []byte) (last []byte) {
	raw = bytes.TrimPrefix(raw, []byte(bom))
	for len(raw) > 0 {
		i := indexLineEnd(raw)
		if i < 0 {
			i = len(raw)
		}
		line := raw[:i]
		if len(line) == 0 {
			return last
		}
		if bytes.HasPrefix(line, []byte("id:")) {
			last = line
		}
		next := i + 1
		if i+1 < len(raw) && raw[i] == '\r' && raw[i+1] == '\n' {
			next = i + 2
		}
		if next > len(raw) {
			return last
		}
		raw = raw[next:]
	}
	return last
}

// String describes e for test failures.
func (e *Event) String() string {
	return "event{raw=" + strconv.Quote(string(e.Raw)) + "}"
}
