package extauthz

import (
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

// HeaderDecision carries the signed decision (mcpdecision.Header) on an
// allowed request when Responder.Decisions is set.
const HeaderDecision = mcpdecision.Header

// decisionLifetime is exp - iat of a signed decision: the upstream runs
// the call within milliseconds; the rest is room for clock skew.
const decisionLifetime = mcpdecision.MaxLifetime * time.Second

// Statement returns the statement of the allowed decision d issued at now
// (iat now, exp a minute later): who (the token's iss, sub and client,
// Decision.Client), for which server (the audience and server id), what (method,
// target, digests; for a batch each element's), which decision (id,
// policy version, rule, approval jti).
func Statement(d *decision.Decision, now time.Time) *mcpdecision.Statement {
	iat := now.Unix()
	st := &mcpdecision.Statement{
		Server: d.Server, Method: d.Method, Target: d.Target, ArgsDigest: d.ArgsDigest, RequestDigest: d.RequestDigest,
		ID: d.ID, PolicyVersion: d.PolicyVersion, RuleID: d.RuleID, ApprovalID: d.ApprovalID,
		IssuedAt: iat, ExpiresAt: iat + int64(decisionLifetime/time.Second),
	}
	if p := d.Principal; p != nil {
		st.Issuer, st.Subject, st.Audience = p.Issuer, p.Subject, p.Audience
		st.ClientID = d.Client // policy.ClientOf: the digest's and CEL's client
	}
	if len(d.BatchElements) > 0 {
		st.ArgsDigest, st.Target = "", ""
		st.Batch = make([]mcpdecision.Element, len(d.BatchElements))
		for i, e := range d.BatchElements {
			st.Batch[i] = mcpdecision.Element{Method: e.Method, Target: e.Target, ArgsDigest: e.ArgsDigest, RequestDigest: e.RequestDigest}
		}
	}
	return st
}

// signDecision returns the signed statement of d when d is allowed and
// rs signs decisions; "" otherwise. An error is a denial (Check fails
// closed).
func (rs *Responder) signDecision(d *decision.Decision) (string, error) {
	if rs.Decisions == nil || !d.Allowed() {
		return "", nil
	}
	now := time.Now
	if rs.Now != nil {
		now = rs.Now
	}
	return rs.Decisions.Sign(Statement(d, now()))
}
