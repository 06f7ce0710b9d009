package extproc

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// jsonBody answers a BUFFERED body (modeJSON, modeError).
func (st *stream) jsonBody(ctx context.Context, body []byte) (*extprocv3.ProcessingResponse, error) {
	if st.mode == modeError {
		if len(bytes.TrimSpace(body)) > 0 && carriesResult(body, st.limits()) {
			st.refusedList(ReasonResultOnError, nil)
			return st.replaceJSON(ReasonResultOnError, "a JSON-RPC result on an error status"), nil
		}
		st.answer(body)
		return bodyResponse(nil, nil), nil
	}
	out, refused := st.decideJSON(ctx, body)
	if refused {
		return bodyResponse(out, []*corev3.HeaderValueOption{
			setHeader("content-type", "application/json"),
			setHeader("content-length", strconv.Itoa(len(out))),
			setHeader("cache-control", "private, no-store"),
		}), nil
	}
	var hdrs []*corev3.HeaderValueOption
	if st.lists > 0 || st.isList {
		hdrs = append(hdrs, setHeader("cache-control", "private, no-store"))
	}
	if out == nil {
		return bodyResponse(nil, hdrs), nil
	}
	hdrs = append(hdrs, setHeader("content-length", strconv.Itoa(len(out))))
	return bodyResponse(out, hdrs), nil
}

// replaceJSON is a body answer replacing the JSON body by a JSON-RPC error.
func (st *stream) replaceJSON(reason, msg string) *extprocv3.ProcessingResponse {
	eb := errorBody(st.rpcID, reason, msg)
	return bodyResponse(eb, []*corev3.HeaderValueOption{
		setHeader("content-type", "application/json"),
		setHeader("content-length", strconv.Itoa(len(eb))),
		setHeader("cache-control", "private, no-store"),
	})
}

// decideJSON decides a whole JSON body as the clients read it (one message
// or a batch): the body to send instead (nil: the input as is) and whether
// that is a refusal (a JSON-RPC error with the request's id). An empty body
// passes (no client reads a message in it).
func (st *stream) decideJSON(ctx context.Context, body []byte) (out []byte, refused bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		st.endReceipt()
		return nil, false
	}
	if len(body) > st.s.cfg.MaxBody {
		st.refusedList(ReasonTooLarge, nil)
		st.endReceipt()
		return errorBody(st.rpcID, ReasonTooLarge, "the response is too large to filter"), true
	}
	res, err := st.filter(ctx, body)
	if err != nil && lossyOnly(err) {
		if err = st.checkLossy(ctx, body); err == nil {
			return nil, false
		}
	}
	if err != nil {
		reason, msg := refusalOf(err)
		st.refusedList(reason, err)
		st.endReceipt()
		return errorBody(st.rpcID, reason, msg), true
	}
	st.logFiltered()
	if !res.Changed {
		st.answerFiltered(res.Responses, body)
		return nil, false
	}
	st.answer(res.Body)
	return res.Body, false
}

// refusalOf is the reason and message of an answer the filter refused.
func refusalOf(err error) (reason, msg string) {
	var fe *listfilter.Error
	if errors.As(err, &fe) && fe.Kind == "transport" {
		return ReasonUnexpected, "a JSON-RPC response to a request this stream does not carry"
	}
	return ReasonUnfilterable, "the response could not be filtered"
}

// carriesResult reports whether body (JSON, possibly a batch, or SSE
// events) holds a JSON-RPC response with a result.
func carriesResult(body []byte, lim mcpparse.Limits) bool {
	check := func(b []byte) bool {
		p, err := mcpparse.Parse(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), mcpparse.ParseOptions{Limits: lim, AllowBatch: true})
		if err != nil {
			return false
		}
		for _, m := range p.Messages {
			if m.Result != nil {
				return true
			}
		}
		return false
	}
	if check(body) {
		return true
	}
	found := false
	f := sse.New(len(body) + 1)
	onEvent := func(ev *sse.Event) error {
		found = found || check(ev.TS.Data) || check(ev.Go.Data) || check(ev.Py.Data)
		return nil
	}
	_ = f.Write(body, onEvent)
	_ = f.Close(onEvent)
	return found
}
