package extauthz

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestCodecFields checks the hand-written CheckRequest decoder against the
// generated descriptors of go-control-plane: every named field number is
// the descriptor's, and every field of a message the decoder reads is
// either decoded or listed here as skipped on purpose. A field that
// go-control-plane adds fails the test until it is placed in one of the
// two lists (decoding it, or saying why Check does not read it).
func TestCodecFields(t *testing.T) {
	tests := []struct {
		msg     protoreflect.MessageDescriptor
		decoded map[protoreflect.Name]protowire.Number
		skipped []protoreflect.Name
	}{
		{
			msg:     (&authv3.CheckRequest{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{"attributes": fieldCheckRequestAttributes},
		},
		{
			msg: (&authv3.AttributeContext{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{
				"destination": fieldAttrDestination, "request": fieldAttrRequest, "context_extensions": fieldAttrContextExtensions,
			},
			// The source peer, metadata and TLS session are not decided on.
			skipped: []protoreflect.Name{"source", "metadata_context", "route_metadata_context", "tls_session"},
		},
		{
			msg:     (&authv3.AttributeContext_Peer{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{"principal": fieldPeerPrincipal},
			// Only the destination's principal (Istio SPIFFE id) names a server.
			skipped: []protoreflect.Name{"address", "service", "labels", "certificate"},
		},
		{
			msg:     (&authv3.AttributeContext_Request{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{"http": fieldRequestHTTP},
			skipped: []protoreflect.Name{"time"}, // the service's own clock decides
		},
		{
			msg: (&authv3.AttributeContext_HttpRequest{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{
				"id": fieldHTTPID, "method": fieldHTTPMethod, "headers": fieldHTTPHeaders, "path": fieldHTTPPath,
				"host": fieldHTTPHost, "scheme": fieldHTTPScheme, "query": fieldHTTPQuery, "fragment": fieldHTTPFragment,
				"size": fieldHTTPSize, "protocol": fieldHTTPProtocol, "body": fieldHTTPBody, "raw_body": fieldHTTPRawBody,
				"header_map": fieldHTTPHeaderMap,
			},
		},
		{
			msg:     (&corev3.HeaderMap{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{"headers": fieldHeaderMapHeaders},
		},
		{
			msg:     (&corev3.HeaderValue{}).ProtoReflect().Descriptor(),
			decoded: map[protoreflect.Name]protowire.Number{"key": fieldHeaderKey, "value": fieldHeaderValue, "raw_value": fieldHeaderRawValue},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.msg.FullName()), func(t *testing.T) {
			skipped := map[protoreflect.Name]bool{}
			for _, n := range tt.skipped {
				skipped[n] = true
			}
			fields := tt.msg.Fields()
			for i := 0; i < fields.Len(); i++ {
				f := fields.Get(i)
				num, ok := tt.decoded[f.Name()]
				switch {
				case ok && protowire.Number(f.Number()) != num:
					t.Errorf("%s is field %d, the decoder reads %d", f.FullName(), f.Number(), num)
				case ok && skipped[f.Name()]:
					t.Errorf("%s is both decoded and skipped", f.FullName())
				case !ok && !skipped[f.Name()]:
					t.Errorf("%s (field %d) is neither decoded nor skipped: decode it in codec.go or list it here with the reason", f.FullName(), f.Number())
				}
			}
			for n := range tt.decoded {
				if fields.ByName(n) == nil {
					t.Errorf("%s has no field %s", tt.msg.FullName(), n)
				}
			}
			for n := range skipped {
				if fields.ByName(n) == nil {
					t.Errorf("%s has no field %s (skipped)", tt.msg.FullName(), n)
				}
			}
		})
	}
	// The map entries the decoder reads (headers, context_extensions) are
	// key 1, value 2.
	entry := (&authv3.AttributeContext{}).ProtoReflect().Descriptor().Fields().ByName("context_extensions").MapKey()
	if entry.Number() != protoreflect.FieldNumber(fieldMapKey) || entry.ContainingMessage().Fields().ByName("value").Number() != protoreflect.FieldNumber(fieldMapValue) {
		t.Error("map entries are not key 1, value 2")
	}
}
