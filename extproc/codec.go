package extproc

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// fieldMetadataContext is ProcessingRequest.metadata_context
// (envoy/service/ext_proc/v3/external_processor.proto); TestCodecField
// checks it against the generated descriptor.
const fieldMetadataContext protowire.Number = 8

// Codec is the server codec of the response seam: Next (the ext_authz
// server's codec, which shares the port) for every message but a
// ProcessingRequest, which it decodes without its metadata_context. Envoy
// forwards Check's dynamic metadata on every message of a side stream
// (about 20 string members: some 114 allocations to decode each time),
// and the processor reads it from the first message only (readMeta). The
// metadata_context's bytes are kept as the message's unknown fields, and
// readMeta decodes them there, once per stream: the same Struct proto
// would have decoded, with proto's merge of a repeated field.
//
// A message that is not valid wire format goes to Next unchanged (and
// fails there as it would have). A metadata_context whose own bytes are not
// a valid Metadata is kept all the same: the stream reads it as no
// metadata and refuses (no_authorization_metadata) where proto would have
// failed the RPC; closed both ways.
type Codec struct{ Next encoding.CodecV2 }

// Name is Next's name ("proto"): the wire is unchanged for Envoy.
func (c Codec) Name() string { return c.Next.Name() }

// Marshal is Next's.
func (c Codec) Marshal(v any) (mem.BufferSlice, error) { return c.Next.Marshal(v) }

// Unmarshal decodes data into v (see Codec).
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*extprocv3.ProcessingRequest)
	if !ok {
		return c.Next.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	msg := buf.ReadOnlyData()
	rest, meta, ok := splitField(msg, fieldMetadataContext)
	if !ok {
		return c.Next.Unmarshal(data, v)
	}
	if err := proto.Unmarshal(rest, req); err != nil {
		return fmt.Errorf("ext_proc: %w", err)
	}
	if len(meta) > 0 {
		req.ProtoReflect().SetUnknown(append(req.ProtoReflect().GetUnknown(), meta...))
	}
	return nil
}

// splitField returns msg without its occurrences of field num of the
// length-delimited wire type (a message field's; proto keeps any other as
// an unknown field), and those occurrences (tags included, in order,
// copied); ok is false when msg is not valid wire format. rest aliases msg
// when none occurs.
func splitField(msg []byte, num protowire.Number) (rest, field []byte, ok bool) {
	start := 0 // of the run of other fields not copied to rest yet
	var out []byte
	for i := 0; i < len(msg); {
		n, typ, tl := protowire.ConsumeTag(msg[i:])
		if tl < 0 {
			return nil, nil, false
		}
		vl := protowire.ConsumeFieldValue(n, typ, msg[i+tl:])
		if vl < 0 {
			return nil, nil, false
		}
		end := i + tl + vl
		if n == num && typ == protowire.BytesType {
			out = append(out, msg[start:i]...)
			field = append(field, msg[i:end]...)
			start = end
		}
		i = end
	}
	if field == nil {
		return msg, nil, true
	}
	return append(out, msg[start:]...), field, true
}

// metadataContext is req's metadata_context: decoded, or kept unread by
// Codec in its unknown fields and decoded here (every occurrence, merged
// as proto merges a repeated message field). Kept bytes that do not decode
// are no metadata (nil).
func metadataContext(req *extprocv3.ProcessingRequest) *corev3.Metadata {
	if md := req.GetMetadataContext(); md != nil {
		return md
	}
	_, kept, ok := splitField(req.ProtoReflect().GetUnknown(), fieldMetadataContext)
	if !ok || kept == nil {
		return nil
	}
	var out extprocv3.ProcessingRequest
	if err := proto.Unmarshal(kept, &out); err != nil {
		return nil
	}
	return out.GetMetadataContext()
}
