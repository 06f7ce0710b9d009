package mcpdecision

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Reason is why a verifier refused a call: a closed set, answered as
// error.data.reason (docs/digests.md, "Signed decisions").
type Reason string

// The reasons, in the order Verify checks.
const (
	ReasonMissing       Reason = "decision_missing"        // no x-mcp-decision header, or more than one
	ReasonMalformed     Reason = "decision_malformed"      // not a compact JWS of typ mcp-decision+jwt, EdDSA or ES256, with a JSON payload
	ReasonUnverified    Reason = "decision_unverified"     // no key of the key set has its kid, or the signature does not verify
	ReasonUnavailable   Reason = "decision_unavailable"    // the key set or the replay store cannot be read: retry
	ReasonWrongAudience Reason = "decision_wrong_audience" // aud is not this server's resource URI
	ReasonExpired       Reason = "decision_expired"        // exp passed, iat in the future, or exp - iat over a minute
	ReasonWrongPolicy   Reason = "decision_wrong_policy"   // policy_version not one the server accepts
	ReasonMismatch      Reason = "decision_mismatch"       // method, target or arguments digest differ from the call's
	ReasonReplayed      Reason = "decision_replayed"       // the decision id (and batch element) was used before
)

// Reasons returns every Reason, in check order.
func Reasons() []Reason {
	return []Reason{ReasonMissing, ReasonMalformed, ReasonUnverified, ReasonUnavailable, ReasonWrongAudience,
		ReasonExpired, ReasonWrongPolicy, ReasonMismatch, ReasonReplayed}
}

// CodeRefused is the JSON-RPC error code of a refused call: in the range
// docs/reasons.md, "JSON-RPC error codes" keeps free for new kinds of denial.
const CodeRefused = -32016

// Error is a refusal: Reason for the caller (error.data.reason), Detail
// for the server's log (never argument values).
type Error struct {
	Reason Reason
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Reason)
	}
	return string(e.Reason) + ": " + e.Detail
}

func refuse(r Reason, format string, a ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, a...)}
}

// Call is what the MCP server is about to execute, as its SDK decoded it.
type Call struct {
	// Method is the JSON-RPC method ("response" for a client's answer to
	// a server request).
	Method string
	// Target is params.name of tools/call and prompts/get, params.uri of
	// resources/read, resources/subscribe and resources/unsubscribe, ""
	// otherwise.
	Target string
	// Arguments is params.arguments as the SDK decoded it (a
	// map[string]any, map[string]string, ...; nil when absent): its
	// RFC 8785 digest (ArgumentsDigest) must be the statement's.
	Arguments any
}

// Verifier checks statements for one MCP server. The zero value is not
// usable: Audience and Keys are required. It is safe for concurrent use.
type Verifier struct {
	// Audience is this server's RFC 8707 resource URI, the aud every
	// statement must carry (the --audience the service accepted the token
	// for).
	Audience string
	// Keys is the published key set (StaticKeys, FileKeys, RemoteKeys).
	Keys KeySet
	// Replay records used decision ids; nil keeps them in this process
	// (a MemoryReplay made on first use). Behind several replicas give a
	// shared store (Redis SET NX PX), or a statement may run once per
	// replica within its minute.
	Replay ReplayStore
	// PolicyVersions, when not empty, are the policy versions
	// (sha256:<hex>) accepted; a statement naming another is refused.
	PolicyVersions []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Leeway is more clock skew allowed on iat and exp (0: none beyond
	// IssuedAtSkew on iat).
	Leeway time.Duration

	mem memoryOnce
}

// Verify checks statement (the x-mcp-decision header value; values holds
// every value the header had) for call and returns the verified
// statement, or an *Error. Checks, in order: exactly one value
// (decision_missing); a compact JWS with typ mcp-decision+jwt, alg EdDSA
// or ES256, a kid and a JSON object payload (decision_malformed); the
// kid's key in the key set and the signature (decision_unverified; the key
// set unreadable: decision_unavailable); aud (decision_wrong_audience);
// iat <= now + 5 s + leeway, now < exp + leeway, 0 < exp - iat <= 60 s
// (decision_expired); policy_version (decision_wrong_policy); method,
// target and the RFC 8785 digest of call.Arguments, for a batch against
// each element (decision_mismatch); last, the decision id (with the
// element's index in a batch) claimed once in the replay store
// (decision_replayed; the store failing: decision_unavailable). A refused
// call never consumes the id.
func (v *Verifier) Verify(ctx context.Context, values []string, call Call) (*Statement, error) {
	if len(values) != 1 || values[0] == "" {
		return nil, refuse(ReasonMissing, "%d values", len(values))
	}
	raw := strings.TrimSpace(values[0])
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, refuse(ReasonMalformed, "not a compact JWS with EdDSA or ES256: %v", err)
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != Type {
		return nil, refuse(ReasonMalformed, "typ %.40q, want %s", typ, Type)
	}
	if h.KeyID == "" || h.JSONWebKey != nil || h.Nonce != "" || len(h.ExtraHeaders) != 1 { // typ only: no crit, no jwk, no x5c
		return nil, refuse(ReasonMalformed, "header: want alg, kid and typ only")
	}
	if v.Keys == nil || v.Audience == "" {
		return nil, refuse(ReasonUnavailable, "verifier without Keys or Audience")
	}
	key, err := v.Keys.Key(ctx, h.KeyID)
	switch {
	case errors.Is(err, ErrUnknownKey):
		return nil, refuse(ReasonUnverified, "kid %.40q not in the key set", h.KeyID)
	case err != nil:
		return nil, refuse(ReasonUnavailable, "key set: %v", err)
	}
	if key.Algorithm != "" && key.Algorithm != h.Algorithm {
		return nil, refuse(ReasonUnverified, "alg %s, the key's is %s", h.Algorithm, key.Algorithm)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, refuse(ReasonUnverified, "signature: %v", err)
	}
	st := new(Statement)
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(st); err != nil || dec.More() {
		return nil, refuse(ReasonMalformed, "payload: %v", err)
	}
	if st.Audience != v.Audience {
		return nil, refuse(ReasonWrongAudience, "aud %.80q, want %q", st.Audience, v.Audience)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t := now()
	iat, exp := time.Unix(st.IssuedAt, 0), time.Unix(st.ExpiresAt, 0)
	switch {
	case st.ExpiresAt-st.IssuedAt > MaxLifetime || st.ExpiresAt <= st.IssuedAt:
		return nil, refuse(ReasonExpired, "lifetime %ds, at most %ds", st.ExpiresAt-st.IssuedAt, MaxLifetime)
	case t.Add(v.Leeway + IssuedAtSkew*time.Second).Before(iat):
		return nil, refuse(ReasonExpired, "issued in the future (%s)", iat.UTC().Format(time.RFC3339))
	case !t.Before(exp.Add(v.Leeway)):
		return nil, refuse(ReasonExpired, "expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if len(v.PolicyVersions) > 0 && !slices.Contains(v.PolicyVersions, st.PolicyVersion) {
		return nil, refuse(ReasonWrongPolicy, "policy_version %.80q", st.PolicyVersion)
	}
	digest, err := ArgumentsDigest(call.Arguments)
	if err != nil {
		return nil, refuse(ReasonMismatch, "arguments: %v", err)
	}
	id := st.ID
	if st.Method == BatchMethod {
		i := slices.IndexFunc(st.Batch, func(e Element) bool {
			return e.Method == call.Method && e.Target == call.Target && e.ArgsDigest == digest
		})
		if i < 0 {
			return nil, refuse(ReasonMismatch, "no batch element is %s %.80q with arguments %s", call.Method, call.Target, digest)
		}
		id = fmt.Sprintf("%s/%d", st.ID, i)
	} else {
		switch {
		case st.Method != call.Method:
			return nil, refuse(ReasonMismatch, "method %.40q, the call's is %q", st.Method, call.Method)
		case st.Target != call.Target:
			return nil, refuse(ReasonMismatch, "target %.80q, the call's is %.80q", st.Target, call.Target)
		case st.ArgsDigest != digest:
			return nil, refuse(ReasonMismatch, "args_digest %.80s, the call's arguments are %s", st.ArgsDigest, digest)
		}
	}
	if st.ID == "" {
		return nil, refuse(ReasonMalformed, "no jti")
	}
	replay := v.Replay
	if replay == nil {
		replay = v.mem.get(v.Now) // the verifier's clock
	}
	fresh, err := replay.Claim(ctx, id, exp.Add(v.Leeway))
	switch {
	case err != nil:
		return nil, refuse(ReasonUnavailable, "replay store: %v", err)
	case !fresh:
		return nil, refuse(ReasonReplayed, "decision %s used before", id)
	}
	return st, nil
}

// ArgumentsDigest returns "sha256:" + lowercase hex of the SHA-256 of the
// RFC 8785 form of arguments, a value as a JSON decoder produced it
// (encoding/json's Marshal must accept it); nil (absent arguments) is {}.
// It is the x-mcp-args-digest of docs/digests.md, "Digests" when the value is what
// the service parsed.
func ArgumentsDigest(arguments any) (string, error) {
	var b []byte
	if arguments == nil {
		b = []byte("{}")
	} else {
		m, err := json.Marshal(arguments)
		if err != nil {
			return "", err
		}
		if b, err = jcs.Transform(m); err != nil {
			return "", err
		}
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// CallOf returns the Call of a JSON-RPC message with method and params as
// a JSON decoder produced them (nil when absent), naming its target as
// the service does: params.name of tools/call and prompts/get (with
// params.arguments), params.uri of resources/read, resources/subscribe and
// resources/unsubscribe, params.ref.name or params.ref.uri of
// completion/complete, and for subscriptions/listen (MCP 2026-07-28) the
// params.notifications.resourceSubscriptions URIs as a JSON array in
// RFC 8785 string form (["file:///a","file:///b"]). A member of the wrong
// type reads as absent; the statement then does not match.
func CallOf(method string, params map[string]any) Call {
	c := Call{Method: method}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	switch method {
	case mcpmethod.ToolsCall, mcpmethod.PromptsGet:
		c.Target = str(params, "name")
		if a, ok := params["arguments"]; ok && a != nil {
			c.Arguments = a
		}
	case mcpmethod.ResourcesRead, mcpmethod.ResourcesSubscribe, mcpmethod.ResourcesUnsubscribe:
		c.Target = str(params, "uri")
	case mcpmethod.CompletionComplete:
		ref, _ := params["ref"].(map[string]any)
		switch str(ref, "type") {
		case "ref/prompt":
			c.Target = str(ref, "name")
		case "ref/resource":
			c.Target = str(ref, "uri")
		}
	case mcpmethod.SubscriptionsListen:
		n, _ := params["notifications"].(map[string]any)
		if subs, ok := n["resourceSubscriptions"].([]any); ok {
			b := []byte{'['}
			for i, s := range subs {
				if i > 0 {
					b = append(b, ',')
				}
				u, _ := s.(string)
				b = mcpparse.AppendJCSString(b, u)
			}
			c.Target = string(append(b, ']'))
		}
	}
	return c
}
