package policy

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Trace is how Evaluate reached its Result, for `extauthz check --explain`
// and policy tests. It is built for people, not for the request path:
// Explain evaluates every rule of the request's kind, where Evaluate stops at
// the first match.
type Trace struct {
	Result Result
	// Rules are the rules of the request's kind (tool, resource, prompt,
	// method, GET, DELETE or response) in the order precedence considers
	// them: deny, ask, allow (file order within each), then the shadow rules.
	Rules []RuleTrace
	// Step is the precedence step that decided: "deny", "pin" (the tool's
	// definition changed or was never listed: Result.Cause says which),
	// "ask", "allow", "default", or, before any rule, "unsafe_uri" or
	// "invalid_input".
	Step string
	// Name is what the rules were matched against: the tool or prompt name,
	// the normal form of the URI, or the method; "" for GET, DELETE and
	// response.
	Name string
	// Pinned: tool definition pinning applied to this request (a
	// tools/call under pin_mode tofu or strict with a Definition).
	Pinned bool
	// URIProblem, at step "unsafe_uri", says why the URI was refused when
	// the reason is a Windows name (a stream, a device, a short name, …);
	// "" for the other refusals.
	URIProblem string
}

// RuleTrace is one rule as Explain evaluated it.
type RuleTrace struct {
	RuleID       string
	Decision     Decision // the list it is in
	Shadow       bool
	Line, Column int    // of the rule in the policy file
	Pattern      string // its match or method text
	// PatternHeld: the pattern matched the request's server and name.
	PatternHeld bool
	// PatternNote, when not "", says how the pattern's reading decided
	// PatternHeld where that is not plain: a deny or ask rule held on the
	// path as Windows resolves it, or a '**' segment matched zero segments
	// in a deny or ask rule, or missed an allow rule only because it needs
	// one or more.
	PatternNote string
	// When is the rule's expression ("" when none); WhenValue what it
	// evaluated to (CEL's printed form: "true", "false", "1", ...) or
	// WhenError its error. Neither is set when the pattern did not hold.
	When, WhenValue, WhenError string
	// Matched: the rule matched, `when` included (a failing `when` matches
	// in deny and ask rules and not in allow rules).
	Matched bool
}

// Explain evaluates in as Evaluate does and reports every rule considered.
// tr.Result always equals Evaluate(in).
func (p *Policy) Explain(in *Input) Trace {
	tr := Trace{Result: p.Evaluate(in)}
	switch tr.Result.Cause {
	case CauseUnsafeURI:
		tr.Step = "unsafe_uri"
		if in != nil {
			for _, u := range append([]string{in.URI}, in.URIs...) {
				if _, ok := ParseURI(u); !ok && u != "" {
					tr.URIProblem = uriProblem(u)
					break
				}
			}
		}
		return tr
	case CauseInvalidInput:
		tr.Step = "invalid_input"
		return tr
	case CauseDefinitionChanged, CauseToolNotListed:
		tr.Step = "pin"
	case CauseDefault:
		tr.Step = "default"
	default:
		tr.Step = tr.Result.Decision.String()
	}
	r, _ := p.newRequest(in) // Evaluate accepted in
	tr.Name = r.name
	tr.Pinned = in.Definition != nil && r.kind == kindTool && p.pinMode != PinOff
	for _, d := range []Decision{Deny, Ask, Allow} {
		for _, ru := range p.rules[d][r.kind] {
			tr.Rules = append(tr.Rules, ru.trace(r))
		}
	}
	for _, ru := range p.shadow {
		if ru.kind == r.kind {
			tr.Rules = append(tr.Rules, ru.trace(r))
		}
	}
	return tr
}

// trace evaluates ru on r like matches, recording each step.
func (ru *rule) trace(r *request) RuleTrace {
	t := RuleTrace{RuleID: ru.id, Decision: ru.decision, Shadow: ru.shadow, Line: ru.line, Column: ru.col,
		Pattern: ru.pattern, When: ru.whenSrc}
	t.PatternHeld = ru.patternMatches(r)
	t.PatternNote = ru.patternNote(r, t.PatternHeld)
	if len(ru.hints) > 0 && t.PatternNote == "" {
		v := r.annotationValues()
		parts := make([]string, len(annotationNames))
		for i, n := range annotationNames {
			parts[i] = fmt.Sprintf("%s=%v", n, v[i])
		}
		src := "the worst case (server not trusted, or tool not listed)"
		if r.trusted && r.in.Definition != nil && r.in.Definition.Listed {
			src = "declared by the listed definition"
			if r.in.Definition.Hints == (Hints{}) {
				src += " (none declared: MCP's defaults)"
			}
		}
		t.PatternNote = "annotations " + strings.Join(parts, " ") + ": " + src
	}
	if !t.PatternHeld {
		return t
	}
	if ru.when == nil {
		t.Matched = true
		return t
	}
	failMatch := ru.decision != Allow
	out, _, err := ru.when.Eval(activation{r})
	switch {
	case err != nil:
		t.WhenError, t.Matched = err.Error(), failMatch
	case out.Type() == types.BoolType:
		t.WhenValue, t.Matched = celString(out), bool(out.(types.Bool))
	default:
		t.WhenValue, t.WhenError, t.Matched = celString(out), "not a bool", failMatch
	}
	return t
}

// celString prints a CEL value the way a policy author writes it.
func celString(v ref.Val) string {
	switch v := v.(type) {
	case types.String:
		return fmt.Sprintf("%q", string(v))
	case types.Bool, types.Int, types.Uint, types.Double:
		return fmt.Sprint(v.Value())
	}
	return fmt.Sprintf("%v", v.Value())
}

// patternNote is RuleTrace.PatternNote for ru on r; held is
// ru.patternMatches(r).
func (ru *rule) patternNote(r *request, held bool) string {
	if ru.kind != kindResource || r.kind != kindResource {
		return ""
	}
	server := r.in.Server
	if ru.loose {
		server, _ = r.loose()
	}
	if !ru.server.match(server) {
		return ""
	}
	var notes []string
	for _, n := range []string{ru.uri.windowsNote(&r.res, held), ru.uri.globstarNote(&r.res, held)} {
		if n != "" {
			notes = append(notes, n)
		}
	}
	return strings.Join(notes, "; ")
}
