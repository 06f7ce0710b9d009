package policy

import "cel.dev/cel-go/cel"

// rule is one compiled rule.
type rule struct {
	id       string
	decision Decision
	kind     kind
	// loose rules (deny, ask) compare loose forms; allow rules the exact
	// text.
	loose bool
	// server and name are used by tool, resource and prompt rules; name
	// alone by method rules; reserved-word rules use neither.
	server, name glob
	uri          *uriPattern // resource rules
	when         cel.Program // nil: no condition
	// scopes are the OAuth scopes a token needs when this rule decides
	// (allow and ask rules only); nil needs none.
	scopes []string
	// refusal is this rule's refusal style; nil defers to the policy's.
	refusal *Refusal
	shadow  bool // reported, never decides
	// literal: server and name have no wildcard (a tool rule that names
	// its server and tool exactly), the only allow rules that admit a tool
	// never listed (pins.go).
	literal bool
	// hints are the rule's `annotations` (pins.go); nil tests none.
	hints []hintMatch
	// recoverResults: a retry of a call this rule allowed, under the same
	// idempotency key and request digest, is answered from the recorded
	// result (Result.RecoverResults).
	recoverResults bool

	// Source, for Explain.
	line, col int    // of the rule in the file
	pattern   string // the match or method text
	whenSrc   string // the when expression; "" when none
}

// request is one Input being evaluated, with the forms rules compare,
// computed at most once.
type request struct {
	in   *Input // &own
	own  Input
	kind kind
	name string // tool name, prompt name, normal-form URI or method
	res  resourceTarget

	looseDone              bool
	looseServer, looseName string

	args    *lazyArgs // CEL's `args` from in.LazyArgs: &argsVal once first used
	argsVal lazyArgs

	whenErrs []WhenError // `when` expressions that failed, in evaluation order

	trusted bool // in.Server is in trusted_servers: declared annotations apply
}

func (r *request) loose() (server, name string) {
	if !r.looseDone {
		r.looseServer = loose(r.in.Server)
		if r.kind != kindResource {
			r.looseName = loose(r.name)
		}
		r.looseDone = true
	}
	return r.looseServer, r.looseName
}

// matches reports whether ru matches r, `when` included.
func (ru *rule) matches(r *request) bool {
	if !ru.patternMatches(r) {
		return false
	}
	if ru.when == nil {
		return true
	}
	ok, err := evalWhen(ru.when, r, ru.decision != Allow)
	if err != nil {
		r.whenErrs = append(r.whenErrs, WhenError{RuleID: ru.id, Err: err})
	}
	return ok
}

// patternMatches reports whether ru's kind and pattern match r, `when` aside.
func (ru *rule) patternMatches(r *request) bool {
	if ru.kind != r.kind {
		return false
	}
	switch r.kind {
	case kindResource:
		server := r.in.Server
		if ru.loose {
			server, _ = r.loose()
		}
		if !ru.server.match(server) || !ru.uri.match(&r.res) {
			return false
		}
	case kindTool, kindPrompt:
		server, name := r.in.Server, r.name
		if ru.loose {
			server, name = r.loose()
		}
		return ru.server.match(server) && ru.name.match(name) && r.hintsMatch(ru.hints)
	case kindMethod:
		return ru.name.match(r.name)
	}
	return true
}
