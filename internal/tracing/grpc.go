package tracing

import (
	"context"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// ServerHandler returns the gRPC server's stats handler: otelgrpc's,
// recording a server span for a call whose metadata carries a trace
// context (Envoy traced its ext_authz call: traceparent or B3), and
// nothing for other calls. An untraced call thus starts no root span of
// its own: the Check span continues the trace of the HTTP request instead
// (extauthz). otelgrpc's metrics are off (the service has its own).
func ServerHandler(tp trace.TracerProvider, prop propagation.TextMapPropagator) stats.Handler {
	return &serverHandler{h: otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithPropagators(prop),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
	)}
}

type serverHandler struct{ h stats.Handler }

type untracedKey struct{}

// traced reports whether the incoming metadata of ctx carries a trace
// context.
func traced(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get("traceparent")) > 0 || len(md.Get("b3")) > 0 || len(md.Get("x-b3-traceid")) > 0
}

func (s *serverHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if !traced(ctx) {
		return context.WithValue(ctx, untracedKey{}, true)
	}
	return s.h.TagRPC(ctx, info)
}

func (s *serverHandler) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	if ctx.Value(untracedKey{}) != nil {
		return
	}
	s.h.HandleRPC(ctx, rs)
}

func (s *serverHandler) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return s.h.TagConn(ctx, info)
}

func (s *serverHandler) HandleConn(ctx context.Context, cs stats.ConnStats) { s.h.HandleConn(ctx, cs) }
