package decision

import (
	"context"
	"errors"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Policy is the compiled policy as the response seam holds it: opaque (a
// struct around policy.Policy, without its methods, that no package but
// this one can convert a *policy.Policy into or take apart), so extproc
// takes it from its configuration and hands it back to the core
// (ListItems, Pinned, PinScope) and cannot evaluate it itself. PolicyOf
// makes one. The zero Policy holds no policy: the core treats it as nil.
type Policy struct{ p *policy.Policy }

// PolicyOf is p as the seam holds it (nil for nil): one small allocation,
// no copy of the policy.
func PolicyOf(p *policy.Policy) *Policy {
	if p == nil {
		return nil
	}
	return &Policy{p: p}
}

// compiled is pol as the policy package's value (nil for a nil or zero
// pol).
func (pol *Policy) compiled() *policy.Policy {
	if pol == nil {
		return nil
	}
	return pol.p
}

// Pinned reports whether pol pins tool definitions (pin_mode tofu or
// strict); false for a nil policy.
func Pinned(pol *Policy) bool {
	p := pol.compiled()
	return p != nil && p.PinMode() != policy.PinOff
}

// PinScope is the pin scope a list answer of server is observed and
// decided in (ListItems.Scope), under pol's pin_scope: of session (the
// request's toolpin.Session, "" for none) when known, else of Check's
// session hash (metadata member "session"; toolpin.ScopeOfHash names the
// same scope), so a definition seen on any route is recorded in its
// session. It does not check the hash's form (toolpin.ScopeOfHash).
func PinScope(pol *Policy, server, session, sessionHash string) string {
	if session == "" && sessionHash != "" {
		return toolpin.ScopeOfHash(pol.compiled(), server, sessionHash)
	}
	return toolpin.Scope(pol.compiled(), server, session)
}

// ListItems answers, for the items of the list answers one response
// carries, whether Principal may see each (MCP 2025-11-25 tools/list,
// prompts/list, resources/list, resources/templates/list, tasks/list): a
// tool, prompt, resource or template as its call would be decided
// (policy.Visible of ItemInput), with the pin state and hints Check's pin
// step would read for that call right after the list was observed
// (ItemDefinitions); a task when the task store binds it to Principal.
//
// One ListItems serves one response, its items decided one at a time in
// list order (MaySee), each list of tools prepared whole first (Prepare).
// It is not safe for concurrent use. Fields are set by the caller and not
// changed while deciding.
type ListItems struct {
	// Policy is the live policy; nil refuses every item but tasks (an
	// error: the caller refuses the list).
	Policy *Policy
	// Definitions holds the observed tool definitions; nil with pinning on
	// refuses every tools list (an error).
	Definitions *toolpin.Observations
	// Tasks binds task ids; nil refuses every tasks list (an error).
	Tasks TaskOwners
	// Server is the MCP server's name; Scope the pin scope the list is
	// observed in (toolpin.Scope or toolpin.ScopeOfHash).
	Server, Scope string
	// Principal is the principal a task must be bound to; Claims the
	// token's claims `when` expressions see (nil: an empty map).
	Principal string
	Claims    map[string]any

	item policy.Input // reused: one item at a time
	defs listDefinitions
}

// ItemDecision is what MaySee decided of one list item.
type ItemDecision struct {
	// Visibility is policy.Visible's answer; for an item that is not
	// decided as a call (a template that does not expand) Deny with
	// CauseInvalidInput; for a task, Visible alone (bound to the
	// principal), the other fields zero.
	policy.Visibility
	// Definition is the pin state and hints the item's next tools/call
	// would be decided with (Check's pin step); nil but for a tool with
	// pinning on.
	Definition *policy.ToolDefinition
}

// Prepare reads the pin state of a list of kind k whose items are keys
// (as listfilter's Options.Prepare hands them over, after the list was
// observed) in one store read (ItemDefinitions), replacing the previous
// list's. Nothing to read but for tools with pinning on. Errors are
// ItemDefinitions': the caller refuses the list.
func (l *ListItems) Prepare(ctx context.Context, k listfilter.Kind, keys []string) error {
	return l.defs.read(ctx, l.Policy.compiled(), l.Definitions, l.Server, l.Scope, k, keys)
}

// MaySee decides whether the principal may see the item of kind k named
// key (a tool's or prompt's name, a resource's URI, a template's URI
// template, a task's id). Errors, on which the caller refuses the list
// (fail closed): no policy (no task store, for a task), a tools item with
// pinning on that Prepare did not prepare or that comes out of the list's
// order, and the task store's.
func (l *ListItems) MaySee(ctx context.Context, k listfilter.Kind, key string) (ItemDecision, error) {
	if k == listfilter.Tasks {
		if l.Tasks == nil {
			return ItemDecision{}, errors.New("no task store")
		}
		owner, found, err := l.Tasks.Owner(ctx, l.Server, key)
		return ItemDecision{Visibility: policy.Visibility{Visible: found && owner == l.Principal}}, err
	}
	if l.Policy.compiled() == nil { // nil, or a zero Policy
		return ItemDecision{}, errors.New("no policy")
	}
	if !itemInput(&l.item, k, key, l.Server, l.Claims) {
		return ItemDecision{Visibility: policy.Visibility{Decision: policy.Deny, Cause: policy.CauseInvalidInput}}, nil
	}
	d, err := l.defs.next(l.Policy.compiled(), k, key)
	if err != nil {
		return ItemDecision{}, err
	}
	l.item.Definition = d
	return ItemDecision{Visibility: l.Policy.compiled().Visible(&l.item), Definition: d}, nil
}

// ItemDefinitions are the definitions the items of one tools/list are
// decided with (policy.Input.Definition for Visible): defs[i] is what
// Check's pin step would read for a tools/call of keys[i] right after
// this list was observed (keys as listfilter's Options.Prepare hands them
// over), that is defs.LookupScope of server's tool in scope, the pin scope
// the list was observed in (toolpin.Scope, or toolpin.ScopeOfHash of
// Check's session hash), read in one store read
// (toolpin.Observations.LookupScopeMany: one state.Reader.GetMany of
// every key of every tool of the list). listfilter calls Observe for every
// item of a list before Prepare, so each item's own definition is in the
// store by then, with whatever else the scope holds: the baseline (pins,
// or the first one observed), another definition observed within the
// observation TTL, by this replica or another. Visible then removes an
// item whose call the pin step would refuse (definition_changed,
// tool_not_listed), and annotation rules see the hints a call would: the
// list never shows a tool its next call is refused for, nor a changed
// definition to the model.
//
// nil, nil unless k is Tools and pinning is on. Errors: pinning on with
// defs nil, and defs' (a store that cannot be read, a scope that is not
// server's): the caller refuses the list (fail closed).
func ItemDefinitions(ctx context.Context, pol *policy.Policy, defs *toolpin.Observations, server, scope string, k listfilter.Kind, keys []string) ([]policy.ToolDefinition, error) {
	if k != listfilter.Tools || pol == nil || pol.PinMode() == policy.PinOff {
		return nil, nil
	}
	if defs == nil {
		return nil, errors.New("pin_mode is on but tool definitions cannot be read here")
	}
	return defs.LookupScopeMany(ctx, pol, server, scope, keys)
}

// listDefinitions holds what the items of the list being decided are
// decided with: read for the whole list when listfilter prepares it
// (read), taken item by item as they are decided, in the list's order
// (next).
type listDefinitions struct {
	keys []string
	defs []policy.ToolDefinition
	at   int
}

// read reads the definitions of the list of kind k whose items are keys
// (ItemDefinitions), replacing the previous list's.
func (l *listDefinitions) read(ctx context.Context, pol *policy.Policy, defs *toolpin.Observations, server, scope string, k listfilter.Kind, keys []string) error {
	*l = listDefinitions{}
	d, err := ItemDefinitions(ctx, pol, defs, server, scope, k, keys)
	if err != nil {
		return err
	}
	l.keys, l.defs = keys, d
	return nil
}

// next returns the definition of the list's next item, key of kind k,
// under pol: nil, nil unless k is Tools and pinning is on. A tools item
// that read did not prepare, or out of the list's order, is an error (the
// list is refused), never decided without its pin state.
func (l *listDefinitions) next(pol *policy.Policy, k listfilter.Kind, key string) (*policy.ToolDefinition, error) {
	if k != listfilter.Tools || pol == nil || pol.PinMode() == policy.PinOff {
		return nil, nil
	}
	if l.at >= len(l.defs) || l.at >= len(l.keys) || l.keys[l.at] != key {
		return nil, errors.New("a tools item decided without its list's pin state")
	}
	l.at++
	return &l.defs[l.at-1], nil
}

// ItemObserved is what the response seam records of a tools/list item
// (toolpin.Observations.Observe) whose name is key: toolpin.Parse's
// Definition of its bytes, or, for a definition Parse refuses (not strict
// JSON, over the fingerprint's limits), toolpin.RawFingerprint of its bytes
// under key, Raw, with no hints (every annotation at its worst case).
// cache may be nil.
func ItemObserved(key string, item []byte, cache *toolpin.Cache) toolpin.Definition {
	d, err := toolpin.Parse(item, cache)
	if err != nil {
		return toolpin.Definition{Name: key, Fingerprint: toolpin.RawFingerprint(item), Raw: true}
	}
	return d
}

// ItemInput is the call a list item is decided as (policy.Visible): a tool
// as tools/call of its name, a prompt as prompts/get, a resource as
// resources/read of its URI, a template as resources/read of its
// expansion (policy.ExpandTemplate). ok is false for a template that does
// not expand (the item is removed) and for tasks, which the task store
// decides.
func ItemInput(k listfilter.Kind, key, server string, claims map[string]any) (in *policy.Input, ok bool) {
	in = new(policy.Input)
	if !itemInput(in, k, key, server, claims) {
		return nil, false
	}
	return in, true
}

// itemInput is ItemInput into *in, which it overwrites whole.
func itemInput(in *policy.Input, k listfilter.Kind, key, server string, claims map[string]any) bool {
	*in = policy.Input{Op: policy.OpRequest, Server: server, Claims: claims}
	switch k {
	case listfilter.Tools:
		in.Method, in.Tool = mcpmethod.ToolsCall, key
	case listfilter.Prompts:
		in.Method, in.Prompt = mcpmethod.PromptsGet, key
	case listfilter.Resources:
		in.Method, in.URI = mcpmethod.ResourcesRead, key
	case listfilter.ResourceTemplates:
		uri, ok := policy.ExpandTemplate(key)
		if !ok {
			return false
		}
		in.Method, in.URI = mcpmethod.ResourcesRead, uri
	default:
		return false
	}
	return true
}
