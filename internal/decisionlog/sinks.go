package decisionlog

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
)

// WriterSink writes lines to w (os.Stdout: the sink "stdout").
func WriterSink(name string, w io.Writer) Sink { return &writerSink{name: name, w: w} }

type writerSink struct {
	name string
	w    io.Writer
}

func (s *writerSink) Name() string { return s.name }

func (s *writerSink) Write(_ context.Context, lines []byte) error {
	_, err := s.w.Write(lines)
	return err
}

// syncer is a writer that can flush to stable storage (*os.File).
type syncer interface{ Sync() error }

func (s *writerSink) Close(context.Context) error {
	if f, ok := s.w.(syncer); ok {
		_ = f.Sync() // a pipe or terminal cannot sync: not an error here
	}
	return nil
}

// FileSink appends lines to the file at path (created 0640 if missing),
// and opens it again when it was renamed or removed (logrotate's create
// mode; copytruncate works as is, the file being opened O_APPEND).
func FileSink(path string) (Sink, error) {
	s := &fileSink{path: path}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

type fileSink struct {
	path string
	f    *os.File
	fi   os.FileInfo
}

func (s *fileSink) Name() string { return "file" }

func (s *fileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.fi = f, fi
	return nil
}

func (s *fileSink) Write(_ context.Context, lines []byte) error {
	if fi, err := os.Stat(s.path); err != nil || !os.SameFile(fi, s.fi) {
		if err := s.open(); err != nil {
			return err
		}
	}
	_, err := s.f.Write(lines)
	return err
}

func (s *fileSink) Close(context.Context) error {
	err := s.f.Sync()
	return errors.Join(err, s.f.Close())
}

// maxExportRecords bounds one OTLP export request.
const maxExportRecords = 512

// OTLPSink exports lines as OTLP log records through exp (built by
// internal/tracing: gRPC or HTTP, TLS, retries): one record per line,
// event name mcp_extauthz.decision, its time from "ts", severity from
// "level", body the "msg", every other member an attribute (numbers as int
// or double, lists as arrays), trace_id and span_id as the record's trace
// context. A batch is exported whole (up to 512 records per request);
// when the export fails, its lines are counted as dropped.
func OTLPSink(exp sdklog.Exporter, res *resource.Resource) Sink {
	s := &otlpSink{exp: exp}
	s.provider = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(&s.collect))
	s.logger = s.provider.Logger("github.com/mcp-extauthz/mcp-extauthz/internal/decisionlog")
	return s
}

type otlpSink struct {
	exp      sdklog.Exporter
	provider *sdklog.LoggerProvider
	logger   log.Logger
	collect  collector
}

// collector is a log processor that keeps the records emitted for the
// batch being built.
type collector struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (c *collector) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.mu.Lock()
	c.records = append(c.records, r.Clone())
	c.mu.Unlock()
	return nil
}
func (c *collector) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c *collector) Shutdown(context.Context) error                         { return nil }
func (c *collector) ForceFlush(context.Context) error                       { return nil }

func (c *collector) take() []sdklog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.records
	c.records = nil
	return r
}

func (s *otlpSink) Name() string { return "otlp" }

func (s *otlpSink) Write(ctx context.Context, lines []byte) error {
	var errs []error
	for len(lines) > 0 {
		line := lines
		if i := bytes.IndexByte(lines, '\n'); i >= 0 {
			line, lines = lines[:i], lines[i+1:]
		} else {
			lines = nil
		}
		if len(line) == 0 {
			continue
		}
		rctx, rec, err := record(line)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.logger.Emit(rctx, rec)
	}
	recs := s.collect.take()
	for len(recs) > 0 {
		n := min(len(recs), maxExportRecords)
		if err := s.exp.Export(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return errors.Join(errs...)
}

func (s *otlpSink) Close(ctx context.Context) error {
	return errors.Join(s.provider.Shutdown(ctx), s.exp.Shutdown(ctx))
}

var severities = map[string]log.Severity{
	"debug": log.SeverityDebug, "info": log.SeverityInfo, "warn": log.SeverityWarn,
	"error": log.SeverityError, "dpanic": log.SeverityFatal, "panic": log.SeverityFatal, "fatal": log.SeverityFatal,
}

// record converts one JSON decision line to a log record, and the context
// that carries its trace_id and span_id.
func record(line []byte) (context.Context, log.Record, error) {
	var rec log.Record
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, rec, fmt.Errorf("otlp: a line that is not a JSON object: %w", err)
	}
	rec.SetEventName("mcp_extauthz.decision")
	rec.SetObservedTimestamp(time.Now())
	ctx := context.Background()
	var sc trace.SpanContextConfig
	for k, v := range m {
		switch k {
		case "ts":
			if s, ok := v.(string); ok {
				if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
					rec.SetTimestamp(ts)
				}
			}
		case "level":
			s, _ := v.(string)
			rec.SetSeverityText(s)
			rec.SetSeverity(severities[s])
		case "msg":
			s, _ := v.(string)
			rec.SetBody(attribute.StringValue(s))
		case "trace_id":
			s, _ := v.(string)
			if b, err := hex.DecodeString(s); err == nil && len(b) == 16 {
				copy(sc.TraceID[:], b)
			}
		case "span_id":
			s, _ := v.(string)
			if b, err := hex.DecodeString(s); err == nil && len(b) == 8 {
				copy(sc.SpanID[:], b)
			}
		default:
			rec.AddAttributes(attribute.KeyValue{Key: attribute.Key(k), Value: value(v)})
		}
	}
	if c := trace.NewSpanContext(sc); c.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, c)
	}
	return ctx, rec, nil
}

// value converts a decoded JSON value.
func value(v any) attribute.Value {
	switch v := v.(type) {
	case string:
		return attribute.StringValue(v)
	case bool:
		return attribute.BoolValue(v)
	case json.Number:
		if i, err := v.Int64(); err == nil && !strings.ContainsAny(string(v), ".eE") {
			return attribute.Int64Value(i)
		}
		f, _ := v.Float64()
		return attribute.Float64Value(f)
	case []any:
		vs := make([]attribute.Value, len(v))
		for i, e := range v {
			vs[i] = value(e)
		}
		return attribute.SliceValue(vs...)
	case map[string]any:
		kvs := make([]attribute.KeyValue, 0, len(v))
		for k, e := range v {
			kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(k), Value: value(e)})
		}
		return attribute.MapValue(kvs...)
	}
	return attribute.Value{} // null
}
