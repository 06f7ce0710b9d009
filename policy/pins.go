package policy

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Tool definition pinning (issue 18; notes/RESPONSE-SEAM.md 5.6, 5.7).
//
// The response seam fingerprints every tool definition a tools/list shows
// (internal/toolpin) and records what it saw; the decider looks that up for
// each tools/call and hands it to Evaluate as Input.Definition. Precedence
// is then deny > pin > ask > allow > default: a deny rule still wins; a tool
// whose definition is not its baseline is CauseDefinitionChanged (an ask:
// only an approval of that very definition lifts it); a tool never listed
// is CauseToolNotListed unless an allow rule naming its server and tool
// literally allows it (or allow_new_tools is true). With pinning off (the
// default) Input.Definition is nil and none of this applies, so pins,
// trusted_servers and annotations (a rule's, or CEL's) are compile errors
// there (checkPinUses).

// PinMode is the policy's pin_mode: where a tool's baseline comes from.
type PinMode int

const (
	// PinOff: no pinning (the default).
	PinOff PinMode = iota
	// PinTOFU: the tool's pins when the policy lists some, else the first
	// fingerprint seen (trust on first use, kept in the state store).
	PinTOFU
	// PinStrict: only the policy's pins; a tool without pins is always
	// changed.
	PinStrict
)

// String returns "off", "tofu" or "strict".
func (m PinMode) String() string {
	switch m {
	case PinTOFU:
		return "tofu"
	case PinStrict:
		return "strict"
	}
	return "off"
}

// Hint is one declared tool annotation (MCP 2025-03-26 and later,
// ToolAnnotations): absent, true or false.
type Hint int8

const (
	HintAbsent Hint = iota
	HintTrue
	HintFalse
)

// Hints are a tool definition's declared behaviour hints.
type Hints struct{ ReadOnly, Destructive, Idempotent, OpenWorld Hint }

// ToolDefinition is what the response seam observed of the tool of a
// tools/call, for Input.Definition.
type ToolDefinition struct {
	// Listed: some tools/list of this server showed the tool.
	Listed bool
	// Changed: the observed fingerprint is not in the tool's baseline, or
	// two different fingerprints were observed.
	Changed bool
	// Fingerprint is the observed fingerprint ("tooldef-v2:sha256:…"), for
	// the log and for approvals; "" when not listed.
	Fingerprint string
	// Hints are the observed definition's declared annotations.
	Hints Hints
	// Superseded: Changed, and the baseline holds fingerprints of an
	// earlier version of the fingerprint only (tooldef-v1), which never
	// match an observed one: the tool stays changed until it is pinned
	// again. It decides nothing; it says why, for the denial's log line.
	Superseded bool
}

// annotationNames are the hints in the order of annotationValues.
var annotationNames = [4]string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// conservative is every hint at its worst case: not read-only, destructive,
// not idempotent, open world (the MCP defaults where absent, too).
var conservative = [4]bool{false, true, false, true}

// annotationValues are the hints rules see for r (CEL `annotations`, rule
// `annotations`): for a listed tool of a trusted server its declared
// values, MCP's defaults where absent, and destructive/idempotent read as
// false/true when it is read-only (they are meaningful only when it is not);
// for any other tool, and whenever the definition is unknown, conservative.
// They never come from the request.
func (r *request) annotationValues() [4]bool {
	d := r.in.Definition
	if d == nil || !d.Listed || !r.trusted || r.kind != kindTool {
		return conservative
	}
	h := d.Hints
	v := [4]bool{h.ReadOnly == HintTrue, h.Destructive != HintFalse, h.Idempotent == HintTrue, h.OpenWorld != HintFalse}
	if v[0] {
		v[1], v[2] = false, true
	}
	return v
}

// annotationMap is annotationValues as CEL's `annotations`.
func (r *request) annotationMap() map[string]bool {
	v := r.annotationValues()
	m := make(map[string]bool, len(v))
	for i, n := range annotationNames {
		m[n] = v[i]
	}
	return m
}

// hintMatch is one `annotations` member of a rule: hint i must be want.
type hintMatch struct {
	i    int
	want bool
}

// hintsMatch reports whether r's annotation values satisfy every one of hs.
func (r *request) hintsMatch(hs []hintMatch) bool {
	if len(hs) == 0 {
		return true
	}
	v := r.annotationValues()
	for _, h := range hs {
		if v[h.i] != h.want {
			return false
		}
	}
	return true
}

// pinStep decides a tools/call by its definition, between the deny and ask
// rules: CauseToolNotListed for a tool never listed (unless a literal allow
// rule, or allow_new_tools), CauseDefinitionChanged for a changed one. It
// reports false when the pin does not decide.
func (p *Policy) pinStep(r *request, res *Result, by **rule) bool {
	d := r.in.Definition
	if d == nil || r.kind != kindTool || p.pinMode == PinOff {
		return false
	}
	switch {
	case !d.Listed && !p.allowNewTools:
		for _, ru := range p.rules[Allow][kindTool] {
			if ru.literal && ru.matches(r) {
				*res = Result{Decision: Allow, Cause: CauseRule, RuleID: ru.id}
				*by = ru
				return true
			}
		}
		*res = Result{Decision: Deny, Cause: CauseToolNotListed}
		return true
	case d.Listed && d.Changed:
		*res = Result{Decision: Ask, Cause: CauseDefinitionChanged}
		return true
	}
	return false
}

// PinScope is the policy's pin_scope: whose tools/list answers a tool's
// observations and trust-on-first-use baseline are kept for.
type PinScope int

const (
	// PinScopeServer: one set per MCP server id, shared by every session
	// and replica (the default): a definition change between sessions is
	// caught too.
	PinScopeServer PinScope = iota
	// PinScopeSession: one set per server and Mcp-Session-Id (requests
	// without a session id fall back to the server's set): a change is
	// caught within the session that was shown the first definition, and
	// one service may decide for several servers behind one server id.
	PinScopeSession
)

// PinScope returns the policy's pin_scope.
func (p *Policy) PinScope() PinScope { return p.pinScope }

// compilePinScope reads `pin_scope`: server or session.
func (c *compiler) compilePinScope(n *yaml.Node) {
	s, ok := c.str(n, "", "pin_scope")
	if !ok {
		return
	}
	switch s {
	case "server":
		c.p.pinScope = PinScopeServer
	case "session":
		c.p.pinScope = PinScopeSession
	default:
		c.addf(n, "", "pin_scope must be server or session, not %q", s)
	}
}

// PinMode returns the policy's pin_mode.
func (p *Policy) PinMode() PinMode { return p.pinMode }

// Pins returns the fingerprints the policy approves for server's tool, nil
// when it lists none. The caller must not modify the slice.
func (p *Policy) Pins(server, tool string) []string { return p.pins[server][tool] }

// Trusted reports whether server is in trusted_servers: its tools' declared
// annotations apply.
func (p *Policy) Trusted(server string) bool { return p.trusted[server] }

// Settings that only pinning gives a meaning: with pin_mode off (the
// default) no tool definition is observed, so pins never match and every
// annotation is its conservative value (a read-only allow rule never
// matches). Compile refuses them rather than ignore them silently.
const (
	errPinsOff        = "pins need pin_mode: tofu or strict (with pinning off no tool definition is checked against them)"
	errTrustedOff     = "trusted_servers need pin_mode: tofu or strict: with pinning off every annotation is its conservative value"
	errAnnotationsOff = "annotations need pin_mode: tofu or strict: with pinning off every annotation is its conservative value"
)

// pinUse is one setting that needs pinning on, at its place in the file.
type pinUse struct {
	line, col int
	id, msg   string
}

// usePinning records that node n (a setting of rule id, "" for none) needs
// pinning on; a null or empty n does not.
func (c *compiler) usePinning(n *yaml.Node, id, msg string) {
	if n == nil || isNull(n) || (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) == 0 {
		return
	}
	c.pinUses = append(c.pinUses, pinUse{line: n.Line, col: n.Column, id: id, msg: msg})
}

// checkPinUses reports every recorded setting when pin_mode is off.
func (c *compiler) checkPinUses() {
	if c.p.pinMode != PinOff {
		return
	}
	for _, u := range c.pinUses {
		c.addAt(u.line, u.col, u.id, u.msg)
	}
}

// compilePins reads `pins`: server → tool → list of fingerprints.
func (c *compiler) compilePins(n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.addf(n, "", "pins must be a mapping of server ids to tools to lists of %s:sha256:… fingerprints", fingerprintVersion)
		return
	}
	c.p.pins = map[string]map[string][]string{}
	for _, sv := range c.fields(n, "", nil) {
		if sv.val.Kind != yaml.MappingNode {
			c.addf(sv.val, "", "pins.%s must be a mapping of tool names to lists of fingerprints", sv.key)
			continue
		}
		tools := map[string][]string{}
		for _, tv := range c.fields(sv.val, "", nil) {
			if tv.val.Kind != yaml.SequenceNode || len(tv.val.Content) == 0 {
				c.addf(tv.val, "", "pins.%s.%s must be a non-empty list of fingerprints", sv.key, tv.key)
				continue
			}
			var fps []string
			for _, item := range tv.val.Content {
				s, ok := c.str(item, "", "pins."+sv.key+"."+tv.key)
				if !ok {
					continue
				}
				if !validFingerprint(s) {
					c.addf(item, "", "pins.%s.%s: %q is not a %s:sha256:<64 lowercase hex> fingerprint (extauthz pin prints them)", sv.key, tv.key, s, fingerprintVersion)
					continue
				}
				fps = append(fps, s)
			}
			tools[tv.key] = fps
		}
		c.p.pins[sv.key] = tools
	}
}

// fingerprintVersion is internal/toolpin.Version, the tag of the
// fingerprints the response seam observes; fingerprintVersions are every
// tag a pin may carry: this one and the earlier ones (toolpin.Superseded),
// which compile so that a policy written before tooldef-v2 still loads,
// and never match (no observed fingerprint carries their tag): such a tool
// reads as changed until it is pinned again.
const fingerprintVersion = "tooldef-v2"

var fingerprintVersions = []string{"tooldef-v1", fingerprintVersion}

// validFingerprint reports whether s is one of fingerprintVersions,
// ":sha256:" and 64 lowercase hex digits (internal/toolpin.Valid and
// Superseded; policy stays free of toolpin).
func validFingerprint(s string) bool {
	n := -1
	for _, v := range fingerprintVersions {
		if strings.HasPrefix(s, v+":sha256:") {
			n = len(v + ":sha256:")
		}
	}
	if n < 0 || len(s) != n+64 {
		return false
	}
	for _, c := range []byte(s[n:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// compilePinMode reads `pin_mode`: off, tofu or strict.
func (c *compiler) compilePinMode(n *yaml.Node) {
	s, ok := c.str(n, "", "pin_mode")
	if !ok {
		return
	}
	switch s {
	case "off":
		c.p.pinMode = PinOff
	case "tofu":
		c.p.pinMode = PinTOFU
	case "strict":
		c.p.pinMode = PinStrict
	default:
		c.addf(n, "", "pin_mode must be off, tofu or strict, not %q", s)
	}
}

// compileTrusted reads `trusted_servers`: a list of server ids.
func (c *compiler) compileTrusted(n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.addf(n, "", "trusted_servers must be a list of MCP server ids")
		return
	}
	c.p.trusted = map[string]bool{}
	for _, item := range n.Content {
		if s, ok := c.str(item, "", "trusted_servers"); ok {
			if s == "" || c.p.trusted[s] {
				c.addf(item, "", "trusted_servers: %q is empty or listed twice", s)
				continue
			}
			c.p.trusted[s] = true
		}
	}
}

// compileHints reads a rule's `annotations`: a mapping of hint names to
// booleans.
func (c *compiler) compileHints(n *yaml.Node, id string) ([]hintMatch, bool) {
	if n.Kind != yaml.MappingNode {
		c.addf(n, id, "annotations must be a mapping of %s to true or false", strings.Join(annotationNames[:], ", "))
		return nil, false
	}
	var out []hintMatch
	ok := true
	for _, f := range c.fields(n, id, annotationNames[:]) {
		b, bok := c.boolean(f.val, id, "annotations."+f.key)
		if !bok {
			ok = false
			continue
		}
		for i, name := range annotationNames {
			if name == f.key {
				out = append(out, hintMatch{i, b})
			}
		}
	}
	return out, ok
}
