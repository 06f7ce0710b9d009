package extproc

import (
	"context"
	"errors"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// responseBody answers one response body message; the call's receipt is
// closed at end_of_stream and travels to Envoy with that answer.
func (st *stream) responseBody(ctx context.Context, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	resp, err := st.responseBodyOf(ctx, b)
	if err == nil && b.GetEndOfStream() {
		st.endReceipt()
	}
	return st.withReceipt(resp), err
}

// responseBodyOf hands one body message to the handler of the body mode
// responseHeaders chose (bodyHandlers).
func (st *stream) responseBodyOf(ctx context.Context, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	return bodyHandlers[st.mode].body(ctx, st, b)
}

// bodyHandler reads a response body in one body mode: one per mode, as
// Envoy AI Gateway's processor hands each phase to its own handler. It
// answers each body message; an error aborts the side stream (Envoy then
// fails the response closed).
type bodyHandler interface {
	body(ctx context.Context, st *stream, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error)
}

// bodyHandlers are the handlers of the modes, indexed by respMode.
var bodyHandlers = [...]bodyHandler{
	modeNone:  passBody{},
	modeJSON:  bufferedBody{},
	modeError: bufferedBody{},
	modeSSE:   sseBody{},
	modeHeld:  heldBody{},
}

// passBody: no body was asked for (a message Envoy sends anyway, as on a
// route whose static mode sends it); it passes.
type passBody struct{}

func (passBody) body(context.Context, *stream, *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	return bodyResponse(nil, nil), nil
}

// bufferedBody: a BUFFERED answer, whole in one message (modeJSON,
// modeError; body_json.go).
type bufferedBody struct{}

func (bufferedBody) body(ctx context.Context, st *stream, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	if !b.GetEndOfStream() {
		return nil, errors.New("response body not BUFFERED (a chunk without end_of_stream)")
	}
	return st.jsonBody(ctx, b.GetBody())
}

// sseBody: a STREAMED event stream, framed chunk by chunk (modeSSE;
// body_sse.go).
type sseBody struct{}

func (sseBody) body(ctx context.Context, st *stream, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	return st.sseChunk(ctx, b)
}

// heldBody: a call's JSON answer held by the processor up to MaxBody
// (modeHeld; body_held.go).
type heldBody struct{}

func (heldBody) body(ctx context.Context, st *stream, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	return st.heldChunk(ctx, b), nil
}

// bodyResponse answers a response body message: body replaces it when not
// nil, with headers set.
func bodyResponse(body []byte, hdrs []*corev3.HeaderValueOption) *extprocv3.ProcessingResponse {
	a := new(bodyAnswer)
	a.oneof.ResponseBody, a.resp.Response = &a.br, &a.oneof
	a.br.Response = &a.cr
	if body != nil {
		a.mb.Body = body
		a.bm.Mutation = &a.mb
		a.cr.BodyMutation = &a.bm
	}
	if len(hdrs) > 0 {
		a.hm.SetHeaders = hdrs
		a.cr.HeaderMutation = &a.hm
	}
	return &a.resp
}

// bodyAnswer is an answer to a response body message with the messages
// it points to, allocated together.
type bodyAnswer struct {
	resp  extprocv3.ProcessingResponse
	oneof extprocv3.ProcessingResponse_ResponseBody
	br    extprocv3.BodyResponse
	cr    extprocv3.CommonResponse
	bm    extprocv3.BodyMutation
	mb    extprocv3.BodyMutation_Body
	hm    extprocv3.HeaderMutation
}

// errorBody is a JSON-RPC error response with id (raw JSON; null when nil)
// refusing with reason: its code from the refusals table.
func errorBody(id []byte, reason, msg string) []byte {
	code := refusalOfReason(reason).code
	if len(id) == 0 {
		id = []byte("null")
	}
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = mcpparse.AppendJCSString(b, msg)
	b = append(b, `,"data":{"reason":`...)
	b = mcpparse.AppendJCSString(b, reason)
	return append(b, "}}}"...)
}

// immediate is a local reply refusing with reason: a JSON-RPC error with
// the HTTP status and code of the refusals table.
func (st *stream) immediate(reason, msg string) *extprocv3.ProcessingResponse {
	httpStatus := refusalOfReason(reason).status
	if httpStatus == 0 { // a reason that replaces bodies: no local reply of its own
		httpStatus = 502
	}
	st.refused = true
	st.endReceipt() // outcome_unknown (http_error): the client gets this error
	st.s.cfg.Log.Info("response seam refused",
		zap.String("kind", "ext_proc"), zap.String("decision_id", st.decision), zap.String("method", st.method),
		zap.String("server", st.server), zap.String("reason", reason), zap.Int("status", httpStatus))
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Status: &typev3.HttpStatus{Code: typev3.StatusCode(httpStatus)},
		Headers: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			setHeader("content-type", "application/json"),
			setHeader("cache-control", "no-store"),
		}},
		Body:    errorBody(st.rpcID, reason, msg),
		Details: "mcp_extauthz_" + reason,
	}}}
}
