package policytest

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Fields are the facts of a decision that check prints, in order.
var Fields = []string{"decision", "reason", "rule_id", "server", "method", "target", "principal",
	"args_digest", "request_digest", "policy_version"}

// FieldsOf returns d's Fields as name → value.
func FieldsOf(d *decision.Decision) map[string]string {
	m := map[string]string{
		"decision": d.Reason.Verdict().String(), "reason": string(d.Reason), "rule_id": d.RuleID,
		"server": d.Server, "method": d.Method, "target": d.Target, "args_digest": d.ArgsDigest,
		"request_digest": d.RequestDigest, "policy_version": d.PolicyVersion,
	}
	if d.Principal != nil {
		m["principal"] = d.Principal.Subject
	}
	return m
}

// WriteFields prints fields in the order of names, as aligned "name: value"
// lines, or as one JSON object.
func WriteFields(w io.Writer, names []string, fields map[string]string, asJSON bool) error {
	if asJSON {
		m := make(map[string]string, len(names))
		for _, k := range names {
			m[k] = fields[k]
		}
		return json.NewEncoder(w).Encode(m)
	}
	for _, k := range names {
		if _, err := fmt.Fprintf(w, "%-15s %s\n", k+":", fields[k]); err != nil {
			return err
		}
	}
	return nil
}

// WriteTrace prints how the policy reached d: every rule considered with
// whether its pattern held and what its `when` gave, the shadow rules, and
// the precedence step that decided; rules are named with their place in
// policyFile. A request denied before the policy (token, framing, parse)
// says so, with the log's detail.
func WriteTrace(w io.Writer, d *decision.Decision, policyFile string) {
	tr := d.Trace
	if tr == nil {
		fmt.Fprintf(w, "policy: not evaluated: the request was denied before it (%s)", d.Reason)
		if d.Detail != "" {
			fmt.Fprintf(w, ": %s", d.Detail)
		}
		fmt.Fprintln(w)
		return
	}
	what := d.Method
	if d.Target != "" {
		what += " " + strconv.Quote(d.Target)
	}
	if tr.Name != "" && tr.Name != d.Target && tr.Name != d.Method {
		what += " (matched as " + strconv.Quote(tr.Name) + ")"
	}
	if d.BatchIndex >= 0 {
		what = fmt.Sprintf("batch element %d (the first not allowed): %s", d.BatchIndex, what)
	}
	fmt.Fprintf(w, "policy trace for %s on server %q:\n", what, d.Server)
	if len(tr.Rules) == 0 && tr.Step != "unsafe_uri" && tr.Step != "invalid_input" {
		fmt.Fprintln(w, "  no rule of this kind")
	}
	for _, r := range tr.Rules {
		list := r.Decision.String()
		if r.Shadow {
			list = "shadow " + list
		}
		fmt.Fprintf(w, "  [%s] %s (%s:%d:%d)\n", list, r.RuleID, policyFile, r.Line, r.Column)
		held := "no"
		if r.PatternHeld {
			held = "held"
		}
		if r.PatternNote != "" {
			held += " (" + r.PatternNote + ")"
		}
		fmt.Fprintf(w, "      pattern %q: %s\n", r.Pattern, held)
		if r.PatternHeld && r.When != "" {
			expr := strings.Join(strings.Fields(r.When), " ")
			switch {
			case r.WhenError != "" && r.WhenValue != "":
				fmt.Fprintf(w, "      when %s: %s (%s; %s)\n", expr, r.WhenValue, r.WhenError, failNote(r))
			case r.WhenError != "":
				fmt.Fprintf(w, "      when %s: error: %s (%s)\n", expr, r.WhenError, failNote(r))
			default:
				fmt.Fprintf(w, "      when %s: %s\n", expr, r.WhenValue)
			}
		}
		verdict := "no match"
		if r.Matched {
			verdict = "MATCH"
			if r.Shadow {
				verdict = "MATCH (shadow: reported, never decides)"
			}
		}
		fmt.Fprintf(w, "      => %s\n", verdict)
	}
	order := "deny > ask > allow > default"
	if tr.Pinned {
		order = "deny > pin > ask > allow > default"
	}
	fmt.Fprintf(w, "precedence (%s): %s\n", order, stepText(tr))
	for _, q := range tr.Result.Quotas {
		// Charged after the deny rules, before the rest; offline
		// every request is its buckets' first.
		fmt.Fprintf(w, "quota %q: %s: charged after the deny rules (offline, always within it)\n", q.ID, q)
	}
	if d.Reason != decision.ReasonAllowed && d.Reason != decision.ReasonPolicyDenied &&
		d.Reason != decision.ReasonDefaultDeny && d.Reason != decision.ReasonAuthorizationRequired {
		fmt.Fprintf(w, "answered as: %s\n", d.Reason)
	}
}

func failNote(r policy.RuleTrace) string {
	if r.Decision == policy.Allow {
		return "fails closed: an allow rule does not match"
	}
	if r.Decision == policy.Ask {
		return "fails closed: an ask rule matches"
	}
	return "fails closed: a deny rule matches"
}

func stepText(tr *policy.Trace) string {
	id := strconv.Quote(tr.Result.RuleID)
	switch tr.Step {
	case "deny":
		return "deny rule " + id + " matched: deny"
	case "ask":
		return "no deny rule matched; ask rule " + id + " matched: ask"
	case "allow":
		return "no deny or ask rule matched; allow rule " + id + " matched: allow"
	case "default":
		return "no rule matched: the default decides (" + tr.Result.Decision.String() + ")"
	case "unsafe_uri":
		if tr.URIProblem != "" {
			return "the resource URI has no safe normal form (" + tr.URIProblem + "): deny before any rule"
		}
		return "the resource URI has no safe normal form: deny before any rule"
	case "invalid_input":
		return "the request lacks the name or URI its method needs: deny before any rule"
	case "pin":
		if tr.Result.Cause == policy.CauseToolNotListed {
			return "no deny rule matched; no tools/list showed the tool and no allow rule names it literally: tool_not_listed (deny)"
		}
		return "no deny rule matched; the tool's listed definition is not its baseline: definition_changed (ask)"
	}
	return tr.Step
}

// WriteResponse prints resp as Envoy sends it on: the HTTP status, the
// headers added for the upstream (allowed) or the client (denied), the
// headers removed, and a denial's body.
func WriteResponse(w io.Writer, resp *authv3.CheckResponse) {
	md := resp.GetDynamicMetadata().GetFields()
	fmt.Fprintf(w, "decision_id:    %s\n", md[decision.MetaDecisionID].GetStringValue())
	if ok := resp.GetOkResponse(); ok != nil {
		fmt.Fprintln(w, "http_status:    (forwarded upstream)")
		fmt.Fprintln(w, "upstream headers:")
		for _, h := range ok.GetHeaders() {
			fmt.Fprintf(w, "  %s: %s\n", h.GetHeader().GetKey(), h.GetHeader().GetValue())
		}
		for _, h := range ok.GetHeadersToRemove() {
			fmt.Fprintf(w, "  (removed) %s\n", h)
		}
		return
	}
	den := resp.GetDeniedResponse()
	fmt.Fprintf(w, "http_status:    %d\n", den.GetStatus().GetCode())
	fmt.Fprintln(w, "response headers:")
	for _, h := range den.GetHeaders() {
		fmt.Fprintf(w, "  %s: %s\n", h.GetHeader().GetKey(), h.GetHeader().GetValue())
	}
	fmt.Fprintf(w, "body:\n  %s\n", den.GetBody())
}
