package extproc

import (
	"maps"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// a35bytes is a length-delimited field.
func a35bytes(n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), v)
}

func a35cat(bs ...[]byte) []byte {
	var o []byte
	for _, b := range bs {
		o = append(o, b...)
	}
	return o
}

// a35request is a ProcessingRequest whose metadata_context holds one
// filter_metadata entry of Check's namespace, its Struct given by entries
// (each a Struct.fields map entry's contents).
func a35request(structBodies ...[]byte) []byte {
	var fm []byte
	fm = append(fm, a35bytes(1, []byte(AuthzNamespace))...)
	for _, s := range structBodies {
		fm = append(fm, a35bytes(2, s)...)
	}
	md := a35bytes(1, fm)
	return a35bytes(fieldMetadataContext, md)
}

func a35field(key string, values ...[]byte) []byte {
	e := a35bytes(1, []byte(key))
	for _, v := range values {
		e = append(e, a35bytes(2, v)...)
	}
	return a35bytes(1, e)
}

func a35str(s string) []byte { return a35bytes(3, []byte(s)) }

// TestAttack35AuthzMembersMerge: proto merges repeated occurrences of a
// message field (a Value given in two pieces within one map entry, the
// namespace's Struct given twice within one filter_metadata entry);
// authzMembers keeps only the last piece, so it reads members proto
// decodes as absent or empty. Valid wire format, proto decodes it: the
// oracle (grpc-go's codec, members from the Struct) disagrees.
func TestAttack35AuthzMembersMerge(t *testing.T) {
	tests := []struct {
		name string
		give []byte
	}{
		// "principal": Value{string_value: "alice"} then Value{} (an
		// empty occurrence): proto keeps "alice"; authzMembers resets.
		{"value in two pieces", a35request(a35cat(
			a35field("decision_id", a35str("d-1")),
			a35field("method", a35str("tools/list")),
			a35field("principal", a35str("alice"), nil),
			a35field("claims", a35str(`{"sub":"alice"}`), nil),
		))},
		// The namespace's Struct twice in one map entry: proto merges the
		// two Structs (all members); authzMembers keeps the second only.
		{"struct in two pieces", a35request(
			a35cat(a35field("decision_id", a35str("d-1")), a35field("principal", a35str("alice")), a35field("claims", a35str(`{"sub":"alice"}`))),
			a35field("method", a35str("tools/list")),
		)},
	}
	for _, tt := range tests {
		want, got, werr, gerr := decodeBoth(tt.give)
		if werr != nil || gerr != nil {
			t.Fatalf("%s: %v, %v", tt.name, werr, gerr)
		}
		wm, _ := members(want)
		gm, _ := members(got)
		if !maps.Equal(wm, gm) {
			t.Errorf("%s: authzMembers reads %v, proto %v", tt.name, gm, wm)
		}
	}
}

// TestAttack35SplitValueDropsClaims: the "value in two pieces" metadata
// (proto: principal alice with her claims) reads in the processor as a
// principal-less stream, whose lists are decided on no claims at all
// (callerClaims returns nil, no refusal) instead of alice's.
func TestAttack35SplitValueDropsClaims(t *testing.T) {
	b := a35request(a35cat(
		a35field("decision_id", a35str("d-1")),
		a35field("method", a35str("tools/list")),
		a35field("principal", a35str("alice"), nil),
		a35field("claims", a35str(`{"sub":"alice","role":"intern"}`), nil),
	))
	_, got, _, err := decodeBoth(b)
	if err != nil {
		t.Fatal(err)
	}
	st := &stream{s: New(Config{})}
	st.readMeta(got)
	if !st.haveMeta {
		t.Fatal("no metadata")
	}
	if err := st.callerClaims(); err == nil && st.claims == nil {
		t.Errorf("principal %q: the list is decided with no claims; proto reads principal alice with claims", st.principal)
	}
}
