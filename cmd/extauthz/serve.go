package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
	// CheckRequest: Envoy's request headers alone may reach 8 MiB
	// (max_request_headers_kb 8192). A larger message fails in gRPC itself,
	// before Check, as RESOURCE_EXHAUSTED: keep Envoy's max_request_bytes
	// at or below --max-body-bytes and failure_mode_allow false.
	grpcRecvHeadroom = 9 << 20
	// maxConcurrentStreams bounds the Checks one Envoy connection may have in
	// flight; Envoy opens more connections when it needs them.
	maxConcurrentStreams = 1024
	// keepaliveMinTime accepts Envoy's HTTP/2 keepalive pings down to this
	// interval instead of closing the connection with ENHANCE_YOUR_CALM.
	keepaliveMinTime = 10 * time.Second
)

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseServeConfig(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	// Decisions are the service's output: one JSON line each on stdout.
	// Everything else (reloads, identity provider, errors) is JSON on stderr.
	log, err := newLogger(cfg.LogLevel, "stderr")
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	// Buffered, flushed at least every second and when serve returns (after
	// the gRPC server has stopped).
	lvl, err := zapcore.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	decisionLog, stopDecisionLog := extauthz.NewDecisionLogger(os.Stdout, lvl, 0)
	defer func() { _ = stopDecisionLog() }()
	gogc := setGCPercent(os.Getenv)
	if limit, source := setMemoryLimit(os.Getenv, readCgroupMemoryLimit); limit > 0 {
		log.Info("Go GC settings", zap.String("gogc", gogc), zap.Int64("memory_limit_bytes", limit), zap.String("from", source))
	} else {
		log.Info("Go GC settings", zap.String("gogc", gogc))
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := extauthz.NewMetrics(reg)

	svc, err := newService(cfg, log, decisionLog, metrics)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return err
	}
	var httpLis net.Listener
	if cfg.HTTPAddr != "" {
		if httpLis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			lis.Close()
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: every goroutine below ends with ctx

	wg.Add(3)
	go func() { defer wg.Done(); svc.keepKeysFresh(ctx, cfg.JWKSRefresh) }()
	go func() {
		defer wg.Done()
		if err := svc.loader.Watch(ctx); err != nil {
			log.Error("policy watch stopped; SIGHUP still reloads", zap.Error(err))
		}
	}()
	go func() { defer wg.Done(); reloadOnSIGHUP(ctx, svc.loader) }()
	if httpLis != nil {
		// The HTTP server outlives the gRPC drain, so /readyz answers 503
		// (not connection refused) and the last scrape sees the final counts.
		hsrv := &http.Server{Handler: extauthz.HTTPHandler(svc.readiness, reg), ReadHeaderTimeout: 5 * time.Second}
		wg.Add(1)
		go func() { defer wg.Done(); _ = hsrv.Serve(httpLis) }()
		defer func() {
			sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer scancel()
			_ = hsrv.Shutdown(sctx)
		}()
		fmt.Fprintf(stderr, "extauthz: serving /metrics, /healthz, /readyz on http://%s\n", httpLis.Addr())
	}

	gs, hs := newGRPCServer(cfg, svc.server)
	lc := &extauthz.Lifecycle{
		GRPC: gs, Health: hs, Readiness: svc.readiness,
		DrainPeriod: cfg.DrainPeriod, ShutdownTimeout: cfg.ShutdownTimeout,
		OnShutdown: func() { fmt.Fprintln(stderr, "extauthz: shutting down: NOT_SERVING, draining") },
	}
	mode := "enforcing"
	if cfg.DryRun {
		mode = "DRY-RUN: every request is admitted"
	}
	fmt.Fprintf(stderr, "extauthz: serving ext_authz on %s (policy %s, server id %q, %s)\n", lis.Addr(), cfg.PolicyFile, cfg.ServerID, mode)
	err = lc.Serve(ctx, lis)
	fmt.Fprintln(stderr, "extauthz: stopped")
	return err
}

// service is the assembled decision service and what keeps it current.
type service struct {
	server    *extauthz.Server
	loader    *extauthz.PolicyLoader
	readiness *extauthz.Readiness
	oidc      *extauthz.OIDCVerifier
	log       *zap.Logger
}

// newService builds the Check server from cfg: policy, token verifier and
// cache, limits. A missing or invalid policy is an error naming file:line.
func newService(cfg *Config, log, decisionLog *zap.Logger, metrics *extauthz.Metrics) (*service, error) {
	store := &extauthz.PolicyStore{}
	loader := &extauthz.PolicyLoader{File: cfg.PolicyFile, Store: store, Metrics: metrics}
	if err := loader.Load(); err != nil {
		var ce *policy.CompileError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("policy: %s", strings.ReplaceAll(strings.TrimSpace(ce.Error()), "\n", "; "))
		}
		return nil, fmt.Errorf("policy: %w", err)
	}
	loader.Log = log // from now on a bad reload is logged, not fatal

	oc := extauthz.OIDCConfig{Issuer: cfg.Issuer, Audiences: cfg.Audiences, OnKeySetRefresh: func(err error) {
		if err != nil {
			metrics.KeySetRefreshes.WithLabelValues("error").Inc()
			log.Warn("key set refresh failed; keeping the last good keys", zap.Error(err))
			return
		}
		metrics.KeySetRefreshes.WithLabelValues("ok").Inc()
	}}
	if cfg.JWKSFile != "" {
		ks, err := extauthz.LoadJWKS(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("--jwks-file: %w", err)
		}
		oc.KeySet = ks
	}
	ov, err := extauthz.NewOIDCVerifier(oc)
	if err != nil {
		return nil, err
	}
	var verifier extauthz.TokenVerifier = ov
	if cfg.TokenCacheSize > 0 {
		if verifier, err = extauthz.NewCachingVerifier(ov, cfg.TokenCacheSize, nil, metrics); err != nil {
			return nil, err
		}
	}
	lim := mcpparse.Limits{
		MaxBytes: cfg.MaxBodyBytes, MaxDepth: cfg.MaxJSONDepth, MaxKeys: cfg.MaxJSONKeys,
		MaxElements: cfg.MaxJSONElements, MaxStringLen: cfg.MaxStringBytes,
	}
	rm := cfg.ResourceMetadataURL
	if rm == "" {
		rm = extauthz.ResourceMetadataURL(cfg.Audiences[0])
	}
	return &service{
		server: &extauthz.Server{
			Decider:   &extauthz.Decider{ServerID: cfg.ServerID, Verifier: verifier, Policies: store, Limits: lim},
			Responder: &extauthz.Responder{ResourceMetadataURL: rm},
			Log:       decisionLog,
			Metrics:   metrics,
			DryRun:    cfg.DryRun,
		},
		loader:    loader,
		readiness: &extauthz.Readiness{Policies: store, Verifier: ov, Metrics: metrics},
		oidc:      ov,
		log:       log,
	}, nil
}

// keepKeysFresh runs discovery and the first key fetch until they succeed
// (backing off from 1s to 30s), then refreshes the key set every interval,
// so a key the identity provider removed stops verifying. It returns when
// ctx ends.
func (s *service) keepKeysFresh(ctx context.Context, interval time.Duration) {
	backoff := time.Second
	for !s.oidc.Ready() {
		if err := s.oidc.Warm(ctx); err != nil {
			s.log.Warn("identity provider not ready; Checks are denied (idp_unavailable)", zap.Error(err), zap.Duration("retry_in", backoff))
		}
		if s.oidc.Ready() {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.oidc.RefreshKeys(ctx) // a failure keeps the last good keys; the hook logs and counts it
		}
	}
}

// reloadOnSIGHUP reloads the policy on every SIGHUP until ctx ends.
func reloadOnSIGHUP(ctx context.Context, l *extauthz.PolicyLoader) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if l.Log != nil {
				l.Log.Info("SIGHUP: reloading the policy", zap.String("file", l.File))
			}
			_ = l.Load() // logged and counted inside
		}
	}
}

func newGRPCServer(cfg *Config, srv *extauthz.Server) (*grpc.Server, *health.Server) {
	gs := grpc.NewServer(
		// Decodes only what Check reads and accepts any bytes in strings,
		// so a body that is not UTF-8 is denied by Check instead of failing
		// the RPC (which failure_mode_allow would turn into an allow).
		grpc.ForceServerCodecV2(extauthz.CheckCodec{}),
		grpc.MaxRecvMsgSize(cfg.MaxBodyBytes+grpcRecvHeadroom),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
	)
	authv3.RegisterAuthorizationServer(gs, srv)
	hs := health.NewServer() // statuses follow readiness (extauthz.Lifecycle)
	healthpb.RegisterHealthServer(gs, hs)
	return gs, hs
}

// newLogger returns a JSON zap logger writing to output ("stdout" or
// "stderr"), unsampled.
func newLogger(level, output string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.OutputPaths = []string{output}
	zc.ErrorOutputPaths = []string{"stderr"}
	zc.Sampling = nil // every decision is logged
	zc.EncoderConfig.TimeKey = "ts"
	zc.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	return zc.Build()
}
