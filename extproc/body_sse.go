package extproc

import (
	"bytes"
	"context"
	"errors"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// sseChunk frames one STREAMED chunk and answers it with the bytes released.
func (st *stream) sseChunk(ctx context.Context, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	if st.broken {
		// Refused: an error event went out; nothing after it passes.
		if b.GetEndOfStream() {
			st.logFiltered()
		}
		return bodyResponse([]byte{}, nil), nil
	}
	st.out = st.out[:0]
	onEvent := func(ev *sse.Event) error {
		if st.broken {
			return nil
		}
		st.out = append(st.out, st.event(ctx, ev)...)
		return nil
	}
	err := st.framer.Write(b.GetBody(), onEvent)
	if err == nil && b.GetEndOfStream() {
		err = st.framer.Close(onEvent)
	}
	if err != nil && !st.broken {
		st.refusedList(ReasonTooLarge, err)
		st.endReceipt()
		st.out = append(st.out, st.errorEvent(ReasonTooLarge, "an SSE event is too large to filter")...)
		st.broken = true
	}
	if b.GetEndOfStream() {
		st.logFiltered()
		st.framer = nil
	}
	out := append([]byte{}, st.out...)
	if bytes.Equal(out, b.GetBody()) {
		return bodyResponse(nil, nil), nil
	}
	return bodyResponse(out, nil), nil
}

// errorEvent is an unnamed SSE event carrying a JSON-RPC error.
func (st *stream) errorEvent(reason, msg string) []byte {
	return sse.AppendData(nil, nil, errorBody(st.rpcID, reason, msg))
}

// refuseEvent ends the stream's reading: an error event goes out in place
// of ev, and nothing after it passes (sseChunk).
func (st *stream) refuseEvent(reason string, err error) []byte {
	st.refusedList(reason, err)
	st.endReceipt()
	st.broken = true
	return st.errorEvent(reason, reasonMessage(reason))
}

func reasonMessage(reason string) string {
	switch reason {
	case ReasonUnexpected:
		return "a JSON-RPC response to a request this stream does not carry"
	case ReasonTooLarge:
		return "an SSE event is too large to filter"
	}
	return "an SSE event that could not be filtered"
}

// readings are the modelled clients' readings of ev (sse.Event).
func readings(ev *sse.Event) []*sse.View {
	return []*sse.View{&ev.TS, &ev.Go, &ev.Py}
}

// event decides one SSE event: its bytes to release. Every modelled
// client's reading is taken: when those that read any data read the same
// data, it is decided once (filtered by shape, responses checked against
// the stream's rule) and the event passes byte for byte unless a list in
// it changed; when readings differ (a bare CR, a BOM one client strips,
// line ends one client splits at) and some client reads a message, the
// event is rewritten as one data line all of them read alike when the
// TypeScript and Go readings agree and decide, and refused otherwise. An
// event no client reads as a message passes unless it carries a list or
// a response the stream may not carry, which are dropped.
func (st *stream) event(ctx context.Context, ev *sse.Event) []byte {
	if st.isGET() && ev.TS.Name == "endpoint" && ev.Go.Name == "endpoint" && !ev.Ambiguous {
		// The legacy HTTP+SSE transport (2024-11-05) names the session in
		// its endpoint event (…?sessionId=…), which every POST of the
		// session carries and Check scopes its pins by: lists answered on
		// this stream are observed and decided in that session's scope.
		if s := toolpin.Session("", string(ev.TS.Data), ""); s != "" {
			st.session = s
		}
	}
	views := readings(ev)
	read := false
	for _, v := range views {
		read = read || v.Message()
	}
	if ev.Ambiguous {
		if !hasData(ev) {
			return ev.Raw
		}
		if !read {
			return nil
		}
		return st.refuseEvent(ReasonUnfilterable, errors.New("clients frame this event differently"))
	}
	var distinct [][]byte
	for _, v := range views {
		if len(bytes.TrimSpace(v.Data)) == 0 {
			continue
		}
		seen := false
		for _, d := range distinct {
			seen = seen || bytes.Equal(d, v.Data)
		}
		if !seen {
			distinct = append(distinct, v.Data)
		}
	}
	if len(distinct) == 0 {
		return ev.Raw
	}
	data, rewrite := distinct[0], false
	if len(distinct) > 1 {
		if !read {
			return nil
		}
		if len(bytes.TrimSpace(ev.TS.Data)) == 0 || !bytes.Equal(ev.TS.Data, ev.Go.Data) {
			return st.refuseEvent(ReasonUnfilterable, errors.New("clients read this event's data differently"))
		}
		data, rewrite = ev.TS.Data, true
	}
	res, err := st.filter(ctx, data)
	if !read {
		var fe *listfilter.Error
		if err == nil && res.Changed || errors.As(err, &fe) && fe.Kind == "transport" {
			return nil // a list or response smuggled in an event no client reads: dropped
		}
		return ev.Raw
	}
	if err != nil && lossyOnly(err) {
		if err = st.checkLossy(ctx, data); err == nil {
			if rewrite {
				return sse.AppendData(nil, idLine(ev), escapeLineSeparators(data))
			}
			return ev.Raw
		}
	}
	if err != nil {
		reason, _ := refusalOf(err)
		return st.refuseEvent(reason, err)
	}
	body := data
	if res.Changed {
		body = res.Body
		st.answer(body)
	} else {
		st.answerFiltered(res.Responses, body)
	}
	if !res.Changed && !rewrite {
		return ev.Raw
	}
	return sse.AppendData(nil, idLine(ev), escapeLineSeparators(body))
}

// idLine is the id line of a rewritten event: the id every reading agrees
// on, when it is plain printable ASCII; nil otherwise (the event loses its
// id rather than carry bytes a client could frame differently).
func idLine(ev *sse.Event) []byte {
	id := ev.TS.ID
	if id == "" || id != ev.Go.ID {
		return nil
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return nil
		}
	}
	return append([]byte("id: "), id...)
}

// escapeLineSeparators writes U+2028, U+2029 and U+0085 in the strict
// JSON body as \u escapes: a Python client reading SSE with httpx-sse
// before 0.4.2 (str.splitlines) ends a line at each of them. In strict
// JSON they occur only inside strings, where the escape means the same
// character; the other characters splitlines ends lines at are controls,
// which strict JSON has escaped already.
func escapeLineSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029")) && !bytes.Contains(b, []byte("\u0085")) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == 0xe2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xa8 || b[i+2] == 0xa9):
			out = append(out, `\u202`...)
			out = append(out, "89"[b[i+2]-0xa8])
			i += 2
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] == 0x85:
			out = append(out, `\u0085`...)
			i++
		default:
			out = append(out, b[i])
		}
	}
	return out
}

func hasData(ev *sse.Event) bool {
	return bytes.Contains(ev.Raw, []byte("data"))
}
