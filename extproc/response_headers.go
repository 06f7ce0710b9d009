package extproc

import (
	"encoding/json"
	"errors"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
)

// maxBufferedCall is the largest content-length of a tools/call's JSON
// answer that Envoy buffers (BUFFERED) rather than the processor holds
// (modeHeld): well below Envoy's default buffer limit of 1 MiB
// (per_connection_buffer_limit_bytes), past which a buffered answer fails.
const maxBufferedCall = 256 << 10

// smallBody reports an answer whose content-length announces at most
// maxBufferedCall bytes.
func smallBody(hm *corev3.HeaderMap) bool {
	v, ok := header(hm, "content-length")
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return err == nil && n <= maxBufferedCall
}

// isRedirect reports the statuses the MCP clients' HTTP stacks follow on
// their own (fetch's redirect "follow", Go's http.Client, httpx with
// follow_redirects as the Python SDK sets it).
func isRedirect(code int) bool {
	switch code {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// isGET reports a GET stream (Check's method for a bodiless GET is
// mcpmethod.HTTPGet; Check refuses every other bodiless method but DELETE).
func (st *stream) isGET() bool {
	return st.method == mcpmethod.HTTPGet
}

// responseRule is which responses this stream may carry (respRule).
func (st *stream) responseRule() respRule {
	switch {
	case st.isGET():
		// The legacy HTTP+SSE transport (2024-11-05) answers every
		// request on its GET stream, and a Streamable HTTP GET resuming
		// with Last-Event-ID replays a POST's: Check's metadata carries
		// the caller's claims, so every list there is filtered by its
		// shape.
		return respAny
	case st.method == mcpmethod.Batch:
		return respAny
	case len(st.rpcID) == 0:
		return respNone
	}
	return respOwn
}

// responseHeaders decides how the answer's body is read. "No body" is
// decided only from end_of_stream, 204, 304 and HEAD, never from a 202 or
// another status (the Go SDK client reads every 2xx answer to a call).
// A stream that decides list items (a list, a batch, a GET) needs the
// caller's claims from Check's metadata: without them, or when they do not
// decode, the answer is refused (503, no_authorization_metadata).
// A body a client may read as JSON-RPC messages (status 200-399: the
// TypeScript and Go clients read 2xx, the Python client everything below
// 400 but 202) is read as the clients read it: a GET's as SSE whatever its
// type (the TypeScript client does), a POST's by the Content-Type as each
// modelled client parses it (contentReading): refused when they disagree
// or a charset is not UTF-8; JSON BUFFERED, SSE STREAMED, a type no client
// reads as messages passes unread. A body of status 400 and above is
// BUFFERED whatever its type and refused if it carries a result (the
// clients read only a JSON-RPC error there). Any content-encoding but
// identity, on any entry, is refused (502).
func (st *stream) responseHeaders(h *extprocv3.HttpHeaders) (*extprocv3.ProcessingResponse, error) {
	hm := h.GetHeaders()
	statusText, _ := header(hm, ":status")
	code, err := strconv.Atoi(statusText)
	if err != nil {
		code = 0 // unknown: read as readable, fail closed
	}
	readable := code < 400 // 1xx never reaches the processor as response headers
	st.rc.status = code
	noBody := h.GetEndOfStream() || code == 204 || code == 304
	if !st.haveMeta {
		if readable && !noBody {
			return st.immediate(ReasonNoMetadata, "no authorization decision for this response"), nil
		}
		return new(headersAnswer).pass(), nil // a local reply or an answer nobody asked the processor about
	}
	if isRedirect(code) {
		// The clients follow it, with or without a body (fetch, net/http,
		// httpx): a 301, 302 or 303 as a GET, whose answer they read as
		// this POST's while the seam reads it as a GET stream; a 307 or
		// 308 anywhere, another origin included, where no seam looks.
		return st.immediate(ReasonRedirect, "a redirect the MCP clients would follow"), nil
	}
	if noBody {
		st.endReceipt()
		return st.withReceipt(new(headersAnswer).pass()), nil
	}
	var room [2]string
	if !codingsIdentity(headerValues(hm, "content-encoding", room[:0])) {
		return st.immediate(ReasonCompressed, "a compressed response cannot be filtered"), nil
	}
	st.responses = st.responseRule()
	if readable && (st.isList || st.responses == respAny) {
		if err := st.callerClaims(); err != nil {
			return st.immediate(ReasonNoMetadata, err.Error()), nil
		}
	}
	ctypes := headerValues(hm, "content-type", room[:0])
	kind, agree, charsetOK := contentReading(ctypes)
	switch {
	case readable && (!st.isGET() || len(ctypes) > 1) && !agree:
		return st.immediate(ReasonContentType, "the MCP clients read this content type differently"), nil
	case readable && !charsetOK:
		return st.immediate(ReasonCharset, "a response in a charset other than UTF-8 cannot be filtered"), nil
	}
	var hdrs []*corev3.HeaderValueOption
	body := procfv3.ProcessingMode_BUFFERED
	switch {
	case !readable:
		st.mode = modeError
	case st.isGET():
		kind = kindSSE
		fallthrough
	case kind == kindSSE:
		st.mode, body = modeSSE, procfv3.ProcessingMode_STREAMED
		st.framer = sse.New(st.s.cfg.MaxEvent)
		if st.isList {
			// STREAMED: the headers go downstream with this answer.
			hdrs = append(hdrs, setHeader("cache-control", "private, no-store"))
		}
	case kind == kindJSON && st.method == mcpmethod.ToolsCall && !smallBody(hm):
		// Held by the processor rather than buffered by Envoy, whose
		// buffer limit (1 MiB by default) would fail a large answer the
		// upstream already produced. Content-length is removed as for SSE
		// (the answer may come back filtered). An answer announced small
		// is buffered by Envoy like any other: one body message, not two.
		st.mode, body = modeHeld, procfv3.ProcessingMode_STREAMED
	case kind == kindJSON:
		st.mode = modeJSON
	default:
		// No modelled client reads this type as JSON-RPC messages: the
		// TypeScript and Go clients fail the request, the Python one
		// answers it with an error.
		st.endReceipt()
		return st.withReceipt(new(headersAnswer).pass()), nil
	}
	reqBody := procfv3.ProcessingMode_NONE
	if st.sawRequestBody {
		reqBody = procfv3.ProcessingMode_BUFFERED
	}
	a := new(headersAnswer)
	resp, cr := a.pass(), &a.cr
	resp.GetResponseHeaders().Response = cr
	if len(hdrs) > 0 {
		a.hm.SetHeaders = hdrs
		cr.HeaderMutation = &a.hm
	}
	if st.mode == modeSSE || st.mode == modeHeld {
		// Envoy removes content-length for STREAMED only when that is the
		// static mode (Filter::encodeHeaders runs before the override): an
		// SSE answer sent with one (the TypeScript SDK's) keeps it, and
		// the rewritten events would not match it. A body that arrives
		// whole before this answer is then sent as a buffered body and
		// checked against it (ProcessorState::validateContentLength).
		cr.HeaderMutation = &a.hm
		a.hm.RemoveHeaders = append(a.removes[:0], "content-length")
	}
	a.mode = procfv3.ProcessingMode{
		RequestHeaderMode: procfv3.ProcessingMode_SEND, ResponseHeaderMode: procfv3.ProcessingMode_SEND,
		RequestBodyMode: reqBody, ResponseBodyMode: body,
		RequestTrailerMode: procfv3.ProcessingMode_SKIP, ResponseTrailerMode: procfv3.ProcessingMode_SKIP,
	}
	resp.ModeOverride = &a.mode
	return resp, nil
}

// headersAnswer is an answer to the response headers with the messages it
// points to, allocated together (one allocation instead of seven on the
// path every answer takes).
type headersAnswer struct {
	resp    extprocv3.ProcessingResponse
	oneof   extprocv3.ProcessingResponse_ResponseHeaders
	hr      extprocv3.HeadersResponse
	cr      extprocv3.CommonResponse
	hm      extprocv3.HeaderMutation
	mode    procfv3.ProcessingMode
	removes [1]string
}

// pass is a's answer that changes nothing.
func (a *headersAnswer) pass() *extprocv3.ProcessingResponse {
	a.oneof.ResponseHeaders = &a.hr
	a.resp.Response = &a.oneof
	return &a.resp
}

// callerClaims decodes the caller's claims from Check's metadata into
// st.claims, as the token's verifier decoded them (encoding/json: numbers
// float64). No principal: no claims (an empty map). A principal without
// claims, or claims that are not one JSON object, is an error: the items
// cannot be decided for the caller.
func (st *stream) callerClaims() error {
	if st.claims != nil || st.principal == "" && st.claimsJSON == "" {
		return nil
	}
	if st.claimsJSON == "" {
		return errors.New("Check's metadata carries no claims for the principal")
	}
	var c map[string]any
	if err := json.Unmarshal([]byte(st.claimsJSON), &c); err != nil || c == nil {
		return errors.New("Check's metadata carries claims that are not a JSON object")
	}
	st.claims = c
	return nil
}

func setHeader(k, v string) *corev3.HeaderValueOption {
	// append unset (false): the value replaces the header's. Envoy's
	// ext_proc reads only append, not append_action.
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}}
}
