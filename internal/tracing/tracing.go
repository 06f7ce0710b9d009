// Package tracing sets up OpenTelemetry for the service: the tracer
// provider with its OTLP exporter (gRPC or HTTP/protobuf, chosen by the
// endpoint URL or OTEL_EXPORTER_OTLP_PROTOCOL, with TLS), the parent-based
// sampler, the propagators of the Check span (W3C Trace Context and B3,
// single and multiple headers), the OTLP log exporter of the decision log,
// and the gRPC stats handler (otelgrpc) that traces a Check only when Envoy
// traced the call.
//
// Configuration is the service's flags first, then the standard
// environment variables the OpenTelemetry SDK reads itself
// (OTEL_EXPORTER_OTLP_[TRACES_|LOGS_]ENDPOINT, _PROTOCOL, _HEADERS,
// _CERTIFICATE, _TIMEOUT, OTEL_TRACES_SAMPLER[_ARG], OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER):
// https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/.
// It knows nothing of Check; extauthz starts the spans.
package tracing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/propagators/b3"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"google.golang.org/grpc/credentials"
)

// DefaultSampleRatio is the fraction of Checks without a sampled parent
// that start a sampled trace: sparse, since a sampled Check span costs
// several microseconds and allocations (docs/performance.md,
// "Performance").
const DefaultSampleRatio = 0.01

// ServiceName is the service.name resource attribute unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const ServiceName = "mcp-extauthz"

// Protocol is an OTLP transport.
type Protocol string

// The OTLP protocols this service exports with (OTEL_EXPORTER_OTLP_PROTOCOL
// values). http/json is not offered by the Go SDK.
const (
	GRPC         Protocol = "grpc"
	HTTPProtobuf Protocol = "http/protobuf"
)

// Signal is what an exporter sends: its name in the OTEL_EXPORTER_OTLP_*
// variables and its OTLP/HTTP path.
type Signal string

// The signals exported.
const (
	Traces Signal = "traces"
	Logs   Signal = "logs"
)

// Endpoint is where one signal is exported.
type Endpoint struct {
	Protocol Protocol
	Host     string // host:port; "" leaves it to the OTEL_EXPORTER_OTLP_* variables
	Path     string // OTLP/HTTP only: the URL path; "" is /v1/<signal>
	Insecure bool   // plaintext (grpc://, http://)
}

// Config is the OTLP and sampling configuration (the observability flags).
type Config struct {
	// Endpoint is the --otlp-endpoint URL: grpc://HOST:PORT (OTLP/gRPC,
	// plaintext), grpcs://HOST:PORT (OTLP/gRPC over TLS), http://HOST:PORT[/PATH]
	// or https://… (OTLP/HTTP protobuf; without a path, /v1/traces and
	// /v1/logs; with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, OTLP/gRPC instead).
	// Empty: the OTEL_EXPORTER_OTLP_[SIGNAL_]ENDPOINT variables.
	Endpoint string
	// CAFile, CertFile, KeyFile: PEM files of the CA bundle that the
	// collector's certificate must chain to (empty: the system's) and of
	// this service's client certificate (mTLS; both or neither). Used only
	// with a TLS endpoint.
	CAFile, CertFile, KeyFile string
	// SampleRatio is the root sampling ratio in [0, 1] when SampleRatioSet;
	// otherwise OTEL_TRACES_SAMPLER applies when set, else
	// DefaultSampleRatio. Sampling is parent-based either way: a sampled
	// parent is always followed.
	SampleRatio    float64
	SampleRatioSet bool
	// ServiceVersion is service.version.
	ServiceVersion string
	// Getenv reads the environment; nil is os.Getenv. The SDK's exporters
	// read OTEL_EXPORTER_OTLP_* from the process environment themselves.
	Getenv func(string) string
}

func (c *Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	return os.Getenv(k)
}

// protocol is OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL, else "" (unset).
func (c *Config) protocol(s Signal) string {
	if p := c.getenv("OTEL_EXPORTER_OTLP_" + strings.ToUpper(string(s)) + "_PROTOCOL"); p != "" {
		return p
	}
	return c.getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}

// Resolve returns where signal s is exported, and false when nothing
// configures an endpoint for it (neither Endpoint nor
// OTEL_EXPORTER_OTLP_[S_]ENDPOINT). Errors name a malformed URL or an
// unsupported protocol.
func (c *Config) Resolve(s Signal) (Endpoint, bool, error) {
	envProto := c.protocol(s)
	switch Protocol(envProto) {
	case "", GRPC, HTTPProtobuf:
	default:
		return Endpoint{}, false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", envProto)
	}
	if c.Endpoint == "" {
		env := c.getenv("OTEL_EXPORTER_OTLP_" + strings.ToUpper(string(s)) + "_ENDPOINT")
		if env == "" {
			env = c.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		if env == "" {
			return Endpoint{}, false, nil
		}
		p := Protocol(envProto)
		if p == "" {
			p = HTTPProtobuf // the specification's default
		}
		return Endpoint{Protocol: p}, true, nil // the exporter reads the variables
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Endpoint{}, false, fmt.Errorf("--otlp-endpoint %q: want grpc://, grpcs://, http:// or https://HOST:PORT", c.Endpoint)
	}
	e := Endpoint{Host: u.Host}
	switch u.Scheme {
	case "grpc", "grpcs":
		if u.Path != "" && u.Path != "/" {
			return Endpoint{}, false, fmt.Errorf("--otlp-endpoint %q: an OTLP/gRPC endpoint has no path", c.Endpoint)
		}
		e.Protocol, e.Insecure = GRPC, u.Scheme == "grpc"
	case "http", "https":
		e.Protocol, e.Insecure = HTTPProtobuf, u.Scheme == "http"
		if Protocol(envProto) == GRPC {
			e.Protocol = GRPC
		} else if u.Path != "" && u.Path != "/" {
			e.Path = u.Path
		}
	default:
		return Endpoint{}, false, fmt.Errorf("--otlp-endpoint %q: scheme %q, want grpc, grpcs, http or https", c.Endpoint, u.Scheme)
	}
	return e, true, nil
}

// TracesEnabled reports whether traces are exported: an endpoint is
// configured, OTEL_SDK_DISABLED is not "true" and OTEL_TRACES_EXPORTER is
// unset, "otlp" or "none" (false). Other exporters are an error.
func (c *Config) TracesEnabled() (bool, error) {
	if strings.EqualFold(c.getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch x := c.getenv("OTEL_TRACES_EXPORTER"); x {
	case "", "otlp":
	case "none":
		return false, nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER %q: want otlp or none", x)
	}
	_, ok, err := c.Resolve(Traces)
	return ok, err
}

// tlsConfig is the client TLS of a TLS endpoint: c's CA bundle (else the
// system's) and client certificate. Its error joins (errors.Join) the
// CA bundle's problem and the client certificate's.
func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	var errs []error
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--otlp-ca-file: %w", err))
		case !pool.AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("--otlp-ca-file %s: no PEM certificate", c.CAFile))
		default:
			tc.RootCAs = pool
		}
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		errs = append(errs, errors.New("--otlp-cert-file and --otlp-key-file go together"))
	case c.CertFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--otlp-cert-file: %w", err))
		} else {
			tc.Certificates = []tls.Certificate{cert}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tc, nil
}

// Check validates c without I/O beyond reading the TLS files: nil, or
// every problem of Problems, joined (errors.Join: one a line).
func (c *Config) Check() error {
	return errors.Join(c.Problems()...)
}

// Problems returns every problem of c, each once, in this order: the
// sample ratio, the endpoint of traces and of logs (a malformed
// --otlp-endpoint, an unsupported OTEL_EXPORTER_OTLP_*PROTOCOL), the
// OTEL_TRACES_EXPORTER, the TLS files. None is nil.
func (c *Config) Problems() []error {
	var errs []error
	add := func(err error) {
		if err == nil {
			return
		}
		for _, e := range errs { // one endpoint serves both signals: named once
			if e.Error() == err.Error() {
				return
			}
		}
		errs = append(errs, err)
	}
	if c.SampleRatioSet && !(c.SampleRatio >= 0 && c.SampleRatio <= 1) {
		add(fmt.Errorf("--trace-sample-ratio %v: want a number in [0, 1]", c.SampleRatio))
	}
	for _, s := range []Signal{Traces, Logs} {
		_, _, err := c.Resolve(s)
		add(err)
	}
	_, err := c.TracesEnabled()
	add(err)
	if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
		_, err := c.tlsConfig()
		for _, e := range unwrapJoined(err) {
			add(e)
		}
	}
	return errs
}

// unwrapJoined is the errors errors.Join joined into err, else err alone
// (none for nil).
func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// useTLSFiles reports whether the exporter must be given c's TLS files:
// a TLS endpoint of the flag, or an endpoint from the environment with a
// TLS file flag set.
func (c *Config) useTLSFiles(e Endpoint) bool {
	if e.Host != "" {
		return !e.Insecure
	}
	return c.CAFile != "" || c.CertFile != ""
}

// Resource is the service's resource: service.name ServiceName and
// service.version, overridden by OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, and the SDK's telemetry.sdk.*.
func (c *Config) Resource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(c.ServiceVersion)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
}

// Sampler is the sampler of c: parent-based, its root sampler
// TraceIDRatioBased(SampleRatio or DefaultSampleRatio); nil when
// OTEL_TRACES_SAMPLER is set and SampleRatioSet is not, so that the SDK
// reads the variable.
func (c *Config) Sampler() sdktrace.Sampler {
	ratio := DefaultSampleRatio
	switch {
	case c.SampleRatioSet:
		ratio = c.SampleRatio
	case c.getenv("OTEL_TRACES_SAMPLER") != "":
		return nil
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
}

// NewTracerProvider returns the tracer provider exporting spans in
// batches to c's traces endpoint. The caller must Shutdown it (which
// flushes). It dials lazily: an unreachable collector is no error here.
func NewTracerProvider(ctx context.Context, c *Config) (*sdktrace.TracerProvider, error) {
	e, ok, err := c.Resolve(Traces)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no OTLP endpoint for traces")
	}
	exp, err := newTraceExporter(ctx, c, e)
	if err != nil {
		return nil, err
	}
	res, err := c.Resource(ctx)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if s := c.Sampler(); s != nil {
		opts = append(opts, sdktrace.WithSampler(s))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

func newTraceExporter(ctx context.Context, c *Config, e Endpoint) (*otlptrace.Exporter, error) {
	var tc *tls.Config
	if c.useTLSFiles(e) {
		var err error
		if tc, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	if e.Protocol == GRPC {
		var opts []otlptracegrpc.Option
		if e.Host != "" {
			opts = append(opts, otlptracegrpc.WithEndpoint(e.Host))
			if e.Insecure {
				opts = append(opts, otlptracegrpc.WithInsecure())
			}
		}
		if tc != nil {
			opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(tc)))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if e.Host != "" {
		opts = append(opts, otlptracehttp.WithEndpoint(e.Host))
		if e.Path != "" {
			opts = append(opts, otlptracehttp.WithURLPath(e.Path))
		}
		if e.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
	}
	if tc != nil {
		opts = append(opts, otlptracehttp.WithTLSClientConfig(tc))
	}
	return otlptracehttp.New(ctx, opts...)
}

// NewLogExporter returns the OTLP log exporter of c's logs endpoint (the
// decision log's otlp sink). Errors: no endpoint, bad TLS files.
func NewLogExporter(ctx context.Context, c *Config) (sdklog.Exporter, error) {
	e, ok, err := c.Resolve(Logs)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no OTLP endpoint for logs: set --otlp-endpoint or OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT")
	}
	var tc *tls.Config
	if c.useTLSFiles(e) {
		if tc, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	if e.Protocol == GRPC {
		var opts []otlploggrpc.Option
		if e.Host != "" {
			opts = append(opts, otlploggrpc.WithEndpoint(e.Host))
			if e.Insecure {
				opts = append(opts, otlploggrpc.WithInsecure())
			}
		}
		if tc != nil {
			opts = append(opts, otlploggrpc.WithTLSCredentials(credentials.NewTLS(tc)))
		}
		return otlploggrpc.New(ctx, opts...)
	}
	var opts []otlploghttp.Option
	if e.Host != "" {
		opts = append(opts, otlploghttp.WithEndpoint(e.Host))
		if e.Path != "" {
			opts = append(opts, otlploghttp.WithURLPath(e.Path))
		}
		if e.Insecure {
			opts = append(opts, otlploghttp.WithInsecure())
		}
	}
	if tc != nil {
		opts = append(opts, otlploghttp.WithTLSClientConfig(tc))
	}
	return otlploghttp.New(ctx, opts...)
}

// Propagator extracts and injects W3C Trace Context (traceparent,
// tracestate), W3C Baggage and B3 (the single b3 header and the
// x-b3-* headers; injected as x-b3-*, the form Envoy's Zipkin tracer
// reads and writes).
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(
		propagation.TraceContext{}, propagation.Baggage{},
		b3.New(b3.WithInjectEncoding(b3.B3MultipleHeader)),
	)
}
