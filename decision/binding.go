package decision

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

const (
	maxIdempotencyKeyLen = 255
	approvalClockSkew    = time.Minute
)

// Binding binds authority to the exact request digest across Checks:
// approvals that admit one asked request once, and idempotency keys that
// admit a retry of the same request and nothing else. It is safe for
// concurrent use; its fields are not changed after the first Check.
//
// An approval is a compact JWS of type ApprovalType signed by an approver
// key, with claims iss (the approver issuer), aud (the MCP server's
// audience), sub (the principal it was approved for), digest (the request
// digest, "sha256:<hex>"), exp, iat, jti and approver (who approved). It
// admits an ask (authorization_required) only: deny rules and the default
// deny always win, and an allowed request does not consume it.
type Binding struct {
	// Approvals verifies approvals: signature with the approver keys,
	// iss, exp and aud (one of the MCP server's audiences); its errors are
	// *bearer.TokenError. Nil means no approver is configured: an ask stays
	// authorization_required whatever the request carries.
	Approvals bearer.TokenVerifier
	// Store records used approval ids and idempotency keys. Nil, or a
	// store that fails, denies every request that needs it
	// (state_store_unavailable).
	Store state.Store
	// IdempotencyHeader is the lower-case header with the idempotency key;
	// "" ignores headers.
	IdempotencyHeader string
	// IdempotencyMeta is the params._meta member with the idempotency key;
	// "" ignores _meta.
	IdempotencyMeta string
	// IdempotencyTTL is how long a key stays bound to its digest; zero means
	// DefaultIdempotencyTTL (24h).
	IdempotencyTTL time.Duration
	// ApprovalMaxLifetime bounds exp - iat of an approval; zero means
	// DefaultApprovalMaxLifetime (1h).
	ApprovalMaxLifetime time.Duration
	// ApprovalURL, when set, is named in error.data.approval_url of denials
	// an approval could lift, with "{digest}" replaced by the
	// query-escaped request digest.
	ApprovalURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Results, when set, answers a retry (same idempotency key, same request
	// digest) of a call whose rule says recover_results from the result the
	// response seam recorded for the first (ReasonResultRecovered); nil, or
	// no result recorded yet, passes the retry upstream (x-mcp-retry).
	Results *state.Results
}

// bind applies approvals and idempotency keys to a decided request and
// returns the final reason. Only allowed requests and asks of one message
// are concerned; any other decision is returned as it is.
func (b *Binding) bind(ctx context.Context, r *Request, dec *Decision) Reason {
	reason := dec.Reason
	if reason != ReasonAllowed && reason != ReasonAuthorizationRequired && reason != ReasonDefinitionChanged {
		return reason
	}
	if reason != ReasonAllowed && b.ApprovalURL != "" {
		dec.ApprovalURL = strings.ReplaceAll(b.ApprovalURL, "{digest}", url.QueryEscape(dec.RequestDigest))
	}
	// One message only: an approval of one element must never admit a
	// batch, whose other elements it does not name.
	single := dec.parsed && len(dec.BatchDigests) == 0 && dec.BatchIndex < 0 && dec.RequestDigest != ""
	if !single {
		return reason
	}
	key, reason2 := b.idempotencyKey(r, dec)
	if reason2 != "" {
		return reason2
	}
	if reason == ReasonAllowed {
		if key == "" {
			return ReasonAllowed
		}
		_, reason2 = b.claimKey(ctx, dec, key)
		return reason2
	}

	raw, reason2 := approvalToken(r, dec)
	switch {
	case reason2 != "":
		return reason2
	case raw == "":
		return reason
	}
	appr, reason2 := b.verifyApproval(ctx, raw, dec)
	if reason2 != "" {
		return reason2
	}
	dec.Approver, dec.ApprovalID = appr.approver, appr.jti

	// The approval is spent on the digest and the idempotency key it
	// admits: a retry under that key finds its own use and is a retry;
	// anything else finds another's and is a replay. A retry never skips
	// this claim: while a first request holds its key but has not yet
	// claimed the approval, a concurrent retry must not be admitted on the
	// key alone (the first may yet find the approval spent).
	var keyClaimed, keyID string
	if key != "" {
		claimed, reason2 := b.claimKey(ctx, dec, key)
		if reason2 != ReasonAllowed {
			return reason2
		}
		keyID = b.keyID(dec, key)
		if claimed {
			keyClaimed = keyID
		}
	}
	if b.Store == nil {
		return ReasonStateStoreUnavailable
	}
	ttl := time.Until(appr.exp)
	if b.Now != nil {
		ttl = appr.exp.Sub(b.Now())
	}
	use := dec.RequestDigest
	if keyID != "" {
		use += " " + keyID
	}
	claimed, prev, err := b.Store.Claim(ctx, "jti:"+hashParts(appr.issuer, appr.jti), use, ttl+approvalClockSkew)
	switch {
	case err != nil:
		dec.Detail = err.Error()
		b.release(ctx, keyClaimed, dec.RequestDigest)
		return ReasonStateStoreUnavailable
	case claimed:
		dec.Retry = false // this request spends the approval: the upstream runs it
	case keyID != "" && prev == use:
		dec.Retry = true // the approval was spent on this request under this key
	default:
		b.release(ctx, keyClaimed, dec.RequestDigest)
		return ReasonApprovalReplayed
	}
	return b.admit(dec, ReasonAllowed)
}

// admit turns an approved ask into an allow.
func (b *Binding) admit(dec *Decision, reason Reason) Reason {
	if reason == ReasonAllowed {
		dec.ApprovalURL = ""
	}
	return reason
}

func (b *Binding) release(ctx context.Context, key, value string) {
	if key != "" {
		_ = b.Store.Release(ctx, key, value) // best effort: the key then expires
	}
}

// claimKey binds the idempotency key to dec's digest. Same digest already
// bound: a retry (dec.Retry). Another digest: replay_substitution.
func (b *Binding) claimKey(ctx context.Context, dec *Decision, key string) (claimed bool, _ Reason) {
	if b.Store == nil {
		return false, ReasonStateStoreUnavailable
	}
	ttl := b.IdempotencyTTL
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	id := b.keyID(dec, key)
	dec.IdempotencyKeyID = id
	claimed, prev, err := b.Store.Claim(ctx, id, dec.RequestDigest, ttl)
	switch {
	case err != nil:
		dec.Detail = err.Error()
		return false, ReasonStateStoreUnavailable
	case claimed:
		return true, ReasonAllowed
	case prev == dec.RequestDigest:
		dec.Retry = true
		if dec.RecoverResults && b.Results != nil && dec.Approver == "" {
			res, found, err := b.Results.Lookup(ctx, id)
			switch {
			case err != nil:
				dec.Detail = err.Error()
				return false, ReasonStateStoreUnavailable
			case found:
				dec.Recovered = res
				return false, ReasonResultRecovered
			}
		}
		return false, ReasonAllowed
	}
	return false, ReasonReplaySubstitution
}

// keyID scopes an idempotency key to the principal and the MCP server, so
// one client's keys never collide with another's.
func (b *Binding) keyID(dec *Decision, key string) string {
	return "idem:" + hashParts(dec.Principal.Issuer, dec.Principal.Subject, dec.Server, key)
}

// hashParts is the hex SHA-256 of parts joined by NUL: a store key of fixed
// length whatever the client sent.
func hashParts(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// idempotencyKey returns the request's idempotency key from the configured
// header or params._meta member ("" when none). A header value that opens
// with '"' is an RFC 8941 sf-string (the Idempotency-Key header is a
// Structured Field String) and is read as the upstream reads it: quotes
// removed and \" and \\ unescaped, so "a\\x" and a\x are one key.
// Several headers, an sf-string that does not parse (another escape, a
// byte outside 0x20-0x7E, no closing quote, anything after it such as a
// parameter), a key that is not 1..255 visible ASCII characters, or header
// and _meta that differ are invalid_request.
func (b *Binding) idempotencyKey(r *Request, dec *Decision) (string, Reason) {
	var key string
	if b.IdempotencyHeader != "" {
		v, n := r.Headers.Get(b.IdempotencyHeader)
		if n > 1 {
			return "", ReasonInvalidRequest
		}
		if n == 1 {
			v = strings.Trim(v, " \t") // OWS (RFC 9110 section 5.5), as every HTTP parser strips it
			if strings.HasPrefix(v, `"`) {
				var ok bool
				if v, ok = parseSFString(v); !ok {
					return "", ReasonInvalidRequest
				}
			}
			if !validKey(v) {
				return "", ReasonInvalidRequest
			}
			key = v
		}
	}
	if b.IdempotencyMeta != "" {
		v, ok, err := metaString(dec.params, b.IdempotencyMeta)
		switch {
		case err != nil || (ok && !validKey(v)):
			return "", ReasonInvalidRequest
		case ok && key != "" && v != key:
			return "", ReasonInvalidRequest
		case ok:
			key = v
		}
	}
	return key, ""
}

// parseSFString parses v, the whole field value, as an RFC 8941 section
// 3.3.3 String (sf-string = DQUOTE *chr DQUOTE; chr = unescaped / escaped;
// escaped = "\\" ( DQUOTE / "\\" )), following the parsing algorithm of
// section 4.2.5: any other escape, a byte outside %x20-7E, a missing
// closing quote and anything after it fail.
func parseSFString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			if i+1 >= len(v) || v[i+1] != '"' && v[i+1] != '\\' {
				return "", false
			}
			i++
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), i == len(v)-1
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

func validKey(s string) bool {
	if s == "" || len(s) > maxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// approvalToken returns the approval from x-mcp-approval or
// params._meta["io.mcp-extauthz/approval"], "" when there is none. Several
// headers, a non-string member, or two places that differ are
// approval_untrusted.
func approvalToken(r *Request, dec *Decision) (string, Reason) {
	h, n := r.Headers.Get(HeaderApproval)
	if n > 1 {
		return "", ReasonApprovalUntrusted
	}
	m, ok, err := metaString(dec.params, MetaApproval)
	switch {
	case err != nil:
		return "", ReasonApprovalUntrusted
	case ok && n == 1 && strings.TrimSpace(h) != m:
		return "", ReasonApprovalUntrusted
	case ok:
		return m, ""
	}
	return strings.TrimSpace(h), ""
}

// metaString returns params._meta[name] when it is a JSON string; ok is
// false when params, _meta or the member is absent. A _meta or member of
// another type is an error.
func metaString(params []byte, name string) (v string, ok bool, err error) {
	// Fast path: no "_meta" spelled out and no escape that could spell it
	// ("\u005fmeta"); otherwise decode, as the MCP server will.
	if len(params) == 0 || !bytes.Contains(params, []byte(`"_meta"`)) && bytes.IndexByte(params, '\\') < 0 {
		return "", false, nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return "", false, err
	}
	raw, ok := p["_meta"]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(raw, &meta); err != nil {
		return "", false, err
	}
	mv, ok := meta[name]
	if !ok {
		return "", false, nil
	}
	if err := json.Unmarshal(mv, &v); err != nil {
		return "", false, fmt.Errorf("_meta %q: %w", name, err)
	}
	return v, true, nil
}

// approval is a verified approval's facts.
type approval struct {
	issuer, jti, approver string
	exp                   time.Time
}

// verifyApproval checks raw against the approver keys and the request, in
// this order: trusted (typ, signature, iss, claims present, lifetime),
// unexpired, audience, principal, digest. Its reason is "" when raw admits
// dec's request (single use is checked by the caller).
func (b *Binding) verifyApproval(ctx context.Context, raw string, dec *Decision) (*approval, Reason) {
	if b.Approvals == nil {
		dec.Detail = "approval presented but no approver is configured"
		return nil, ReasonApprovalUntrusted
	}
	// Explicit typing (RFC 8725 section 3.11), compared as a media type
	// (RFC 7515 section 4.1.9): mcp-approval+jwt and
	// application/mcp-approval+jwt are one type, in any case. The header
	// is read as the verifier reads it (no duplicate or case-variant typ).
	if h, err := bearer.ParseHeader(raw); err != nil || !h.HasTyp || !bearer.SameMediaType(h.Typ, ApprovalType) {
		if err != nil {
			dec.Detail = "approval: " + err.Error()
		} else {
			dec.Detail = fmt.Sprintf("approval typ %.64q, want %s", h.Typ, ApprovalType)
		}
		return nil, ReasonApprovalUntrusted
	}
	p, err := b.Approvals.Verify(ctx, raw)
	if err != nil {
		var te *bearer.TokenError
		reason := ReasonApprovalUntrusted
		if errors.As(err, &te) {
			switch te.Kind {
			case bearer.KindExpired:
				reason = ReasonApprovalExpired
			case bearer.KindWrongAudience:
				reason = ReasonApprovalAudienceMismatch
			case bearer.KindUnavailable:
				reason = ReasonIdPUnavailable
			}
		}
		dec.Detail = "approval: " + err.Error()
		return nil, reason
	}
	a := &approval{issuer: p.Issuer, exp: p.Expiry}
	digest, _ := p.Claims["digest"].(string)
	a.jti, _ = p.Claims["jti"].(string)
	a.approver, _ = p.Claims["approver"].(string)
	iat, hasIat := p.Claims["iat"].(float64)
	maxLife := b.ApprovalMaxLifetime
	if maxLife <= 0 {
		maxLife = DefaultApprovalMaxLifetime
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	issued := time.Unix(int64(iat), 0)
	nbf, hasNbf := p.Claims["nbf"]
	nbfSec, nbfIsNum := nbf.(float64)
	switch {
	case digest == "" || a.jti == "" || a.approver == "" || !hasIat:
		dec.Detail = "approval lacks digest, jti, approver or iat"
		return nil, ReasonApprovalUntrusted
	case hasNbf && (!nbfIsNum || nbfSec > float64(now.UnixNano())/1e9):
		// No leeway: an approver that says "not before" means it, and a
		// request can wait for it; access tokens keep go-oidc's 5 minutes.
		dec.Detail = "approval nbf is not a NumericDate in the past"
		return nil, ReasonApprovalUntrusted
	case issued.After(now.Add(approvalClockSkew)) || a.exp.Sub(issued) > maxLife:
		dec.Detail = fmt.Sprintf("approval iat in the future or lifetime over %v", maxLife)
		return nil, ReasonApprovalUntrusted
	case !slices.Contains(p.Audiences, dec.Principal.Audience):
		dec.Detail = "approval aud does not name " + dec.Principal.Audience
		return nil, ReasonApprovalAudienceMismatch
	case p.Subject != dec.Principal.Subject:
		return nil, ReasonApprovalPrincipalMismatch
	case digest != dec.RequestDigest:
		return nil, ReasonApprovalDigestMismatch
	case dec.Reason == ReasonDefinitionChanged && !toolpin.Valid(dec.ToolFingerprint):
		// Three or more definitions within TTL (toolpin.AmbiguousFingerprint):
		// no approval can say which one the call would run.
		dec.Detail = "the tool was listed with more than two definitions lately: no approval covers it"
		return nil, ReasonApprovalDigestMismatch
	case dec.Reason == ReasonDefinitionChanged && p.Claims["tooldef"] != dec.ToolFingerprint:
		// The approval covers this request under this definition only.
		dec.Detail = "approval tooldef does not name the tool's observed definition " + dec.ToolFingerprint
		return nil, ReasonApprovalDigestMismatch
	}
	return a, ""
}
