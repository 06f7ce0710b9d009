package policy

import "sync"

// Visibility is the outcome of Visible: whether an item of a tools/list,
// prompts/list, resources/list or resources/templates/list answer is shown
// to the caller.
type Visibility struct {
	// Visible reports that some call of the item could be allowed or asked.
	Visible bool
	// Decision is the best decision some call could get: Allow or Ask when
	// Visible, else Deny, or Ask for a tool whose definition changed
	// (CauseDefinitionChanged: only an approval of the changed definition
	// lets a call through, and the list does not show it).
	Decision Decision
	// Cause and RuleID say what decided, as in Result: the deny rule that
	// matches whatever the arguments, the conceal deny rule, the pin step
	// (CauseDefinitionChanged, CauseToolNotListed), the first ask or allow
	// rule that could match, or the default.
	Cause  Cause
	RuleID string
	// Concealed reports an item removed because a deny rule with
	// `refusal: conceal` could refuse some of its calls.
	Concealed bool
}

// unknownArgs stands for arguments not known yet (a list item decided as if
// called): any read of args marks the `when` expression undecided.
type unknownArgs struct{ touched bool }

func (u *unknownArgs) Arg(string) (any, bool) { u.touched = true; return nil, false }
func (u *unknownArgs) Args() map[string]any   { u.touched = true; return map[string]any{} }

// Visible decides a list item "as if called", for one caller (in.Claims)
// on one server: a tool as a tools/call of in.Tool, a prompt as a
// prompts/get of in.Prompt, a resource as a resources/read of in.URI
// through the same URI normal form (NormalizeURI) as Evaluate. in.Method
// names which; in.Args and in.LazyArgs are ignored. in.Definition, when the
// caller sets it, is what the pin step of a call of the tool would read
// right after the list was observed (the response seam's observations in
// the list's pin scope, decision.ItemDefinitions): annotation rules then see
// what that call would (declared values on a trusted server, conservative
// ones elsewhere), and the pin step decides the item as it would the call,
// so list and call agree.
//
// Tools and prompts are decided with their arguments unknown. A `when`
// expression that reads args is undecided; one that does not is evaluated
// as Evaluate would (failing closed the same way). Precedence stays deny >
// ask > allow > default:
//   - a deny rule that matches whatever the arguments removes the item;
//   - a deny rule whose refusal (its own, else the policy's) is `conceal` and
//     that could match some call removes the item too, so that a call
//     answered "unknown tool" is not listed (Concealed);
//   - with pinning on and in.Definition set, a tool whose call the pin step
//     refuses is removed: its definition changed (CauseDefinitionChanged,
//     Decision Ask: a call needs an approval of the changed definition, and
//     the list does not show that definition to the model), or it is not
//     listed and no allow rule naming its server and tool literally could
//     match (CauseToolNotListed; allow_new_tools lists it);
//   - else an ask or allow rule that matches or could match lists it;
//   - else the default decides (ask lists, deny removes).
//
// Deny rules whose `when` reads arguments and whose refusal is explain never
// remove an item: some calls may still be allowed. Resources have no
// arguments: a resource is listed when Evaluate would allow or ask for its
// resources/read. Visible does not check OAuth scopes (Result.Scopes): an
// item whose allow rule requires a scope the token lacks is still listed.
//
// Cost: a tool or prompt item allocates nothing; its answer is remembered
// by the policy (bounded) when no rule of its kind has a `when` that reads
// claims, so a catalog listed again costs a lookup per item
// (visiblecache.go says why the answer is the same).
func (p *Policy) Visible(in *Input) Visibility {
	if in == nil {
		return Visibility{Decision: Deny, Cause: CauseInvalidInput}
	}
	switch in.Method {
	case methodResRead:
		c := *in
		c.Args, c.LazyArgs, c.URIs = nil, nil, nil
		res := p.evaluate(&c)
		return Visibility{Visible: res.Decision != Deny, Decision: res.Decision, Cause: res.Cause, RuleID: res.RuleID}
	case methodToolsCall, methodPromptsGet:
	default:
		return Visibility{Decision: Deny, Cause: CauseInvalidInput}
	}
	key, cacheable := p.visCache.key(in)
	if cacheable {
		if v, ok := p.visCache.get(key); ok {
			return v
		}
	}
	vs := visiblePool.Get().(*visibleState)
	v := p.visibleItem(vs, in)
	*vs = visibleState{} // keeps no claims alive in the pool
	visiblePool.Put(vs)
	if cacheable {
		p.visCache.put(key, v)
	}
	return v
}

// visibleState is what deciding one tool or prompt item needs, reused
// through visiblePool so an item costs no allocation: a list of n items
// would otherwise allocate n requests.
type visibleState struct {
	r   request
	unk unknownArgs
}

var visiblePool = sync.Pool{New: func() any { return new(visibleState) }}

// visibleItem is Visible of a tools/call or prompts/get in, with vs zero.
func (p *Policy) visibleItem(vs *visibleState, in *Input) Visibility {
	r, unk := &vs.r, &vs.unk
	if cause := r.init(in); cause != 0 {
		return Visibility{Decision: Deny, Cause: cause}
	}
	r.trusted = p.trusted[in.Server] // as Policy.newRequest: declared annotations apply
	r.own.Args, r.own.LazyArgs, r.own.URIs = nil, unk, nil
	// eval reports whether ru could match (maybe) and whether it matches
	// whatever the arguments (surely).
	eval := func(ru *rule) (maybe, surely bool) {
		if !ru.patternMatches(r) {
			return false, false
		}
		if ru.when == nil {
			return true, true
		}
		unk.touched = false
		r.args = nil // no member memoized from another rule's evaluation
		ok, _ := evalWhen(ru.when, r, ru.decision != Allow)
		if unk.touched {
			return true, false
		}
		return ok, ok
	}
	for _, ru := range p.rules[Deny][r.kind] {
		maybe, surely := eval(ru)
		if surely {
			return Visibility{Decision: Deny, Cause: CauseRule, RuleID: ru.id}
		}
		refusal := p.refusal
		if ru.refusal != nil {
			refusal = *ru.refusal
		}
		if maybe && refusal == RefusalConceal {
			return Visibility{Decision: Deny, Cause: CauseRule, RuleID: ru.id, Concealed: true}
		}
	}
	if v, ok := p.visiblePin(r, eval); ok {
		return v
	}
	for _, d := range [...]Decision{Ask, Allow} {
		for _, ru := range p.rules[d][r.kind] {
			if maybe, _ := eval(ru); maybe {
				return Visibility{Visible: true, Decision: d, Cause: CauseRule, RuleID: ru.id}
			}
		}
	}
	return Visibility{Visible: p.def != Deny, Decision: p.def, Cause: CauseDefault}
}

// visiblePin is pinStep for a list item: what the pin step decides a call
// of it by, with eval's "could match" for the literal allow rules that
// admit a tool not listed. ok is false when the pin step does not decide.
func (p *Policy) visiblePin(r *request, eval func(*rule) (maybe, surely bool)) (v Visibility, ok bool) {
	d := r.in.Definition
	if d == nil || r.kind != kindTool || p.pinMode == PinOff {
		return Visibility{}, false
	}
	switch {
	case !d.Listed && !p.allowNewTools:
		for _, ru := range p.rules[Allow][kindTool] {
			if !ru.literal {
				continue
			}
			if maybe, _ := eval(ru); maybe {
				return Visibility{Visible: true, Decision: Allow, Cause: CauseRule, RuleID: ru.id}, true
			}
		}
		return Visibility{Decision: Deny, Cause: CauseToolNotListed}, true
	case d.Listed && d.Changed:
		return Visibility{Decision: Ask, Cause: CauseDefinitionChanged}, true
	}
	return Visibility{}, false
}

// templateValue is the value every variable of a URI template is expanded
// to when the template is decided: one plain segment character.
const templateValue = "x"

// ExpandTemplate expands an RFC 6570 URI template (a
// resources/templates/list item's uriTemplate) with every expression
// ("{name}", "{+path}", "{/a,b}", …) replaced by the one value "x", so the
// template can be decided as a resources/read of one URI it stands for
// (Visible). ok is false for an unbalanced '{' or '}', which the caller
// refuses. This is one sample of the URIs a template names, not all of them:
// a template is listed when that URI could be read.
func ExpandTemplate(tmpl string) (uri string, ok bool) {
	b := make([]byte, 0, len(tmpl))
	for i := 0; i < len(tmpl); i++ {
		switch tmpl[i] {
		case '{':
			j := i + 1
			for j < len(tmpl) && tmpl[j] != '}' && tmpl[j] != '{' {
				j++
			}
			if j == len(tmpl) || tmpl[j] != '}' || j == i+1 {
				return "", false
			}
			b = append(b, templateValue...)
			i = j
		case '}':
			return "", false
		default:
			b = append(b, tmpl[i])
		}
	}
	return string(b), true
}
