package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The three oracles below are independent ports of the SDK clients' SSE
// readers, run over a whole stream at once, to check Framer's views.

// oracleEvent is what one client delivers: id, event name, data.
type oracleEvent struct {
	ID, Name string
	Data     string
}

// tsOracle ports eventsource-parser 3 (rexxars/eventsource-parser
// src/parse.ts createParser: feed, processLines, parseLine, processField,
// dispatchEvent) as EventSourceParserStream drives it for the TypeScript MCP
// SDK: the stream is decoded by TextDecoderStream (BOM stripped), fed once,
// never flushed, so a trailing partial line and an event without its blank
// line are not dispatched. feed strips U+00EF U+00BB U+00BF from the start
// of the first chunk; wholeFirst says the first chunk holds all three. It
// works on bytes: every delimiter is ASCII, and those three characters are
// the bytes C3 AF C2 BB C2 BF.
func tsOracle(stream []byte, wholeFirst bool) []oracleEvent {
	var out []oracleEvent
	s := string(bytes.TrimPrefix(stream, []byte("\xef\xbb\xbf")))
	if wholeFirst {
		s = strings.TrimPrefix(s, "\u00ef\u00bb\u00bf")
	}
	var id, eventType, data string
	hasID, hasType := false, false
	dataLines := 0
	dispatch := func() {
		if dataLines > 0 {
			ev := oracleEvent{Data: data}
			if hasID {
				ev.ID = id
			}
			if hasType {
				ev.Name = eventType
			}
			out = append(out, ev)
		}
		id, eventType, data, hasID, hasType, dataLines = "", "", "", false, false, 0
	}
	parseLine := func(line string) {
		if line == "" {
			dispatch()
			return
		}
		if line[0] == ':' {
			return // comment
		}
		field, value := line, ""
		if c := indexByte(line, ':'); c >= 0 {
			field = line[:c]
			value = line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch field {
		case "event":
			eventType, hasType = value, value != ""
		case "data":
			if dataLines == 0 {
				data = value
			} else {
				data += "\n" + value
			}
			dataLines++
		case "id":
			if indexByte(value, 0) >= 0 {
				id, hasID = "", false
			} else {
				id, hasID = value, true
			}
		}
	}
	i := 0
	for i < len(s) {
		cr := indexByte(s[i:], '\r')
		lf := indexByte(s[i:], '\n')
		end := -1
		switch {
		case cr >= 0 && lf >= 0:
			end = min(cr, lf)
		case cr >= 0:
			if i+cr == len(s)-1 {
				end = -1 // may be half of CRLF: never resolved (no flush)
			} else {
				end = cr
			}
		case lf >= 0:
			end = lf
		}
		if end < 0 {
			break
		}
		parseLine(s[i : i+end])
		i += end + 1
		if s[i-1] == '\r' && i < len(s) && s[i] == '\n' {
			i++
		}
	}
	return out
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// goOracle ports go-sdk v1.8.0 mcp/event.go scanEventsLimited (no cap): it
// returns the events the Go client yields and whether it stopped at a
// malformed line.
func goOracle(stream []byte) (out []oracleEvent, broken bool) {
	r := bufio.NewReader(bytes.NewReader(stream))
	var ev oracleEvent
	var dataBuf *bytes.Buffer
	yield := func() {
		if dataBuf != nil {
			ev.Data = dataBuf.String()
			dataBuf = nil
		}
		if ev.Name == "" && ev.ID == "" && ev.Data == "" {
			return
		}
		out = append(out, ev)
		ev = oracleEvent{}
	}
	for {
		line, err := r.ReadBytes('\n')
		isEOF := errors.Is(err, io.EOF)
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			yield()
			if isEOF {
				return out, false
			}
			continue
		}
		before, after, found := bytes.Cut(line, []byte{':'})
		if !found {
			return out, true
		}
		switch string(before) {
		case "event":
			ev.Name = string(bytes.TrimSpace(after))
		case "id":
			ev.ID = string(bytes.TrimSpace(after))
		case "data":
			if dataBuf == nil {
				dataBuf = new(bytes.Buffer)
			} else {
				dataBuf.WriteByte('\n')
			}
			dataBuf.Write(bytes.TrimSpace(after))
		}
		if isEOF {
			yield()
			return out, false
		}
	}
}

// pyEvent is an event the Python client delivers.
type pyEvent struct {
	oracleEvent
	End     int  // the offset after the blank line that dispatched it
	Message bool // the MCP client parses it as a JSON-RPC message
}

// pySeparators are the characters str.splitlines ends a line at.
var pySeparators = map[rune]bool{'\n': true, '\r': true, '\v': true, '\f': true,
	0x1c: true, 0x1d: true, 0x1e: true, 0x85: true, 0x2028: true, 0x2029: true}

// pyOracle ports the Python SDK client's reading: httpx decodes the body
// as UTF-8 with errors="replace" (httpx/_decoders.py TextDecoder; a BOM
// stays, as U+FEFF), httpx-sse 0.4.1 takes its lines from
// Response.aiter_lines (LineDecoder: str.splitlines, carrying a trailing
// CR and a partial line over to the next chunk and yielding the partial
// line at the end), and SSEDecoder.decode reads each line; mcp's
// _handle_sse_event parses an event named "message" with data. Runes are
// decoded here one invalid byte at a time where Python takes a maximal
// invalid subpart: neither can swallow a separator, whose first byte never
// continues a sequence. Values are kept as bytes.
func pyOracle(stream []byte) []pyEvent {
	type line struct{ start, end, next int }
	var lines []line
	start := 0
	for i := 0; i < len(stream); {
		r, n := utf8.DecodeRune(stream[i:])
		if n == 1 && r == utf8.RuneError || !pySeparators[r] {
			i += n
			continue
		}
		end := i
		i += n
		if r == '\r' && i < len(stream) && stream[i] == '\n' {
			i++
		}
		lines = append(lines, line{start, end, i})
		start = i
	}
	if start < len(stream) {
		lines = append(lines, line{start, len(stream), len(stream)})
	}

	var out []pyEvent
	event, lastID := "", ""
	var data []string
	retry := false
	for _, l := range lines {
		text := string(stream[l.start:l.end])
		if text == "" {
			if event == "" && data == nil && lastID == "" && !retry {
				continue
			}
			ev := pyEvent{oracleEvent: oracleEvent{ID: lastID, Name: event, Data: strings.Join(data, "\n")}, End: l.next}
			if ev.Name == "" {
				ev.Name = "message"
			}
			ev.Message = ev.Name == "message" && ev.Data != ""
			out = append(out, ev)
			event, data, retry = "", nil, false
			continue
		}
		if strings.HasPrefix(text, ":") {
			continue
		}
		name, value, _ := strings.Cut(text, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			event = value
		case "data":
			data = append(data, value)
		case "id":
			if !strings.Contains(value, "\x00") {
				lastID = value
			}
		case "retry":
			retry = retry || pythonInt(value)
		}
	}
	return out
}

// pyIntASCII is what CPython's PyLong_FromString takes in base 10, after
// PyLong_FromUnicodeObject has turned non-ASCII spaces into ' ' and
// non-ASCII decimal digits into ASCII ones.
var pyIntASCII = regexp.MustCompile(`^[ \t\n\v\f\r]*[+-]?[0-9](?:_?[0-9])*[ \t\n\v\f\r]*$`)

// pythonInt reports whether int(s) succeeds in CPython 3.11 (at most
// 4,300 digits, sys.int_info.default_max_str_digits).
func pythonInt(s string) bool {
	var b strings.Builder
	for _, r := range s { // invalid UTF-8 is U+FFFD, as Python decodes it
		switch {
		case r < 127:
			b.WriteRune(r)
		case unicode.In(r, unicode.White_Space):
			b.WriteByte(' ')
		case unicode.In(r, unicode.Nd):
			b.WriteByte('7')
		default:
			return false
		}
	}
	a := b.String()
	return pyIntASCII.MatchString(a) && countDigits(a) <= 4300
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}
