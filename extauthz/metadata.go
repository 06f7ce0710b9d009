package extauthz

import (
	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"google.golang.org/protobuf/types/known/structpb"
)

// fill sets mb to d as a flat struct of strings, Envoy's dynamic metadata
// of the CheckResponse (namespace envoy.filters.http.ext_authz), with
// detail when the decision has one (DecisionDetail: which limit, which
// member; never a value), dry_run "true" when dryRun, seam_class when seamClass is not empty (the
// decision must meet the response seam's processor: internal/seamcover),
// and returns its Struct. The members are
// gathered first so the map is made for exactly their number: its
// allocations, besides the block's.
func (mb *metadataBlock) fill(d *decision.Decision, dryRun bool, seamClass string) *structpb.Struct {
	var ms [21]member // every member fill can set
	n := 0
	add := func(k, v string) {
		ms[n] = member{k, v}
		n++
	}
	add("decision_id", d.ID)
	add("decision", d.Reason.Verdict().String())
	add("reason", string(d.Reason))
	add("rule_id", d.RuleID)
	add("method", d.Method)
	add("server", d.Server)
	add("target", d.Target)
	add("args_digest", d.ArgsDigest)
	add("request_digest", d.RequestDigest)
	add("policy_version", d.PolicyVersion)
	if d.Principal != nil {
		add("principal", d.Principal.Subject)
		add("issuer", d.Principal.Issuer)
	}
	if d.Retry {
		add("retry", "true")
	}
	// For the response seam (extproc): the id to match the answer on an
	// SSE stream, the revision (cache members on 2026-07-28 only), and a
	// task-augmented call.
	if len(d.RPCID) > 0 {
		add("rpc_id", string(d.RPCID))
	}
	if d.ProtocolVersion != "" {
		add("protocol_version", d.ProtocolVersion)
	}
	if d.TaskRequested {
		add("task_requested", "true")
	}
	if d.SessionHash != "" {
		add("session", d.SessionHash) // the pin scope's session, hashed
	}
	// The processor records this call's result under the (hashed)
	// idempotency key id for retries, when the rule says recover_results.
	if d.RecoverResults && d.IdempotencyKeyID != "" && d.Allowed() && !d.Retry {
		add("recover_key", d.IdempotencyKeyID)
	}
	if d.Detail != "" || len(d.WhenErrors) > 0 {
		add("detail", detail(d)) // for the access log and check --addr --explain
	}
	if dryRun {
		add("dry_run", "true")
	}
	if seamClass != "" {
		add("seam_class", seamClass)
	}
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
