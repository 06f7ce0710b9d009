package extauthz

import (
	"math"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

// marshalCheckResponse encodes r in protobuf wire format by hand: every
// field of CheckResponse and of the messages it holds (rpc.Status without
// details, DeniedHttpResponse, OkHttpResponse, HeaderValueOption,
// QueryParameter, Struct), in field-number order, with proto3's rule that
// zero scalars are omitted. ok is false when r holds what it does not
// encode (status details, unknown fields); the caller then uses
// proto.Marshal. TestMarshalCheckResponseCoversSchema fails when a
// go-control-plane upgrade adds a field.
func marshalCheckResponse(r *authv3.CheckResponse) ([]byte, bool) {
	if !encodable(r) {
		return nil, false
	}
	b := make([]byte, 0, 512+len(r.GetDeniedResponse().GetBody())+len(r.GetErrorResponse().GetBody()))
	if s := r.Status; s != nil {
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendInt32(b, 1, s.Code)
			return appendString(b, 2, s.Message)
		})
	}
	switch hr := r.HttpResponse.(type) {
	case *authv3.CheckResponse_DeniedResponse:
		b = appendDenied(b, 2, hr.DeniedResponse)
	case *authv3.CheckResponse_OkResponse:
		b = appendMessage(b, 3, func(b []byte) []byte { return appendOk(b, hr.OkResponse) })
	}
	if r.DynamicMetadata != nil {
		b = appendMessage(b, 4, func(b []byte) []byte { return appendStruct(b, r.DynamicMetadata) })
	}
	if hr, ok := r.HttpResponse.(*authv3.CheckResponse_ErrorResponse); ok {
		b = appendDenied(b, 5, hr.ErrorResponse)
	}
	return b, true
}

// encodable reports whether r holds only what marshalCheckResponse encodes.
func encodable(r *authv3.CheckResponse) bool {
	if r == nil || len(r.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	if s := r.Status; s != nil && (len(s.Details) > 0 || len(s.ProtoReflect().GetUnknown()) > 0) {
		return false
	}
	return true
}

func appendDenied(b []byte, num protowire.Number, d *authv3.DeniedHttpResponse) []byte {
	return appendMessage(b, num, func(b []byte) []byte {
		if d == nil {
			return b
		}
		if d.Status != nil {
			b = appendMessage(b, 1, func(b []byte) []byte { return appendInt32(b, 1, int32(d.Status.Code)) })
		}
		for _, h := range d.Headers {
			b = appendHeaderOption(b, 2, h)
		}
		return appendString(b, 3, d.Body)
	})
}

func appendOk(b []byte, ok *authv3.OkHttpResponse) []byte {
	if ok == nil {
		return b
	}
	for _, h := range ok.Headers {
		b = appendHeaderOption(b, 2, h)
	}
	if ok.DynamicMetadata != nil { //nolint:staticcheck // deprecated, still a field of the message
		b = appendMessage(b, 3, func(b []byte) []byte { return appendStruct(b, ok.DynamicMetadata) }) //nolint:staticcheck
	}
	for _, s := range ok.HeadersToRemove {
		b = appendStringAlways(b, 5, s)
	}
	for _, h := range ok.ResponseHeadersToAdd {
		b = appendHeaderOption(b, 6, h)
	}
	for _, q := range ok.QueryParametersToSet {
		b = appendMessage(b, 7, func(b []byte) []byte {
			if q == nil {
				return b
			}
			b = appendString(b, 1, q.Key)
			return appendString(b, 2, q.Value)
		})
	}
	for _, s := range ok.QueryParametersToRemove {
		b = appendStringAlways(b, 8, s)
	}
	return b
}

func appendHeaderOption(b []byte, num protowire.Number, o *corev3.HeaderValueOption) []byte {
	return appendMessage(b, num, func(b []byte) []byte {
		if o == nil {
			return b
		}
		if h := o.Header; h != nil {
			b = appendMessage(b, 1, func(b []byte) []byte {
				b = appendString(b, 1, h.Key)
				b = appendString(b, 2, h.Value)
				if len(h.RawValue) > 0 {
					b = protowire.AppendTag(b, 3, protowire.BytesType)
					b = protowire.AppendBytes(b, h.RawValue)
				}
				return b
			})
		}
		if o.Append != nil { //nolint:staticcheck // deprecated, still a field of the message
			b = appendMessage(b, 2, func(b []byte) []byte { return appendBool(b, 1, o.Append.Value) }) //nolint:staticcheck
		}
		b = appendInt32(b, 3, int32(o.AppendAction))
		return appendBool(b, 4, o.KeepEmptyValue)
	})
}

func appendStruct(b []byte, s *structpb.Struct) []byte {
	for k, v := range s.Fields {
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendStringAlways(b, 1, k)
			return appendMessage(b, 2, func(b []byte) []byte { return appendValue(b, v) })
		})
	}
	return b
}

func appendValue(b []byte, v *structpb.Value) []byte {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(k.NullValue))
	case *structpb.Value_NumberValue:
		b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(k.NumberValue))
	case *structpb.Value_StringValue:
		b = appendStringAlways(b, 3, k.StringValue)
	case *structpb.Value_BoolValue:
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(k.BoolValue))
	case *structpb.Value_StructValue:
		b = appendMessage(b, 5, func(b []byte) []byte {
			if k.StructValue == nil {
				return b
			}
			return appendStruct(b, k.StructValue)
		})
	case *structpb.Value_ListValue:
		b = appendMessage(b, 6, func(b []byte) []byte {
			for _, e := range k.ListValue.GetValues() {
				b = appendMessage(b, 1, func(b []byte) []byte { return appendValue(b, e) })
			}
			return b
		})
	}
	return b
}

// appendMessage appends field num holding the message enc writes: a
// one-byte length is reserved and the body moved when it needs more.
func appendMessage(b []byte, num protowire.Number, enc func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = append(b, 0)
	b = enc(b)
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	b = append(b, make([]byte, extra)...)
	copy(b[at+1+extra:], b[at+1:at+1+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

// appendString appends a proto3 string field, omitted when empty.
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringAlways(b, num, s)
}

// appendStringAlways appends a string field even when empty (repeated
// elements, map keys, oneof members).
func appendStringAlways(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendInt32(b []byte, num protowire.Number, v int32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(int64(v))) // negative: sign-extended, ten bytes
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

// marshalResponse is CheckCodec's Marshal for a CheckResponse.
func marshalResponse(r *authv3.CheckResponse) (mem.BufferSlice, bool) {
	b, ok := marshalCheckResponse(r)
	if !ok {
		return nil, false
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, true
}
