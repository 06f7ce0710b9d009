package extproc

// An Envoy stand-in for the processor's tests: it plays Envoy's side of one
// ext_proc stream per HTTP stream over real loopback gRPC, as Envoy's
// ext_proc filter does (source/extensions/filters/http/ext_proc: ext_proc.cc
// Filter::onReceiveMessage, handleData*Mode, onGrpcError, onGrpcClose,
// onMessageTimeout; processor_state.cc handleHeadersResponse,
// handleBodyResponse, validateContentLength): messages in order, one answer
// per message, protocol_config in the first message, mode_override at
// header answers checked against allowed_override_modes, header and body
// mutations, content-length removed in STREAMED and checked in BUFFERED,
// message_timeout (504), a gRPC error before the response started (local
// reply status_on_error, 500) or after (reset), and a clean close that lets
// the rest of the body through unprocessed.

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// startProcessor serves srv on 127.0.0.1:0 and returns a client.
func startProcessor(t testing.TB, srv extprocv3.ExternalProcessorServer) extprocv3.ExternalProcessorClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The served codec (cmd/extauthz): metadata kept unread until readMeta.
	gs := grpc.NewServer(grpc.ForceServerCodecV2(Codec{Next: encoding.GetCodecV2(protoenc.Name)}))
	extprocv3.RegisterExternalProcessorServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); gs.Stop() })
	return extprocv3.NewExternalProcessorClient(conn)
}

// route is a route's ext_proc configuration (ExtProcPerRoute overrides on
// the filter's processing_mode of RESPONSE-SEAM.md 5.3).
type route struct {
	requestHeaders bool // request_header_mode SEND
	requestBody    bool // request_body_mode BUFFERED
	responseBody   procfv3.ProcessingMode_BodySendMode
	// failOpen is failure_mode_allow: a gRPC error or a timeout lets the
	// response continue unprocessed (Filter::onGrpcError, onMessageTimeout).
	failOpen bool
}

// The shipped routes (envoy/sidecar.yaml): every side stream opens at the
// response headers (Check's metadata tells the processor the rest), but a
// list request carrying a sealed cursor's, which opens at its request body
// (x-mcp-cursor route: the processor swaps the cursor). oldListRoute is
// the list route before the one round trip (request headers and body), a
// config the processor still serves.
var (
	listRoute    = route{}
	pageRoute    = route{requestBody: true}
	getRoute     = route{responseBody: procfv3.ProcessingMode_STREAMED}
	callRoute    = route{}
	oldListRoute = route{requestHeaders: true, requestBody: true}
)

// exchange is one HTTP stream: the request as Check admitted it (meta is
// ext_authz's dynamic metadata; nil: none) and the upstream's answer.
type exchange struct {
	method  string // HTTP method
	reqHdrs map[string]string
	reqBody string
	meta    map[string]string
	status  int
	hdrs    map[string]string
	chunks  []string // the upstream's body, as it arrives
	// more are response header entries sent after hdrs' (a repeated
	// name: content-type, content-encoding).
	more [][2]string
	// early: the whole body arrived before the header answer; Envoy then
	// sends it in one buffered body message whatever the body mode, keeps
	// content-length and checks it (ProcessorState::handleHeadersResponse).
	early bool
}

// seen is what the client (and the upstream) got.
type seen struct {
	status       int
	hdrs         map[string]string
	body         string
	localReply   bool   // Envoy answered, not the upstream
	details      string // the local reply's details
	reset        bool   // the downstream stream was reset
	upstreamBody string // the request body the upstream received
	cleanClose   bool   // the processor closed OK with body left (passed unprocessed)
	// override is the mode_override of the answer to the response
	// headers (nil: none); honoured, whether it matched an allowed entry.
	override *procfv3.ProcessingMode
	honoured bool
}

// envoy drives one exchange.
type envoy struct {
	client  extprocv3.ExternalProcessorClient
	timeout time.Duration // message_timeout
	allowed []*procfv3.ProcessingMode
}

func newEnvoy(c extprocv3.ExternalProcessorClient) *envoy {
	all := func(body procfv3.ProcessingMode_BodySendMode, reqBody procfv3.ProcessingMode_BodySendMode) *procfv3.ProcessingMode {
		return &procfv3.ProcessingMode{RequestHeaderMode: procfv3.ProcessingMode_SEND, ResponseHeaderMode: procfv3.ProcessingMode_SEND,
			RequestBodyMode: reqBody, ResponseBodyMode: body,
			RequestTrailerMode: procfv3.ProcessingMode_SKIP, ResponseTrailerMode: procfv3.ProcessingMode_SKIP}
	}
	var allowed []*procfv3.ProcessingMode
	for _, rb := range []procfv3.ProcessingMode_BodySendMode{procfv3.ProcessingMode_NONE, procfv3.ProcessingMode_BUFFERED} {
		allowed = append(allowed, all(procfv3.ProcessingMode_BUFFERED, rb), all(procfv3.ProcessingMode_STREAMED, rb))
	}
	return &envoy{client: c, timeout: 5 * time.Second, allowed: allowed}
}

func headerMap(h map[string]string) *corev3.HeaderMap {
	hm := &corev3.HeaderMap{}
	for k, v := range h {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: k, RawValue: []byte(v)})
	}
	return hm
}

// applyHeaders applies a HeaderMutation as Envoy does (set overwrites,
// remove deletes; ':' headers and host ignored).
func applyHeaders(h map[string]string, m *extprocv3.HeaderMutation) {
	for _, o := range m.GetSetHeaders() {
		k := strings.ToLower(o.GetHeader().GetKey())
		if strings.HasPrefix(k, ":") || k == "host" {
			continue
		}
		v := o.GetHeader().GetValue()
		if rv := o.GetHeader().GetRawValue(); len(rv) > 0 {
			v = string(rv)
		}
		h[k] = v
	}
	for _, k := range m.GetRemoveHeaders() {
		if !strings.HasPrefix(k, ":") {
			delete(h, strings.ToLower(k))
		}
	}
}

var errTimeout = errors.New("message timeout")

func (e *envoy) do(t *testing.T, rt route, x exchange) seen {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stream extprocv3.ExternalProcessor_ProcessClient
	first := true
	closed := false // clean close: process nothing more
	var md *corev3.Metadata
	if x.meta != nil {
		f := map[string]*structpb.Value{}
		for k, v := range x.meta {
			f[k] = structpb.NewStringValue(v)
		}
		md = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{AuthzNamespace: {Fields: f}}}
	}
	respBodyMode := rt.responseBody
	reqBodyMode := procfv3.ProcessingMode_NONE
	if rt.requestBody {
		reqBodyMode = procfv3.ProcessingMode_BUFFERED
	}
	// send sends one message and waits for its answer.
	send := func(req *extprocv3.ProcessingRequest) (*extprocv3.ProcessingResponse, error) {
		if closed {
			return nil, io.EOF
		}
		if stream == nil {
			var err error
			stream, err = e.client.Process(ctx)
			if err != nil {
				return nil, err
			}
		}
		req.MetadataContext = md
		if first {
			req.ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: reqBodyMode, ResponseBodyMode: respBodyMode}
			first = false
		}
		if err := stream.Send(req); err != nil {
			return nil, err
		}
		type rr struct {
			r   *extprocv3.ProcessingResponse
			err error
		}
		ch := make(chan rr, 1)
		go func() { r, err := stream.Recv(); ch <- rr{r, err} }()
		select {
		case got := <-ch:
			if errors.Is(got.err, io.EOF) {
				closed = true
			}
			return got.r, got.err
		case <-time.After(e.timeout):
			return nil, errTimeout
		}
	}
	local := func(status int, details string, body string) seen {
		return seen{status: status, localReply: true, details: details, body: body, hdrs: map[string]string{}}
	}
	fail := func(err error, headersSent bool) seen {
		if rt.failOpen {
			h := map[string]string{}
			for k, v := range x.hdrs {
				h[k] = v
			}
			return seen{status: x.status, hdrs: h, body: strings.Join(x.chunks, ""), upstreamBody: x.reqBody}
		}
		if headersSent {
			return seen{reset: true}
		}
		if errors.Is(err, errTimeout) {
			return local(504, "ext_proc_error_per-message_timeout_exceeded", "")
		}
		return local(500, "ext_proc_error_gRPC_error", "")
	}
	immediate := func(ir *extprocv3.ImmediateResponse) seen {
		s := local(int(ir.GetStatus().GetCode()), ir.GetDetails(), string(ir.GetBody()))
		applyHeaders(s.hdrs, ir.GetHeaders())
		return s
	}
	out := seen{}
	var override *procfv3.ProcessingMode
	honoured := false
	// Request headers.
	reqHdrs := map[string]string{":method": x.method}
	for k, v := range x.reqHdrs {
		reqHdrs[k] = v
	}
	if x.reqBody != "" {
		reqHdrs["content-length"] = strconv.Itoa(len(x.reqBody))
	}
	if rt.requestHeaders {
		r, err := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headerMap(reqHdrs), EndOfStream: x.reqBody == ""}}})
		switch {
		case errors.Is(err, io.EOF):
		case err != nil:
			return fail(err, false)
		case r.GetImmediateResponse() != nil:
			return immediate(r.GetImmediateResponse())
		case r.GetRequestHeaders() == nil:
			return local(500, "spurious message", "")
		default:
			applyHeaders(reqHdrs, r.GetRequestHeaders().GetResponse().GetHeaderMutation())
		}
	}
	out.upstreamBody = x.reqBody
	if rt.requestBody && x.reqBody != "" {
		r, err := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
			Body: []byte(x.reqBody), EndOfStream: true}}})
		switch {
		case errors.Is(err, io.EOF):
		case err != nil:
			return fail(err, false)
		case r.GetImmediateResponse() != nil:
			return immediate(r.GetImmediateResponse())
		case r.GetRequestBody() == nil:
			return local(500, "spurious message", "")
		default:
			cr := r.GetRequestBody().GetResponse()
			applyHeaders(reqHdrs, cr.GetHeaderMutation())
			if b, ok := cr.GetBodyMutation().GetMutation().(*extprocv3.BodyMutation_Body); ok {
				out.upstreamBody = string(b.Body)
			}
			if cl, ok := reqHdrs["content-length"]; ok && cl != strconv.Itoa(len(out.upstreamBody)) {
				return local(500, "mismatch between content length and the length of the mutated body", "")
			}
		}
	}
	// Response headers.
	respHdrs := map[string]string{":status": strconv.Itoa(x.status)}
	for k, v := range x.hdrs {
		respHdrs[k] = v
	}
	body := strings.Join(x.chunks, "")
	if rt.responseBody == procfv3.ProcessingMode_STREAMED {
		// Filter::encodeHeaders removes content-length by the mode in
		// force before any override (shouldRemoveContentLength).
		delete(respHdrs, "content-length")
	}
	respMap := headerMap(respHdrs)
	for _, kv := range x.more {
		respMap.Headers = append(respMap.Headers, &corev3.HeaderValue{Key: kv[0], RawValue: []byte(kv[1])})
	}
	r, err := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: respMap, EndOfStream: body == ""}}})
	switch {
	case errors.Is(err, io.EOF):
	case err != nil:
		return fail(err, false)
	case r.GetImmediateResponse() != nil:
		return immediate(r.GetImmediateResponse())
	case r.GetResponseHeaders() == nil:
		return local(500, "spurious message", "")
	default:
		if mo := r.GetModeOverride(); mo != nil {
			ok := false
			for _, a := range e.allowed {
				// Compared on every field but request_header_mode.
				c := proto.Clone(mo).(*procfv3.ProcessingMode)
				c.RequestHeaderMode = a.RequestHeaderMode
				if proto.Equal(c, a) {
					ok = true
				}
			}
			if ok {
				respBodyMode = mo.GetResponseBodyMode()
			}
			override, honoured = mo, ok
		}
		applyHeaders(respHdrs, r.GetResponseHeaders().GetResponse().GetHeaderMutation())
	}
	status := func() int { n, _ := strconv.Atoi(respHdrs[":status"]); return n }
	finish := func(b string, sent bool) seen {
		s := seen{status: status(), hdrs: respHdrs, body: b, upstreamBody: out.upstreamBody, cleanClose: closed && sent,
			override: override, honoured: honoured}
		delete(s.hdrs, ":status")
		return s
	}
	if x.early && respBodyMode != procfv3.ProcessingMode_NONE {
		respBodyMode = procfv3.ProcessingMode_BUFFERED
	}
	switch respBodyMode {
	case procfv3.ProcessingMode_BUFFERED:
		if body == "" {
			return finish("", false)
		}
		r, err := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
			Body: []byte(body), EndOfStream: true}}})
		switch {
		case errors.Is(err, io.EOF):
			return finish(body, true)
		case err != nil:
			return fail(err, false)
		case r.GetImmediateResponse() != nil:
			return immediate(r.GetImmediateResponse())
		case r.GetResponseBody() == nil:
			return local(500, "spurious message", "")
		}
		cr := r.GetResponseBody().GetResponse()
		applyHeaders(respHdrs, cr.GetHeaderMutation())
		switch m := cr.GetBodyMutation().GetMutation().(type) {
		case *extprocv3.BodyMutation_Body:
			body = string(m.Body)
		case *extprocv3.BodyMutation_ClearBody:
			body = ""
		case *extprocv3.BodyMutation_StreamedResponse:
			return local(500, "spurious message", "")
		}
		if cl, ok := respHdrs["content-length"]; ok && cl != strconv.Itoa(len(body)) {
			return local(500, "mismatch between content length and the length of the mutated body", "")
		}
		return finish(body, false)
	case procfv3.ProcessingMode_STREAMED:
		var got strings.Builder
		chunks := append(append([]string{}, x.chunks...), "") // HTTP/1: the end arrives as its own empty chunk
		for i, c := range chunks {
			last := i == len(chunks)-1
			if closed {
				got.WriteString(c) // the rest passes unprocessed
				continue
			}
			r, err := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
				Body: []byte(c), EndOfStream: last}}})
			switch {
			case errors.Is(err, io.EOF):
				got.WriteString(c)
				continue
			case err != nil:
				return fail(err, true)
			case r.GetResponseBody() == nil:
				return seen{reset: true}
			}
			switch m := r.GetResponseBody().GetResponse().GetBodyMutation().GetMutation().(type) {
			case *extprocv3.BodyMutation_Body:
				got.Write(m.Body)
			case *extprocv3.BodyMutation_ClearBody:
			case nil:
				got.WriteString(c)
			default:
				return seen{reset: true}
			}
		}
		if cl, ok := respHdrs["content-length"]; ok && cl != strconv.Itoa(got.Len()) {
			return seen{reset: true} // the downstream codec cannot send a body of another length
		}
		return finish(got.String(), true)
	}
	return finish(body, false)
}
