package extauthz

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
)

// Server implements envoy.service.auth.v3.Authorization. Check never returns
// a gRPC error: an error would hand the outcome to Envoy's
// failure_mode_allow, which may be on. Every fault is a denial.
type Server struct {
	authv3.UnimplementedAuthorizationServer

	Decider   *decision.Decider
	Responder *Responder
	Log       *zap.Logger      // one line per decision
	Metrics   *metrics.Metrics // nil disables metrics (NewMetrics)
	Now       func() time.Time // nil means time.Now
	// DryRun admits every request, logging, counting and passing upstream
	// (x-mcp-dry-run-decision) the decision it would have enforced.
	DryRun bool
	// Tracing, when set, starts a span per Check (tracing.go); nil traces
	// nothing and costs nothing.
	Tracing *Tracing
	// ServerLabels are the MCP server ids counted by name in the metrics'
	// server label (from configuration); any other id is "other", none
	// "none".
	ServerLabels map[string]bool
	// LogSampling keeps a fraction of the allowed decisions' log lines
	// (SampleAllowed); the zero value keeps all.
	LogSampling LogSampling
	// Seam holds every decision an OK response marked with seam_class
	// (Responder.MarkSeam) until the response seam's processor names it,
	// and counts it unmet past its route's deadline; nil holds nothing.
	Seam *seamcover.Table
}

var _ authv3.AuthorizationServer = (*Server)(nil)

// Check decides one request. It always returns a non-nil CheckResponse and a
// nil error.
func (s *Server) Check(ctx context.Context, req *authv3.CheckRequest) (resp *authv3.CheckResponse, err error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	start := now()
	var span trace.Span // nil unless s.Tracing
	defer func() {
		if p := recover(); p != nil {
			d := decision.Internal(fmt.Sprint("panic: ", p))
			resp, err = s.Responder.Response(d, nil), nil
			if s.Log != nil {
				s.Log.Error("check panicked", zap.String("decision_id", d.ID), zap.String("panic", fmt.Sprint(p)))
			}
			if span != nil {
				endPanicked(span, d)
			}
		}
	}()
	defer s.Metrics.CheckStarted()()
	ctx, cancel := answerBeforeDeadline(ctx, start)
	defer cancel()
	// The Request on the stack (nothing keeps it past Check), its header
	// values in an array of their number.
	var r0 decision.Request
	r := &r0
	fillRequest(r, nil, req)
	if s.Tracing != nil {
		ctx, span = s.Tracing.start(ctx, r)
	}
	var d0 decision.Decision // on the stack too
	d := &d0
	s.Decider.DecideTo(ctx, r, d)
	if s.DryRun {
		resp = s.Responder.DryRunResponse(d, r.Headers)
	} else {
		resp = s.Responder.ResponseFor(d, r)
	}
	if s.Seam != nil {
		if c := resp.GetDynamicMetadata().GetFields()[decision.MetaSeamClass].GetStringValue(); c != "" {
			s.Seam.Expect(d.ID, c)
		}
	}
	if span != nil {
		s.Tracing.end(span, d, r, resp, s.DryRun)
	}
	latency := now().Sub(start)
	s.observe(d, latency)
	s.logDecision(d, r, latency, span)
	return resp, nil
}

// observe counts d in the metrics.
func (s *Server) observe(d *decision.Decision, latency time.Duration) {
	m := s.Metrics
	if m == nil {
		return
	}
	verdict := d.Reason.Verdict().String()
	m.Decided(latency, verdict, string(d.Reason), mcpmethod.Label(d.Method), s.serverLabel(d.Server), s.DryRun,
		outcomeOf(d.Reason).tokenFailure)
	for _, sm := range d.Shadow {
		m.ShadowMatched(sm.Decision.String())
	}
	if d.RuleID != "" {
		m.RuleDecided(d.RuleID, verdict)
	}
	for _, we := range d.WhenErrors {
		m.CELError(we.RuleID)
	}
}

// serverLabel bounds the server label to the configured ids
// (ServerLabels): any other is "other", none "none".
func (s *Server) serverLabel(id string) string {
	switch {
	case id == "":
		return "none"
	case s.ServerLabels[id]:
		return id
	}
	return "other"
}

// MetricReasons returns every reason of decision.Reasons as a value of
// internal/metrics' reason label: with its decision label (allow, deny,
// ask) and whether it counts as a token failure
// (token_verification_failures_total), so each series exists from start.
func MetricReasons() []metrics.Reason {
	rs := decision.Reasons()
	out := make([]metrics.Reason, len(rs))
	for i, r := range rs {
		out[i] = metrics.Reason{Reason: string(r), Decision: r.Verdict().String(), Token: outcomeOf(r).tokenFailure}
	}
	return out
}

// logDecision writes the one decision line: never the token, never raw
// arguments (digests only). An allowed decision is left out when
// LogSampling says so, unless its span is sampled; span is nil without
// tracing.
func (s *Server) logDecision(d *decision.Decision, r *decision.Request, latency time.Duration, span trace.Span) {
	if s.Log == nil {
		return
	}
	var sc trace.SpanContext
	if span != nil {
		sc = span.SpanContext()
	}
	if d.Allowed() && !s.LogSampling.keep(d.ID) && !sc.IsSampled() {
		s.Metrics.DecisionLogSampledOut()
		return
	}
	ce := s.Log.Check(zapcore.InfoLevel, "decision")
	if ce == nil { // no core writes info lines: build none
		return
	}
	// Room for every field a line can carry, on the stack; the core gets
	// a copy of the fields the line has, one allocation of their size.
	var room [26]zap.Field
	fields := append(room[:0],
		zap.String("decision_id", d.ID),
		zap.String("decision", d.Reason.Verdict().String()),
		zap.String("reason", string(d.Reason)),
		zap.String("rule_id", d.RuleID),
		zap.String("http_method", r.Method),
		zap.String("method", d.Method),
		zap.String("server", d.Server),
		zap.String("target", d.Target),
		zap.String("args_digest", d.ArgsDigest),
		zap.String("request_digest", d.RequestDigest),
		zap.String("policy_version", d.PolicyVersion),
		zap.Int64("latency_us", latency.Microseconds()),
	)
	if r.ID != "" {
		fields = append(fields, zap.String("request_id", r.ID))
	}
	if d.Principal != nil {
		fields = append(fields, zap.String("iss", d.Principal.Issuer), zap.String("sub", d.Principal.Subject))
	}
	if d.Client != "" {
		fields = append(fields, zap.String("client", d.Client))
	}
	if d.BatchIndex >= 0 {
		fields = append(fields, zap.Int("batch_index", d.BatchIndex))
	}
	if d.Detail != "" || len(d.WhenErrors) > 0 {
		fields = append(fields, zap.String("detail", detail(d)))
	}
	if s.DryRun {
		fields = append(fields, zap.Bool("dry_run", true))
	}
	fields = appendBindingFields(fields, d)
	if len(d.Shadow) > 0 {
		sh := make([]string, len(d.Shadow))
		for i, m := range d.Shadow {
			sh[i] = m.RuleID + "=" + m.Decision.String()
		}
		fields = append(fields, zap.Strings("shadow", sh))
	}
	if sc.IsValid() {
		fields = append(fields, zap.String("trace_id", sc.TraceID().String()), zap.String("span_id", sc.SpanID().String()))
	}
	ce.Write(append([]zap.Field(nil), fields...)...)
}

// DecisionDetail is the decision line's detail, also in the dynamic
// metadata's detail member: d.Detail (a parse error's kind, offset and
// limit or member name, never a value), then every failed `when`
// expression (rule "id": when: error), "; "-separated; "" when none.
func DecisionDetail(d *decision.Decision) string { return d.DetailText() }

// detail is DecisionDetail.
func detail(d *decision.Decision) string { return d.DetailText() }

// answerBeforeDeadline shortens ctx's deadline by a tenth of the time left
// (at most 50ms), so a Check that runs out of time still returns its
// denial (deadline_exceeded) before Envoy's timeout turns it into an error.
func answerBeforeDeadline(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	margin := min(dl.Sub(now)/10, 50*time.Millisecond)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// appendBindingFields adds the decision log fields of approvals,
// idempotency and concealment (no token, no argument values).
func appendBindingFields(fields []zap.Field, d *decision.Decision) []zap.Field {
	if d.Retry {
		fields = append(fields, zap.Bool("retry", true))
	}
	if d.Approver != "" {
		fields = append(fields, zap.String("approver", d.Approver), zap.String("approval_jti", d.ApprovalID))
	}
	if concealable(d) {
		fields = append(fields, zap.Bool("concealed", true))
	}
	if len(d.RequiredScopes) > 0 {
		fields = append(fields, zap.Strings("required_scopes", d.RequiredScopes))
	}
	if d.Reason == decision.ReasonArgumentsInvalid && d.ArgumentsKeyword != "" {
		fields = append(fields, zap.String("arguments_pointer", d.ArgumentsPointer), zap.String("arguments_keyword", d.ArgumentsKeyword))
	}
	return fields
}
