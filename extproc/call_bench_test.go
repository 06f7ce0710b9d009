package extproc

import (
	"context"
	"io"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// BenchmarkCallAnswer: the processor's work for an allowed tools/call
// answered with a small JSON result on the route of everything else
// (response headers, then the answer, buffered: its content-length is
// small), with a JSON decision log to io.Discard, its messages as the
// served codec decodes them (Codec: Check's metadata kept unread, read
// once), without gRPC: what a call's side stream adds to its Check.
func BenchmarkCallAnswer(b *testing.B) {
	srv := New(Config{Log: zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.InfoLevel))})
	meta, err := structpb.NewStruct(map[string]any{"decision_id": "d-1", "decision": "allow", "method": "tools/call", "server": "payments",
		"principal": "alice", "issuer": issuer, "rpc_id": "7", "request_digest": "sha256:00", "policy_version": "v"})
	if err != nil {
		b.Fatal(err)
	}
	mc := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{AuthzNamespace: meta}}
	hdrs := &extprocv3.ProcessingRequest{MetadataContext: mc, Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")}, {Key: "content-type", RawValue: []byte("application/json")}, {Key: "content-length", RawValue: []byte("97")}}}}}}
	body := &extprocv3.ProcessingRequest{MetadataContext: mc, Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
		Body: []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"refunded 1000 EUR on o-1"}]}}`), EndOfStream: true}}}
	// As the served codec hands them over: the metadata kept unread.
	for _, m := range []**extprocv3.ProcessingRequest{&hdrs, &body} {
		raw, err := proto.Marshal(*m)
		if err != nil {
			b.Fatal(err)
		}
		var r extprocv3.ProcessingRequest
		if err := (Codec{Next: encoding.GetCodecV2(protoenc.Name)}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &r); err != nil || r.GetMetadataContext() != nil {
			b.Fatalf("codec: %v", err)
		}
		*m = &r
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		st := &stream{s: srv, ctx: ctx}
		for _, m := range []*extprocv3.ProcessingRequest{hdrs, body} {
			if _, err := st.handle(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
}
