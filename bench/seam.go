package main

// The response seam's measurement (run.sh seam): a request through
// envoy/sidecar.yaml costs the service its Check plus one ext_proc stream
// (every route to the MCP server has one, issue 26). A seam case is the CheckRequest and the
// ProcessingRequests Envoy sends for one HTTP request, in order, written
// once (seamgen) and sent as bytes (seamload), so ours and the null pair get
// the same bytes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
)

// processMethod is the full gRPC method name of ext_proc's Process.
const processMethod = "/envoy.service.ext_proc.v3.ExternalProcessor/Process"

// authzNamespace is where ext_authz's dynamic metadata lives in Envoy, and
// the namespace envoy/sidecar.yaml forwards to the processor.
const authzNamespace = "envoy.filters.http.ext_authz"

// SeamTools is the number of tools in the measured tools/list.
const SeamTools = 50

// SeamCase is one request through the sidecar: its Check, then the side
// stream of its route.
type SeamCase struct {
	Name   string
	Method string // JSON-RPC method of the request
	SSE    bool   // the upstream answers text/event-stream (else application/json)
	Want   string
}

// SeamCases are the measured requests: a filtered tools/list of SeamTools
// tools answered as JSON and as SSE, and on the route of everything else an
// allowed tools/call (its answer read for the receipt), an initialize and a
// ping, answered as JSON and (but initialize) as SSE, the way the SDK
// servers answer a POST.
var SeamCases = []SeamCase{
	{Name: "list-json", Method: "tools/list", Want: "allowed"},
	{Name: "list-sse", Method: "tools/list", SSE: true, Want: "allowed"},
	{Name: "call-json", Method: "tools/call", Want: "allowed"},
	{Name: "call-sse", Method: "tools/call", SSE: true, Want: "allowed"},
	{Name: "initialize-json", Method: "initialize", Want: "allowed"},
	{Name: "ping-json", Method: "ping", Want: "allowed"},
	{Name: "ping-sse", Method: "ping", SSE: true, Want: "allowed"},
}

// ToolsList is a tools/list result of n tools, id 1: search, read_file and
// issue_refund (which the reference policy may allow), delete_<i> every
// tenth (denied by every call), tool_<i> for the rest (denied by the
// default): 3 stay of 50.
func ToolsList(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		name := "tool_" + strconv.Itoa(i)
		switch {
		case i == 0:
			name = "search"
		case i == 1:
			name = "read_file"
		case i == 2:
			name = "issue_refund"
		case i%10 == 5:
			name = "delete_" + strconv.Itoa(i)
		}
		fmt.Fprintf(&sb, `{"name":%q,"description":"Tool number %d does something useful with its inputs and returns a result.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"the query"},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["q"]}}`, name, i)
	}
	sb.WriteString(`]}}`)
	return sb.String()
}

// The answers to the allowed tools/call (id 8, as in the search example),
// the initialize (id 0) and the ping (id 3).
const (
	callResult = `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"3 results for refund policy"}],"isError":false}}`
	initResult = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{}},"serverInfo":{"name":"payments","version":"1.0.0"}}}`
	pingResult = `{"jsonrpc":"2.0","id":3,"result":{}}`
)

// answer is the upstream's JSON-RPC answer to c's request, and the number
// of writes an SSE answer arrives in (a list in three, a small answer in
// one).
func (c SeamCase) answer() (string, int) {
	switch c.Method {
	case "tools/list":
		return ToolsList(SeamTools), 3
	case "initialize":
		return initResult, 1
	case "ping":
		return pingResult, 1
	}
	return callResult, 1
}

// checkRequest is c's CheckRequest with token, built from the search
// example (its headers as the TypeScript SDK sends them) with c's body.
func (c SeamCase) checkRequest(examples, token string) (*authv3.CheckRequest, *capture.Request, error) {
	b, err := os.ReadFile(filepath.Join(examples, "search-allowed.json"))
	if err != nil {
		return nil, nil, err
	}
	cr, err := capture.Parse(b)
	if err != nil {
		return nil, nil, err
	}
	switch c.Method {
	case "tools/list":
		cr.Body = []byte(`{"method":"tools/list","params":{},"jsonrpc":"2.0","id":1}`)
	case "initialize":
		cr.Body = []byte(`{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}},"jsonrpc":"2.0","id":0}`)
		delete(cr.Headers, "mcp-session-id")
	case "ping":
		cr.Body = []byte(`{"method":"ping","jsonrpc":"2.0","id":3}`)
	case "tools/call": // the example as it is
	default:
		return nil, nil, fmt.Errorf("%s: no body for %s", c.Name, c.Method)
	}
	cr.Headers["authorization"] = "Bearer " + token
	cr.Headers["content-length"] = strconv.Itoa(len(cr.Body))
	return cr.CheckRequest(true), cr, nil
}

// hdrs is a HeaderMap as Envoy sends it (raw_value), in the given order.
func hdrs(kv ...string) *corev3.HeaderMap {
	hm := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return hm
}

// SSEChunks splits body, one SSE event, into n chunks as an upstream's
// writes may arrive (cut at arbitrary bytes), then the empty end of stream
// an HTTP/1 upstream's last chunk brings.
func SSEChunks(body string, n int) []string {
	ev := "event: message\ndata: " + body + "\n\n"
	var out []string
	step := (len(ev) + n - 1) / n
	for i := 0; i < len(ev); i += step {
		out = append(out, ev[i:min(i+step, len(ev))])
	}
	return append(out, "")
}

// processingRequests are the messages Envoy's ext_proc filter sends on c's
// route (extproc/harness_test.go plays the same order): metadata_context on
// each (Check's dynamic metadata, forwarded), protocol_config on the first,
// only the headers sidecar.yaml's forward_rules allow. Every route opens
// its side stream at the response headers (a first page carries no
// cursor, so a list takes the route of everything else too: issue 31).
func (c SeamCase) processingRequests(cr *capture.Request, meta *structpb.Struct) []*extprocv3.ProcessingRequest {
	md := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{authzNamespace: meta}}
	var msgs []*extprocv3.ProcessingRequest
	add := func(r *extprocv3.ProcessingRequest) { r.MetadataContext = md; msgs = append(msgs, r) }
	reqBody := procfv3.ProcessingMode_NONE
	body, writes := c.answer()
	ct := "application/json"
	if c.SSE {
		ct = "text/event-stream"
		add(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: hdrs(":status", "200", "content-type", ct),
		}}})
		for _, ch := range SSEChunks(body, writes) {
			add(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
				Body: []byte(ch), EndOfStream: ch == ""}}})
		}
	} else {
		add(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: hdrs(":status", "200", "content-type", ct, "content-length", strconv.Itoa(len(body))),
		}}})
		add(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
			Body: []byte(body), EndOfStream: true}}})
	}
	// The route's static modes, as Envoy reports them in the first message.
	msgs[0].ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: reqBody, ResponseBodyMode: procfv3.ProcessingMode_NONE}
	return msgs
}

// seamGen writes DIR/<case>.seam for every SeamCase: the CheckRequest, then
// the ProcessingRequests, each varint length-delimited. The metadata is the
// one the service at addr gives that CheckRequest (one Check each), so the
// processor sees what Envoy would forward; the null pair reads none of it.
func seamGen(ctx context.Context, addr, examples, token, out string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	for _, c := range SeamCases {
		req, cr, err := c.checkRequest(examples, token)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := client.Check(cctx, req, grpc.WaitForReady(true))
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		if r := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); r != c.Want {
			return fmt.Errorf("%s: Check gave reason %q, want %q", c.Name, r, c.Want)
		}
		if err := writeSeam(out, c, req, cr, resp.GetDynamicMetadata()); err != nil {
			return err
		}
	}
	return nil
}

// writeSeam writes DIR/<c.Name>.seam: req, then c's ProcessingRequests
// carrying meta as Check's dynamic metadata.
func writeSeam(out string, c SeamCase, req *authv3.CheckRequest, cr *capture.Request, meta *structpb.Struct) error {
	var buf bytes.Buffer
	if _, err := protodelim.MarshalTo(&buf, req); err != nil {
		return err
	}
	for _, m := range c.processingRequests(cr, meta) {
		if _, err := protodelim.MarshalTo(&buf, m); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, c.Name+".seam"), buf.Bytes(), 0o644)
}

// seamFile is a seam case read back: each message's encoded bytes (sent
// as they are) and decoded form.
type seamFile struct {
	check []byte
	proc  [][]byte
	req   *authv3.CheckRequest
	msgs  []*extprocv3.ProcessingRequest
}

func readSeam(dir, name string) (*seamFile, error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".seam"))
	if err != nil {
		return nil, err
	}
	f := &seamFile{req: &authv3.CheckRequest{}}
	raw := bytes.NewReader(b)
	for i := 0; raw.Len() > 0; i++ {
		n, err := readVarint(raw)
		if err != nil || n > uint64(raw.Len()) {
			return nil, fmt.Errorf("%s.seam: message %d: bad length", name, i)
		}
		m := make([]byte, n)
		_, _ = io.ReadFull(raw, m)
		if i == 0 {
			f.check = m
			if err := proto.Unmarshal(m, f.req); err != nil {
				return nil, fmt.Errorf("%s.seam: CheckRequest: %w", name, err)
			}
			continue
		}
		pr := &extprocv3.ProcessingRequest{}
		if err := proto.Unmarshal(m, pr); err != nil {
			return nil, fmt.Errorf("%s.seam: ProcessingRequest %d: %w", name, i, err)
		}
		f.proc, f.msgs = append(f.proc, m), append(f.msgs, pr)
	}
	if f.check == nil {
		return nil, fmt.Errorf("%s.seam: empty", name)
	}
	return f, nil
}

func readVarint(r io.ByteReader) (uint64, error) {
	var x uint64
	for s := uint(0); s < 64; s += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		x |= uint64(b&0x7f) << s
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("varint overflow")
}

// seamShape prints what each seam case sends: the Check's size, then each
// ProcessingRequest's kind, headers, body size and end_of_stream.
func seamShape(dir string, w io.Writer) error {
	for _, c := range SeamCases {
		f, err := readSeam(dir, c.Name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %s; Check %d bytes (body %d); %d ProcessingRequests:\n", c.Name, c.Method,
			len(f.check), len(f.req.GetAttributes().GetRequest().GetHttp().GetRawBody()), len(f.msgs))
		for i, m := range f.msgs {
			var d string
			switch r := m.GetRequest().(type) {
			case *extprocv3.ProcessingRequest_RequestHeaders:
				d = "request_headers " + headerNames(r.RequestHeaders) + fmt.Sprintf(" end_of_stream %v", r.RequestHeaders.GetEndOfStream())
			case *extprocv3.ProcessingRequest_RequestBody:
				d = fmt.Sprintf("request_body %d bytes end_of_stream %v", len(r.RequestBody.GetBody()), r.RequestBody.GetEndOfStream())
			case *extprocv3.ProcessingRequest_ResponseHeaders:
				d = "response_headers " + headerNames(r.ResponseHeaders) + fmt.Sprintf(" end_of_stream %v", r.ResponseHeaders.GetEndOfStream())
			case *extprocv3.ProcessingRequest_ResponseBody:
				d = fmt.Sprintf("response_body %d bytes end_of_stream %v", len(r.ResponseBody.GetBody()), r.ResponseBody.GetEndOfStream())
			default:
				d = fmt.Sprintf("%T", r)
			}
			extra := fmt.Sprintf(" metadata_context %d keys", len(m.GetMetadataContext().GetFilterMetadata()[authzNamespace].GetFields()))
			if m.GetProtocolConfig() != nil {
				extra += " + protocol_config"
			}
			fmt.Fprintf(w, "  %d. %s;%s; %d bytes\n", i+1, d, extra, len(f.proc[i]))
		}
	}
	return nil
}

func headerNames(h *extprocv3.HttpHeaders) string {
	var n []string
	for _, x := range h.GetHeaders().GetHeaders() {
		n = append(n, x.GetKey())
	}
	return "[" + strings.Join(n, " ") + "]"
}

// exchange sends one seam case on the two connections as Envoy does: the
// Check on authz, then (if the route has one) one Process stream on proc,
// one message at a time, each answer awaited, then a half-close and the
// stream's end. It returns the answers (decoded when decode) or the first
// failure: a gRPC error, a Check that is not OK, an answer of another kind
// than its message, or (ours) an immediate_response.
func exchange(ctx context.Context, authz, proc *grpc.ClientConn, f *seamFile, decode bool) (*authv3.CheckResponse, []*extprocv3.ProcessingResponse, error) {
	out := &rawMsg{}
	if err := authz.Invoke(ctx, checkMethod, &rawMsg{b: f.check}, out); err != nil {
		return nil, nil, fmt.Errorf("Check: %w", err)
	}
	cresp := &authv3.CheckResponse{}
	if err := proto.Unmarshal(out.b, cresp); err != nil || cresp.GetStatus().GetCode() != 0 {
		return nil, nil, fmt.Errorf("Check: not OK (%v)", err)
	}
	if len(f.proc) == 0 {
		return cresp, nil, nil
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := proc.NewStream(sctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, processMethod)
	if err != nil {
		return nil, nil, err
	}
	var resps []*extprocv3.ProcessingResponse
	for i, b := range f.proc {
		if err := s.SendMsg(&rawMsg{b: b}); err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		in := &rawMsg{}
		if err := s.RecvMsg(in); err != nil {
			return nil, nil, fmt.Errorf("answer %d: %w", i+1, err)
		}
		if !decode {
			continue
		}
		r := &extprocv3.ProcessingResponse{}
		if err := proto.Unmarshal(in.b, r); err != nil {
			return nil, nil, fmt.Errorf("answer %d: %w", i+1, err)
		}
		if r.GetImmediateResponse() != nil {
			return nil, nil, fmt.Errorf("answer %d: immediate response %s", i+1, r.GetImmediateResponse().GetDetails())
		}
		if !answers(f.msgs[i], r) {
			return nil, nil, fmt.Errorf("answer %d: %T to %T", i+1, r.GetResponse(), f.msgs[i].GetRequest())
		}
		resps = append(resps, r)
	}
	if err := s.CloseSend(); err != nil {
		return nil, nil, err
	}
	if err := s.RecvMsg(&rawMsg{}); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("stream end: %v", err)
	}
	return cresp, resps, nil
}

// answers reports whether r is the answer kind Envoy expects for m.
func answers(m *extprocv3.ProcessingRequest, r *extprocv3.ProcessingResponse) bool {
	switch m.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return r.GetRequestHeaders() != nil
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return r.GetResponseHeaders() != nil
	case *extprocv3.ProcessingRequest_RequestBody:
		return r.GetRequestBody() != nil
	case *extprocv3.ProcessingRequest_ResponseBody:
		return r.GetResponseBody() != nil
	}
	return false
}

// seamProbe sends each seam case once to addr and prints what came back;
// with filtered, it fails unless each list answer was filtered (every
// delete_ tool gone, search kept) and the list's body mode was overridden
// as the processor must (BUFFERED for JSON, STREAMED for SSE).
func seamProbe(ctx context.Context, addr, dir string, filtered bool, w io.Writer) error {
	authz, proc, err := seamConns(addr)
	if err != nil {
		return err
	}
	defer authz.Close()
	defer proc.Close()
	for _, c := range SeamCases {
		f, err := readSeam(dir, c.Name)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, resps, err := exchange(cctx, authz, proc, f, true)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		var body strings.Builder
		mutated, mode := false, "-"
		for _, r := range resps {
			if mo := r.GetModeOverride(); mo != nil {
				mode = mo.GetResponseBodyMode().String()
			}
			if m, ok := r.GetResponseBody().GetResponse().GetBodyMutation().GetMutation().(*extprocv3.BodyMutation_Body); ok {
				mutated = true
				body.Write(m.Body)
			}
		}
		kept := strings.Count(body.String(), `"name":`)
		fmt.Fprintf(w, "%s: %d answers, body mode %s, body replaced %v, %d tools in the answer\n", c.Name, len(resps), mode, mutated, kept)
		if !filtered || c.Method != "tools/list" {
			continue
		}
		wantMode := "BUFFERED"
		if c.SSE {
			wantMode = "STREAMED"
		}
		if !mutated || mode != wantMode || strings.Contains(body.String(), "delete_") || !strings.Contains(body.String(), `"search"`) {
			return fmt.Errorf("%s: the list was not filtered (mode %s): %.200s", c.Name, mode, body.String())
		}
	}
	return nil
}

func seamConns(addr string) (authz, proc *grpc.ClientConn, err error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(16<<20))}
	// Two connections, as Envoy's two clusters (ext_authz, extauthz_proc).
	if authz, err = grpc.NewClient(addr, opts...); err != nil {
		return nil, nil, err
	}
	if proc, err = grpc.NewClient(addr, opts...); err != nil {
		authz.Close()
		return nil, nil, err
	}
	return authz, proc, nil
}

// SeamLoad runs seam case f against addr closed loop for d: streams
// workers, each sending its next request when the last one ended. It
// returns the requests completed and failed; a failure is any error
// exchange reports (answers decoded: the load generator's CPU is not the
// server's).
func SeamLoad(ctx context.Context, addr string, f *seamFile, streams int, d time.Duration) (ok, failed int64, err error) {
	authz, proc, err := seamConns(addr)
	if err != nil {
		return 0, 0, err
	}
	defer authz.Close()
	defer proc.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, _, err = exchange(wctx, authz, proc, f, true)
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("first request: %w", err)
	}
	var nok, nfail atomic.Int64
	var firstErr error
	var once sync.Once
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			for time.Now().Before(end) {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, _, err := exchange(rctx, authz, proc, f, true)
				cancel()
				if err != nil {
					nfail.Add(1)
					once.Do(func() { firstErr = err })
					continue
				}
				nok.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil && nok.Load() == 0 {
		return 0, nfail.Load(), firstErr
	}
	return nok.Load(), nfail.Load(), nil
}

// nullProcessor answers every ProcessingRequest at once with the empty
// answer of its kind (no mutation, no mode override): the floor of an
// ext_proc server in grpc-go.
type nullProcessor struct {
	extprocv3.UnimplementedExternalProcessorServer
}

func (nullProcessor) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp := &extprocv3.ProcessingResponse{}
		switch req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			resp.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			resp.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_RequestBody:
			resp.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}
		case *extprocv3.ProcessingRequest_ResponseBody:
			resp.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}
		case *extprocv3.ProcessingRequest_RequestTrailers:
			resp.Response = &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}
		case *extprocv3.ProcessingRequest_ResponseTrailers:
			resp.Response = &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}
		}
		if err := srv.Send(resp); err != nil {
			return err
		}
	}
}
