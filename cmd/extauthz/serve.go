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

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/extproc"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
	"github.com/mcp-extauthz/mcp-extauthz/internal/lifecycle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/reload"
	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
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
	// seamSweepInterval is how often the response seam's coverage table
	// counts the decisions past their deadline: an unmet one shows within
	// its deadline plus this.
	seamSweepInterval = time.Second
)

// runServe runs the service until ctx ends. Everything it writes to stderr
// is JSON lines (zap), configuration errors included, without stack traces;
// decisions go to stdout, one JSON line each.
func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	boot, _ := newLogger("info", stderr) // "info" always parses
	fail := func(msg string, err error) error {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err == nil { // -h: the usage is printed already
				return err
			}
			code, err = ee.code, ee.err
		}
		boot.Error(msg, zap.Error(err))
		_ = boot.Sync()
		return &exitError{code: code, err: err, logged: true}
	}
	cfg, err := parseServeConfig(args, os.Getenv, stderr)
	if err != nil {
		return fail("invalid configuration", err)
	}
	log, err := newLogger(cfg.LogLevel, stderr)
	if err != nil {
		return fail("invalid configuration", err)
	}
	defer func() { _ = log.Sync() }()
	// Buffered, flushed at least every second and when serve returns (after
	// the gRPC server has stopped).
	lvl, err := zapcore.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fail("invalid configuration", fmt.Errorf("--log-level: %w", err))
	}
	gogc := setGCPercent(os.Getenv)
	if limit, source := setMemoryLimit(os.Getenv, readCgroupMemoryLimit); limit > 0 {
		log.Info("Go GC settings", zap.String("gogc", gogc), zap.Int64("memory_limit_bytes", limit), zap.String("from", source))
	} else {
		log.Info("Go GC settings", zap.String("gogc", gogc))
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := newMetrics(reg)
	// The decision log's sinks (stdout by default) and tracing; flushed
	// when serve returns, after the gRPC server has stopped.
	tel, err := startTelemetry(ctx, cfg, lvl, log, metrics)
	if err != nil {
		return fail("cannot start", err)
	}
	defer tel.shutdown()

	svc, err := newService(cfg, log, tel.decisionLog, metrics)
	if err != nil {
		return fail("cannot start", err)
	}
	tel.instrument(cfg, svc, metrics)
	defer svc.store.Close()
	defer svc.oidc.Close() // stops background discovery
	if svc.approvals != nil {
		defer svc.approvals.Close()
	}
	lis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fail("cannot start", err)
	}
	var httpLis net.Listener
	if cfg.HTTPAddr != "" {
		if httpLis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			lis.Close()
			return fail("cannot start", err)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: every goroutine below ends with ctx

	var creds credentials.TransportCredentials
	if cfg.TLS.cert != "" {
		tr, err := newTLSReloader(cfg.TLS)
		if err != nil {
			lis.Close()
			if httpLis != nil {
				httpLis.Close()
			}
			return fail("cannot start", err)
		}
		creds = credentials.NewTLS(tr.config())
		files := []string{cfg.TLS.cert, cfg.TLS.key, cfg.TLS.clientCA}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := filewatch.WatchAll(ctx, files, watchOptions(log), func() {
				if err := tr.load(); err != nil {
					log.Error("TLS files reload refused; keeping the last good certificate and client CA", zap.Error(err))
				}
			})
			if err != nil {
				log.Error("TLS files watch stopped; the loaded certificate stays in use", zap.Error(err))
			}
		}()
	}
	if dk := svc.decisions; dk != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := filewatch.WatchAll(ctx, []string{dk.file}, watchOptions(log), func() {
				if err := dk.reload(); err != nil {
					log.Error("--decision-key-file reload refused; keeping the last good keys", zap.Error(err))
					return
				}
				log.Info("--decision-key-file reloaded", zap.String("signing_kid", dk.signer.Keys()[0].KeyID))
			})
			if err != nil {
				log.Error("--decision-key-file watch stopped; the loaded keys stay in use", zap.Error(err))
			}
		}()
	}
	if svc.jwks != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := filewatch.WatchAll(ctx, []string{cfg.JWKSFile}, watchOptions(log), func() { _ = svc.jwks.LoadFile(cfg.JWKSFile) }); err != nil {
				log.Error("--jwks-file watch stopped; the loaded keys stay in use", zap.Error(err))
			}
		}()
	}

	wg.Add(3)
	go func() {
		defer wg.Done()
		svc.keepKeysFresh(ctx, cfg.JWKSRefresh, func() { log.Info("identity provider ready: signing keys fetched") })
	}()
	go func() {
		defer wg.Done()
		if err := svc.loader.Watch(ctx); err != nil {
			log.Error("policy watch stopped; SIGHUP still reloads", zap.Error(err))
		}
	}()
	go func() { defer wg.Done(); reloadOnSIGHUP(ctx, svc.loader, log) }()
	if svc.seam != nil {
		wg.Add(1)
		go func() { defer wg.Done(); svc.seam.Run(ctx, seamSweepInterval) }()
	}
	if svc.approvals != nil && cfg.ApproverJWKSFile == "" {
		wg.Add(1)
		go func() { defer wg.Done(); svc.warmApprovers(ctx) }()
	}
	log.Info("state store for approvals and idempotency keys", zap.String("kind", state.Kind(cfg.StateStore)),
		zap.Int("wait_replicas", cfg.StateStoreRedis.WaitReplicas), zap.Bool("per_replica_acknowledged", cfg.StateStoreMemoryPerReplicaOK))
	if err := svc.store.Ping(ctx); err != nil {
		log.Warn("state store not reachable; requests with an approval or idempotency key are denied (state_store_unavailable) until it is", zap.Error(err))
	}
	if httpLis != nil {
		// The HTTP server outlives the gRPC drain, so /readyz answers 503
		// (not connection refused) and the last scrape sees the final counts.
		hsrv := &http.Server{Handler: httpHandler(cfg, svc, reg), ReadHeaderTimeout: 5 * time.Second}
		wg.Add(1)
		go func() { defer wg.Done(); _ = hsrv.Serve(httpLis) }()
		defer func() {
			sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer scancel()
			_ = hsrv.Shutdown(sctx)
		}()
		log.Info("serving /metrics, /healthz, /readyz, /statusz and "+resourcemeta.WellKnownPath, zap.String("http_addr", httpLis.Addr().String()))
	}

	gs, hs := newGRPCServer(cfg, svc.server, creds, tel.serverOptions()...)
	extprocv3.RegisterExternalProcessorServer(gs, svc.proc)
	lc := &lifecycle.Lifecycle{
		GRPC: gs, Health: hs, Readiness: svc.readiness, Services: []string{extauthz.HealthService},
		DrainPeriod: cfg.DrainPeriod, ShutdownTimeout: cfg.ShutdownTimeout,
		OnShutdown: func() { log.Info("shutting down: NOT_SERVING, draining; a second SIGINT or SIGTERM stops at once") },
	}
	mode := "enforcing"
	if cfg.DryRun {
		mode = "DRY-RUN: every request is admitted"
	}
	log.Info("serving ext_authz", zap.String("grpc_addr", lis.Addr().String()), zap.String("policy", cfg.PolicyFile),
		zap.String("server_id", cfg.ServerID), zap.String("mode", mode))
	if err = lc.Serve(ctx, lis); err != nil {
		log.Error("stopped", zap.Error(err))
		return &exitError{code: 1, err: err, logged: true}
	}
	log.Info("stopped")
	return nil
}

// newMetrics creates the service's metrics in reg, with the series of every
// reason (decision.Reasons) at zero.
func newMetrics(reg prometheus.Registerer) *metrics.Metrics {
	return metrics.New(reg, extauthz.MetricReasons())
}

// httpHandler serves the operational endpoints (lifecycle.HTTPHandler) and
// the RFC 9728 protected resource metadata of every audience, which the
// shipped Envoy configs route to without ext_authz.
func httpHandler(cfg *Config, svc *service, reg prometheus.Gatherer) http.Handler {
	prm := &resourcemeta.Handler{
		Audiences: cfg.Audiences, Issuer: cfg.Issuer,
		ResourceDocumentation: cfg.ResourceDocumentation, Scopes: svc.scopes,
	}
	mux := http.NewServeMux()
	mux.Handle(resourcemeta.WellKnownPath, prm)
	mux.Handle(resourcemeta.WellKnownPath+"/", prm)
	mux.Handle("GET /statusz", statusHandler(cfg, svc))
	if svc.decisions != nil {
		mux.Handle("GET "+decisionJWKSPath, svc.decisions)
	}
	mux.Handle("/", lifecycle.HTTPHandler(svc.readiness, reg))
	return mux
}

// service is the assembled decision service and what keeps it current.
type service struct {
	server    *extauthz.Server
	proc      *extproc.Server // the response seam, on the same port
	loader    *reload.Loader
	readiness *lifecycle.Readiness
	policies  *decision.PolicyStore
	oidc      *bearer.OIDCVerifier
	jwks      *bearer.KeySet       // --jwks-file's keys, reloaded on change; nil with discovery
	approvals *bearer.OIDCVerifier // nil without --approver-issuer
	store     state.Store
	log       *zap.Logger
	reload    *policyReload    // the policy loads, for /statusz
	seam      *seamcover.Table // the response seam's coverage; nil without --response-seam
	decisions *decisionKeys    // nil without --decision-key-file

	intro     *bearer.IntrospectionVerifier // --token-mode introspection or both; nil otherwise
	tokenMode string                        // --token-mode
}

// scopes returns the live policy's scopes list (RFC 9728 scopes_supported).
func (s *service) scopes() []string {
	if lp := s.policies.Load(); lp != nil && lp.Policy != nil {
		return lp.Policy.Scopes()
	}
	return nil
}

// warmApprovers runs discovery at the approver issuer until it succeeds
// (backing off from 1s to 30s) or ctx ends; until then approvals are
// denied (idp_unavailable).
func (s *service) warmApprovers(ctx context.Context) {
	for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
		err := s.approvals.Warm(ctx)
		if err == nil && s.approvals.Ready() {
			return
		}
		s.log.Warn("approver issuer not ready; approvals are refused", zap.Error(err), zap.Duration("retry_in", backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// newService builds the Check server from cfg: policy, token verifier and
// cache, limits. A missing or invalid policy is an error naming file:line.
func newService(cfg *Config, log, decisionLog *zap.Logger, metrics *metrics.Metrics) (*service, error) {
	store := &decision.PolicyStore{}
	reporter := &policyReload{store: store, m: metrics}
	loader := newPolicyLoader(cfg.PolicyFile, reporter)
	if _, err := loader.Load(); err != nil {
		var ce *policy.CompileError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("policy: %s", strings.ReplaceAll(strings.TrimSpace(ce.Error()), "\n", "; "))
		}
		return nil, fmt.Errorf("policy: %w", err)
	}
	reporter.log = log // from now on a bad reload is logged, not fatal
	if lp := store.Load(); lp != nil && len(lp.Policy.Quotas()) > 0 && state.IsMemory(cfg.StateStore) && !cfg.StateStoreMemoryPerReplicaOK {
		log.Warn("the policy's quotas count on this replica only (--state-store memory): behind N replicas up to N times each limit is admitted. " +
			"Use a Redis every replica shares, or say this is the only replica with --state-store-memory-per-replica-ok")
	}

	var jwks *bearer.KeySet
	oc := bearer.OIDCConfig{Issuer: cfg.Issuer, Audiences: cfg.Audiences, OnKeySetRefresh: func(err error) {
		if err != nil {
			metrics.KeySetRefreshed(err)
			log.Warn("key set refresh failed; keeping the last good keys", zap.Error(err))
			return
		}
		metrics.KeySetRefreshed(nil)
	}, OnIgnoredKeys: func(ignored []bearer.IgnoredKey) { logIgnoredKeys(log, ignored) }, OnDiscovery: metrics.OIDCDiscovered,
		Types: tokenTypes(cfg.TokenTypes)}
	if cfg.JWKSFile != "" {
		ks := &bearer.KeySet{Accept: publishedKeysRefusal("jwks-file", cfg.AllowTestKeys, log)}
		if err := ks.LoadFile(cfg.JWKSFile); err != nil {
			return nil, fmt.Errorf("--jwks-file: %w", err)
		}
		logIgnoredKeys(log, ks.Ignored())
		// A rotated file is reloaded like the policy: last good keys on error.
		ks.OnRefresh = jwksReloadHook(ks, cfg.JWKSFile, log, metrics)
		ks.OnIgnoredKeys = func(ignored []bearer.IgnoredKey) { logIgnoredKeys(log, ignored) }
		oc.KeySet = ks
		jwks = ks
	}
	ov, err := bearer.NewOIDCVerifier(oc)
	if err != nil {
		return nil, err
	}
	var verifier bearer.TokenVerifier = ov
	if cfg.TokenCacheSize > 0 {
		if verifier, err = bearer.NewCachingVerifier(ov, cfg.TokenCacheSize, nil, metrics.TokenCacheResult); err != nil {
			return nil, err
		}
	}
	// Opaque tokens (--token-mode): the introspection verifier keeps its
	// own cache, bounded by --introspection-cache-ttl.
	iv, err := introspectionVerifier(cfg, metrics)
	if err != nil {
		return nil, err
	}
	switch cfg.Introspection.Mode {
	case tokenModeIntrospection:
		verifier = iv
	case tokenModeBoth:
		verifier = bearer.DualVerifier{JWT: verifier, Opaque: iv}
	}
	binding, approvals, err := newBinding(cfg, jwks, log)
	if err != nil {
		return nil, err
	}
	parts := assembleParts{Policies: store, Verifier: verifier, Binding: binding, Log: log}
	var pinStore state.Reader
	if rd, ok := binding.Store.(state.Reader); ok { // Memory and Redis are
		pinStore = definitionStore(cfg.StateStore, rd)
		parts.Definitions = toolpin.Observations{Store: pinStore}
		parts.Schemas = toolpin.Observations{Store: pinStore}
		parts.Prompts = toolpin.Observations{Store: pinStore}
		parts.Tasks = &state.Tasks{Store: rd}
		binding.Results = &state.Results{Store: rd, MaxBytes: cfg.IdempotencyResultMaxBytes}
	}
	// Policy quotas keep their buckets in the same store (memory: this
	// replica's; Redis: shared), observed as op "quota".
	if l, ok := state.Observe(binding.Store, metrics.StateStoreCall).(state.Limiter); ok {
		parts.Quotas, parts.QuotaObserver = l, metrics.QuotaCharged
	}
	asm, err := assemble(cfg, parts)
	if err != nil {
		binding.Store.Close()
		return nil, err
	}
	proc, err := newProcessor(cfg, asm, store, binding.Store, pinStore, log, decisionLog, metrics)
	if err != nil {
		binding.Store.Close()
		return nil, err
	}
	dk := asm.DecisionKeys
	seam := proc.Seam()
	return &service{
		seam:      seam,
		decisions: dk,
		proc:      proc,
		approvals: approvals,
		store:     binding.Store,
		server: &extauthz.Server{
			Decider:   asm.Decider,
			Responder: asm.Responder,
			Log:       decisionLog,
			Metrics:   metrics,
			DryRun:    asm.DryRun,
			Seam:      seam,
		},
		loader:    loader,
		readiness: &lifecycle.Readiness{Checks: []func() error{store.Ready, tokensReady(cfg.Introspection.Mode, ov, iv)}, OnReady: metrics.SetReady},
		policies:  store,
		reload:    reporter,
		oidc:      ov,
		intro:     iv,
		tokenMode: cfg.Introspection.Mode,
		jwks:      jwks,
		log:       log,
	}, nil
}

// tokensReady is the readiness check of the token verifiers of mode:
// signing keys (jwt), the introspection endpoint known (introspection),
// or both.
func tokensReady(mode string, ov *bearer.OIDCVerifier, iv *bearer.IntrospectionVerifier) func() error {
	keys := keysReady(ov)
	return func() error {
		if iv != nil && !iv.Ready() {
			return errors.New("introspection endpoint not known: the issuer's metadata not fetched yet")
		}
		if mode == tokenModeIntrospection {
			return nil
		}
		return keys()
	}
}

// keysReady is the readiness check of a token verifier: nil once signing
// keys are available.
func keysReady(v bearer.ReadyVerifier) func() error {
	return func() error {
		if !v.Ready() {
			return errors.New("signing keys not available from the identity provider")
		}
		return nil
	}
}

// watchOptions logs the errors of a file watch (the watch then reloads to
// be safe).
func watchOptions(log *zap.Logger) filewatch.Options {
	return filewatch.Options{OnError: func(err error) {
		log.Warn("watch error; reloading to be safe", zap.Error(err))
	}}
}

// jwksReloadHook counts every --jwks-file reload in keyset_refreshes_total
// and logs a refused one, and one that changed the keys.
func jwksReloadHook(ks *bearer.KeySet, file string, log *zap.Logger, m *metrics.Metrics) func(error) {
	gen := ks.Generation()
	return func(err error) {
		if err != nil {
			m.KeySetRefreshed(err)
			log.Error("--jwks-file reload refused; keeping the last good keys", zap.String("file", file), zap.Error(err))
			return
		}
		m.KeySetRefreshed(nil)
		if g := ks.Generation(); g != gen {
			gen = g
			log.Info("--jwks-file reloaded: signing keys changed", zap.String("file", file))
		}
	}
}

// logIgnoredKeys logs, once per key set, the members that cannot verify
// signatures and were left out (RFC 7517 section 5).
func logIgnoredKeys(log *zap.Logger, ignored []bearer.IgnoredKey) {
	if len(ignored) == 0 {
		return
	}
	why := make([]string, len(ignored))
	for i, k := range ignored {
		why[i] = k.String()
	}
	log.Info("key set members ignored: they cannot verify signatures", zap.Strings("ignored", why))
}

// tokenTypes is the typ set of access tokens: AccessTokenTypes and the
// operator's --token-typ values.
func tokenTypes(extra []string) []string {
	return append(append([]string{}, bearer.AccessTokenTypes...), extra...)
}

// newBinding builds approvals and idempotency keys from cfg: the state
// store and, with --approver-issuer, the approval verifier (typ
// mcp-approval+jwt only; keys from --approver-jwks-file or discovery;
// audiences are the MCP server's). When the approver issuer is the token
// issuer, the two static key sets (tokenKeys is --jwks-file's) must share
// no key, now and after every reload of --jwks-file. --approver-jwks-file
// may not hold a published test key unless --allow-test-keys.
func newBinding(cfg *Config, tokenKeys *bearer.KeySet, log *zap.Logger) (*decision.Binding, *bearer.OIDCVerifier, error) {
	st, err := state.OpenWithOptions(cfg.StateStore, cfg.StateStoreRedis)
	if err != nil {
		return nil, nil, err
	}
	b := &decision.Binding{Store: st} // its settings from cfg: assemble
	if cfg.ApproverIssuer == "" {
		return b, nil, nil
	}
	oc := bearer.OIDCConfig{Issuer: cfg.ApproverIssuer, Audiences: cfg.Audiences, Types: []string{decision.ApprovalType}}
	if cfg.ApproverJWKSFile != "" {
		ks := &bearer.KeySet{Accept: publishedKeysRefusal("approver-jwks-file", cfg.AllowTestKeys, log)}
		if err := ks.LoadFile(cfg.ApproverJWKSFile); err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("--approver-jwks-file: %w", err)
		}
		oc.KeySet = ks
		if sameIssuer(cfg.ApproverIssuer, cfg.Issuer) {
			if tokenKeys == nil { // checkBinding refuses it; never rely on that alone
				st.Close()
				return nil, nil, errors.New(errSharedIssuer)
			}
			shared := func(keys []jose.JSONWebKey) error {
				if kid := bearer.SharedKey(keys, ks.Keys()); kid != "" {
					return fmt.Errorf("%s; key %q is in both", errSharedIssuer, kid)
				}
				return nil
			}
			if err := shared(tokenKeys.Keys()); err != nil {
				st.Close()
				return nil, nil, err
			}
			// A rotated --jwks-file may not bring one in, nor a published
			// test key (the Accept it has already).
			vet := tokenKeys.Accept
			tokenKeys.Accept = func(keys []jose.JSONWebKey) error {
				if vet != nil {
					if err := vet(keys); err != nil {
						return err
					}
				}
				return shared(keys)
			}
		}
	}
	v, err := bearer.NewOIDCVerifier(oc)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	b.Approvals = v
	return b, v, nil
}

// keepKeysFresh runs discovery and the first key fetch until they succeed
// (backing off from 1s to 30s), calls ready, then refreshes the key set
// every interval, so a key the identity provider removed stops verifying. It
// returns when ctx ends.
func (s *service) keepKeysFresh(ctx context.Context, interval time.Duration, ready func()) {
	backoff := time.Second
	for s.intro != nil && !s.intro.Ready() {
		if err := s.intro.Warm(ctx); err != nil {
			s.log.Warn("introspection endpoint not found; opaque tokens are denied (idp_unavailable)", zap.Error(err), zap.Duration("retry_in", backoff))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
		}
	}
	if s.tokenMode == tokenModeIntrospection { // no JWTs: no signing keys to fetch
		ready()
		return
	}
	backoff = time.Second
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
	ready()
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
func reloadOnSIGHUP(ctx context.Context, l *reload.Loader, log *zap.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: reloading the policy", zap.String("file", l.File))
			_, _ = l.Load() // logged and counted by the loader's Loaded
		}
	}
}

// newGRPCServer returns the gRPC server with Check and health registered;
// creds nil means plaintext (loopback, or a mesh's mTLS).
func newGRPCServer(cfg *Config, srv *extauthz.Server, creds credentials.TransportCredentials, extra ...grpc.ServerOption) (*grpc.Server, *health.Server) {
	opts := []grpc.ServerOption{
		// Check's body, or one buffered answer the response seam filters.
		grpc.MaxRecvMsgSize(max(cfg.MaxBodyBytes, extproc.DefaultMaxBody) + grpcRecvHeadroom),
		// Decodes only what Check reads and accepts any bytes in strings,
		// so a body that is not UTF-8 is denied by Check instead of failing
		// the RPC (which failure_mode_allow would turn into an allow); a
		// side stream's messages without the metadata Envoy forwards on
		// each, which the processor reads once (extproc.Codec).
		grpc.ForceServerCodecV2(extproc.Codec{Next: extauthz.CheckCodec{}}),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
	}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	opts = append(opts, extra...)
	gs := grpc.NewServer(opts...)
	authv3.RegisterAuthorizationServer(gs, srv)
	hs := health.NewServer() // statuses follow readiness (lifecycle.Lifecycle)
	healthpb.RegisterHealthServer(gs, hs)
	return gs, hs
}

// newLogger returns a JSON-lines zap logger writing to w at level (debug,
// info, warn, error): unsampled (every decision is logged), RFC 3339 times
// in "ts", and no stack traces (an error message says what to fix; a stack
// says nothing to an operator).
func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "ts"
	ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	ws := zapcore.Lock(zapcore.AddSync(w))
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(ec), ws, lvl), zap.ErrorOutput(ws)), nil
}

// setOf returns the members of list as a set; nil when list is empty.
func setOf(list []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]bool, len(list))
	for _, s := range list {
		out[s] = true
	}
	return out
}

// definitionStore is where tool definition observations live: st itself
// when it is Redis (shared by every replica, as they must be), else a
// memory store of their own, so that a flood of observations (pin_scope
// session: one set per Mcp-Session-Id a client names) fills that one,
// never the store of approvals, idempotency keys and task bindings.
func definitionStore(spec string, st state.Reader) state.Reader {
	if state.IsMemory(spec) {
		return state.NewMemory(0, nil)
	}
	return st
}

// newProcessor builds the response seam (extproc) on the Check service's
// policy store, state store, decision log and metrics,
// with the list inputs of its assembly (asm: the cursor sealer of
// --cursor-key-file, --list-cache-ttl).
func newProcessor(cfg *Config, asm *assembly, store *decision.PolicyStore, st state.Store, pinStore state.Reader,
	log, decisionLog *zap.Logger, m *metrics.Metrics) (*extproc.Server, error) {
	pc := extproc.Config{
		Policy: func() (*decision.Policy, string) {
			if lp := store.Load(); lp != nil {
				return lp.Seam(), lp.Version
			}
			return nil, ""
		},
		Log: decisionLog, Metrics: m,
		CacheTTLms: asm.ListCacheTTL.Milliseconds(), RequestLimits: limitsOf(cfg),
	}
	if r, ok := st.(state.Reader); ok {
		pc.Tasks = &state.Tasks{Store: r}
		if pinStore != nil {
			pc.Definitions, pc.Fingerprints = &toolpin.Observations{Store: pinStore, Recent: &toolpin.Recent{}}, &toolpin.Cache{}
		}
		pc.Results, pc.ResultTTL = &state.Results{Store: r, MaxBytes: cfg.IdempotencyResultMaxBytes}, cfg.IdempotencyTTL
	}
	if asm.Cursors != nil {
		pc.Cursors = asm.Cursors
	}
	pc.Seam = newSeamTable(cfg, log, m)
	return extproc.New(pc), nil
}

// newSeamTable is the response seam's coverage table (--response-seam;
// nil without): its counts go to the seam_* metrics, and each sweep that
// finds decisions no processor met logs one warning with their number by
// class and one of their decision ids (the Envoy access log's decision_id).
func newSeamTable(cfg *Config, log *zap.Logger, m *metrics.Metrics) *seamcover.Table {
	if !cfg.ResponseSeam {
		return nil
	}
	return seamcover.New(seamcover.Config{
		Deadline: cfg.SeamDeadline,
		OnExpect: m.SeamExpect, OnMet: m.SeamMeet, OnUntracked: m.SeamUntrack,
		OnUnmet: func(n [5]uint64, example string) {
			fields := []zap.Field{zap.String("kind", "seam_unmet"), zap.String("example_decision_id", example)}
			for i, c := range seamcover.Classes {
				m.SeamUnmetBy(c, n[i])
				if n[i] > 0 {
					fields = append(fields, zap.Uint64(c, n[i]))
				}
			}
			log.Warn("admitted requests met no response-seam processor in time: a route or config runs without ext_proc, or its side stream went to another replica (docs/operations.md#mcpextauthzseambypassed)", fields...)
		},
	})
}
