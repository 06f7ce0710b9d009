package extauthz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.opentelemetry.io/contrib/propagators/b3"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing starts one span per Check (Server.Tracing), named and attributed
// per the OpenTelemetry semantic conventions for MCP (Development status):
// "{mcp.method.name} {target}" with target the tool or prompt name,
// mcp.method.name, gen_ai.tool.name, gen_ai.prompt.name, mcp.resource.uri,
// jsonrpc.request.id, mcp.protocol.version, mcp.session.id (a digest, see
// below), error.type and rpc.response.status_code on refusals, and the
// service's own mcp_extauthz.decision, .reason, .rule_id, .decision_id,
// .server, .policy_version. Never the token, a claim or the arguments.
//
// The span's parent is the gRPC server span when Envoy traced its
// ext_authz call (tracing.ServerHandler; the HTTP request's trace context,
// if another trace, is linked), else the trace context of the HTTP request
// itself (traceparent/tracestate or B3, as Envoy forwards them in the
// CheckRequest), else none. A sampled span of an allowed request is
// passed on to the upstream: the OK response sets traceparent (and
// tracestate), b3 or x-b3-*, in the formats the request used (traceparent
// when it used none), so the MCP server's span is the Check span's child.
// Envoy's own tracing, when on, replaces them with its router span.
type Tracing struct {
	Tracer trace.Tracer
}

// Attribute keys of the service's own span attributes.
const (
	AttrDecision      = attribute.Key("mcp_extauthz.decision")
	AttrReason        = attribute.Key("mcp_extauthz.reason")
	AttrRuleID        = attribute.Key("mcp_extauthz.rule_id")
	AttrDecisionID    = attribute.Key("mcp_extauthz.decision_id")
	AttrServer        = attribute.Key("mcp_extauthz.server")
	AttrPolicyVersion = attribute.Key("mcp_extauthz.policy_version")
	AttrDryRun        = attribute.Key("mcp_extauthz.dry_run")
)

// maxSpanString bounds a client-chosen string (method, tool, prompt, URI,
// JSON-RPC id, protocol version) recorded on a span.
const maxSpanString = 256

// headerCarrier reads a Request's lower-cased headers for a propagator.
type headerCarrier decision.Headers

func (h headerCarrier) Get(key string) string { v, _ := decision.Headers(h).Get(key); return v }
func (h headerCarrier) Set(string, string)    {}
func (h headerCarrier) Keys() []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	return out
}

// start starts the Check span of r (see Tracing for its parent).
func (t *Tracing) start(ctx context.Context, r *decision.Request) (context.Context, trace.Span) {
	grpcSpan := trace.SpanContextFromContext(ctx)
	remote := requestTraceContext(r.Headers)
	opts := make([]trace.SpanStartOption, 0, 2)
	switch {
	case grpcSpan.IsValid():
		opts = append(opts, trace.WithSpanKind(trace.SpanKindInternal))
		if remote.IsValid() && remote.TraceID() != grpcSpan.TraceID() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: remote}))
		}
	case remote.IsValid():
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
		opts = append(opts, trace.WithSpanKind(trace.SpanKindServer))
	default:
		opts = append(opts, trace.WithSpanKind(trace.SpanKindServer))
	}
	return t.Tracer.Start(ctx, "Check", opts...)
}

// requestTraceContext is the trace context of the HTTP request: W3C Trace
// Context (traceparent, tracestate) if it has a traceparent, else B3 (b3,
// then x-b3-*); each format is parsed only when its header is there.
func requestTraceContext(h decision.Headers) trace.SpanContext {
	var ctx context.Context
	switch {
	case h["traceparent"] != nil:
		ctx = injectW3C.Extract(context.Background(), headerCarrier(h))
	case h["b3"] != nil || h["x-b3-traceid"] != nil:
		ctx = injectB3.Extract(context.Background(), headerCarrier(h))
	default:
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(ctx)
}

// end names and attributes span after d, passes a sampled span of an
// admitted request on to the upstream (resp's OK headers), and ends it.
func (t *Tracing) end(span trace.Span, d *decision.Decision, r *decision.Request, resp *authv3.CheckResponse, dryRun bool) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetName(spanName(d))
	span.SetAttributes(spanAttributes(d, r, dryRun)...)
	if !d.Allowed() {
		o := outcomeOf(d.Reason)
		span.SetAttributes(semconv.ErrorTypeKey.String(string(d.Reason)))
		if !concealable(d) {
			span.SetAttributes(attribute.String("rpc.response.status_code", strconv.Itoa(o.code)))
		}
		if !dryRun {
			span.SetStatus(otelcodes.Error, string(d.Reason))
		}
	}
	if ok := resp.GetOkResponse(); ok != nil && span.SpanContext().IsSampled() {
		injectUpstream(ok, span.SpanContext(), r.Headers)
	}
	span.End()
}

// endPanicked ends the span of a Check that panicked.
func endPanicked(span trace.Span, d *decision.Decision) {
	span.SetAttributes(AttrDecision.String("deny"), AttrReason.String(string(d.Reason)), AttrDecisionID.String(d.ID),
		semconv.ErrorTypeKey.String(string(d.Reason)))
	span.SetStatus(otelcodes.Error, string(d.Reason))
	span.End()
}

// spanName is "{mcp.method.name} {target}" (the tool or prompt name), the
// method alone for other methods, the bounded metric label for methods MCP
// does not define (other), GET and DELETE; "Check" when nothing was read.
func spanName(d *decision.Decision) string {
	m := mcpmethod.Label(d.Method)
	switch {
	case m == "none":
		return "Check"
	case m == mcpmethod.ToolsCall && d.Tool != "":
		return m + " " + clip(d.Tool)
	case m == mcpmethod.PromptsGet && d.Target != "":
		return m + " " + clip(d.Target)
	}
	return m
}

// spanAttributes are the span's attributes of d and r.
func spanAttributes(d *decision.Decision, r *decision.Request, dryRun bool) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 20)
	a = append(a,
		semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"),
		semconv.HTTPRequestMethodKey.String(r.Method),
		AttrDecision.String(d.Reason.Verdict().String()), AttrReason.String(string(d.Reason)), AttrDecisionID.String(d.ID),
	)
	if d.RuleID != "" {
		a = append(a, AttrRuleID.String(d.RuleID))
	}
	if d.Server != "" {
		a = append(a, AttrServer.String(d.Server))
	}
	if d.PolicyVersion != "" {
		a = append(a, AttrPolicyVersion.String(d.PolicyVersion))
	}
	if dryRun {
		a = append(a, AttrDryRun.Bool(true))
	}
	switch d.Method {
	case "", mcpmethod.HTTPGet, mcpmethod.HTTPDelete, mcpmethod.Response, mcpmethod.Batch: // no single JSON-RPC method
	default:
		a = append(a, semconv.McpMethodNameKey.String(clip(d.Method)))
	}
	switch d.Method {
	case mcpmethod.ToolsCall:
		if d.Tool != "" {
			a = append(a, semconv.GenAIToolName(clip(d.Tool)), semconv.GenAIOperationNameExecuteTool)
		}
	case mcpmethod.PromptsGet:
		if d.Target != "" {
			a = append(a, semconv.GenAIPromptName(clip(d.Target)))
		}
	case mcpmethod.ResourcesRead, mcpmethod.ResourcesSubscribe, mcpmethod.ResourcesUnsubscribe:
		if d.Target != "" {
			a = append(a, semconv.McpResourceURIKey.String(clip(d.Target)))
		}
	}
	if id := rpcIDString(d.RPCID); id != "" {
		a = append(a, semconv.JSONRPCRequestID(clip(id)))
	}
	if v, _ := r.Headers.Get("mcp-protocol-version"); v != "" {
		a = append(a, semconv.McpProtocolVersionKey.String(clip(v)))
	}
	if v, _ := r.Headers.Get("mcp-session-id"); v != "" {
		// The session id lets its holder continue the session: the span
		// carries the first 16 hex digits of its SHA-256 instead, enough to
		// group a session's spans.
		sum := sha256.Sum256([]byte(v))
		a = append(a, semconv.McpSessionIDKey.String(hex.EncodeToString(sum[:8])))
	}
	return a
}

// rpcIDString is a JSON-RPC id as the convention records it: a string id
// without its quotes, a number as written; "" for none or null.
func rpcIDString(id []byte) string {
	if len(id) == 0 || string(id) == "null" {
		return ""
	}
	if id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

func clip(s string) string {
	if len(s) > maxSpanString {
		return s[:maxSpanString]
	}
	return s
}

// upstreamCarrier collects the headers a propagator injects.
type upstreamCarrier map[string]string

func (c upstreamCarrier) Get(key string) string { return c[key] }
func (c upstreamCarrier) Set(key, v string)     { c[key] = v }
func (c upstreamCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

var (
	injectW3C     = propagation.TraceContext{}
	injectB3      = b3.New(b3.WithInjectEncoding(b3.B3SingleHeader))
	injectB3Multi = b3.New(b3.WithInjectEncoding(b3.B3MultipleHeader))
)

// injectUpstream makes ok set sc as the upstream request's parent, in each
// trace format the request used (W3C when none): traceparent and
// tracestate, b3, or x-b3-traceid, -spanid and -sampled (x-b3-parentspanid,
// which would name the wrong parent, is removed).
func injectUpstream(ok *authv3.OkHttpResponse, sc trace.SpanContext, h decision.Headers) {
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	c := upstreamCarrier{}
	_, single := h["b3"]
	_, multi := h["x-b3-traceid"]
	if _, w3c := h["traceparent"]; w3c || !single && !multi {
		injectW3C.Inject(ctx, c)
	}
	if single {
		injectB3.Inject(ctx, c)
	}
	if multi {
		injectB3Multi.Inject(ctx, c)
		if _, ok2 := h["x-b3-parentspanid"]; ok2 {
			ok.HeadersToRemove = append(ok.HeadersToRemove, "x-b3-parentspanid")
		}
	}
	for _, k := range []string{"traceparent", "tracestate", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-sampled", "x-b3-flags"} {
		if v, set := c[k]; set {
			ok.Headers = append(ok.Headers, &corev3.HeaderValueOption{
				Header:       &corev3.HeaderValue{Key: k, Value: v},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			})
		}
	}
}

// LogSampling keeps a fraction of the allowed decisions' log lines: denials
// and asks are always logged, and so is an allowed decision whose span is
// sampled. Which lines are kept follows the random decision id. The zero
// value keeps every line.
type LogSampling struct {
	skipBelow uint64 // lines whose id's first 64 bits are below this are left out
	none      bool   // leave every allowed line out
}

// SampleAllowed keeps about ratio (in [0, 1]) of the allowed decisions'
// lines.
func SampleAllowed(ratio float64) LogSampling {
	switch {
	case ratio >= 1 || ratio != ratio: // NaN keeps all: fail towards the log
		return LogSampling{}
	case ratio <= 0:
		return LogSampling{none: true}
	}
	f := (1 - ratio) * (1 << 63) * 2
	if f >= math.MaxUint64 {
		return LogSampling{none: true}
	}
	return LogSampling{skipBelow: uint64(f)}
}

// keep reports whether the line of the allowed decision id is logged.
func (ls LogSampling) keep(id string) bool {
	switch {
	case ls.none:
		return false
	case ls.skipBelow == 0 || len(id) < 16:
		return true
	}
	v, err := strconv.ParseUint(id[:16], 16, 64)
	return err != nil || v >= ls.skipBelow
}
