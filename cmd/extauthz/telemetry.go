package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/decisionlog"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/tracing"
)

// telemetryFlushTimeout bounds how long shutdown waits for the decision
// log sinks and the span exporter, after the gRPC server has stopped.
const telemetryFlushTimeout = 5 * time.Second

// telemetryConfig is the observability flags of serve (traces, the
// decision log's sinks, the metrics' server label).
type telemetryConfig struct {
	Tracing             tracing.Config
	sampleRatio         optionalFloat
	DecisionLog         defaultedList // stdout, file, otlp
	DecisionLogFile     string
	DecisionLogOverflow string
	DecisionLogBuffer   int
	SampleAllowed       float64
	MetricsServers      listFlag
}

// defaultedList is a repeatable, comma-separated list flag whose first
// Set replaces the default.
type defaultedList struct {
	v   listFlag
	set bool
}

func (d *defaultedList) String() string {
	if d == nil {
		return ""
	}
	return d.v.String()
}

func (d *defaultedList) Set(s string) error {
	if !d.set {
		d.v, d.set = nil, true
	}
	return d.v.Set(s)
}

// optionalFloat is a float flag that knows whether it was set (by a flag,
// the environment or the config file).
type optionalFloat struct {
	v   float64
	set bool
}

func (o *optionalFloat) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	o.v, o.set = v, true
	return nil
}

func init() {
	for _, f := range []string{"decision-log-file", "otlp-ca-file", "otlp-cert-file", "otlp-key-file"} {
		pathFlags[f] = true
	}
}

// register defines the observability flags in fs.
func (t *telemetryConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&t.Tracing.Endpoint, "otlp-endpoint", "", "OTLP collector for traces and the otlp decision log: grpc://HOST:PORT, grpcs://HOST:PORT (TLS), http://HOST:PORT or https://HOST:PORT (OTLP/HTTP, /v1/traces and /v1/logs); empty: OTEL_EXPORTER_OTLP_[TRACES_|LOGS_]ENDPOINT. Tracing is on when either names one")
	fs.StringVar(&t.Tracing.CAFile, "otlp-ca-file", "", "CA bundle (PEM) the collector's certificate must chain to; empty: the system's")
	fs.StringVar(&t.Tracing.CertFile, "otlp-cert-file", "", "client certificate (PEM) for mTLS to the collector, with --otlp-key-file")
	fs.StringVar(&t.Tracing.KeyFile, "otlp-key-file", "", "private key (PEM) of --otlp-cert-file")
	fs.Var(&t.sampleRatio, "trace-sample-ratio", fmt.Sprintf("fraction of Checks without a sampled parent that start a trace (parent-based: a sampled traceparent or B3 is always followed); unset: OTEL_TRACES_SAMPLER if set, else %g", tracing.DefaultSampleRatio))
	t.DecisionLog = defaultedList{v: listFlag{"stdout"}}
	fs.Var(&t.DecisionLog, "decision-log", "where decision lines go, comma-separated: stdout, file (--decision-log-file), otlp (OTLP logs to --otlp-endpoint)")
	fs.StringVar(&t.DecisionLogFile, "decision-log-file", "", "file the file sink appends to (0640); reopened when rotated away")
	fs.StringVar(&t.DecisionLogOverflow, "decision-log-overflow", "drop", "when a sink's buffer is full: drop (the line is lost and counted; Checks never wait) or block (the Check waits for the sink, counted)")
	fs.IntVar(&t.DecisionLogBuffer, "decision-log-buffer-bytes", decisionlog.DefaultBufferBytes, "lines held per sink while it writes")
	fs.Float64Var(&t.SampleAllowed, "decision-log-sample-allowed", 1, "fraction of allowed decisions logged (denials and asks always are, and so is an allowed Check whose trace is sampled)")
	fs.Var(&t.MetricsServers, "metrics-server", "MCP server id counted by name in the metrics' server label, besides --server-id and --server-id-by-principal's (repeatable); other ids count as other")
}

// check validates t, every problem (joinProblems: nil, one, or a
// configErrors), reading the OTEL_* variables and the --otlp-* TLS files.
func (t *telemetryConfig) check() error {
	t.Tracing.SampleRatio, t.Tracing.SampleRatioSet = t.sampleRatio.v, t.sampleRatio.set
	t.Tracing.ServiceVersion, _ = versionParts()
	var errs []error
	seen := map[string]bool{}
	if len(t.DecisionLog.v) == 0 {
		errs = append(errs, fmt.Errorf("--decision-log: name at least one of stdout, file, otlp"))
	}
	for _, s := range t.DecisionLog.v {
		switch s {
		case "stdout", "file", "otlp":
		default:
			errs = append(errs, fmt.Errorf("--decision-log %q: want stdout, file or otlp", s))
			continue
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("--decision-log names %s twice", s))
		}
		seen[s] = true
	}
	if seen["file"] != (t.DecisionLogFile != "") {
		errs = append(errs, fmt.Errorf("--decision-log file and --decision-log-file go together"))
	}
	if t.DecisionLogBuffer <= 0 {
		errs = append(errs, fmt.Errorf("--decision-log-buffer-bytes must be positive"))
	}
	if !(t.SampleAllowed >= 0 && t.SampleAllowed <= 1) {
		errs = append(errs, fmt.Errorf("--decision-log-sample-allowed %v: want a number in [0, 1]", t.SampleAllowed))
	}
	if _, err := decisionlog.ParseOverflow(t.DecisionLogOverflow); err != nil {
		errs = append(errs, fmt.Errorf("--decision-log-overflow: %w", err))
	}
	errs = append(errs, t.Tracing.Problems()...)
	if seen["otlp"] {
		// A malformed endpoint is a problem of its own, named above.
		if _, ok, err := t.Tracing.Resolve(tracing.Logs); err == nil && !ok {
			errs = append(errs, fmt.Errorf("--decision-log otlp needs --otlp-endpoint or OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT"))
		}
	}
	return joinProblems(errs...)
}

// telemetry is serve's tracing and decision log, running.
type telemetry struct {
	tp          *sdktrace.TracerProvider // nil without tracing
	tracing     *extauthz.Tracing
	decisionLog *zap.Logger
	stopLog     func(context.Context) error
	log         *zap.Logger
}

// startTelemetry builds the tracer provider (when an endpoint is
// configured) and the decision log's sinks. Nothing dials yet: an
// unreachable collector costs spans and lines later, counted, never the
// start.
func startTelemetry(ctx context.Context, cfg *Config, level zapcore.LevelEnabler, log *zap.Logger, m *metrics.Metrics) (*telemetry, error) {
	tc := &cfg.Telemetry
	t := &telemetry{log: log}
	var sinks []decisionlog.Sink
	for _, s := range tc.DecisionLog.v {
		switch s {
		case "stdout":
			sinks = append(sinks, decisionlog.WriterSink("stdout", os.Stdout))
		case "file":
			fs, err := decisionlog.FileSink(tc.DecisionLogFile)
			if err != nil {
				return nil, fmt.Errorf("--decision-log-file: %w", err)
			}
			sinks = append(sinks, fs)
		case "otlp":
			exp, err := tracing.NewLogExporter(ctx, &tc.Tracing)
			if err != nil {
				return nil, fmt.Errorf("--decision-log otlp: %w", err)
			}
			res, err := tc.Tracing.Resource(ctx)
			if err != nil {
				return nil, fmt.Errorf("--decision-log otlp: %w", err)
			}
			sinks = append(sinks, decisionlog.OTLPSink(exp, res))
		}
	}
	overflow, _ := decisionlog.ParseOverflow(tc.DecisionLogOverflow) // checked
	t.decisionLog, t.stopLog = decisionlog.NewLogger(sinks, decisionlog.Options{
		Level: level, Overflow: overflow, BufferBytes: tc.DecisionLogBuffer, Counters: m,
		OnError: func(sink string, err error) {
			log.Warn("decision log write failed; lines dropped (decision_log_dropped_total)", zap.String("sink", sink), zap.Error(err))
		},
	})
	on, err := tc.Tracing.TracesEnabled()
	if err != nil {
		return nil, err
	}
	if on {
		if t.tp, err = tracing.NewTracerProvider(ctx, &tc.Tracing); err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		// The SDK's own errors (an export that failed) as JSON lines.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("OpenTelemetry", zap.Error(err)) }))
		t.tracing = &extauthz.Tracing{Tracer: t.tp.Tracer("github.com/mcp-extauthz/mcp-extauthz/extauthz")}
		ep, _, _ := tc.Tracing.Resolve(tracing.Traces)
		ratio := "OTEL_TRACES_SAMPLER"
		if s := tc.Tracing.Sampler(); s != nil {
			ratio = s.Description()
		}
		log.Info("tracing on", zap.String("protocol", string(ep.Protocol)), zap.String("endpoint", endpointForLog(ep)), zap.String("sampler", ratio))
	}
	return t, nil
}

// endpointForLog names an endpoint without anything from the environment
// (whose URL could carry credentials in its query).
func endpointForLog(e tracing.Endpoint) string {
	if e.Host == "" {
		return "from OTEL_EXPORTER_OTLP_*"
	}
	return e.Host
}

// instrument wires the service to the telemetry: the Check span, the
// bounded server label, log sampling, build_info and dry_run, the state
// store's and the DPoP replay cache's metrics.
func (t *telemetry) instrument(cfg *Config, svc *service, m *metrics.Metrics) {
	s := svc.server
	s.Tracing = t.tracing
	s.ServerLabels = serverLabels(cfg)
	s.LogSampling = extauthz.SampleAllowed(cfg.Telemetry.SampleAllowed)
	v, c := versionParts()
	m.SetBuildInfo(v, c)
	m.SetDryRun(cfg.DryRun)
	dc := s.Decider.Config()
	if b := dc.Binding; b != nil { // before the first Check: serve has not started
		b.Store = state.Observe(b.Store, m.StateStoreCall)
		svc.store = b.Store
	}
	if d := dc.DPoP; d != nil {
		m.ObserveDPoPReplayCache(d.ReplayCacheSize)
	}
}

// serverLabels are the configured MCP server ids: --server-id,
// --server-id-by-principal's and --metrics-server.
func serverLabels(cfg *Config) map[string]bool {
	out := map[string]bool{}
	if cfg.ServerID != "" {
		out[cfg.ServerID] = true
	}
	for _, id := range cfg.ServersByPrincipal {
		out[id] = true
	}
	for _, id := range cfg.Telemetry.MetricsServers {
		out[id] = true
	}
	return out
}

// serverOptions are the gRPC server options of the telemetry: otelgrpc's
// stats handler (tracing.ServerHandler) when tracing is on.
func (t *telemetry) serverOptions() []grpc.ServerOption {
	if t.tp == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(tracing.ServerHandler(t.tp, tracing.Propagator()))}
}

// shutdown flushes the decision log and the spans, within
// telemetryFlushTimeout; call it after the gRPC server has stopped.
func (t *telemetry) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if err := t.stopLog(ctx); err != nil {
		t.log.Error("decision log not fully flushed", zap.Error(err))
	}
	if t.tp != nil {
		if err := t.tp.Shutdown(ctx); err != nil {
			t.log.Warn("spans not flushed", zap.Error(err))
		}
	}
}

// versionParts is the build's version and commit (see version).
func versionParts() (v, c string) {
	s := version()
	v, c, _ = strings.Cut(s, " (commit ")
	return v, strings.TrimSuffix(c, ")")
}
