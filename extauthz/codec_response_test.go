package extauthz

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
)

// fullCheckResponse sets every field marshalCheckResponse encodes, with
// strings s, a number n and a flag f.
func fullCheckResponse(s string, n float64, f bool, code int32) []*authv3.CheckResponse {
	hvo := func(k string) *corev3.HeaderValueOption {
		return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: s, RawValue: []byte(s)},
			Append: wrapperspb.Bool(f), AppendAction: corev3.HeaderValueOption_HeaderAppendAction(code & 3), KeepEmptyValue: f}
	}
	md := &structpb.Struct{Fields: map[string]*structpb.Value{
		"s": structpb.NewStringValue(s), "n": structpb.NewNumberValue(n), "b": structpb.NewBoolValue(f),
		"null": structpb.NewNullValue(), s: structpb.NewStringValue(""),
		"list":   structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue(s), structpb.NewNumberValue(-n)}}),
		"struct": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"in": structpb.NewBoolValue(!f)}}),
	}}
	st := &rpcstatus.Status{Code: code, Message: s}
	denied := &authv3.DeniedHttpResponse{Status: &typev3.HttpStatus{Code: typev3.StatusCode(code)}, Headers: []*corev3.HeaderValueOption{hvo("a"), hvo("")}, Body: s}
	return []*authv3.CheckResponse{
		{Status: st, DynamicMetadata: md, HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: denied}},
		{Status: st, DynamicMetadata: md, HttpResponse: &authv3.CheckResponse_ErrorResponse{ErrorResponse: denied}},
		{Status: st, HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
			Headers: []*corev3.HeaderValueOption{hvo("x")}, DynamicMetadata: md, HeadersToRemove: []string{s, ""},
			ResponseHeadersToAdd: []*corev3.HeaderValueOption{hvo("y")},
			QueryParametersToSet: []*corev3.QueryParameter{{Key: s, Value: s}, {}}, QueryParametersToRemove: []string{"", s},
		}}},
		{HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{}}},
		{Status: &rpcstatus.Status{}, HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{}}},
		{},
	}
}

// assertMarshalsLikeProto: the hand encoding decodes (proto.Unmarshal) to r.
func assertMarshalsLikeProto(t *testing.T, r *authv3.CheckResponse) {
	t.Helper()
	b, ok := marshalCheckResponse(r)
	if !ok {
		t.Fatalf("not encodable by hand: %v", r)
	}
	got := &authv3.CheckResponse{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("hand encoding does not decode: %v", err)
	}
	if !proto.Equal(got, r) {
		t.Fatalf("hand encoding decodes differently:\nwant %v\ngot  %v", prototext.Format(r), prototext.Format(got))
	}
	if want := proto.Size(r); len(b) != want {
		t.Fatalf("hand encoding is %d bytes, proto.Size %d", len(b), want)
	}
}

func TestMarshalCheckResponseMatchesProto(t *testing.T) {
	long := string(make([]byte, 300)) // lengths past one varint byte
	for i, r := range append(fullCheckResponse("Zürich 🧾", 12.5, true, 403), fullCheckResponse(long, math.Inf(-1), false, -7)...) {
		t.Run(strconv.Itoa(i), func(t *testing.T) { assertMarshalsLikeProto(t, r) })
	}
	// The responses Check gives.
	srv := staticRig(t, nil)
	for _, c := range []*capture.Request{
		postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`),
		postReq(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`),
		postReq(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`),
		{Method: "POST", Path: "/mcp", Body: []byte(`{}`)}, // no token
	} {
		resp, _ := srv.Check(context.Background(), c.CheckRequest(true))
		assertMarshalsLikeProto(t, resp)
	}
}

// TestMarshalCheckResponseFallsBack: status details are left to
// proto.Marshal, and CheckCodec still encodes them.
func TestMarshalCheckResponseFallsBack(t *testing.T) {
	detail, _ := anypb.New(&rpcstatus.Status{Message: "inner"})
	r := &authv3.CheckResponse{Status: &rpcstatus.Status{Code: 7, Details: []*anypb.Any{detail}}}
	if _, ok := marshalCheckResponse(r); ok {
		t.Fatal("status details encoded by hand")
	}
	out, err := CheckCodec{}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := &authv3.CheckResponse{}
	if err := proto.Unmarshal(out.Materialize(), got); err != nil || !proto.Equal(got, r) {
		t.Fatalf("fallback: %v, %v", got, err)
	}
}

// TestMarshalCheckResponseCoversSchema fails when a message the hand
// encoder writes gains a field (a go-control-plane upgrade): add it to
// marshalCheckResponse, then here.
func TestMarshalCheckResponseCoversSchema(t *testing.T) {
	for _, tt := range []struct {
		give proto.Message
		want []protoreflect.FieldNumber
	}{
		{&authv3.CheckResponse{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5}},
		{&rpcstatus.Status{}, []protoreflect.FieldNumber{1, 2, 3}}, // 3 (details): proto.Marshal
		{&authv3.DeniedHttpResponse{}, []protoreflect.FieldNumber{1, 2, 3}},
		{&typev3.HttpStatus{}, []protoreflect.FieldNumber{1}},
		{&authv3.OkHttpResponse{}, []protoreflect.FieldNumber{2, 3, 5, 6, 7, 8}},
		{&corev3.HeaderValueOption{}, []protoreflect.FieldNumber{1, 2, 3, 4}},
		{&corev3.HeaderValue{}, []protoreflect.FieldNumber{1, 2, 3}},
		{&wrapperspb.BoolValue{}, []protoreflect.FieldNumber{1}},
		{&corev3.QueryParameter{}, []protoreflect.FieldNumber{1, 2}},
		{&structpb.Struct{}, []protoreflect.FieldNumber{1}},
		{&structpb.Value{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6}},
		{&structpb.ListValue{}, []protoreflect.FieldNumber{1}},
	} {
		fields := tt.give.ProtoReflect().Descriptor().Fields()
		var got []protoreflect.FieldNumber
		for i := 0; i < fields.Len(); i++ {
			got = append(got, fields.Get(i).Number())
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s has fields %v, the hand encoder writes %v", tt.give.ProtoReflect().Descriptor().FullName(), got, tt.want)
		}
	}
}

// FuzzMarshalCheckResponse: for any strings, numbers and flags, the hand
// encoding decodes to the response.
func FuzzMarshalCheckResponse(f *testing.F) {
	f.Add("x", 1.5, true, int32(403))
	f.Add("", -0.0, false, int32(-1))
	f.Fuzz(func(t *testing.T, s string, n float64, b bool, code int32) {
		if !utf8.ValidString(s) || math.IsNaN(n) { // proto.Unmarshal refuses the first; NaN != NaN
			t.Skip()
		}
		for _, r := range fullCheckResponse(s, n, b, code) {
			assertMarshalsLikeProto(t, r)
		}
	})
}

// TestOkResponseHeaderOrder: the headers of an allowed request come in name
// order, every one the service can set present once.
func TestOkResponseHeaderOrder(t *testing.T) {
	d := &decision.Decision{ID: "0123", Reason: decision.ReasonAllowed, Method: "tools/call", Tool: "t",
		ArgsDigest: "sha256:a", RequestDigest: "sha256:r", Retry: true, Principal: &bearer.Principal{Subject: "s"}}
	ok := (&Responder{}).fillOkResponse(new(headerBlock), d, decision.Headers{"x_mcp_tool": {"x"}, HeaderTool: {"y"}}, true, "")
	var names []string
	for _, h := range ok.GetHeaders() {
		names = append(names, h.GetHeader().GetKey())
	}
	want := []string{HeaderArgsDigest, HeaderDecisionID, HeaderDryRunDecision, HeaderDryRunReason, HeaderMethod,
		HeaderPrincipal, HeaderRequestDigest, HeaderRetry, HeaderTool}
	if !slices.Equal(names, want) || !slices.IsSorted(names) {
		t.Errorf("headers %q, want %q in order", names, want)
	}
	if got := ok.GetHeadersToRemove(); !slices.Equal(got, []string{"x_mcp_tool"}) {
		t.Errorf("headers to remove %q, want [x_mcp_tool]", got)
	}
}

// TestOkResponseSealedCursor: a list whose sealed cursor Check opened is
// marked x-mcp-cursor: sealed (the route that sends its body to the
// processor matches on it), in name order, and a client's own copy (any
// spelling) is removed; a list without one is not marked, and the client's
// copy is removed all the same. Its metadata carries the caller's claims.
func TestOkResponseSealedCursor(t *testing.T) {
	d := &decision.Decision{ID: "0123", Reason: decision.ReasonAllowed, Method: "tools/list", RequestDigest: "sha256:r",
		Principal: &bearer.Principal{Subject: "s", Claims: map[string]any{"sub": "s", "groups": []any{"ops"}}}, SealedCursor: true}
	client := decision.Headers{HeaderCursor: {"sealed"}, "X-MCP-Cursor": {"sealed"}}
	for _, sealed := range []bool{true, false} {
		d.SealedCursor = sealed
		resp := (&Responder{}).Response(d, client)
		ok := resp.GetOkResponse()
		var names []string
		for _, h := range ok.GetHeaders() {
			names = append(names, h.GetHeader().GetKey()+"="+h.GetHeader().GetValue())
		}
		want := []string{HeaderDecisionID + "=0123", HeaderMethod + "=tools/list", HeaderPrincipal + "=s", HeaderRequestDigest + "=sha256:r"}
		if sealed {
			want = append([]string{HeaderCursor + "=sealed"}, want...)
		}
		if !slices.Equal(names, want) {
			t.Errorf("sealed %v: headers %q, want %q", sealed, names, want)
		}
		// A spelling of a header Check sets is that header in Envoy's
		// (lower-case) map: set over, never removed (a removal would
		// take Check's own value with it).
		if got := ok.GetHeadersToRemove(); sealed && len(got) != 0 || !sealed && !slices.Equal(got, []string{"X-MCP-Cursor", HeaderCursor}) {
			t.Errorf("sealed %v: headers to remove %q", sealed, got)
		}
		if c := resp.GetDynamicMetadata().GetFields()[decision.MetaClaims].GetStringValue(); c != `{"groups":["ops"],"sub":"s"}` {
			t.Errorf("claims member %q", c)
		}
	}
}

// TestAppendJSONString: the denial body's strings are byte for byte what
// encoding/json writes.
func TestAppendJSONString(t *testing.T) {
	for _, give := range []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "<a>&", "é🚀\u2028\u2029",
		"bad\xffutf8\xc3", "\xed\xa0\x80", "rule id with / and ;"} {
		want, _ := json.Marshal(give)
		if got := appendJSONString(nil, give); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", give, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("<\u2028\xff\x01")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
