package extauthz

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fullCheckRequest is a CheckRequest with every field Envoy sets, those
// Check reads and those it does not.
func fullCheckRequest() *authv3.CheckRequest {
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"Zürich"}}}`)
	req := c.CheckRequest(true)
	a := req.Attributes
	a.ContextExtensions = map[string]string{ContextExtensionServer: "payments", "": "empty key", "k": ""}
	a.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"f": {Fields: map[string]*structpb.Value{"x": structpb.NewStringValue("y")}}}}
	a.Source.Principal = "spiffe://cluster.local/ns/a/sa/b"
	a.Destination = &authv3.AttributeContext_Peer{Principal: "spiffe://cluster.local/ns/payments/sa/payments-mcp", Service: "payments-mcp",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "10.0.0.7"}}}}
	a.TlsSession = &authv3.AttributeContext_TLSSession{Sni: "mcp.example.com"}
	a.Request.Time = timestamppb.New(time.Unix(1700000000, 5))
	h := a.Request.Http
	h.Query, h.Fragment, h.Size = "a=b", "frag", 4242
	h.HeaderMap = &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: "authorization", Value: "Bearer x"},
		{Key: "x-raw", RawValue: []byte("raw value")},
		{Key: "x-dup", Value: "1"}, {Key: "x-dup", Value: "2"},
	}}
	return req
}

// readFields keeps of a CheckRequest only what CheckCodec decodes: no
// unknown fields either.
func readFields(req *authv3.CheckRequest) *authv3.CheckRequest {
	req = proto.Clone(req).(*authv3.CheckRequest)
	dropUnknown(req.ProtoReflect())
	out := &authv3.CheckRequest{}
	if a := req.GetAttributes(); a != nil {
		out.Attributes = &authv3.AttributeContext{ContextExtensions: a.ContextExtensions}
		if d := a.GetDestination(); d != nil {
			out.Attributes.Destination = &authv3.AttributeContext_Peer{Principal: d.Principal}
		}
		if r := a.GetRequest(); r != nil {
			out.Attributes.Request = &authv3.AttributeContext_Request{Http: r.Http}
		}
	}
	return out
}

// dropUnknown removes the unknown fields of m and its messages.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				dropUnknown(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				dropUnknown(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			dropUnknown(v.Message())
		}
		return true
	})
}

func TestDecodeCheckRequestMatchesProto(t *testing.T) {
	merged := func() []byte { // two occurrences of http: protobuf merges them
		a, _ := proto.Marshal(postReq(`{"a":1}`).CheckRequest(true))
		b, _ := proto.Marshal(&authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
			Http: &authv3.AttributeContext_HttpRequest{Method: "DELETE", RawBody: []byte("second"), Headers: map[string]string{"x-b": "2"}}}}})
		return append(a, b...)
	}
	tests := []struct {
		name string
		give []byte
	}{
		{"full", mustMarshal(t, fullCheckRequest())},
		{"body field", mustMarshal(t, postReq(`{"jsonrpc":"2.0"}`).CheckRequest(false))},
		{"empty", nil},
		{"no http", mustMarshal(t, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{}})},
		{"merged messages", merged()},
		{"unknown fields", append(mustMarshal(t, fullCheckRequest()), 0xf8, 0xff, 0xff, 0x0f, 0x01)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := &authv3.CheckRequest{}
			if err := proto.Unmarshal(tt.give, want); err != nil {
				t.Fatal(err)
			}
			got := &authv3.CheckRequest{}
			decodeCheckRequest(tt.give, got)
			if w := readFields(want); !proto.Equal(w, got) {
				t.Errorf("decode differs from proto.Unmarshal:\nwant %v\ngot  %v", prototext.Format(w), prototext.Format(got))
			}
			if r := RequestFromCheck(got); tt.name == "full" && (r.Method != "POST" || len(r.Body) == 0 || r.Headers["x-dup"][1] != "2" ||
				r.DestinationPrincipal != "spiffe://cluster.local/ns/payments/sa/payments-mcp") {
				t.Errorf("Request = %+v", r)
			}
		})
	}
}

// TestDecodeCheckRequestOwnsItsBytes: the decoded request survives the
// reuse of the buffer it came from (gRPC frees it after Unmarshal).
func TestDecodeCheckRequestOwnsItsBytes(t *testing.T) {
	msg := mustMarshal(t, fullCheckRequest())
	want := &authv3.CheckRequest{}
	decodeCheckRequest(msg, want)
	want = proto.Clone(want).(*authv3.CheckRequest)
	got := &authv3.CheckRequest{}
	decodeCheckRequest(msg, got)
	for i := range msg {
		msg[i] = 'X'
	}
	if !proto.Equal(want, got) {
		t.Errorf("decoded request changed with its buffer:\nwant %v\ngot  %v", prototext.Format(want), prototext.Format(got))
	}
}

func TestDecodeCheckRequestMalformed(t *testing.T) {
	full := mustMarshal(t, fullCheckRequest())
	for _, tt := range []struct {
		name string
		give []byte
	}{
		{"truncated", full[:len(full)-3]},
		{"bad tag", []byte{0x00}},
		{"length past end", []byte{0x0a, 0x7f, 0x01}},
		{"lone end group", append(append([]byte{}, full...), 0x0c)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := &authv3.CheckRequest{}
			decodeCheckRequest(tt.give, got)
			if !proto.Equal(got, &authv3.CheckRequest{}) {
				t.Errorf("malformed wire decoded as %v, want an empty CheckRequest", got)
			}
		})
	}
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawCodec sends pre-encoded bytes as the request, as a client that does
// not validate UTF-8 (Envoy's C++ protobuf does not) would.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// serveRaw serves srv on 127.0.0.1:0 with opts and returns a function that
// sends raw CheckRequest bytes.
func serveRaw(t *testing.T, srv authv3.AuthorizationServer, opts ...grpc.ServerOption) func([]byte) (*authv3.CheckResponse, error) {
	t.Helper()
	conn := dialGRPC(t, srv, opts...)
	return func(msg []byte) (*authv3.CheckResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp := &authv3.CheckResponse{}
		err := conn.Invoke(ctx, "/envoy.service.auth.v3.Authorization/Check", msg, resp, grpc.ForceCodecV2(rawCodec{}))
		return resp, err
	}
}

// withBytes marshals req, in which placeholder occurs once, and replaces
// placeholder with repl (same length) in the wire bytes.
func withBytes(t *testing.T, req *authv3.CheckRequest, placeholder, repl string) []byte {
	t.Helper()
	if len(placeholder) != len(repl) {
		t.Fatal("placeholder and replacement differ in length")
	}
	msg := mustMarshal(t, req)
	if bytes.Count(msg, []byte(placeholder)) != 1 {
		t.Fatalf("placeholder %q not found once", placeholder)
	}
	return bytes.Replace(msg, []byte(placeholder), []byte(repl), 1)
}

// TestCheckDecidesInvalidUTF8: a body in the string field body, or a header
// value, that is not UTF-8 reaches Check over a real gRPC connection and is
// denied; with grpc-go's default codec the same bytes fail the RPC before
// Check runs, which failure_mode_allow would turn into an allow.
func TestCheckDecidesInvalidUTF8(t *testing.T) {
	const ph = "PLACEHOLDER-0123"
	body := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"` + ph + `"}}}`)
	header := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}`)
	header.Headers["mcp-session-id"] = ph
	tests := []struct {
		name       string
		give       []byte
		wantReason decision.Reason
	}{
		{"body field", withBytes(t, body.CheckRequest(false), ph, "PLACEHOLDER-\xff\xfe\xc0\x80"), decision.ReasonInvalidUTF8},
		{"raw_body", withBytes(t, body.CheckRequest(true), ph, "PLACEHOLDER-\xff\xfe\xc0\x80"), decision.ReasonInvalidUTF8},
		// Decided as in process: the header is not one the decision reads.
		{"header value", withBytes(t, header.CheckRequest(true), ph, "PLACEHOLDER-\xff\xfe\xc0\x80"), ""},
		{"malformed wire", []byte{0x0a, 0x7f, 0x01}, decision.ReasonMethodNotAllowed},
	}
	srv := staticRig(t, nil)
	send := serveRaw(t, srv, grpc.ForceServerCodecV2(CheckCodec{}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := send(tt.give)
			if err != nil {
				t.Fatalf("Check returned an RPC error (fails open under failure_mode_allow): %v", err)
			}
			want := string(tt.wantReason)
			if want == "" {
				req := &authv3.CheckRequest{}
				decodeCheckRequest(tt.give, req)
				inProcess, _ := srv.Check(t.Context(), req)
				want = inProcess.GetDynamicMetadata().GetFields()["reason"].GetStringValue()
			}
			if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != want || got == "" {
				t.Fatalf("reason %q, want %q", got, want)
			}
			if want != string(decision.ReasonAllowed) {
				parseDenial(t, resp)
			}
		})
	}
	t.Run("default codec fails the RPC", func(t *testing.T) {
		send := serveRaw(t, staticRig(t, nil))
		if _, err := send(tests[0].give); err == nil {
			t.Fatal("grpc-go's default codec accepted invalid UTF-8: the codec is no longer needed, or the test no longer sends it")
		}
	})
}

// FuzzDecodeCheckRequest: whatever the bytes, no panic; where proto.Unmarshal
// accepts them, the decoded fields equal its result.
func FuzzDecodeCheckRequest(f *testing.F) {
	f.Add(mustMarshal(f, fullCheckRequest()))
	f.Add(mustMarshal(f, postReq(`{"jsonrpc":"2.0"}`).CheckRequest(false)))
	f.Add([]byte{0x0a, 0x02, 0x22, 0x00})
	f.Fuzz(func(t *testing.T, msg []byte) {
		got := &authv3.CheckRequest{}
		decodeCheckRequest(msg, got)
		want := &authv3.CheckRequest{}
		if err := proto.Unmarshal(msg, want); err != nil {
			return
		}
		if w := readFields(want); !proto.Equal(w, got) {
			t.Fatalf("decode differs from proto.Unmarshal:\nwant %v\ngot  %v", prototext.Format(w), prototext.Format(got))
		}
	})
}

// BenchmarkDecodeCheckRequest compares the codec's decoding with
// proto.Unmarshal on the CheckRequest of a small tools/call and of one with
// 64 KiB of arguments.
func BenchmarkDecodeCheckRequest(b *testing.B) {
	for _, size := range []struct {
		name string
		args string
	}{{"small", `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`}, {"64KiB", largeArgs(64 << 10)}} {
		_, req := benchRequest(b, size.args, false)
		msg := mustMarshal(b, req)
		b.Run(size.name+"/codec", func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			measureCPU(b, func() {
				for b.Loop() {
					decodeCheckRequest(msg, &authv3.CheckRequest{})
				}
			})
		})
		b.Run(size.name+"/proto", func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			measureCPU(b, func() {
				for b.Loop() {
					_ = proto.Unmarshal(msg, &authv3.CheckRequest{})
				}
			})
		})
	}
}

// BenchmarkMarshalCheckResponse is the response encoding of grpc-go's proto
// codec and of CheckCodec for an allowed small tools/call and a denial.
func BenchmarkMarshalCheckResponse(b *testing.B) {
	srv, req := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`, true)
	_, denyReq := benchRequest(b, `{"orderId":"ord-1","amountMinor":1250,"currency":"CHF"}`, true)
	codecs := []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
		}
	}{{"proto", protoCodec}, {"check", CheckCodec{}}}
	for _, tt := range []struct {
		name string
		req  *authv3.CheckRequest
	}{{"allow", req}, {"deny", denyReq}} {
		resp, _ := srv.Check(context.Background(), tt.req)
		for _, c := range codecs {
			b.Run(tt.name+"/codec="+c.name, func(b *testing.B) {
				b.ReportAllocs()
				measureCPU(b, func() {
					for b.Loop() {
						out, err := c.codec.Marshal(resp)
						if err != nil {
							b.Fatal(err)
						}
						out.Free()
					}
				})
			})
		}
	}
}

// BenchmarkCheckGRPC is a Check over a real loopback gRPC connection (client
// and server in this process) with grpc-go's default codec and with
// CheckCodec, for the small allowed tools/call and the 64 KiB one, the
// verified-token cache warm.
func BenchmarkCheckGRPC(b *testing.B) {
	for _, size := range []struct {
		name string
		args string
	}{{"small", `{"orderId":"ord-1","amountMinor":1250,"currency":"EUR"}`}, {"64KiB", largeArgs(64 << 10)}} {
		for _, codec := range []string{"proto", "check"} {
			b.Run(size.name+"/codec="+codec, func(b *testing.B) {
				srv, req := benchRequest(b, size.args, true)
				lis := testkit.Listen(b)
				var opts []grpc.ServerOption
				if codec == "check" {
					opts = append(opts, grpc.ForceServerCodecV2(CheckCodec{}))
				}
				gs := grpc.NewServer(opts...)
				authv3.RegisterAuthorizationServer(gs, srv)
				go func() { _ = gs.Serve(lis) }()
				defer gs.Stop()
				conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				client := authv3.NewAuthorizationClient(conn)
				resp, err := client.Check(context.Background(), req)
				if err != nil || resp.GetStatus().GetCode() != 0 {
					b.Fatalf("%v, %v", resp, err)
				}
				b.ReportAllocs()
				measureCPU(b, func() {
					for b.Loop() {
						_, _ = client.Check(context.Background(), req)
					}
				})
			})
		}
	}
}

// TestRequestFromCheckFoldsNames: names of the headers map that lower-case
// to one name give that name every value, whichever the map yields first;
// header_map keeps every occurrence in order.
func TestRequestFromCheckFoldsNames(t *testing.T) {
	tests := []struct {
		give map[string]string
		want map[string][]string
	}{
		{map[string]string{"X-A": "1", "x-a": "2", "b": "3"}, map[string][]string{"x-a": {"1", "2"}, "b": {"3"}}},
		{map[string]string{"x-a": "1", "X-a": "2", "X-A": "3"}, map[string][]string{"x-a": {"1", "2", "3"}}},
		{map[string]string{"\u212a": "1", "k": "2"}, map[string][]string{"k": {"1", "2"}}}, // KELVIN SIGN lowers to k
		{map[string]string{"a": "1", "b": "2"}, map[string][]string{"a": {"1"}, "b": {"2"}}},
	}
	for _, tt := range tests {
		for range 20 { // map order varies
			r := RequestFromCheck(&authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
				Http: &authv3.AttributeContext_HttpRequest{Headers: tt.give}}}})
			got := map[string][]string{}
			for k, v := range r.Headers {
				got[k] = slices.Sorted(slices.Values(v))
			}
			if !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("headers %v: got %v, want %v", tt.give, got, tt.want)
			}
		}
	}
	hm := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: "X-A", Value: "1"}, {Key: "x-a", Value: "2"}, {Key: "x-a", Value: "3"}}}
	r := RequestFromCheck(&authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
		Http: &authv3.AttributeContext_HttpRequest{HeaderMap: hm}}}})
	if got := r.Headers["x-a"]; !slices.Equal(got, []string{"1", "2", "3"}) || len(r.Headers) != 1 {
		t.Errorf("header_map: %v", r.Headers)
	}
}
