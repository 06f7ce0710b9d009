package extproc

import (
	"context"
	"errors"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// ItemDefinition is the definition a tools/list item is decided with
// (policy.Input.Definition for Visible): what Check's pin step would read
// for a tools/call of the tool right after this list was observed, that is
// defs.LookupScope of server's tool in scope, the pin scope the item was
// observed in (toolpin.Scope, or toolpin.ScopeOfHash of Check's session
// hash). listfilter calls Observe for an item before Keep, so the item's
// own definition is in the store by then, with whatever else the scope
// holds: the baseline (pins, or the first one observed), another
// definition observed within the observation TTL, by this replica or
// another. Visible then removes an item whose call the pin step would
// refuse (definition_changed, tool_not_listed), and annotation rules see
// the hints a call would: the list never shows a tool its next call is
// refused for, nor a changed definition to the model.
//
// nil, nil unless k is Tools and pinning is on. Errors: pinning on with
// defs nil, and defs' (a store that cannot be read, a scope that is not
// server's): the caller refuses the list (fail closed). One store read
// (state.Reader.GetMany) per tools item.
func ItemDefinition(ctx context.Context, pol *policy.Policy, defs *toolpin.Observations, server, scope string, k listfilter.Kind, tool string) (*policy.ToolDefinition, error) {
	if k != listfilter.Tools || pol == nil || pol.PinMode() == policy.PinOff {
		return nil, nil
	}
	if defs == nil {
		return nil, errors.New("pin_mode is on but tool definitions cannot be read here")
	}
	return defs.LookupScope(ctx, pol, server, scope, tool)
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
