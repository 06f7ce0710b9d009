package extauthz

import (
	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"google.golang.org/protobuf/types/known/structpb"
)

// fill sets mb to d as a flat struct of strings, Envoy's dynamic metadata
// of the CheckResponse (namespace decision.MetadataNamespace): the members
// of decision.MetadataOf(d, dryRun, seamClass), with dry_run "true" when
// dryRun and seam_class when seamClass is not empty (the decision must
// meet the response seam's processor: internal/seamcover), and returns
// its Struct. The members are gathered first so the map is made for
// exactly their number: its allocations, besides the block's.
func (mb *metadataBlock) fill(d *decision.Decision, dryRun bool, seamClass string) *structpb.Struct {
	var ms [decision.MetadataMembers]member // every member Write can set
	n := 0
	md := decision.MetadataOf(d, dryRun, seamClass)
	md.Write(func(k, v string) {
		ms[n] = member{k, v}
		n++
	})
	mb.s.Fields = make(map[string]*structpb.Value, n)
	for _, m := range ms[:n] {
		mb.set(m.k, m.v)
	}
	return &mb.s
}

// member is one string member of the dynamic metadata.
type member struct{ k, v string }

// metadataBlock holds the dynamic metadata Struct of one response and room
// for the string Values fill sets: 16, what an allowed tools/call gets with
// seam_class (their most is 21: past 16 they are allocated one by one).
type metadataBlock struct {
	s    structpb.Struct
	vals [16]structpb.Value
	strs [16]structpb.Value_StringValue
	n    int
}

// set adds the string member k = v; past the block's room it allocates.
func (mb *metadataBlock) set(k, v string) {
	if mb.n == len(mb.vals) {
		mb.s.Fields[k] = structpb.NewStringValue(v)
		return
	}
	sv, val := &mb.strs[mb.n], &mb.vals[mb.n]
	mb.n++
	sv.StringValue = v
	val.Kind = sv
	mb.s.Fields[k] = val
}
