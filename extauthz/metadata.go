package extauthz

import (
	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"google.golang.org/protobuf/types/known/structpb"
)

// fill sets mb to d as a flat struct of strings, Envoy's dynamic metadata
// of the CheckResponse (namespace envoy.filters.http.ext_authz), and returns
// its Struct: one allocation for the Struct and its values, one for the map.
func (mb *metadataBlock) fill(d *decision.Decision) *structpb.Struct {
	f := make(map[string]*structpb.Value, len(mb.vals))
	mb.s.Fields = f
	mb.set("decision_id", d.ID)
	mb.set("decision", d.Reason.Verdict().String())
	mb.set("reason", string(d.Reason))
	mb.set("rule_id", d.RuleID)
	mb.set("method", d.Method)
	mb.set("server", d.Server)
	mb.set("target", d.Target)
	mb.set("args_digest", d.ArgsDigest)
	mb.set("request_digest", d.RequestDigest)
	mb.set("policy_version", d.PolicyVersion)
	if d.Principal != nil {
		mb.set("principal", d.Principal.Subject)
		mb.set("issuer", d.Principal.Issuer)
	}
	if d.Retry {
		mb.set("retry", "true")
	}
	// For the response seam (extproc): the id to match the answer on an
	// SSE stream, the revision (cache members on 2026-07-28 only), and a
	// task-augmented call.
	if len(d.RPCID) > 0 {
		mb.set("rpc_id", string(d.RPCID))
	}
	if d.ProtocolVersion != "" {
		mb.set("protocol_version", d.ProtocolVersion)
	}
	if d.TaskRequested {
		mb.set("task_requested", "true")
	}
	// The processor records this call's result under the (hashed)
	// idempotency key id for retries, when the rule says recover_results.
	if d.RecoverResults && d.IdempotencyKeyID != "" && d.Allowed() && !d.Retry {
		mb.set("recover_key", d.IdempotencyKeyID)
	}
	return &mb.s
}

// metadataBlock holds the dynamic metadata Struct of one response and room
// for every string Value fill and DryRunResponse set.
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
