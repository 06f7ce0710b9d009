package extproc

import (
	"fmt"
	"strconv"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
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
// readMeta reads Check's members off them once per stream (authzMembers),
// without building the Struct: the members proto would have decoded, with
// proto's merge of a repeated field.
//
// A message that is not valid wire format goes to Next unchanged (and
// fails there as it would have). A metadata_context that proto would
// refuse (not wire format, or a string that is not UTF-8) is kept all the
// same: one that is not wire format is no metadata (the stream refuses,
// no_authorization_metadata), one with such a string is read as it is
// (Check, through Envoy, is its only writer; ParseMetadata checks its
// members).
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

// authzMember is one member of Check's metadata as the processor reads it:
// a string value, a bool as "true" or "false", any other kind as "".
type authzMember struct{ key, value string }

// authzMembers returns the members of req's metadata_context
// filter_metadata[AuthzNamespace] (Check's dynamic metadata), in wire
// order, a later member of a name after an earlier one. Metadata proto
// decoded already (a server without Codec) is read from the Struct; kept
// bytes (Codec) are read off the wire without building one, with proto's
// merge rules: the last filter_metadata entry of the namespace wins whole
// (its pieces merged), a later member of a name wins, and a Value given in
// pieces takes its last kind field. ok is false when the kept bytes are
// not valid wire format (no metadata).
func authzMembers(req *extprocv3.ProcessingRequest) (ms []authzMember, ok bool) {
	if md := req.GetMetadataContext(); md != nil {
		for k, v := range md.GetFilterMetadata()[AuthzNamespace].GetFields() {
			ms = append(ms, authzMember{k, valueString(v)})
		}
		return ms, true
	}
	_, kept, ok := splitField(req.ProtoReflect().GetUnknown(), fieldMetadataContext)
	if !ok {
		return nil, false
	}
	// Every key and value is a substring of one copy of the kept bytes.
	ks := string(kept)
	str := func(v []byte, off int) string { return ks[off : off+len(v)] }
	// piece is one occurrence of a message field: its bytes and offset.
	type piece struct {
		v   []byte
		off int
	}
	// The namespace's Struct: every piece of the last filter_metadata
	// entry of the namespace (proto merges the pieces of one entry; a
	// later entry of the same key replaces the earlier whole).
	var entry []piece
	found := false
	if !eachField(kept, 0, func(_ protowire.Number, typ protowire.Type, md []byte, off int) bool { // each occurrence: a Metadata
		return typ == protowire.BytesType && eachField(md, off, func(num protowire.Number, typ protowire.Type, v []byte, off int) bool {
			if num != 1 || typ != protowire.BytesType { // filter_metadata
				return true
			}
			var key string
			var vals []piece
			if !eachField(v, off, func(num protowire.Number, typ protowire.Type, v []byte, off int) bool {
				switch {
				case num == 1 && typ == protowire.BytesType:
					key = str(v, off)
				case num == 2 && typ == protowire.BytesType:
					vals = append(vals, piece{v, off})
				}
				return true
			}) {
				return false
			}
			if key == AuthzNamespace {
				entry, found = vals, true
			}
			return true
		})
	}) {
		return nil, false
	}
	if !found {
		return nil, true
	}
	ms = make([]authzMember, 0, decision.MetadataMembers) // what Check writes, at most
	// Struct.fields entries of every piece in order (a later entry of a
	// name wins, as the reader takes the last); within an entry, every
	// piece of its Value in order, the last kind field deciding (proto's
	// merge of a oneof).
	for _, p := range entry {
		if !eachField(p.v, p.off, func(num protowire.Number, typ protowire.Type, v []byte, off int) bool {
			if num != 1 || typ != protowire.BytesType { // Struct.fields
				return true
			}
			var m authzMember
			return eachField(v, off, func(num protowire.Number, typ protowire.Type, v []byte, off int) bool {
				if num == 1 && typ == protowire.BytesType {
					m.key = str(v, off)
					return true
				}
				if num != 2 || typ != protowire.BytesType {
					return true
				}
				return eachField(v, off, func(num protowire.Number, typ protowire.Type, v []byte, off int) bool {
					switch {
					case num == 3 && typ == protowire.BytesType: // string_value
						m.value = str(v, off)
					case num == 4 && typ == protowire.VarintType: // bool_value
						b, _ := protowire.ConsumeVarint(v)
						m.value = strconv.FormatBool(b != 0)
					case num == 1 && typ == protowire.VarintType, num == 2 && typ == protowire.Fixed64Type,
						(num == 5 || num == 6) && typ == protowire.BytesType: // null, number, struct, list
						m.value = ""
					}
					return true
				})
			}) && appendMember(&ms, m)
		}) {
			return nil, false
		}
	}
	return ms, true
}

// appendMember appends m to ms; it reports true.
func appendMember(ms *[]authzMember, m authzMember) bool { *ms = append(*ms, m); return true }

// valueString is a Value as the processor reads it (authzMember).
func valueString(v *structpb.Value) string {
	if b, isBool := v.GetKind().(*structpb.Value_BoolValue); isBool {
		return strconv.FormatBool(b.BoolValue)
	}
	return v.GetStringValue()
}

// eachField calls f with each field of the message b (number, wire type,
// the value's bytes: a length-delimited one's contents, a varint's or fixed
// one's encoding; and their offset, b being at offset base), in order,
// until f returns false; it reports false when b is not valid wire format
// or f stopped.
func eachField(b []byte, base int, f func(num protowire.Number, typ protowire.Type, v []byte, off int) bool) bool {
	at := 0
	for at < len(b) {
		num, typ, n := protowire.ConsumeTag(b[at:])
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[at+n:])
		if m < 0 {
			return false
		}
		v, voff := b[at+n:at+n+m], at+n
		if typ == protowire.BytesType {
			var k int
			v, k = protowire.ConsumeBytes(v)
			if k < 0 {
				return false
			}
			voff += k - len(v)
		}
		if !f(num, typ, v, base+voff) {
			return false
		}
		at += n + m
	}
	return true
}
