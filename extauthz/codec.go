package extauthz

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// CheckCodec is the gRPC codec of the ext_authz server; install it with
// grpc.ForceServerCodecV2(CheckCodec{}). It keeps the content-subtype
// "proto" (the wire is unchanged for Envoy) and differs from grpc-go's
// default codec in three ways:
//
//   - A CheckRequest is decoded by hand, field by field, and only the fields
//     Check reads: attributes.request.http (every field),
//     attributes.destination.principal and attributes.context_extensions.
//     Everything else (source, the rest of destination, metadata contexts,
//     TLS session, time) is skipped unread, so GetSource() and the like are
//     nil on the server. Code that starts reading another field must add it
//     to the decoder (wireDecoder.attributes) first.
//   - A CheckResponse is encoded by hand, without reflection
//     (marshalCheckResponse).
//   - Strings are not checked for UTF-8. proto3 requires valid UTF-8 in
//     string fields, so the default codec fails the RPC, before Check runs,
//     on a body sent in the string `body` field (or a header value) that is
//     not UTF-8; Envoy's failure_mode_allow would turn that RPC error into
//     an allow. With this codec Check sees the bytes and decides (a body
//     that is not UTF-8 is denied as invalid_utf8). Nor can a response
//     fail to encode for a string that is not UTF-8.
//
// A CheckRequest that is not even valid protobuf wire format decodes as an
// empty CheckRequest, which Check denies (it has no HTTP method); the RPC
// still succeeds. Every other message (grpc.health.v1) goes through
// grpc-go's proto codec unchanged.
type CheckCodec struct{}

// Field numbers the decoder reads (envoy/service/auth/v3/attribute_context.proto,
// external_auth.proto; envoy/config/core/v3/base.proto). TestCodecFields
// checks each against the generated descriptors, and fails when
// go-control-plane adds a field to a message the decoder reads that is
// neither decoded nor listed there as deliberately skipped.
const (
	fieldCheckRequestAttributes protowire.Number = 1 // CheckRequest.attributes

	fieldAttrDestination       protowire.Number = 2  // AttributeContext.destination
	fieldAttrRequest           protowire.Number = 4  // AttributeContext.request
	fieldAttrContextExtensions protowire.Number = 10 // AttributeContext.context_extensions

	fieldPeerPrincipal protowire.Number = 4 // AttributeContext.Peer.principal

	fieldRequestHTTP protowire.Number = 2 // AttributeContext.Request.http

	fieldHTTPID        protowire.Number = 1  // HttpRequest.id
	fieldHTTPMethod    protowire.Number = 2  // HttpRequest.method
	fieldHTTPHeaders   protowire.Number = 3  // HttpRequest.headers
	fieldHTTPPath      protowire.Number = 4  // HttpRequest.path
	fieldHTTPHost      protowire.Number = 5  // HttpRequest.host
	fieldHTTPScheme    protowire.Number = 6  // HttpRequest.scheme
	fieldHTTPQuery     protowire.Number = 7  // HttpRequest.query
	fieldHTTPFragment  protowire.Number = 8  // HttpRequest.fragment
	fieldHTTPSize      protowire.Number = 9  // HttpRequest.size
	fieldHTTPProtocol  protowire.Number = 10 // HttpRequest.protocol
	fieldHTTPBody      protowire.Number = 11 // HttpRequest.body
	fieldHTTPRawBody   protowire.Number = 12 // HttpRequest.raw_body
	fieldHTTPHeaderMap protowire.Number = 13 // HttpRequest.header_map

	fieldMapKey   protowire.Number = 1 // a map entry's key
	fieldMapValue protowire.Number = 2 // a map entry's value

	fieldHeaderMapHeaders protowire.Number = 1 // HeaderMap.headers
	fieldHeaderKey        protowire.Number = 1 // HeaderValue.key
	fieldHeaderValue      protowire.Number = 2 // HeaderValue.value
	fieldHeaderRawValue   protowire.Number = 3 // HeaderValue.raw_value
)

// protoCodec is grpc-go's default codec, for every message but CheckRequest.
var protoCodec = encoding.GetCodecV2(protoenc.Name)

// Name is "proto": the codec replaces the default one on the server.
func (CheckCodec) Name() string { return protoenc.Name }

// Marshal encodes v. A CheckResponse is encoded by hand (see
// marshalCheckResponse), anything else as grpc-go's proto codec does.
func (CheckCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*authv3.CheckResponse); ok {
		if out, ok := marshalResponse(r); ok {
			return out, nil
		}
	}
	return protoCodec.Marshal(v)
}

// Unmarshal decodes data into v; see CheckCodec. It never fails for a
// *authv3.CheckRequest.
func (CheckCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*authv3.CheckRequest)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	decodeCheckRequest(buf.ReadOnlyData(), req)
	return nil
}

// decodeCheckRequest decodes the protobuf wire form of a CheckRequest into
// req (which it resets first), reading only what Check reads and accepting
// any bytes in string fields; see CheckCodec. Malformed wire format leaves
// req empty. The decoded strings and byte slices never alias msg.
func decodeCheckRequest(msg []byte, req *authv3.CheckRequest) {
	*req = authv3.CheckRequest{}
	d := newWireDecoder(msg)
	ok := d.fields(msg, 0, func(f wireField) bool {
		if f.num != fieldCheckRequestAttributes || f.typ != protowire.BytesType {
			return true
		}
		if req.Attributes == nil {
			req.Attributes = &authv3.AttributeContext{}
		}
		return d.attributes(f, req.Attributes)
	})
	if !ok {
		*req = authv3.CheckRequest{}
	}
}

// wireDecoder turns field values of msg into strings and byte slices that
// share two allocations: s, a string copy of msg without the raw body, and
// bytes, a []byte copy of all of msg (made only when a bytes field occurs).
// Every value travels with its offset in msg.
type wireDecoder struct {
	msg         []byte
	s           string
	cutAt, cutN int // msg[cutAt:cutAt+cutN] (the raw body) is left out of s
	bytes       []byte
}

// wireField is one field: number, wire type, and its value: v at offset off
// of msg for a length-delimited field, x for a varint.
type wireField struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
	off int
	x   uint64
}

func newWireDecoder(msg []byte) *wireDecoder {
	d := &wireDecoder{msg: msg, cutAt: len(msg)}
	if at, n, ok := rawBodySpan(msg); ok {
		d.cutAt, d.cutN = at, n
	}
	var sb strings.Builder
	sb.Grow(len(msg) - d.cutN)
	sb.Write(msg[:d.cutAt])
	sb.Write(msg[d.cutAt+d.cutN:])
	d.s = sb.String()
	return d
}

// fields calls each for every field of b (at offset off of msg) until each
// returns false. It reports false on malformed wire format or when each
// did.
func (d *wireDecoder) fields(b []byte, off int, each func(wireField) bool) bool {
	for pos := 0; pos < len(b); {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return false
		}
		pos += n
		f := wireField{num: num, typ: typ}
		switch typ {
		case protowire.BytesType:
			l, m := protowire.ConsumeVarint(b[pos:])
			if m < 0 || l > uint64(len(b)-pos-m) {
				return false
			}
			f.off = off + pos + m
			f.v = b[pos+m : pos+m+int(l)]
			n = m + int(l)
		case protowire.VarintType:
			f.x, n = protowire.ConsumeVarint(b[pos:])
		default:
			n = protowire.ConsumeFieldValue(num, typ, b[pos:])
		}
		if n < 0 {
			return false
		}
		pos += n
		if !each(f) {
			return false
		}
	}
	return true
}

// str returns the value of f, a field outside the raw body, as a substring
// of s.
func (d *wireDecoder) str(f wireField) string {
	if len(f.v) == 0 {
		return ""
	}
	at := f.off
	switch {
	case at >= d.cutAt+d.cutN:
		at -= d.cutN
	case at+len(f.v) > d.cutAt: // overlaps the cut: not a string field's case
		return string(f.v)
	}
	return d.s[at : at+len(f.v)]
}

// byteSlice returns the value of f as a slice of the decoder's own copy of
// msg, capped so that appending to it never writes into its neighbours.
func (d *wireDecoder) byteSlice(f wireField) []byte {
	if d.bytes == nil {
		d.bytes = append(make([]byte, 0, len(d.msg)), d.msg...)
	}
	return d.bytes[f.off : f.off+len(f.v) : f.off+len(f.v)]
}

// attributes decodes AttributeContext fields 2 (destination, its principal
// only), 4 (request) and 10 (context_extensions) into a, merging as protobuf
// does.
func (d *wireDecoder) attributes(p wireField, a *authv3.AttributeContext) bool {
	return d.fields(p.v, p.off, func(f wireField) bool {
		if f.typ != protowire.BytesType {
			return true
		}
		switch f.num {
		case fieldAttrDestination: // its principal names the server under Istio
			if a.Destination == nil {
				a.Destination = &authv3.AttributeContext_Peer{}
			}
			return d.peerPrincipal(f, a.Destination)
		case fieldAttrRequest:
			if a.Request == nil {
				a.Request = &authv3.AttributeContext_Request{}
			}
			return d.request(f, a.Request)
		case fieldAttrContextExtensions:
			if a.ContextExtensions == nil {
				a.ContextExtensions = map[string]string{}
			}
			return d.mapEntry(f, a.ContextExtensions)
		}
		return true
	})
}

// peerPrincipal decodes AttributeContext.Peer field 4 (principal).
func (d *wireDecoder) peerPrincipal(p wireField, peer *authv3.AttributeContext_Peer) bool {
	return d.fields(p.v, p.off, func(f wireField) bool {
		if f.num == fieldPeerPrincipal && f.typ == protowire.BytesType {
			peer.Principal = d.str(f)
		}
		return true
	})
}

// request decodes AttributeContext.Request field 2 (http).
func (d *wireDecoder) request(p wireField, r *authv3.AttributeContext_Request) bool {
	return d.fields(p.v, p.off, func(f wireField) bool {
		if f.num != fieldRequestHTTP || f.typ != protowire.BytesType {
			return true
		}
		if r.Http == nil {
			r.Http = &authv3.AttributeContext_HttpRequest{}
		}
		return d.http(f, r.Http)
	})
}

// http decodes every field of AttributeContext.HttpRequest.
func (d *wireDecoder) http(p wireField, h *authv3.AttributeContext_HttpRequest) bool {
	return d.fields(p.v, p.off, func(f wireField) bool {
		if f.typ == protowire.VarintType && f.num == fieldHTTPSize {
			h.Size = int64(f.x)
			return true
		}
		if f.typ != protowire.BytesType {
			return true
		}
		switch f.num {
		case fieldHTTPID:
			h.Id = d.str(f)
		case fieldHTTPMethod:
			h.Method = d.str(f)
		case fieldHTTPHeaders:
			if h.Headers == nil {
				h.Headers = make(map[string]string, 16)
			}
			return d.mapEntry(f, h.Headers)
		case fieldHTTPPath:
			h.Path = d.str(f)
		case fieldHTTPHost:
			h.Host = d.str(f)
		case fieldHTTPScheme:
			h.Scheme = d.str(f)
		case fieldHTTPQuery:
			h.Query = d.str(f)
		case fieldHTTPFragment:
			h.Fragment = d.str(f)
		case fieldHTTPProtocol:
			h.Protocol = d.str(f)
		case fieldHTTPBody:
			h.Body = d.str(f)
		case fieldHTTPRawBody:
			h.RawBody = d.byteSlice(f)
		case fieldHTTPHeaderMap:
			if h.HeaderMap == nil {
				h.HeaderMap = &corev3.HeaderMap{}
			}
			return d.headerMap(f, h.HeaderMap)
		}
		return true
	})
}

// mapEntry decodes one map<string, string> entry (key 1, value 2) into m.
func (d *wireDecoder) mapEntry(p wireField, m map[string]string) bool {
	var k, val string
	ok := d.fields(p.v, p.off, func(f wireField) bool {
		switch {
		case f.typ != protowire.BytesType:
		case f.num == fieldMapKey:
			k = d.str(f)
		case f.num == fieldMapValue:
			val = d.str(f)
		}
		return true
	})
	m[k] = val
	return ok
}

// headerMap decodes HeaderMap field 1 (repeated HeaderValue: key 1, value 2,
// raw_value 3).
func (d *wireDecoder) headerMap(p wireField, hm *corev3.HeaderMap) bool {
	return d.fields(p.v, p.off, func(f wireField) bool {
		if f.num != fieldHeaderMapHeaders || f.typ != protowire.BytesType {
			return true
		}
		hv := &corev3.HeaderValue{}
		hm.Headers = append(hm.Headers, hv)
		return d.fields(f.v, f.off, func(g wireField) bool {
			switch {
			case g.typ != protowire.BytesType:
			case g.num == fieldHeaderKey:
				hv.Key = d.str(g)
			case g.num == fieldHeaderValue:
				hv.Value = d.str(g)
			case g.num == fieldHeaderRawValue:
				hv.RawValue = d.byteSlice(g)
			}
			return true
		})
	})
}

// rawBodySpan finds attributes.request.http.raw_body in msg
// (CheckRequest 1 → AttributeContext 4 → Request 2 → HttpRequest 12): its
// offset and length, when exactly one occurs (else ok is false).
func rawBodySpan(msg []byte) (at, n int, ok bool) {
	found := 0
	var walk func(b []byte, off int, path []protowire.Number) bool
	walk = func(b []byte, off int, path []protowire.Number) bool {
		for pos := 0; pos < len(b); {
			num, typ, tn := protowire.ConsumeTag(b[pos:])
			if tn < 0 {
				return false
			}
			pos += tn
			if typ != protowire.BytesType {
				m := protowire.ConsumeFieldValue(num, typ, b[pos:])
				if m < 0 {
					return false
				}
				pos += m
				continue
			}
			l, m := protowire.ConsumeVarint(b[pos:])
			if m < 0 || l > uint64(len(b)-pos-m) {
				return false
			}
			vAt, vEnd := pos+m, pos+m+int(l)
			pos = vEnd
			switch {
			case len(path) == 0 && num == fieldHTTPRawBody:
				found++
				at, n = off+vAt, vEnd-vAt
			case len(path) > 0 && num == path[0]:
				if !walk(b[vAt:vEnd], off+vAt, path[1:]) {
					return false
				}
			}
		}
		return true
	}
	if !walk(msg, 0, []protowire.Number{fieldCheckRequestAttributes, fieldAttrRequest, fieldRequestHTTP}) || found != 1 {
		return 0, 0, false
	}
	return at, n, true
}
