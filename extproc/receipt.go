package extproc

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// ReceiptNamespace is the dynamic-metadata namespace the processor writes
// a call's outcome into (Envoy's access log prints
// %DYNAMIC_METADATA(mcp.receipt:outcome)%).
const ReceiptNamespace = "mcp.receipt"

// The outcomes of an allowed tools/call (issue 18; notes/RESPONSE-SEAM.md
// 5.8). outcome_unknown: the stream ended, was reset or timed out before the
// answer was seen, or the answer's result could not be read (resultOutcome):
// the upstream may have executed the call; nobody saw the answer.
const (
	OutcomeSuccess       = "success"
	OutcomeToolError     = "tool_error"
	OutcomeRPCError      = "rpc_error"
	OutcomeTaskCreated   = "task_created"
	OutcomeInputRequired = "input_required"
	OutcomeHTTPError     = "http_error"
	OutcomeUnknown       = "outcome_unknown"
)

// receipt is what the processor records of one allowed tools/call.
type receipt struct {
	on, done      bool
	start         time.Time
	requestDigest string
	status        int // upstream HTTP status
	outcome       string
	code          int64  // JSON-RPC error code, rpc_error only
	digest        string // sha256 of the RFC 8785 form of result (or error)
	bytes         int
	meta          *structpb.Struct // set once done, for the next ProcessingResponse
}

// startReceipt begins the receipt of a tools/call stream (Check allowed
// it: there is a decision id).
func (st *stream) startReceipt(requestDigest string) {
	if st.method != mcpmethod.ToolsCall || st.decision == "" {
		return
	}
	st.rc = receipt{on: true, start: time.Now(), requestDigest: requestDigest}
}

// answer records the outcome from msg (a JSON-RPC message or batch, the
// bytes the client reads) when it holds the response to the call's id.
func (st *stream) answer(msg []byte) {
	if !st.wantsAnswer() {
		return
	}
	body, err := mcpparse.Parse(bytes.TrimPrefix(msg, []byte("\xef\xbb\xbf")), mcpparse.ParseOptions{Limits: st.limits(), AllowBatch: true})
	if err != nil {
		return
	}
	for i := range body.Messages {
		if m := &body.Messages[i]; m.Kind == mcpparse.KindResponse && st.answerOne(m.ID, m.Result, msg) {
			return
		}
	}
}

// answerFiltered is answer for msg as the filter passed it unchanged,
// from the responses it read (listfilter.Result.Responses): no second
// parse.
func (st *stream) answerFiltered(rs []listfilter.Response, msg []byte) {
	if !st.wantsAnswer() {
		return
	}
	for _, r := range rs {
		if st.answerOne(r.ID, r.Result, msg) {
			return
		}
	}
}

func (st *stream) wantsAnswer() bool {
	return st.rc.on && !st.rc.done && len(st.rpcID) > 0
}

// answerOne records the outcome from one response (result nil: an error
// response) of msg when it answers the call's id, and reports whether it
// did.
func (st *stream) answerOne(id, result, msg []byte) bool {
	if !sameID(id, st.rpcID) {
		return false
	}
	rc := &st.rc
	rc.bytes = len(msg)
	if result == nil {
		rc.outcome = OutcomeRPCError
		rc.code = errorCode(msg)
		rc.digest = canonicalDigest(errorMember(msg))
	} else {
		rc.outcome = resultOutcome(result)
		rc.digest = canonicalDigest(result)
		st.recordResult(result)
	}
	st.finishReceipt()
	return true
}

// resultOutcome classifies a tools/call result: isError true is a tool
// error; a CreateTaskResult (result.task.taskId) or MCP 2026's resultType
// "task" a created task; resultType "input_required" a request for input.
// A result whose members have other types (isError not a boolean, a
// taskId not a string: no SDK reads such a result as the call's) is
// outcome_unknown: nobody can say what the caller saw.
func resultOutcome(result []byte) string {
	if bytes.IndexByte(result, '\\') < 0 && !bytes.Contains(result, []byte(`"isError"`)) &&
		!bytes.Contains(result, []byte(`"resultType"`)) && !bytes.Contains(result, []byte(`"task"`)) {
		// None of the members it reads, in any spelling (no escape can
		// write one either): a success, without decoding.
		return OutcomeSuccess
	}
	// Members by their exact names, as the SDK clients match them (zod,
	// pydantic, the Go SDK's case-sensitive decoding): "IsError" is not
	// isError. The result parsed strictly already (no duplicates).
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return OutcomeUnknown
	}
	var isError bool
	if v, ok := r["isError"]; ok && json.Unmarshal(v, &isError) != nil {
		return OutcomeUnknown
	}
	var resultType, taskID string
	if v, ok := r["resultType"]; ok && json.Unmarshal(v, &resultType) != nil {
		return OutcomeUnknown
	}
	if v, ok := r["task"]; ok && string(v) != "null" {
		var task map[string]json.RawMessage
		if json.Unmarshal(v, &task) != nil {
			return OutcomeUnknown
		}
		if id, ok := task["taskId"]; ok && json.Unmarshal(id, &taskID) != nil {
			return OutcomeUnknown
		}
	}
	switch {
	case isError:
		return OutcomeToolError
	case taskID != "" || resultType == "task":
		return OutcomeTaskCreated
	case resultType == "input_required":
		return OutcomeInputRequired
	}
	return OutcomeSuccess
}

// endReceipt closes a receipt that saw no answer: http_error for an
// upstream error status without a JSON-RPC response, else outcome_unknown.
func (st *stream) endReceipt() {
	rc := &st.rc
	if !rc.on || rc.done {
		return
	}
	rc.outcome = OutcomeUnknown
	if rc.status >= 300 {
		rc.outcome = OutcomeHTTPError
	}
	st.finishReceipt()
}

// finishReceipt writes the receipt line to the decision log (digests and
// sizes only, never the result) and prepares Envoy's dynamic metadata.
func (st *stream) finishReceipt() {
	rc := &st.rc
	rc.done = true
	f := make([]zap.Field, 0, 12)
	f = append(f,
		zap.String("kind", "receipt"),
		zap.String("decision_id", st.decision),
		zap.String("request_digest", rc.requestDigest),
		zap.String("method", st.method),
		zap.String("server", st.server),
		zap.String("outcome", rc.outcome),
		zap.Int("upstream_status", rc.status),
		zap.Int("bytes", rc.bytes),
		zap.Int64("duration_ms", time.Since(rc.start).Milliseconds()),
	)
	if len(st.rpcID) > 0 {
		f = append(f, zap.String("rpc_id", string(st.rpcID)))
	}
	if rc.outcome == OutcomeRPCError {
		f = append(f, zap.Int64("rpc_error_code", rc.code))
	}
	if rc.digest != "" {
		f = append(f, zap.String("result_digest", rc.digest))
	}
	st.s.cfg.Log.Info("receipt", f...)
	st.s.cfg.Metrics.Receipt(rc.outcome)
	rc.meta = newReceiptMeta(rc.outcome, st.decision, rc.code)
}

// receiptMeta is the receipt's dynamic metadata, ReceiptNamespace: {
// outcome, decision_id, is_error, and rpc_error_code on rpc_error }, its
// values allocated together.
type receiptMeta struct {
	outer, inner             structpb.Struct
	ns, outcome, id, isError structpb.Value
	code                     structpb.Value
	nsKind                   structpb.Value_StructValue
	outcomeKind, idKind      structpb.Value_StringValue
	codeKind                 structpb.Value_StringValue
	isErrorKind              structpb.Value_BoolValue
}

// newReceiptMeta is the receipt metadata of outcome for decision id (code:
// the JSON-RPC error code of an rpc_error outcome).
func newReceiptMeta(outcome, id string, code int64) *structpb.Struct {
	m := new(receiptMeta)
	m.outcomeKind.StringValue, m.outcome.Kind = outcome, &m.outcomeKind
	m.idKind.StringValue, m.id.Kind = id, &m.idKind
	m.isErrorKind.BoolValue, m.isError.Kind = outcome == OutcomeToolError, &m.isErrorKind
	m.inner.Fields = map[string]*structpb.Value{"outcome": &m.outcome, "decision_id": &m.id, "is_error": &m.isError}
	if outcome == OutcomeRPCError {
		m.codeKind.StringValue, m.code.Kind = strconv.FormatInt(code, 10), &m.codeKind
		m.inner.Fields["rpc_error_code"] = &m.code
	}
	m.nsKind.StructValue, m.ns.Kind = &m.inner, &m.nsKind
	m.outer.Fields = map[string]*structpb.Value{ReceiptNamespace: &m.ns}
	return &m.outer
}

// withReceipt attaches the finished receipt's metadata to resp, once.
func (st *stream) withReceipt(resp *extprocv3.ProcessingResponse) *extprocv3.ProcessingResponse {
	if resp != nil && st.rc.meta != nil {
		resp.DynamicMetadata, st.rc.meta = st.rc.meta, nil
	}
	return resp
}

// canonicalDigest is "sha256:<hex>" of the RFC 8785 form of v; of its bytes
// when it is not strict JSON (a digest of what was seen, still never the
// value).
func canonicalDigest(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if c, err := mcpparse.Canonicalize(v, mcpparse.Limits{}); err == nil {
		return mcpparse.Digest(c)
	}
	return mcpparse.Digest(v)
}

// errorCode and errorMember read a JSON-RPC error response's error.code and
// error member (0 and nil when absent).
func errorCode(msg []byte) int64 {
	var e struct {
		Error struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(msg, &e)
	return e.Error.Code
}

func errorMember(msg []byte) []byte {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(msg, &e)
	return e.Error
}

// recordResult keeps a success or tool_error result for the retry of this
// call (Config.Results), when Check asked for it (recover_key).
func (st *stream) recordResult(result []byte) {
	r := st.s.cfg.Results
	if r == nil || st.recoverKey == "" || (st.rc.outcome != OutcomeSuccess && st.rc.outcome != OutcomeToolError) {
		return
	}
	ctx := st.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ttl := st.s.cfg.ResultTTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	if _, err := r.Record(ctx, st.recoverKey, append([]byte(nil), result...), ttl); err != nil {
		st.s.cfg.Log.Warn("result not recorded", zap.String("decision_id", st.decision), zap.Error(err))
	}
}
