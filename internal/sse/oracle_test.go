package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
)

// The two oracles below are independent ports of the SDK clients' SSE
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
