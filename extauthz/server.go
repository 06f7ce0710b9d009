package extauthz

import (
	"context"
	"fmt"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.uber.org/zap"
)

// Server implements envoy.service.auth.v3.Authorization. Check never returns
// a gRPC error: an error would hand the outcome to Envoy's
// failure_mode_allow, which may be on. Every fault is a denial.
type Server struct {
	authv3.UnimplementedAuthorizationServer

	Decider   *Decider
	Responder *Responder
	Log       *zap.Logger      // one line per decision
	Now       func() time.Time // nil means time.Now
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
	defer func() {
		if p := recover(); p != nil {
			d := &Decision{ID: newDecisionID(), Reason: ReasonInternalError, BatchIndex: -1}
			resp, err = s.Responder.Response(d, nil), nil
			s.Log.Error("check panicked", zap.String("decision_id", d.ID), zap.String("panic", fmt.Sprint(p)))
		}
	}()
	r := RequestFromCheck(req)
	d := s.Decider.Decide(ctx, r)
	resp = s.Responder.Response(d, r.Headers)
	s.logDecision(d, r, now().Sub(start))
	return resp, nil
}

// logDecision writes the one decision line: never the token, never raw
// arguments (digests only).
func (s *Server) logDecision(d *Decision, r *Request, latency time.Duration) {
	if s.Log == nil {
		return
	}
	fields := []zap.Field{
		zap.String("decision_id", d.ID),
		zap.String("decision", d.Decision.String()),
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
	}
	if r.ID != "" {
		fields = append(fields, zap.String("request_id", r.ID))
	}
	if d.Principal != nil {
		fields = append(fields, zap.String("iss", d.Principal.Issuer), zap.String("sub", d.Principal.Subject))
	}
	if d.BatchIndex >= 0 {
		fields = append(fields, zap.Int("batch_index", d.BatchIndex))
	}
	if d.Detail != "" {
		fields = append(fields, zap.String("detail", d.Detail))
	}
	s.Log.Info("decision", fields...)
}
