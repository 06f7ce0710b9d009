// Package otlptest is a minimal OTLP receiver for tests: the collector's
// TraceService and LogsService (OTLP/gRPC, opentelemetry-proto
// collector/{trace,logs}/v1) and their OTLP/HTTP form (POST /v1/traces and
// /v1/logs, application/x-protobuf), on 127.0.0.1, optionally over TLS. It
// keeps every request it accepted, and can be told to refuse (gRPC
// PERMISSION_DENIED, HTTP 403: errors an exporter does not retry) or to hold
// requests until released. It is not a collector: no
// JSON encoding, no gzip, no partial success.
package otlptest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Receiver is a running OTLP receiver. Its methods are safe for concurrent
// use.
type Receiver struct {
	// GRPCAddr is host:port of the OTLP/gRPC listener; HTTPURL the base URL
	// (http:// or https://) of the OTLP/HTTP one.
	GRPCAddr, HTTPURL string
	// CAFile is the PEM file of the CA that signed the receiver's
	// certificate (for 127.0.0.1 and localhost); "" without TLS.
	CAFile string

	mu      sync.Mutex
	spans   []Span
	logs    []Log
	refuse  bool
	hold    chan struct{} // non-nil: requests wait until it is closed
	arrived chan struct{} // one token per request that reached the receiver
}

// Span is one received span with the attributes of its resource.
type Span struct {
	*tracepb.Span
	Resource map[string]string
}

// Log is one received log record with the attributes of its resource.
type Log struct {
	*logspb.LogRecord
	Resource map[string]string
}

// Options configure Start.
type Options struct {
	TLS bool // serve both listeners over TLS with a certificate of a fresh CA (CAFile)
}

// Start runs a receiver until the test ends.
func Start(t testing.TB, o Options) *Receiver {
	t.Helper()
	r := &Receiver{arrived: make(chan struct{}, 1<<16)}
	var tlsConf *tls.Config
	if o.TLS {
		tlsConf, r.CAFile = newTLS(t)
	}
	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var gopts []grpc.ServerOption
	if tlsConf != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tlsConf)))
	}
	gs := grpc.NewServer(gopts...)
	coltracepb.RegisterTraceServiceServer(gs, traceService{r: r})
	collogspb.RegisterLogsServiceServer(gs, logsService{r: r})
	go func() { _ = gs.Serve(glis) }()
	r.GRPCAddr = glis.Addr().String()

	hlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		in := &coltracepb.ExportTraceServiceRequest{}
		if !r.readHTTP(w, req, in) {
			return
		}
		r.addSpans(in)
		writeProto(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, req *http.Request) {
		in := &collogspb.ExportLogsServiceRequest{}
		if !r.readHTTP(w, req, in) {
			return
		}
		r.addLogs(in)
		writeProto(w, &collogspb.ExportLogsServiceResponse{})
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	scheme := "http"
	if tlsConf != nil {
		hs.TLSConfig = tlsConf
		scheme = "https"
		go func() { _ = hs.ServeTLS(hlis, "", "") }()
	} else {
		go func() { _ = hs.Serve(hlis) }()
	}
	r.HTTPURL = scheme + "://" + hlis.Addr().String()
	t.Cleanup(func() {
		r.Release()
		gs.Stop()
		_ = hs.Close()
	})
	return r
}

// Refuse makes every later request fail (gRPC PERMISSION_DENIED, HTTP 403,
// which OTLP exporters do not retry) while on is true.
func (r *Receiver) Refuse(on bool) {
	r.mu.Lock()
	r.refuse = on
	r.mu.Unlock()
}

// Hold makes later requests wait until Release.
func (r *Receiver) Hold() {
	r.mu.Lock()
	if r.hold == nil {
		r.hold = make(chan struct{})
	}
	r.mu.Unlock()
}

// Release lets held requests (and later ones) through.
func (r *Receiver) Release() {
	r.mu.Lock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
	r.mu.Unlock()
}

// Arrived returns a channel that receives one value per request that
// reached the receiver (before it is held or refused).
func (r *Receiver) Arrived() <-chan struct{} { return r.arrived }

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Logs returns the log records received so far.
func (r *Receiver) Logs() []Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Log(nil), r.logs...)
}

// admit runs the hold and refuse rules for one request: it returns false
// when the request is refused.
func (r *Receiver) admit(ctx context.Context) bool {
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.refuse
}

func (r *Receiver) readHTTP(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	if !r.admit(req.Context()) {
		http.Error(w, "refused", http.StatusForbidden)
		return false
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content-type "+ct, http.StatusUnsupportedMediaType)
		return false
	}
	b, err := io.ReadAll(req.Body)
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func (r *Receiver) addSpans(in *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range in.GetResourceSpans() {
		res := Attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Span: s, Resource: res})
			}
		}
	}
}

func (r *Receiver) addLogs(in *collogspb.ExportLogsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range in.GetResourceLogs() {
		res := Attributes(rl.GetResource().GetAttributes())
		for _, sl := range rl.GetScopeLogs() {
			for _, l := range sl.GetLogRecords() {
				r.logs = append(r.logs, Log{LogRecord: l, Resource: res})
			}
		}
	}
}

// Attributes flattens OTLP attributes to strings: string values as they
// are, others in their protobuf text form.
func Attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
			out[kv.GetKey()] = s.StringValue
			continue
		}
		out[kv.GetKey()] = v.String()
	}
	return out
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, in *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	if !s.r.admit(ctx) {
		return nil, status.Error(codes.PermissionDenied, "refused")
	}
	s.r.addSpans(in)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type logsService struct {
	collogspb.UnimplementedLogsServiceServer
	r *Receiver
}

func (s logsService) Export(ctx context.Context, in *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	if !s.r.admit(ctx) {
		return nil, status.Error(codes.PermissionDenied, "refused")
	}
	s.r.addLogs(in)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// newTLS makes a CA and a server certificate it signed for 127.0.0.1 and
// localhost, and writes the CA's certificate to a PEM file in a test
// directory.
func newTLS(t testing.TB) (*tls.Config, string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "otlptest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "otlp-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}, caFile
}
