package extproc

import (
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// ItemDefinition is the definition a tools/list item declares, for
// policy.Input.Definition when Visible decides it: Listed, its fingerprint
// and declared annotations (none for one that is not strict JSON), so the
// policy's annotation rules see what they would for a call of that very
// definition. nil (conservative annotations, as for a call with pinning
// off) unless k is Tools, pinning is on and some rule reads annotations
// (policy.ReadsAnnotations). cache may be nil.
func ItemDefinition(pol *policy.Policy, k listfilter.Kind, item []byte, cache *toolpin.Cache) *policy.ToolDefinition {
	if k != listfilter.Tools || pol == nil || pol.PinMode() == policy.PinOff || !pol.ReadsAnnotations() {
		return nil
	}
	d, err := toolpin.Parse(item, cache)
	if err != nil {
		return &policy.ToolDefinition{Listed: true, Fingerprint: toolpin.RawFingerprint(item)}
	}
	return &policy.ToolDefinition{Listed: true, Fingerprint: d.Fingerprint, Hints: d.Hints}
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
