package decision

import (
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Decision is the outcome of one request, with everything an adapter's
// answer, the decision log and the metrics need. Its Reason is the only
// verdict: ReasonAllowed admits, every other reason refuses, and
// Reason.Verdict gives the allow / deny / ask label. It never holds the
// token or raw arguments.
type Decision struct {
	ID            string // decision id: 32 lowercase hex digits
	Reason        Reason
	RuleID        string
	Server        string
	Method        string // JSON-RPC method, or a pseudo-method of internal/mcpmethod (GET, DELETE, response, batch)
	Tool          string // tools/call params.name
	Target        string // tool name, resource URI, prompt name or completion ref
	ArgsDigest    string // sha256:<hex> of the JCS form of params.arguments ({} when absent)
	RequestDigest string // see requestDigest
	Principal     *bearer.Principal
	// Client is the agent the token was issued to (policy.ClientOf:
	// client_id, else azp, else ""), which the request digest covers.
	Client string
	RPCID  []byte // the request's JSON-RPC id, byte for byte; nil answers with id null
	// ProtocolVersion is the request's MCP-Protocol-Version header ("" when
	// absent): the response seam adds 2026-07-28's cache members only then.
	ProtocolVersion string
	// TaskRequested reports a task-augmented request (params.task present,
	// MCP 2025-11-25): the response seam binds the task it creates.
	TaskRequested bool
	BatchIndex    int // index of the deciding batch element; -1 outside batches
	BatchDigests  []string
	// BatchElements are the elements of an allowed batch, in order, for
	// the signed decision (mcpdecision.Element); nil otherwise.
	BatchElements []BatchElement
	Detail        string               // internal detail for the log (a parse error's message); never argument values
	PolicyVersion string               // sha256:<hex> of the policy file
	Shadow        []policy.ShadowMatch // shadow rules that matched; they never decide
	// WhenErrors are the `when` expressions that failed at run time while
	// deciding (policy.Result.WhenErrors): counted by rule id and named in
	// the decision line's detail.
	WhenErrors []policy.WhenError
	// Trace is how the policy reached its decision, when Config.Explain is
	// set and the policy was evaluated; nil otherwise.
	Trace *policy.Trace

	// Binding (binding.go, stepup.go) and concealment.
	RequiredScopes []string // the deciding rule's scopes, on insufficient_scope
	Conceal        bool     // the deciding rule says refusal: conceal
	Retry          bool     // allowed as a retry: idempotency key already bound to this digest
	Approver       string   // the approval's approver claim, when an approval admitted the request
	ApprovalID     string   // the approval's jti
	ApprovalURL    string   // where to get an approval (Binding.ApprovalURL), on asks
	// TaskID is params.taskId of tasks/get, tasks/result, tasks/cancel or
	// tasks/update ("" when absent or not a string): what a concealed
	// refusal names, as the server would. Not logged.
	TaskID string
	// RecoverResults: the deciding rule lets a retry be answered from the
	// recorded result (policy.Result.RecoverResults). IdempotencyKeyID is
	// the hashed id of the request's idempotency key when it has one (the
	// processor records the result under it). Recovered is that recorded
	// result (the JSON of a result member) on ReasonResultRecovered.
	RecoverResults   bool
	IdempotencyKeyID string
	Recovered        []byte
	// ToolFingerprint is the observed fingerprint of a tools/call's tool
	// definition when the policy pins definitions ("" otherwise or never
	// listed); an approval of a definition_changed call must name it.
	ToolFingerprint string
	// SessionHash is toolpin.SessionHash of the request's session when the
	// policy pins definitions per session (pin_mode on, pin_scope
	// session), "" otherwise: the response seam builds the pin scope from
	// it on routes where it does not see the request headers.
	SessionHash string
	// SealedCursor reports a list request, or a batch with one, whose
	// params.cursor Check opened (Config.Cursors set): the response seam
	// must see its body to swap the cursor for the upstream's own, so the
	// answer marks it (extauthz's x-mcp-cursor) for a route that sends it.
	SealedCursor bool

	// ArgumentsPointer and ArgumentsKeyword say why the arguments are
	// invalid (ReasonArgumentsInvalid): the RFC 6901 pointer of the failing
	// value in params.arguments and the JSON Schema keyword that refused
	// it; both "" when no schema is known (arguments: require) or the
	// schema is unusable. Never the value.
	ArgumentsPointer, ArgumentsKeyword string

	// RetryAfter is how long until the quota that refused a rate_limited
	// request has a token again (0 otherwise): the answer's Retry-After.
	RetryAfter time.Duration

	quotas  []*policy.Quota // the quotas the policy charged the request to
	parsed  bool            // the body went through mcpparse.Parse
	session string          // the request's Mcp-Session-Id, for pin_scope session
	params  []byte          // params of the deciding message, for _meta
}

// BatchElement is what was decided of one element of an allowed batch.
type BatchElement struct {
	Method        string // JSON-RPC method, or "response"
	Target        string // as Decision.Target
	ArgsDigest    string // as Decision.ArgsDigest
	RequestDigest string // as Decision.RequestDigest
}

// Allowed reports whether the request may reach the upstream.
func (d *Decision) Allowed() bool { return d.Reason == ReasonAllowed }

// Internal returns the Decision of a fault outside the Decider, such as a
// panic an adapter recovered: a fresh id, reason internal_error, detail for
// the log.
func Internal(detail string) *Decision {
	return &Decision{ID: newDecisionID(), Reason: ReasonInternalError, BatchIndex: -1, Detail: detail}
}
