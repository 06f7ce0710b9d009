package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

const (
	// grpcRecvHeadroom is added to --max-body-bytes for the rest of a
	// CheckRequest (headers, attributes), so Envoy's largest body fits.
	grpcRecvHeadroom = 1 << 20
	// maxConcurrentStreams bounds the Checks one Envoy connection may have in
	// flight; Envoy opens more connections when it needs them.
	maxConcurrentStreams = 1024
	// keepaliveMinTime accepts Envoy's HTTP/2 keepalive pings down to this
	// interval instead of closing the connection with ENHANCE_YOUR_CALM.
	keepaliveMinTime = 10 * time.Second
)

// healthService is the grpc.health.v1 service name of the Authorization API.
const healthService = "envoy.service.auth.v3.Authorization"

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseServeConfig(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	srv, err := newServer(cfg, log)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return err
	}
	gs, hs := newGRPCServer(cfg, srv)
	fmt.Fprintf(stderr, "extauthz: serving ext_authz on %s (policy %s, server id %q)\n", lis.Addr(), cfg.PolicyFile, cfg.ServerID)

	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "extauthz: shutting down: NOT_SERVING, draining")
	// NOT_SERVING first, so Envoy and the kubelet stop sending new Checks;
	// then GracefulStop lets in-flight Checks finish, up to a deadline.
	hs.Shutdown()
	time.Sleep(cfg.DrainPeriod)
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(cfg.ShutdownTimeout):
		gs.Stop()
		<-stopped
	}
	return <-errc
}

// newServer builds the Check server from cfg: policy, token verifier, limits.
func newServer(cfg *Config, log *zap.Logger) (*extauthz.Server, error) {
	src, err := os.ReadFile(cfg.PolicyFile)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	lp, err := extauthz.CompilePolicy(cfg.PolicyFile, src)
	if err != nil {
		var ce *policy.CompileError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("policy: %s", strings.ReplaceAll(strings.TrimSpace(ce.Error()), "\n", "; "))
		}
		return nil, fmt.Errorf("policy: %w", err)
	}
	store := &extauthz.PolicyStore{}
	store.Store(lp)

	oc := extauthz.OIDCConfig{Issuer: cfg.Issuer, Audiences: cfg.Audiences}
	if cfg.JWKSFile != "" {
		ks, err := extauthz.LoadJWKS(cfg.JWKSFile)
		if err != nil {
			return nil, err
		}
		oc.KeySet = ks
	}
	verifier, err := extauthz.NewOIDCVerifier(oc)
	if err != nil {
		return nil, err
	}
	lim := mcpparse.DefaultLimits()
	lim.MaxBytes = cfg.MaxBodyBytes
	rm := cfg.ResourceMetadataURL
	if rm == "" {
		rm = extauthz.ResourceMetadataURL(cfg.Audiences[0])
	}
	return &extauthz.Server{
		Decider:   &extauthz.Decider{ServerID: cfg.ServerID, Verifier: verifier, Policies: store, Limits: lim},
		Responder: &extauthz.Responder{ResourceMetadataURL: rm},
		Log:       log,
	}, nil
}

func newGRPCServer(cfg *Config, srv *extauthz.Server) (*grpc.Server, *health.Server) {
	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(cfg.MaxBodyBytes+grpcRecvHeadroom),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
	)
	authv3.RegisterAuthorizationServer(gs, srv)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(healthService, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	return gs, hs
}

// newLogger returns a JSON zap logger on stdout: one decision line per Check.
func newLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.OutputPaths = []string{"stdout"}
	zc.ErrorOutputPaths = []string{"stderr"}
	zc.Sampling = nil // every decision is logged
	zc.EncoderConfig.TimeKey = "ts"
	zc.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	return zc.Build()
}
