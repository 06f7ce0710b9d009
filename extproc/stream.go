package extproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

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
	claimsJSON                                         string // Check's claims member: decoded by callerClaims
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
	session              string   // the legacy HTTP+SSE endpoint's session (a GET stream), for pin_scope session
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
	// stream, or a replay with Last-Event-ID; Check's metadata carries
	// the claims of both: decision.ClaimsFor).
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
	case st.method == mcpmethod.HTTPGet:
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
//
// It dispatches each ext_proc phase to one handler, as Envoy AI Gateway's
// server hands each phase to its Processor: requestHeaders and requestBody
// (request.go), responseHeaders (response_headers.go), which picks the
// body mode, and responseBody (response_body.go), which hands each chunk to
// the handler of that mode (body_json.go, body_held.go, body_sse.go).
func (st *stream) handle(ctx context.Context, req *extprocv3.ProcessingRequest) (*extprocv3.ProcessingResponse, error) {
	if !st.haveMeta {
		st.readMeta(req)
	}
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return st.requestHeaders(), nil
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
	ms, ok := authzMembers(req)
	if !ok {
		ms = nil // not wire format: no metadata
	}
	md, err := decision.ParseMetadata(func(k string) (string, bool) {
		for i := len(ms) - 1; i >= 0; i-- { // the last of a name wins
			if ms[i].key == k {
				return ms[i].value, true
			}
		}
		return "", false
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
	st.claimsJSON = md.Claims
	st.startReceipt(md.RequestDigest)
	if md.SeamClass != "" {
		st.s.cfg.Seam.Met(st.decision, md.SeamClass)
	}
}
