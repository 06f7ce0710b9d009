package extproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// AuthzNamespace is the dynamic-metadata namespace ext_authz writes Check's
// metadata under (Envoy ext_authz.cc Filter::onComplete).
const AuthzNamespace = decision.MetadataNamespace

// DefaultMaxBody bounds a buffered JSON answer the processor filters (4 MiB).
const DefaultMaxBody = 4 << 20

// Revision2026 is the first MCP revision whose list results carry
// cacheScope and ttlMs (CacheableResult).
const Revision2026 = "2026-07-28"

// Reasons the processor refuses with, in data.reason of its JSON-RPC
// errors and in its decision-log lines: a closed set.
const (
	ReasonNoMetadata    = "no_authorization_metadata" // a processed answer without Check's decision_id
	ReasonPrincipal     = "principal_mismatch"        // the re-verified token is not Check's principal
	ReasonToken         = "token_unverifiable"        // the token no longer verifies
	ReasonCompressed    = "response_compressed"       // content-encoding other than identity
	ReasonUnfilterable  = "response_unfilterable"     // a list answer that cannot be parsed or decided
	ReasonTooLarge      = "response_too_large"        // a JSON answer or SSE event over its cap
	ReasonInvalidCursor = "invalid_cursor"            // a params.cursor not sealed for this caller
	ReasonResultOnError = "result_on_error_status"    // a non-2xx answer carrying a JSON-RPC result
	ReasonContentType   = "content_type_ambiguous"    // the modelled clients read the Content-Type differently
	ReasonCharset       = "charset_unsupported"       // a charset other than UTF-8 on an answer a client reads
	ReasonUnexpected    = "unexpected_response"       // a JSON-RPC response to a request this stream does not carry
	ReasonRedirect      = "response_redirect"         // a 301, 302, 303, 307 or 308 the clients would follow
)

// Config is what a Server shares with Check.
type Config struct {
	// Policy returns the live policy and its version; a nil policy refuses
	// every list.
	Policy func() (*decision.Policy, string)
	// Verifier verifies the bearer token again for its claims (list and
	// GET routes). Nil: no claims (when expressions see an empty map).
	Verifier bearer.TokenVerifier
	// Tasks binds task ids; nil: CreateTaskResult ids are not bound and
	// tasks/list answers are refused.
	Tasks *state.Tasks
	// Cursors seals nextCursor; nil: cursors pass unchanged.
	Cursors *cursor.Sealer
	// Log is the decision logger: one line per filtered list. Nil: none.
	Log *zap.Logger
	// Metrics counts side streams and filtered lists. Nil: none.
	Metrics *metrics.Metrics
	// MaxBody bounds a buffered answer (default DefaultMaxBody); MaxEvent
	// one SSE event (default sse.DefaultMaxEvent).
	MaxBody, MaxEvent int
	// CacheTTLms is the ttlMs given to filtered lists on MCP 2026-07-28
	// (the smaller of it and the upstream's); default 0.
	CacheTTLms int64
	// Definitions records the tool definitions every tools/list shows when
	// the live policy pins them (pin_mode tofu or strict), for Check's pin
	// step; nil with pinning on refuses the list (fail closed). A tools
	// array this process observed whole lately, byte for byte in the same
	// scope, is not observed again tool by tool (toolpin ListSeen).
	Definitions *toolpin.Observations
	// Fingerprints caches fingerprints by the raw bytes of a definition.
	Fingerprints *toolpin.Cache
	// Results records the result of a call Check marked recover_key (its
	// rule says recover_results and it has an idempotency key), success or
	// tool_error, for ResultTTL (the idempotency key's lifetime), so Check
	// answers its retry from it. Nil: nothing is recorded.
	Results   *state.Results
	ResultTTL time.Duration
	// Seam is told of every side stream whose Check metadata carries
	// seam_class (Check marked the decision: internal/seamcover), once, at
	// its first message; nil: nothing is told.
	Seam *seamcover.Table
}

// Server is the ExternalProcessor.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer
	cfg Config
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxEvent <= 0 {
		cfg.MaxEvent = sse.DefaultMaxEvent
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &Server{cfg: cfg}
}

// Seam is the coverage table the Server tells (Config.Seam).
func (s *Server) Seam() *seamcover.Table { return s.cfg.Seam }

// respMode is how the response body is handled.
type respMode int

const (
	modeNone  respMode = iota // no body asked for
	modeJSON                  // BUFFERED, filter as JSON
	modeError                 // BUFFERED, non-2xx: drop a smuggled result
	modeSSE                   // STREAMED, frame and filter events
	// modeHeld: a tools/call's JSON answer, STREAMED: the processor holds
	// the chunks up to MaxBody (Envoy's buffer limit would fail a large
	// answer the upstream already produced) and decides them at the end as
	// a BUFFERED answer; past MaxBody it answers an error and passes nothing
	// more.
	modeHeld
)

// stream is one side stream's state.
type stream struct {
	s                                                  *Server
	haveMeta                                           bool
	metaRefused                                        bool   // Check's metadata did not parse: warned once
	decision                                           string // decision_id
	method, server, principal, policyVersion, protocol string
	rpcID                                              []byte
	taskRequested                                      bool
	claims                                             map[string]any
	httpMethod                                         string
	sawRequestBody                                     bool
	mode                                               respMode
	isList                                             bool
	framer                                             *sse.Framer
	out                                                []byte // SSE bytes released by the chunk being answered
	broken                                             bool   // refused mid-body (SSE, modeHeld): the rest is dropped
	refused                                            bool
	// counts for the decision log
	lists, kept, removed int
	kind                 listfilter.Kind
	listed               loggedTools
	rc                   receipt  // of an allowed tools/call (receipt.go)
	session              string   // Mcp-Session-Id (list and GET routes), for pin_scope session
	sessionHash          string   // Check's toolpin.SessionHash of it (every route, pin_scope session)
	recoverKey           string   // Check's recover_key: record the result under it
	held                 []byte   // modeHeld: the answer's bytes held so far
	responses            respRule // which responses the answer may carry
	owner                string   // state.TaskOwner of the caller: issuer and subject
	issuer               string   // the token issuer Check decided with ("" when Check sent none)
	ctx                  context.Context
	observing            []observingList // tools lists of the body being filtered, observed item by item
}

// respRule is which JSON-RPC responses a stream may carry (MCP 2025-11-25
// basic/transports: a POST's stream answers that POST's requests).
type respRule int

const (
	// respOwn: only responses to the request's own id (Check's rpc_id).
	respOwn respRule = iota
	// respNone: no response at all (a POST of notifications or
	// responses, which has no request id to answer).
	respNone
	// respAny: responses to any id, every list in them filtered by shape
	// with the caller's claims (a batch; a GET: the legacy HTTP+SSE
	// stream, or a replay with Last-Event-ID; routes that send the
	// request headers).
	respAny
)

// observingList is a tools array (aliasing the body being filtered) whose
// tools Filter is observing in scope, since at (toolpin ListSeen).
type observingList struct {
	scope string
	list  []byte
	at    time.Time
}

// Process implements ExternalProcessorServer: one call per HTTP stream.
func (s *Server) Process(srv extprocv3.ExternalProcessor_ProcessServer) (err error) {
	st := &stream{s: s}
	outcome := "ok"
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "ext_proc: recovered: %v", r)
		}
		st.endReceipt() // the stream ended before the answer: outcome_unknown
		if err != nil {
			outcome = "error"
		} else if st.refused {
			outcome = "refused"
		}
		s.cfg.Metrics.SideStreamEnded(st.route(), outcome)
	}()
	ctx := srv.Context()
	st.ctx = ctx
	for {
		req, rerr := srv.Recv()
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			if status.Code(rerr) == codes.Canceled || ctx.Err() != nil {
				return nil // Envoy reset the stream: nothing is flowing any more
			}
			return rerr
		}
		resp, herr := st.handle(ctx, req)
		if herr != nil {
			return status.Error(codes.Internal, "ext_proc: "+herr.Error())
		}
		if err := srv.Send(resp); err != nil {
			return err
		}
	}
}

// route is the metric label of the stream's route.
func (st *stream) route() string {
	switch {
	case st.isList || isListMethod(st.method):
		return "list"
	case st.httpMethod == "GET" || st.method == mcpmethod.HTTPGet:
		return "get"
	case strings.HasPrefix(st.method, "tasks/"):
		return "task"
	case st.method == mcpmethod.ToolsCall:
		return "call"
	}
	return "other"
}

func isListMethod(m string) bool { _, ok := listfilter.KindOf(m); return ok }

// handle answers one ProcessingRequest. An error aborts the stream.
func (st *stream) handle(ctx context.Context, req *extprocv3.ProcessingRequest) (*extprocv3.ProcessingResponse, error) {
	if !st.haveMeta {
		st.readMeta(req)
	}
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return st.requestHeaders(ctx, r.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return st.requestBody(r.RequestBody)
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return st.responseHeaders(r.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return st.responseBody(ctx, r.ResponseBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}, nil
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		if st.mode == modeSSE && st.framer != nil && !st.broken || st.mode == modeHeld && len(st.held) > 0 && !st.broken {
			// Trailers end the stream: held bytes can no longer be
			// released. Abort rather than drop them silently.
			return nil, errors.New("response trailers while body bytes are held")
		}
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}, nil
	}
	return nil, fmt.Errorf("unexpected message %T", req.GetRequest())
}

// readMeta reads Check's metadata from req's metadata_context
// (decision.ParseMetadata; a bool member reads as "true" or "false"). A
// block that does not parse is no metadata: the stream refuses with
// ReasonNoMetadata.
func (st *stream) readMeta(req *extprocv3.ProcessingRequest) {
	f := req.GetMetadataContext().GetFilterMetadata()[AuthzNamespace].GetFields()
	md, err := decision.ParseMetadata(func(k string) (string, bool) {
		v, ok := f[k]
		if b, isBool := v.GetKind().(*structpb.Value_BoolValue); isBool {
			return strconv.FormatBool(b.BoolValue), ok
		}
		return v.GetStringValue(), ok
	})
	if err != nil {
		if !errors.Is(err, decision.ErrNoMetadata) && !st.metaRefused {
			st.metaRefused = true
			st.s.cfg.Log.Warn("authorization metadata refused", zap.String("kind", "ext_proc"), zap.Error(err))
		}
		return
	}
	st.haveMeta = true
	st.decision = md.DecisionID
	st.method, st.server, st.principal = md.Method, md.Server, md.Principal
	st.issuer = md.Issuer
	st.owner = state.TaskOwner(st.issuer, st.principal)
	st.policyVersion, st.protocol = md.PolicyVersion, md.ProtocolVersion
	if md.RPCID != "" {
		st.rpcID = []byte(md.RPCID)
	}
	st.taskRequested = md.TaskRequested
	st.isList = isListMethod(st.method)
	st.recoverKey = md.RecoverKey
	st.sessionHash = md.Session
	st.startReceipt(md.RequestDigest)
	if md.SeamClass != "" {
		st.s.cfg.Seam.Met(st.decision, md.SeamClass)
	}
}

// header returns the value of header k (lower case) in hm.
func header(hm *corev3.HeaderMap, k string) (string, bool) {
	for _, h := range hm.GetHeaders() {
		if strings.EqualFold(h.GetKey(), k) {
			if rv := h.GetRawValue(); len(rv) > 0 {
				return string(rv), true
			}
			return h.GetValue(), true
		}
	}
	return "", false
}

func (st *stream) requestHeaders(ctx context.Context, h *extprocv3.HttpHeaders) (*extprocv3.ProcessingResponse, error) {
	if !st.haveMeta {
		return st.immediate(ReasonNoMetadata, "no authorization decision for this request"), nil
	}
	st.httpMethod, _ = header(h.GetHeaders(), ":method")
	sid, _ := header(h.GetHeaders(), "mcp-session-id")
	path, _ := header(h.GetHeaders(), ":path") // forwarded on list routes
	rev, _ := header(h.GetHeaders(), "mcp-protocol-version")
	st.session = toolpin.Session(sid, path, rev)
	if st.protocol == "" {
		st.protocol, _ = header(h.GetHeaders(), "mcp-protocol-version")
	}
	if v := st.s.cfg.Verifier; v != nil {
		if auth, ok := header(h.GetHeaders(), "authorization"); ok {
			_, tok, ok := bearer.ParseAuthorization(auth)
			if !ok {
				return st.immediate(ReasonToken, "the bearer token cannot be read"), nil
			}
			p, err := v.Verify(ctx, tok)
			if err != nil {
				return st.immediate(ReasonToken, "the bearer token no longer verifies"), nil
			}
			if p.Subject != st.principal || st.issuer != "" && p.Issuer != st.issuer {
				return st.immediate(ReasonPrincipal, "the bearer token is not the decided principal's"), nil
			}
			st.claims = p.Claims
		} else if st.principal != "" {
			return st.immediate(ReasonPrincipal, "no bearer token for the decided principal"), nil
		}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}}, nil
}

func (st *stream) requestBody(b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	st.sawRequestBody = true
	if !b.GetEndOfStream() {
		return nil, errors.New("request body not BUFFERED (a chunk without end_of_stream)")
	}
	pass := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}}
	if st.s.cfg.Cursors == nil || !st.haveMeta {
		return pass, nil
	}
	body, changed, err := listfilter.ReplaceCursor(b.GetBody(), st.limits(), func(method, c string) (string, error) {
		return st.s.cfg.Cursors.Open(st.binding(method), c)
	})
	if err != nil {
		var fe *listfilter.Error
		if errors.As(err, &fe) && fe.Kind == "parse" {
			return pass, nil // Check decided this body; it is not a list request we can read
		}
		return st.immediate(ReasonInvalidCursor, "Invalid cursor"), nil
	}
	if !changed {
		return pass, nil
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
		Response: &extprocv3.CommonResponse{
			HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("content-length", strconv.Itoa(len(body)))}},
			BodyMutation:   &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}},
		},
	}}}, nil
}

func (st *stream) binding(method string) cursor.Binding {
	return cursor.Binding{Method: method, Server: st.server, Principal: st.owner, PolicyVersion: st.policyVersion}
}

func (st *stream) limits() mcpparse.Limits {
	return mcpparse.Limits{MaxBytes: st.s.cfg.MaxBody, MaxKeys: 1 << 20, MaxElements: 1 << 22, MaxStringLen: st.s.cfg.MaxBody}
}

// headerValues returns every value of header k (lower case) in hm, in order.
func headerValues(hm *corev3.HeaderMap, k string) []string {
	var vs []string
	for _, h := range hm.GetHeaders() {
		if strings.EqualFold(h.GetKey(), k) {
			if rv := h.GetRawValue(); len(rv) > 0 {
				vs = append(vs, string(rv))
			} else {
				vs = append(vs, h.GetValue())
			}
		}
	}
	return vs
}

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

// isGET reports a GET stream (the route sends the request headers; Check's
// method for a bodiless GET is mcpmethod.HTTPGet).
func (st *stream) isGET() bool {
	return st.httpMethod == "GET" || st.method == mcpmethod.HTTPGet
}

// responseRule is which responses this stream may carry (respRule).
func (st *stream) responseRule() respRule {
	switch {
	case st.isGET():
		// The legacy HTTP+SSE transport (2024-11-05) answers every
		// request on its GET stream, and a Streamable HTTP GET resuming
		// with Last-Event-ID replays a POST's: the GET route sends the
		// caller's token, so every list there is filtered by its shape.
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
	pass := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}}
	readable := code < 400 // 1xx never reaches the processor as response headers
	st.rc.status = code
	noBody := h.GetEndOfStream() || code == 204 || code == 304 || st.httpMethod == "HEAD"
	if !st.haveMeta {
		if readable && !noBody {
			return st.immediate(ReasonNoMetadata, "no authorization decision for this response"), nil
		}
		return pass, nil // a local reply or an answer nobody asked the processor about
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
		return st.withReceipt(pass), nil
	}
	if !codingsIdentity(headerValues(hm, "content-encoding")) {
		return st.immediate(ReasonCompressed, "a compressed response cannot be filtered"), nil
	}
	st.responses = st.responseRule()
	ctypes := headerValues(hm, "content-type")
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
		return st.withReceipt(pass), nil
	}
	reqBody := procfv3.ProcessingMode_NONE
	if st.sawRequestBody {
		reqBody = procfv3.ProcessingMode_BUFFERED
	}
	cr := &extprocv3.CommonResponse{}
	if len(hdrs) > 0 {
		cr.HeaderMutation = &extprocv3.HeaderMutation{SetHeaders: hdrs}
	}
	if st.mode == modeSSE || st.mode == modeHeld {
		// Envoy removes content-length for STREAMED only when that is the
		// static mode (Filter::encodeHeaders runs before the override): an
		// SSE answer sent with one (the TypeScript SDK's) keeps it, and
		// the rewritten events would not match it. A body that arrives
		// whole before this answer is then sent as a buffered body and
		// checked against it (ProcessorState::validateContentLength).
		if cr.HeaderMutation == nil {
			cr.HeaderMutation = &extprocv3.HeaderMutation{}
		}
		cr.HeaderMutation.RemoveHeaders = append(cr.HeaderMutation.RemoveHeaders, "content-length")
	}
	return &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: cr}},
		ModeOverride: &procfv3.ProcessingMode{
			RequestHeaderMode: procfv3.ProcessingMode_SEND, ResponseHeaderMode: procfv3.ProcessingMode_SEND,
			RequestBodyMode: reqBody, ResponseBodyMode: body,
			RequestTrailerMode: procfv3.ProcessingMode_SKIP, ResponseTrailerMode: procfv3.ProcessingMode_SKIP,
		},
	}, nil
}

func setHeader(k, v string) *corev3.HeaderValueOption {
	// append unset (false): the value replaces the header's. Envoy's
	// ext_proc reads only append, not append_action.
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}}
}

// filterOptions are the listfilter options for this stream.
func (st *stream) filterOptions(ctx context.Context) listfilter.Options {
	opt := listfilter.Options{Limits: st.limits(), ID: st.rpcID, Method: st.method}
	switch st.responses {
	case respOwn:
		opt.Response = func(id []byte) error {
			if sameID(id, st.rpcID) {
				return nil
			}
			return errUnexpected
		}
	case respNone:
		opt.Response = func([]byte) error { return errUnexpected }
	}
	pol, version := (*decision.Policy)(nil), ""
	if f := st.s.cfg.Policy; f != nil {
		pol, version = f()
	}
	// The core decides each item (decision.ListItems); the pin state of
	// the list being decided is read whole first (Prepare).
	items := &decision.ListItems{Policy: pol, Definitions: st.s.cfg.Definitions,
		Server: st.server, Principal: st.owner, Claims: st.claims}
	if t := st.s.cfg.Tasks; t != nil {
		items.Tasks = t
	}
	opt.Keep = func(k listfilter.Kind, key string, raw []byte) (bool, error) {
		d, err := items.MaySee(ctx, k, key)
		return d.Visible, err
	}
	if decision.Pinned(pol) {
		scope := st.pinScope(pol)
		items.Scope = scope
		// After the list's observations, its tools' pin state in one
		// store read (ItemDefinitions), even for a list seen lately: a
		// definition observed elsewhere since must still hide its tool.
		opt.Prepare = func(k listfilter.Kind, keys []string) error {
			return items.Prepare(ctx, k, keys)
		}
		if defs := st.s.cfg.Definitions; defs != nil {
			opt.ObserveList = func(k listfilter.Kind, list []byte) (bool, error) {
				if k != listfilter.Tools {
					return false, nil
				}
				seen, at := defs.ListSeen(scope, list)
				if !seen {
					st.observing = append(st.observing, observingList{scope: scope, list: list, at: at})
					return false, nil
				}
				st.listed.lately++ // logged with its tools when this process observed it
				return true, nil
			}
		}
		opt.Observe = func(k listfilter.Kind, key string, item []byte) error {
			if k == listfilter.Prompts && st.s.cfg.Definitions != nil {
				// The prompt's declared arguments, for Check's argument
				// validation; a prompt that does not parse records none.
				if name, schema, err := toolpin.PromptArgumentsSchema(item); err == nil && name == key {
					return st.s.cfg.Definitions.ObservePromptArguments(ctx, scope, name, schema)
				}
				return nil
			}
			if k != listfilter.Tools {
				return nil
			}
			if st.s.cfg.Definitions == nil {
				return errors.New("pin_mode is on but tool definitions cannot be recorded here")
			}
			// Not strict JSON to the fingerprint: pinned by its raw
			// bytes, with no hints (every annotation at its worst case).
			d := decision.ItemObserved(key, item, st.s.cfg.Fingerprints)
			st.listed.add(d, d.Raw)
			return st.s.cfg.Definitions.Observe(ctx, scope, d)
		}
	}
	if c := st.s.cfg.Cursors; c != nil {
		// Sealed to the policy that filtered this page (the live one,
		// which the next page's Check will compare with).
		opt.Cursor = func(k listfilter.Kind, up string) (string, error) {
			b := st.binding(k.Method())
			b.PolicyVersion = version
			return c.Seal(b, up)
		}
	}
	if st.protocol >= Revision2026 && len(st.protocol) == len(Revision2026) {
		opt.Cache = &listfilter.CacheHint{TTLms: st.s.cfg.CacheTTLms}
	}
	return opt
}

// pinScope is the toolpin scope of this stream's definitions: from the
// request's session when the route sent the request headers, else from the
// session hash Check handed over (the same scope: toolpin.ScopeOfHash),
// so a definition seen on any route is recorded in its session.
func (st *stream) pinScope(pol *decision.Policy) string {
	return decision.PinScope(pol, st.server, st.session, st.sessionHash) // one per list: it hashes the session id
}

// sameID reports whether two raw JSON-RPC ids are the same id: byte for
// byte, or in RFC 8785 form (a server's SDK decodes the request's id and
// writes it again: "\u0031" comes back "1", 1.0 comes back 1). A string
// and a number are never the same (the TypeScript client's Number(id)
// would equate "2" and 2; the seam does not).
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, err := mcpparse.Canonicalize(a, mcpparse.Limits{})
	if err != nil {
		return false
	}
	cb, err := mcpparse.Canonicalize(b, mcpparse.Limits{})
	return err == nil && bytes.Equal(ca, cb)
}

// errUnexpected is a response the stream's rule (respRule) refuses.
var errUnexpected = errors.New("a JSON-RPC response to a request this stream does not carry")

// filter runs the list filter on one JSON body, binds the task ids it
// finds and records the counts.
func (st *stream) filter(ctx context.Context, body []byte) (listfilter.Result, error) {
	opt := st.filterOptions(ctx)
	st.observing = st.observing[:0]
	res, err := listfilter.Filter(body, opt)
	if err != nil {
		st.observing = st.observing[:0] // not every tool was observed
		return res, err
	}
	if defs := st.s.cfg.Definitions; len(st.observing) > 0 && defs != nil {
		// Every tool of these lists was observed (Filter fails on the
		// first Observe error): a repeat of one costs no Observe.
		for _, l := range st.observing {
			defs.ListObserved(l.scope, l.list, l.at)
		}
		st.observing = st.observing[:0]
	}
	if res.Lists > 0 {
		st.lists += res.Lists
		st.kept += res.Kept
		st.removed += res.Removed
		st.kind = res.Kind
		st.s.cfg.Metrics.ListFiltered(res.Kind.String(), "ok", res.Removed)
	}
	st.bindTasks(ctx, res.Tasks)
	return res, nil
}

func (st *stream) bindTasks(ctx context.Context, tasks []listfilter.Task) {
	for _, t := range tasks {
		tk := st.s.cfg.Tasks
		if tk == nil {
			st.s.cfg.Log.Warn("task not bound: no task store", zap.String("decision_id", st.decision))
			continue
		}
		if err := tk.Bind(ctx, st.server, t.ID, st.owner, t.TTLms); err != nil {
			// The task stays unbound (or another's): its later task calls
			// are refused, which fails closed.
			st.s.cfg.Log.Warn("task not bound", zap.String("decision_id", st.decision), zap.Error(err))
		}
	}
}

// refusedList counts and logs a list answer replaced by an error.
func (st *stream) refusedList(reason string, err error) {
	st.refused = true
	kind := "unknown"
	if k, ok := listfilter.KindOf(st.method); ok {
		kind = k.String()
	}
	st.s.cfg.Metrics.ListFiltered(kind, "refused", 0)
	st.s.cfg.Log.Info("list refused",
		zap.String("kind", "list_filter"), zap.String("decision_id", st.decision), zap.String("method", st.method),
		zap.String("server", st.server), zap.String("policy_version", st.policyVersion),
		zap.String("result", "refused"), zap.String("reason", reason), zap.NamedError("cause", err))
}

// logFiltered writes the one decision-log line of a filtered list; for
// tools/list with pinning on it carries the fingerprints of every tool
// listed, kept or removed (pinlog.go: "tools", bounded by
// MaxLoggedToolBytes), for extauthz pin --decision-log.
func (st *stream) logFiltered() {
	if st.lists == 0 {
		return
	}
	fields := []zap.Field{zap.String("kind", "list_filter"), zap.String("decision_id", st.decision), zap.String("method", st.method),
		zap.String("server", st.server), zap.String("policy_version", st.policyVersion),
		zap.String("list", st.kind.String()), zap.Int("lists", st.lists), zap.Int("kept", st.kept), zap.Int("removed", st.removed),
		zap.String("result", "ok")}
	st.s.cfg.Log.Info("list filtered", append(fields, st.listed.fields()...)...)
}

// responseBody answers one response body message; the call's receipt is
// closed at end_of_stream and travels to Envoy with that answer.
func (st *stream) responseBody(ctx context.Context, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	resp, err := st.responseBodyOf(ctx, b)
	if err == nil && b.GetEndOfStream() {
		st.endReceipt()
	}
	return st.withReceipt(resp), err
}

func (st *stream) responseBodyOf(ctx context.Context, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	switch st.mode {
	case modeSSE:
		return st.sseChunk(ctx, b)
	case modeHeld:
		return st.heldChunk(ctx, b), nil
	case modeJSON, modeError:
		if !b.GetEndOfStream() {
			return nil, errors.New("response body not BUFFERED (a chunk without end_of_stream)")
		}
		return st.jsonBody(ctx, b.GetBody())
	}
	return bodyResponse(nil, nil), nil // not asked for: pass
}

// heldChunk answers one chunk of a held call answer (modeHeld): held until
// the end of stream, then released as jsonBody decides it (filtered, a task
// it creates bound; refused when it cannot be read or answers a request
// this stream does not carry). Past MaxBody the answer is refused: an
// error body goes out for it and nothing after it passes (the headers went
// downstream already, without content-length).
func (st *stream) heldChunk(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if st.broken {
		return bodyResponse([]byte{}, nil) // refused: nothing more passes
	}
	st.held = append(st.held, b.GetBody()...)
	if len(st.held) > st.s.cfg.MaxBody {
		st.held, st.broken = nil, true
		st.refusedList(ReasonTooLarge, nil)
		st.endReceipt() // outcome_unknown: the client gets the error
		return bodyResponse(errorBody(st.rpcID, ReasonTooLarge, "the response is too large to filter"), nil)
	}
	if !b.GetEndOfStream() {
		return bodyResponse([]byte{}, nil) // held
	}
	out := st.held
	st.held = nil
	body, _ := st.decideJSON(ctx, out)
	if body == nil {
		return bodyResponse(out, nil)
	}
	return bodyResponse(body, nil)
}

// bodyResponse answers a response body message: body replaces it when not
// nil, with headers set.
func bodyResponse(body []byte, hdrs []*corev3.HeaderValueOption) *extprocv3.ProcessingResponse {
	cr := &extprocv3.CommonResponse{}
	if body != nil {
		cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}}
	}
	if len(hdrs) > 0 {
		cr.HeaderMutation = &extprocv3.HeaderMutation{SetHeaders: hdrs}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: cr}}}
}

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
