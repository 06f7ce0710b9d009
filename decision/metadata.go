package decision

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// MetadataNamespace is the dynamic-metadata namespace Envoy's ext_authz
// filter files a CheckResponse's dynamic_metadata under (ext_authz.cc
// Filter::onComplete), where the response seam's ext_proc reads it back
// (ProcessingRequest.metadata_context.filter_metadata).
const MetadataNamespace = "envoy.filters.http.ext_authz"

// The members of Check's dynamic metadata: one name per wire, written by
// Metadata.Write and read by ParseMetadata. Every value is a string.
const (
	MetaDecisionID      = "decision_id"      // Decision.ID; present on every answer
	MetaDecision        = "decision"         // Reason.Verdict: allow, deny or ask
	MetaReason          = "reason"           // the Reason
	MetaRuleID          = "rule_id"          // the deciding rule, "" when none
	MetaMethod          = "method"           // JSON-RPC method or pseudo-method
	MetaServer          = "server"           // MCP server id
	MetaTarget          = "target"           // tool, resource URI, prompt or ref
	MetaArgsDigest      = "args_digest"      // sha256:<hex>
	MetaRequestDigest   = "request_digest"   // sha256:<hex>
	MetaPolicyVersion   = "policy_version"   // sha256:<hex>
	MetaPrincipal       = "principal"        // the token's subject; with a principal only
	MetaIssuer          = "issuer"           // the token's issuer; with a principal only
	MetaRetry           = "retry"            // "true": a retry under a bound idempotency key
	MetaRPCID           = "rpc_id"           // the request's JSON-RPC id, raw JSON; when it has one
	MetaProtocolVersion = "protocol_version" // MCP-Protocol-Version; when sent
	MetaTaskRequested   = "task_requested"   // "true": a task-augmented request
	MetaSession         = "session"          // the pin scope's session, hashed (toolpin.SessionHash)
	MetaRecoverKey      = "recover_key"      // the hashed idempotency key id a result is recorded under
	MetaDetail          = "detail"           // Decision.DetailText: which limit, which member; never a value
	MetaDryRun          = "dry_run"          // "true": admitted by dry-run whatever was decided
	MetaSeamClass       = "seam_class"       // the seam class the processor must meet (internal/seamcover)
	MetaClaims          = "claims"           // the principal's claims, a JSON object; on list and GET requests (ClaimsFor)
)

// Metadata is Check's dynamic metadata: a flat set of strings Check writes
// into its CheckResponse and the response seam's processor reads back, so
// the processor knows the decision of the request whose answer it sees.
// The zero value of a member is its absence (the first ten members are
// always written, even empty).
type Metadata struct {
	DecisionID    string
	Decision      string // Reason.Verdict().String()
	Reason        Reason
	RuleID        string
	Method        string
	Server        string
	Target        string
	ArgsDigest    string
	RequestDigest string
	PolicyVersion string
	// Principal and Issuer are the token's subject and issuer; written
	// when either is not empty.
	Principal, Issuer string
	Retry             bool
	RPCID             string
	ProtocolVersion   string
	TaskRequested     bool
	Session           string
	RecoverKey        string
	Detail            string
	DryRun            bool
	SeamClass         string
	// Claims is the principal's verified claims as one JSON object, on
	// the requests whose answers the response seam decides item by item
	// with the caller's claims (ClaimsFor): the processor takes them from
	// here instead of verifying the token again, so those routes need not
	// send it the request headers. Dynamic metadata is written by Envoy's
	// filters only; a client cannot set it.
	Claims string
}

// MetadataMembers is the most members Write sets.
const MetadataMembers = 22

// MetadataOf is the metadata of d: dryRun marks a dry-run admission,
// seamClass names the seam class the processor must meet ("" none). The
// recover_key is set only on an allowed first call whose rule says
// recover_results and that has an idempotency key.
func MetadataOf(d *Decision, dryRun bool, seamClass string) Metadata {
	m := Metadata{
		DecisionID: d.ID, Decision: d.Reason.Verdict().String(), Reason: d.Reason, RuleID: d.RuleID,
		Method: d.Method, Server: d.Server, Target: d.Target, ArgsDigest: d.ArgsDigest,
		RequestDigest: d.RequestDigest, PolicyVersion: d.PolicyVersion,
		Retry: d.Retry, RPCID: string(d.RPCID), ProtocolVersion: d.ProtocolVersion,
		TaskRequested: d.TaskRequested, Session: d.SessionHash, DryRun: dryRun, SeamClass: seamClass,
		Detail: d.DetailText(),
	}
	if d.Principal != nil {
		m.Principal, m.Issuer = d.Principal.Subject, d.Principal.Issuer
		if ClaimsFor(d.Method) || d.BatchIndex >= 0 && len(d.BatchDigests) > 0 { // a refused batch a dry run admits whole
			// A claim set JSON cannot encode (never one a token or an
			// introspection answer decoded) writes none: the processor
			// then refuses the answer (no claims for the principal).
			switch b, err := json.Marshal(d.Principal.Claims); {
			case d.Principal.Claims == nil:
				m.Claims = "{}" // a verifier that kept no claims: none to decide on
			case err == nil:
				m.Claims = string(b)
			}
		}
	}
	if d.RecoverResults && d.IdempotencyKeyID != "" && d.Allowed() && !d.Retry {
		m.RecoverKey = d.IdempotencyKeyID
	}
	return m
}

// Write calls set once per member of m, in a fixed order, at most
// MetadataMembers times: decision_id through policy_version always,
// principal and issuer together when either is set, every other member
// only when set (a flag as "true").
func (m *Metadata) Write(set func(key, value string)) {
	set(MetaDecisionID, m.DecisionID)
	set(MetaDecision, m.Decision)
	set(MetaReason, string(m.Reason))
	set(MetaRuleID, m.RuleID)
	set(MetaMethod, m.Method)
	set(MetaServer, m.Server)
	set(MetaTarget, m.Target)
	set(MetaArgsDigest, m.ArgsDigest)
	set(MetaRequestDigest, m.RequestDigest)
	set(MetaPolicyVersion, m.PolicyVersion)
	if m.Principal != "" || m.Issuer != "" {
		set(MetaPrincipal, m.Principal)
		set(MetaIssuer, m.Issuer)
	}
	flag := func(k string, v bool) {
		if v {
			set(k, "true")
		}
	}
	str := func(k, v string) {
		if v != "" {
			set(k, v)
		}
	}
	flag(MetaRetry, m.Retry)
	str(MetaRPCID, m.RPCID)
	str(MetaProtocolVersion, m.ProtocolVersion)
	flag(MetaTaskRequested, m.TaskRequested)
	str(MetaSession, m.Session)
	str(MetaRecoverKey, m.RecoverKey)
	str(MetaDetail, m.Detail)
	flag(MetaDryRun, m.DryRun)
	str(MetaSeamClass, m.SeamClass)
	str(MetaClaims, m.Claims)
}

// ClaimsFor reports whether Check's metadata of a request with method
// carries the principal's claims: the list methods (MCP 2025-11-25
// pagination: tools/list, prompts/list, resources/list,
// resources/templates/list, tasks/list), a batch (it may hold one) and a
// GET (its stream may carry any list answer), whose answers the seam
// decides item by item with the caller's claims. Not on tools/call and
// the rest: their streams carry only their own request's response.
func ClaimsFor(method string) bool {
	return method == mcpmethod.Batch || method == mcpmethod.HTTPGet || mcpmethod.Paginated(method)
}

// ErrNoMetadata is ParseMetadata's error for metadata without a
// decision_id: no decision of ours reached this request.
var ErrNoMetadata = errors.New("no decision_id: no authorization metadata")

// ParseMetadata reads the metadata Write wrote, through get (a member's
// string value and whether it is present; members it does not know are
// ignored). It fails with ErrNoMetadata when decision_id is absent or
// empty, and with an error naming the member when a flag is present but
// not "true", the decision is not allow, deny or ask, the reason is not
// one of the closed set, or the decision is not the reason's verdict (both checked only when present: a processor
// needs neither). It does not check digests, ids or versions.
func ParseMetadata(get func(key string) (string, bool)) (Metadata, error) {
	str := func(k string) string { v, _ := get(k); return v }
	var m Metadata
	if m.DecisionID = str(MetaDecisionID); m.DecisionID == "" {
		return Metadata{}, ErrNoMetadata
	}
	m.Decision, m.Reason, m.RuleID = str(MetaDecision), Reason(str(MetaReason)), str(MetaRuleID)
	m.Method, m.Server, m.Target = str(MetaMethod), str(MetaServer), str(MetaTarget)
	m.ArgsDigest, m.RequestDigest, m.PolicyVersion = str(MetaArgsDigest), str(MetaRequestDigest), str(MetaPolicyVersion)
	m.Principal, m.Issuer = str(MetaPrincipal), str(MetaIssuer)
	m.RPCID, m.ProtocolVersion, m.Session = str(MetaRPCID), str(MetaProtocolVersion), str(MetaSession)
	m.RecoverKey, m.SeamClass, m.Detail = str(MetaRecoverKey), str(MetaSeamClass), str(MetaDetail)
	m.Claims = str(MetaClaims)
	var err error
	flag := func(k string) bool {
		v, ok := get(k)
		if ok && v != "true" && err == nil {
			err = fmt.Errorf("metadata member %s = %q, want \"true\" or absent", k, v)
		}
		return ok && v == "true"
	}
	m.Retry, m.TaskRequested, m.DryRun = flag(MetaRetry), flag(MetaTaskRequested), flag(MetaDryRun)
	if err != nil {
		return Metadata{}, err
	}
	switch m.Decision {
	case "", "allow", "deny", "ask":
	default:
		return Metadata{}, fmt.Errorf("metadata member %s = %q, want allow, deny or ask", MetaDecision, m.Decision)
	}
	if m.Reason != "" {
		if !slices.Contains(reasons, m.Reason) {
			return Metadata{}, fmt.Errorf("metadata member %s = %q: not a reason of the closed set", MetaReason, m.Reason)
		}
		if m.Decision != "" && m.Decision != m.Reason.Verdict().String() {
			return Metadata{}, fmt.Errorf("metadata member %s = %q, but reason %s is %s", MetaDecision, m.Decision, m.Reason, m.Reason.Verdict())
		}
	}
	return m, nil
}

// DetailText is the decision's detail for the decision log and the
// metadata's detail member: d.Detail (a parse error's kind, offset and
// limit or member name, never a value), then every failed `when`
// expression (rule "id": when: error), "; "-separated; "" when none.
func (d *Decision) DetailText() string {
	if len(d.WhenErrors) == 0 {
		return d.Detail
	}
	parts := make([]string, 0, len(d.WhenErrors)+1)
	if d.Detail != "" {
		parts = append(parts, d.Detail)
	}
	for _, we := range d.WhenErrors {
		parts = append(parts, we.Error())
	}
	return strings.Join(parts, "; ")
}
