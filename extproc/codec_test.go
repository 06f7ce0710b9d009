package extproc

import (
	"maps"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestCodecField: fieldMetadataContext is metadata_context's number in the
// generated descriptor.
func TestCodecField(t *testing.T) {
	fd := (&extprocv3.ProcessingRequest{}).ProtoReflect().Descriptor().Fields().ByName("metadata_context")
	if fd == nil || fd.Number() != fieldMetadataContext {
		t.Fatalf("metadata_context is %v, want number %d", fd, fieldMetadataContext)
	}
}

// codecCases are ProcessingRequests as Envoy sends them: with and without
// metadata, with metadata in two pieces (merged), and with other fields.
func codecCases(t testing.TB) [][]byte {
	t.Helper()
	meta := func(kv ...string) *corev3.Metadata {
		f := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			f[kv[i]] = kv[i+1]
		}
		s, err := structpb.NewStruct(f)
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{AuthzNamespace: s}}
	}
	body := &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), EndOfStream: true}}
	var out [][]byte
	for _, m := range []*extprocv3.ProcessingRequest{
		{Request: body},
		{Request: body, MetadataContext: meta("decision_id", "d-1", "method", "tools/call")},
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: headerMap(map[string]string{":status": "200"})}},
			MetadataContext: meta("decision_id", "d-2"), ObservabilityMode: true, ProtocolConfig: &extprocv3.ProtocolConfiguration{SendBodyWithoutWaitingForHeaderResponse: true}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	// Every kind of Value, and another namespace beside Check's.
	kinds, err := structpb.NewStruct(map[string]any{"decision_id": "d-4", "retry": true, "dry_run": false, "n": 1.5, "z": nil,
		"l": []any{"x"}, "s": map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := structpb.NewStruct(map[string]any{"decision_id": "elsewhere"})
	b, err := proto.Marshal(&extprocv3.ProcessingRequest{Request: body, MetadataContext: &corev3.Metadata{
		FilterMetadata: map[string]*structpb.Struct{AuthzNamespace: kinds, "mcp.receipt": other}}})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, b)
	// metadata_context twice: proto merges the two (the later member wins).
	one, _ := proto.Marshal(&extprocv3.ProcessingRequest{MetadataContext: meta("decision_id", "d-3", "method", "ping")})
	two, _ := proto.Marshal(&extprocv3.ProcessingRequest{Request: body, MetadataContext: meta("method", "tools/list", "server", "s")})
	return append(out, append(one, two...))
}

// decodeBoth decodes b with grpc-go's proto codec and with Codec.
func decodeBoth(b []byte) (want, got *extprocv3.ProcessingRequest, wantErr, gotErr error) {
	want, got = &extprocv3.ProcessingRequest{}, &extprocv3.ProcessingRequest{}
	wantErr = encoding.GetCodecV2(protoenc.Name).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, want)
	gotErr = Codec{Next: encoding.GetCodecV2(protoenc.Name)}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got)
	return
}

// members is authzMembers(req) as the processor reads it: the last value
// of each name; ok false: no metadata.
func members(req *extprocv3.ProcessingRequest) (map[string]string, bool) {
	ms, ok := authzMembers(req)
	if !ok {
		return nil, false
	}
	m := map[string]string{}
	for _, x := range ms {
		m[x.key] = x.value
	}
	return m, true
}

// sameRequest reports whether got, read as the processor reads it (Check's
// members through authzMembers, the rest as decoded), is want as grpc-go's
// codec decoded it.
func sameRequest(want, got *extprocv3.ProcessingRequest) bool {
	wm, wok := members(want)
	gm, gok := members(got)
	if !wok || !gok || !maps.Equal(wm, gm) {
		return false
	}
	return sameRest(want, got)
}

// sameRest reports whether want and got agree but for their metadata.
func sameRest(want, got *extprocv3.ProcessingRequest) bool {
	w, g := proto.Clone(want).(*extprocv3.ProcessingRequest), proto.Clone(got).(*extprocv3.ProcessingRequest)
	w.MetadataContext, g.MetadataContext = nil, nil
	_, wu, _ := splitField(w.ProtoReflect().GetUnknown(), fieldMetadataContext)
	rest, _, _ := splitField(g.ProtoReflect().GetUnknown(), fieldMetadataContext)
	g.ProtoReflect().SetUnknown(rest)
	return wu == nil && proto.Equal(w, g)
}

// TestCodec: every case decodes to what grpc-go's codec decodes, read as
// the processor reads it; a message with metadata keeps it unread (no
// Struct decoded) for authzMembers; other messages go to Next.
func TestCodec(t *testing.T) {
	for i, b := range codecCases(t) {
		want, got, werr, gerr := decodeBoth(b)
		if werr != nil || gerr != nil {
			t.Fatalf("case %d: %v, %v", i, werr, gerr)
		}
		if !sameRequest(want, got) {
			gm, _ := members(got)
			t.Errorf("case %d: got %v (members %v), want %v", i, got, gm, want)
		}
		if want.GetMetadataContext() != nil && got.GetMetadataContext() != nil {
			t.Errorf("case %d: the metadata was decoded by the codec", i)
		}
	}
	// Not a ProcessingRequest: Next's decoding.
	var h corev3.HeaderValue
	b, _ := proto.Marshal(&corev3.HeaderValue{Key: "k", RawValue: []byte("v")})
	if err := (Codec{Next: encoding.GetCodecV2(protoenc.Name)}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &h); err != nil || h.GetKey() != "k" {
		t.Errorf("HeaderValue: %v, %v", &h, err)
	}
	// Not wire format: Next's error.
	if _, _, werr, gerr := decodeBoth([]byte{0xff}); werr == nil || gerr == nil {
		t.Errorf("malformed: %v, %v", werr, gerr)
	}
}

// TestSplitField: the field's occurrences are cut out whole, in order,
// whatever their place; the rest is left byte for byte.
func TestSplitField(t *testing.T) {
	f := func(n protowire.Number, v string) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), []byte(v))
	}
	cat := func(bs ...[]byte) []byte {
		var o []byte
		for _, b := range bs {
			o = append(o, b...)
		}
		return o
	}
	tests := []struct {
		name             string
		give, rest, want []byte
		ok               bool
	}{
		{"empty", nil, nil, nil, true},
		{"none", cat(f(1, "a"), f(2, "b")), cat(f(1, "a"), f(2, "b")), nil, true},
		{"only", f(8, "m"), nil, f(8, "m"), true},
		{"middle", cat(f(1, "a"), f(8, "m"), f(2, "b")), cat(f(1, "a"), f(2, "b")), f(8, "m"), true},
		{"twice", cat(f(8, "m"), f(1, "a"), f(8, "n")), f(1, "a"), cat(f(8, "m"), f(8, "n")), true},
		{"truncated", f(8, "m")[:2], nil, nil, false},
		{"bad tag", []byte{0x80}, nil, nil, false},
		{"another wire type", protowire.AppendFixed64(protowire.AppendTag(nil, 8, protowire.Fixed64Type), 7), protowire.AppendFixed64(protowire.AppendTag(nil, 8, protowire.Fixed64Type), 7), nil, true},
	}
	for _, tt := range tests {
		rest, got, ok := splitField(tt.give, fieldMetadataContext)
		if ok != tt.ok || ok && (string(rest) != string(tt.rest) || string(got) != string(tt.want)) {
			t.Errorf("%s: rest %x field %x ok %v, want %x %x %v", tt.name, rest, got, ok, tt.rest, tt.want, tt.ok)
		}
	}
}

// FuzzCodec: for any bytes, Codec yields the ProcessingRequest grpc-go's
// codec yields, read as the processor reads it (proto is the oracle:
// Check's members from the decoded Struct), whatever Codec decoded before
// into the reused message; it fails when proto fails, but for a
// metadata_context proto refuses, which Codec keeps: the rest must then be
// what proto decodes without it.
func FuzzCodec(f *testing.F) {
	for _, b := range codecCases(f) {
		f.Add(b)
	}
	f.Add([]byte{0x42, 0x00})
	reused := &extprocv3.ProcessingRequest{}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, got, werr, gerr := decodeBoth(b)
		switch {
		case werr == nil && gerr != nil:
			t.Fatalf("proto decodes, Codec %v", gerr)
		case werr != nil && gerr == nil:
			rest, _, ok := splitField(b, fieldMetadataContext)
			var alone extprocv3.ProcessingRequest
			if !ok || proto.Unmarshal(rest, &alone) != nil {
				t.Fatalf("proto %v on the message without its metadata too, yet Codec decoded it", werr)
			}
			if !sameRest(&alone, got) {
				t.Fatalf("got %v, want %v", got, &alone)
			}
			_, _ = members(got) // any bytes: no panic
			return
		case werr != nil:
			return
		}
		if !sameRequest(want, got) {
			t.Fatalf("got %v, want %v", got, want)
		}
		proto.Reset(reused)
		if err := (Codec{Next: encoding.GetCodecV2(protoenc.Name)}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, reused); err != nil || !sameRequest(want, reused) {
			t.Fatalf("reused: %v, %v", reused, err)
		}
	})
}

// BenchmarkDecode: one side-stream message as Envoy sends it (a response
// body with Check's metadata of an allowed tools/call, 18 members),
// decoded by grpc-go's proto codec and by Codec; readMeta's one decode of
// the kept metadata per stream is not in the loop.
func BenchmarkDecode(b *testing.B) {
	f := map[string]any{}
	for _, k := range []string{"decision_id", "decision", "reason", "rule_id", "method", "server", "target", "args_digest", "request_digest",
		"policy_version", "principal", "issuer", "rpc_id", "protocol_version", "session", "seam_class", "detail", "recover_key"} {
		f[k] = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	}
	s, err := structpb.NewStruct(f)
	if err != nil {
		b.Fatal(err)
	}
	msg, err := proto.Marshal(&extprocv3.ProcessingRequest{MetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{AuthzNamespace: s}},
		Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"done"}]}}`), EndOfStream: true}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{{"proto", encoding.GetCodecV2(protoenc.Name)}, {"codec", Codec{Next: encoding.GetCodecV2(protoenc.Name)}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r extprocv3.ProcessingRequest
				if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(msg)}, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
