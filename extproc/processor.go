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

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// AuthzNamespace is the dynamic-metadata namespace ext_authz writes Check's
// metadata under (Envoy ext_authz.cc Filter::onComplete).
const AuthzNamespace = "envoy.filters.http.ext_authz"

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
)

// Config is what a Server shares with Check.
type Config struct {
	// Policy returns the live policy and its version; a nil policy refuses
	// every list.
	Policy func() (*policy.Policy, string)
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

// respMode is how the response body is handled.
type respMode int

const (
	modeNone  respMode = iota // no body asked for
	modeJSON                  // BUFFERED, filter as JSON
	modeSniff                 // BUFFERED, another 2xx type: filter if it is JSON-RPC
	modeError                 // BUFFERED, non-2xx: drop a smuggled result
	modeSSE                   // STREAMED, frame and filter events
	// modeHeld: a tools/call's non-SSE answer (the route observes only,
	// envoy.ObserveOnlyMethods), STREAMED: the processor holds the chunks
	// up to MaxBody and releases them at the end, filtered by shape if a
	// list is there, unchanged otherwise (whatever it finds: the upstream
	// ran the call); past MaxBody it releases what it holds and passes the
	// rest unread (receipt outcome_unknown).
	modeHeld
)

// stream is one side stream's state.
type stream struct {
	s                                                  *Server
	haveMeta                                           bool
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
	broken                                             bool   // SSE: framing lost, the rest is dropped
	refused                                            bool
	// counts for the decision log
	lists, kept, removed int
	kind                 listfilter.Kind
	listed               loggedTools
	rc                   receipt // of an allowed tools/call (receipt.go)
	session              string  // Mcp-Session-Id (list and GET routes), for pin_scope session
	recoverKey           string  // Check's recover_key: record the result under it
	held                 []byte  // modeHeld: the answer's bytes held so far
	passing              bool    // modeHeld: past MaxBody, the rest passes unread
	owner                string  // state.TaskOwner of the caller: issuer and subject
	issuer               string  // the token issuer Check decided with ("" when Check sent none)
	ctx                  context.Context
	observing            []observingList // tools lists of the body being filtered, observed item by item
}

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
		if st.mode == modeSSE && st.framer != nil && !st.broken {
			// Trailers end the stream: held SSE bytes can no longer be
			// released. Abort rather than drop them silently.
			return nil, errors.New("response trailers while SSE bytes are held")
		}
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}, nil
	}
	return nil, fmt.Errorf("unexpected message %T", req.GetRequest())
}

// readMeta reads Check's metadata from req's metadata_context.
func (st *stream) readMeta(req *extprocv3.ProcessingRequest) {
	ns := req.GetMetadataContext().GetFilterMetadata()[AuthzNamespace]
	f := ns.GetFields()
	str := func(k string) string { return f[k].GetStringValue() }
	if str("decision_id") == "" {
		return
	}
	st.haveMeta = true
	st.decision = str("decision_id")
	st.method, st.server, st.principal = str("method"), str("server"), str("principal")
	st.issuer = str("issuer")
	st.owner = state.TaskOwner(st.issuer, st.principal)
	st.policyVersion, st.protocol = str("policy_version"), str("protocol_version")
	if id := str("rpc_id"); id != "" {
		st.rpcID = []byte(id)
	}
	st.taskRequested = str("task_requested") == "true" || f["task_requested"].GetBoolValue()
	st.isList = isListMethod(st.method)
	st.recoverKey = str("recover_key")
	st.startReceipt(str("request_digest"))
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
		return st.immediate(503, ReasonNoMetadata, "no authorization decision for this request"), nil
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
				return st.immediate(503, ReasonToken, "the bearer token cannot be read"), nil
			}
			p, err := v.Verify(ctx, tok)
			if err != nil {
				return st.immediate(503, ReasonToken, "the bearer token no longer verifies"), nil
			}
			if p.Subject != st.principal || st.issuer != "" && p.Issuer != st.issuer {
				return st.immediate(503, ReasonPrincipal, "the bearer token is not the decided principal's"), nil
			}
			st.claims = p.Claims
		} else if st.principal != "" {
			return st.immediate(503, ReasonPrincipal, "no bearer token for the decided principal"), nil
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
		return st.rpcError(400, -32602, ReasonInvalidCursor, "Invalid cursor"), nil
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

// mediaType returns the lower-cased media type of a content-type value.
func mediaType(ct string) string {
	ct = strings.ToLower(ct)
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(ct)
}

func (st *stream) responseHeaders(h *extprocv3.HttpHeaders) (*extprocv3.ProcessingResponse, error) {
	hm := h.GetHeaders()
	code, _ := strconv.Atoi(func() string { s, _ := header(hm, ":status"); return s }())
	ct, _ := header(hm, "content-type")
	enc, _ := header(hm, "content-encoding")
	lct := strings.ToLower(ct)
	// As loosely as clients test it (the TypeScript SDK: includes()).
	isSSE := strings.Contains(lct, "text/event-stream")
	isJSON := !isSSE && strings.Contains(lct, "application/json")
	pass := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}}
	ok2xx := code >= 200 && code < 300
	st.rc.status = code
	if !st.haveMeta {
		if ok2xx && (isSSE || isJSON) {
			return st.immediate(503, ReasonNoMetadata, "no authorization decision for this response"), nil
		}
		return pass, nil // a local reply or an answer nobody asked the processor about
	}
	noBody := h.GetEndOfStream() || code == 204 || code == 304 || code == 202 || st.httpMethod == "HEAD"
	if noBody {
		st.endReceipt()
		return st.withReceipt(pass), nil
	}
	// A tools/call's answer is observed, never refused: the upstream has
	// run the call (envoy.ObserveOnlyMethods).
	observe := st.method == mcpmethod.ToolsCall && !st.isList
	if e := strings.TrimSpace(strings.ToLower(enc)); e != "" && e != "identity" {
		if observe {
			st.s.cfg.Log.Info("response seam: a compressed call answer passes unread",
				zap.String("kind", "ext_proc"), zap.String("decision_id", st.decision), zap.String("content_encoding", e))
			st.endReceipt() // outcome_unknown: nobody read the answer
			return st.withReceipt(pass), nil
		}
		return st.immediate(502, ReasonCompressed, "a compressed response cannot be filtered"), nil
	}
	var hdrs []*corev3.HeaderValueOption
	body := procfv3.ProcessingMode_BUFFERED
	switch {
	case observe && !isSSE && (ok2xx || isJSON):
		// Held by the processor rather than buffered by Envoy, whose
		// buffer limit would fail a large answer the upstream already
		// produced. Content-length is removed as for SSE (the answer may
		// come back filtered).
		st.mode, body = modeHeld, procfv3.ProcessingMode_STREAMED
	case observe && !isSSE:
		st.endReceipt() // http_error
		return st.withReceipt(pass), nil
	case !ok2xx:
		if !isSSE && !isJSON {
			st.endReceipt() // http_error
			return st.withReceipt(pass), nil
		}
		st.mode = modeError
	case isSSE:
		st.mode, body = modeSSE, procfv3.ProcessingMode_STREAMED
		st.framer = sse.New(st.s.cfg.MaxEvent)
		if st.isList {
			// STREAMED: the headers go downstream with this answer.
			hdrs = append(hdrs, setHeader("cache-control", "private, no-store"))
		}
	case isJSON:
		st.mode = modeJSON
	default:
		st.mode = modeSniff
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
	pol, version := (*policy.Policy)(nil), ""
	if f := st.s.cfg.Policy; f != nil {
		pol, version = f()
	}
	var item policy.Input // reused: Keep is called for one item at a time
	var def policy.ToolDefinition
	opt.Keep = func(k listfilter.Kind, key string, raw []byte) (bool, error) {
		if k == listfilter.Tasks {
			t := st.s.cfg.Tasks
			if t == nil {
				return false, errors.New("no task store")
			}
			owner, found, err := t.Owner(ctx, st.server, key)
			return found && owner == st.owner, err
		}
		if pol == nil {
			return false, errors.New("no policy")
		}
		if !itemInput(&item, k, key, st.server, st.claims) {
			return false, nil
		}
		d, err := ItemDefinition(ctx, pol, st.s.cfg.Definitions, st.server, toolpin.Scope(pol, st.server, st.session), k, key)
		if err != nil {
			return false, err
		}
		if d != nil {
			def, item.Definition = *d, &def
		}
		return pol.Visible(&item).Visible, nil
	}
	if pol != nil && pol.PinMode() != policy.PinOff {
		scope := toolpin.Scope(pol, st.server, st.session) // one per list: it hashes the session id
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
			if k != listfilter.Tools {
				return nil
			}
			if st.s.cfg.Definitions == nil {
				return errors.New("pin_mode is on but tool definitions cannot be recorded here")
			}
			d, err := toolpin.Parse(item, st.s.cfg.Fingerprints)
			if err != nil {
				// Not strict JSON to the fingerprint: pinned by its raw
				// bytes, with no hints (every annotation at its worst case).
				d = toolpin.Definition{Name: key, Fingerprint: toolpin.RawFingerprint(item), Raw: true}
			}
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
	case modeJSON, modeSniff, modeError:
		if !b.GetEndOfStream() {
			return nil, errors.New("response body not BUFFERED (a chunk without end_of_stream)")
		}
		return st.jsonBody(ctx, b.GetBody())
	}
	return bodyResponse(nil, nil), nil // not asked for: pass
}

// heldChunk answers one chunk of a held call answer (modeHeld): held until
// the end of stream, then released whole, filtered by shape when it holds a
// list (st.filter, which also binds a task the call created) and unchanged
// when it holds none or cannot be read; past MaxBody everything held and
// the rest pass unread. The receipt reads the released bytes.
func (st *stream) heldChunk(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if st.passing {
		return bodyResponse(nil, nil)
	}
	st.held = append(st.held, b.GetBody()...)
	if len(st.held) > st.s.cfg.MaxBody {
		out := st.held
		st.held, st.passing = nil, true
		st.s.cfg.Log.Info("response seam: a call answer too large to read passes unread",
			zap.String("kind", "ext_proc"), zap.String("decision_id", st.decision), zap.Int("max_body", st.s.cfg.MaxBody))
		st.endReceipt() // outcome_unknown: nobody read the answer
		return bodyResponse(out, nil)
	}
	if !b.GetEndOfStream() {
		return bodyResponse([]byte{}, nil) // held
	}
	out := st.held
	st.held = nil
	if len(bytes.TrimSpace(out)) == 0 {
		return bodyResponse(out, nil)
	}
	st.answer(out)
	res, err := st.filter(ctx, out)
	if err != nil {
		// Passed as sent all the same: a task it names is bound to no one
		// (its task methods are refused), a list in it is none this call
		// asked for.
		st.s.cfg.Log.Info("response seam: a call answer the filter cannot read passes as sent",
			zap.String("kind", "ext_proc"), zap.String("decision_id", st.decision), zap.NamedError("cause", err))
		return bodyResponse(out, nil)
	}
	st.logFiltered()
	if res.Changed {
		return bodyResponse(res.Body, nil)
	}
	return bodyResponse(out, nil)
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

func (st *stream) jsonBody(ctx context.Context, body []byte) (*extprocv3.ProcessingResponse, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return bodyResponse(nil, nil), nil
	}
	st.answer(body)
	replace := func(reason, msg string) *extprocv3.ProcessingResponse {
		eb := errorBody(st.rpcID, -32603, reason, msg)
		return bodyResponse(eb, []*corev3.HeaderValueOption{
			setHeader("content-type", "application/json"),
			setHeader("content-length", strconv.Itoa(len(eb))),
			setHeader("cache-control", "private, no-store"),
		})
	}
	if st.mode == modeError {
		if carriesResult(body, st.limits()) {
			st.refusedList(ReasonResultOnError, nil)
			return replace(ReasonResultOnError, "a JSON-RPC result on an error status"), nil
		}
		return bodyResponse(nil, nil), nil
	}
	if len(body) > st.s.cfg.MaxBody {
		st.refusedList(ReasonTooLarge, nil)
		return replace(ReasonTooLarge, "the response is too large to filter"), nil
	}
	res, err := st.filter(ctx, body)
	if err != nil {
		if st.mode == modeSniff {
			var fe *listfilter.Error
			if errors.As(err, &fe) && fe.Kind == "parse" {
				return bodyResponse(nil, nil), nil // not JSON-RPC: no client reads it as a message
			}
		}
		st.refusedList(ReasonUnfilterable, err)
		return replace(ReasonUnfilterable, "the list response could not be filtered"), nil
	}
	var hdrs []*corev3.HeaderValueOption
	if res.Lists > 0 || st.isList {
		hdrs = append(hdrs, setHeader("cache-control", "private, no-store"))
	}
	st.logFiltered()
	if !res.Changed {
		return bodyResponse(nil, hdrs), nil
	}
	hdrs = append(hdrs, setHeader("content-length", strconv.Itoa(len(res.Body))))
	return bodyResponse(res.Body, hdrs), nil
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
		found = found || check(ev.TS.Data) || check(ev.Go.Data)
		return nil
	}
	_ = f.Write(body, onEvent)
	_ = f.Close(onEvent)
	return found
}

// errorBody is a JSON-RPC error response with id (raw JSON; null when nil).
func errorBody(id []byte, code int, reason, msg string) []byte {
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

// immediate is a local reply with a JSON-RPC error (code -32603 unless
// rpcError is used).
func (st *stream) immediate(httpStatus int, reason, msg string) *extprocv3.ProcessingResponse {
	return st.rpcError(httpStatus, -32603, reason, msg)
}

func (st *stream) rpcError(httpStatus, code int, reason, msg string) *extprocv3.ProcessingResponse {
	st.refused = true
	st.s.cfg.Log.Info("response seam refused",
		zap.String("kind", "ext_proc"), zap.String("decision_id", st.decision), zap.String("method", st.method),
		zap.String("server", st.server), zap.String("reason", reason), zap.Int("status", httpStatus))
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Status: &typev3.HttpStatus{Code: typev3.StatusCode(httpStatus)},
		Headers: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			setHeader("content-type", "application/json"),
			setHeader("cache-control", "no-store"),
		}},
		Body:    errorBody(st.rpcID, code, reason, msg),
		Details: "mcp_extauthz_" + reason,
	}}}
}

// sseChunk frames one STREAMED chunk and answers it with the bytes released.
func (st *stream) sseChunk(ctx context.Context, b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	if st.passing {
		return bodyResponse(nil, nil), nil // a call's stream past an event too large to read
	}
	st.out = st.out[:0]
	onEvent := func(ev *sse.Event) error {
		st.out = append(st.out, st.event(ctx, ev)...)
		return nil
	}
	if !st.broken {
		err := st.framer.Write(b.GetBody(), onEvent)
		if err == nil && b.GetEndOfStream() {
			err = st.framer.Close(onEvent)
		}
		switch {
		case err != nil && st.method == mcpmethod.ToolsCall && !st.isList:
			// A call's stream is observed, never refused (the upstream
			// ran the call): the event too large to read and the rest
			// pass unread.
			st.broken, st.passing = true, true
			st.out = append(st.out, st.framer.Pending()...)
			st.s.cfg.Log.Info("response seam: a call answer's SSE event too large to read passes unread",
				zap.String("kind", "ext_proc"), zap.String("decision_id", st.decision), zap.Int("max_event", st.s.cfg.MaxEvent))
			st.endReceipt() // outcome_unknown unless the answer was read already
		case err != nil:
			st.broken = true
			st.refusedList(ReasonTooLarge, err)
			st.out = append(st.out, st.errorEvent(ReasonTooLarge, "an SSE event is too large to filter")...)
		}
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
	return sse.AppendData(nil, nil, errorBody(st.rpcID, -32603, reason, msg))
}

// event decides one SSE event: its bytes to release.
func (st *stream) event(ctx context.Context, ev *sse.Event) []byte {
	read := ev.TS.Message() || ev.Go.Message()
	if ev.Ambiguous {
		if !hasData(ev) {
			return ev.Raw
		}
		st.refusedList(ReasonUnfilterable, errors.New("a bare CR: clients frame this event differently"))
		return st.errorEvent(ReasonUnfilterable, "an SSE event the clients read differently")
	}
	if read && len(ev.Go.Data) > 0 {
		st.answer(ev.Go.Data)
	}
	views := [][]byte{ev.Go.Data, ev.TS.Data}
	if bytes.Equal(views[0], views[1]) {
		views = views[:1]
	}
	tried := false
	var lastErr error
	for _, d := range views {
		if len(bytes.TrimSpace(d)) == 0 {
			continue
		}
		tried = true
		res, err := st.filter(ctx, d)
		if err != nil {
			lastErr = err
			continue
		}
		if !res.Changed {
			return ev.Raw
		}
		if !read {
			return nil // a list smuggled in an event no client reads: dropped
		}
		return sse.AppendData(nil, sse.IDLine(ev.Raw), res.Body)
	}
	if !tried || !read {
		return ev.Raw
	}
	st.refusedList(ReasonUnfilterable, lastErr)
	return st.errorEvent(ReasonUnfilterable, "the list response could not be filtered")
}

func hasData(ev *sse.Event) bool {
	return bytes.Contains(ev.Raw, []byte("data"))
}
