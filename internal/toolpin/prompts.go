package toolpin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Prompts' declared arguments (issue 30). A prompts/list answer declares,
// per prompt, its arguments (MCP 2025-06-18 through 2026-07-28, schema
// "Prompt": arguments [{name, description, required}]); prompts/get
// sends them as a map of strings. The seam records, per pin scope and
// prompt, the JSON Schema those declarations amount to, for Check's
// argument validation: PromptArgumentsSchema builds it,
// ObservePromptArguments keeps the latest one listed within TTL (a prompt
// listed again with other arguments replaces it), PromptArguments reads
// it. Prompts are not fingerprinted or pinned: a changed prompt is not
// definition_changed.

// ErrNotAPrompt is returned for a value that is not a JSON object with a
// string name, or whose arguments are not a list of objects with a
// string name and an optional boolean required.
var ErrNotAPrompt = errors.New("toolpin: not a prompt definition")

// PromptArgumentsSchema returns the name of the Prompt object def and the
// RFC 8785 form of the JSON Schema of its arguments:
//
//	{"additionalProperties":false,"properties":{"<name>":{"type":"string"},…},
//	 "required":["<name>",…],"type":"object"}
//
// (required in name order, omitted when none). Errors: def is not strict
// JSON (mcpparse.Canonicalize), ErrNotAPrompt.
func PromptArgumentsSchema(def []byte) (name string, schema []byte, err error) {
	canon, err := mcpparse.Canonicalize(def, mcpparse.Limits{})
	if err != nil {
		return "", nil, fmt.Errorf("toolpin: %w", err)
	}
	var p struct {
		Name      *string `json:"name"`
		Arguments []struct {
			Name     *string `json:"name"`
			Required *bool   `json:"required"`
		} `json:"arguments"`
	}
	if len(canon) == 0 || canon[0] != '{' || json.Unmarshal(canon, &p) != nil || p.Name == nil || *p.Name == "" {
		return "", nil, ErrNotAPrompt
	}
	props := map[string]any{}
	var required []string
	for _, a := range p.Arguments {
		if a.Name == nil || *a.Name == "" {
			return "", nil, ErrNotAPrompt
		}
		if _, dup := props[*a.Name]; dup {
			return "", nil, ErrNotAPrompt
		}
		props[*a.Name] = map[string]any{"type": "string"}
		if a.Required != nil && *a.Required {
			required = append(required, *a.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", nil, err
	}
	if schema, err = mcpparse.Canonicalize(b, mcpparse.Limits{}); err != nil {
		return "", nil, fmt.Errorf("toolpin: %w", err)
	}
	return *p.Name, schema, nil
}

// promptKey is the state store key of prompt's arguments schema in scope.
func promptKey(scope, prompt string) string {
	return "promptdef-args:" + strconv.Itoa(len(scope)) + ":" + scope + ":" + prompt
}

// ObservePromptArguments records that a prompts/list answer in scope
// (Scope) showed prompt with arguments schema (PromptArgumentsSchema),
// for TTL: the latest listed replaces an earlier one (released, then
// claimed again: two replicas listing two versions at once leave one of
// them). Errors wrap state.ErrUnavailable.
func (o Observations) ObservePromptArguments(ctx context.Context, scope, prompt string, schema []byte) error {
	now := o.now()
	rk := "p:" + strconv.Itoa(len(scope)) + ":" + scope + ":" + strconv.Itoa(len(prompt)) + ":" + prompt + ":" + string(schema)
	if o.Recent.seen(rk, now) {
		return nil
	}
	key, val := promptKey(scope, prompt), string(schema)
	for range 2 {
		claimed, prev, err := o.Store.Claim(ctx, key, val, o.ttl())
		if err != nil {
			return err
		}
		if claimed || prev == val {
			o.Recent.add(rk, now, o.ttl())
			return nil
		}
		if err := o.Store.Release(ctx, key, prev); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: toolpin: prompt %q: another definition claimed meanwhile", state.ErrUnavailable, prompt)
}

// PromptArguments returns the arguments schema last recorded within TTL
// for server's prompt in the pin scope of session under p (as Lookup
// scopes tools); found false when none. nil, false when pin_mode is off
// (nothing is observed then).
func (o Observations) PromptArguments(ctx context.Context, p *policy.Policy, server, session, prompt string) (schema []byte, found bool, err error) {
	if p.PinMode() == policy.PinOff {
		return nil, false, nil
	}
	vals, ok, err := o.Store.GetMany(ctx, promptKey(Scope(p, server, session), prompt))
	if err != nil {
		return nil, false, err
	}
	if len(vals) != 1 || len(ok) != 1 {
		return nil, false, fmt.Errorf("%w: toolpin: %d answers for 1 key", state.ErrUnavailable, len(vals))
	}
	if !ok[0] {
		return nil, false, nil
	}
	return []byte(vals[0]), true, nil
}
