package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extproc"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// runCheckList prints what principal sub (with claims) would see of a
// captured list answer in (a JSON-RPC body, or an SSE stream of them) under
// the policy file for server, as the response seam filters it: each item
// kept or removed and, with explain, the rule or default that decided it.
// Task lists need the task store and are refused here (exit 2). Exit 0 when
// the seam would pass the filtered answer; 1 when it would replace it with
// a JSON-RPC error (response_unfilterable): not a strict JSON-RPC message,
// duplicate items, or a result that carries no list, which the seam
// refuses for a list request since it cannot tell what the client would
// read; 2 when the policy cannot be read or the input holds no answer.
//
// With pinning on, tools are decided as the seam decides them
// (extproc.CheckList, decision.ListItems): as a tools/call of each right after the list
// was observed, here into a state store of this run's own, empty before
// the first answer (there is no live store offline): each tool is observed
// as the seam observes it, then decided with what the store then holds
// and the policy's pins. A running service's store may hold more (a
// trust-on-first-use baseline of an earlier list, another definition seen
// within the observation TTL), under which the seam removes a tool kept
// here; the output says so.
func runCheckList(policyFile, server, sub string, claims map[string]any, explain bool, in []byte, stdout io.Writer) error {
	src, err := os.ReadFile(policyFile)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("check: %w", err)}
	}
	lp, err := decision.CompilePolicy(policyFile, src)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("check: %w", err)}
	}
	if len(bytes.TrimSpace(in)) == 0 {
		return &exitError{code: 2, err: errors.New("check: --list-response: the input is empty (the seam passes an empty answer: there is no list to filter)")}
	}
	pol := decision.PolicyOf(lp.Policy)
	pinned := decision.Pinned(pol)
	res, ferr := extproc.CheckList(context.Background(), pol, server, claims, in)
	items, bodies, tools := res.Items, res.Answers, res.Tools
	switch {
	case errors.Is(ferr, extproc.ErrTasksOffline):
		return &exitError{code: 2, err: fmt.Errorf("check: %w", ferr)}
	case ferr != nil:
		fmt.Fprintf(stdout, "refused: the seam would answer a JSON-RPC error instead of this list (response_unfilterable): %v\n", ferr)
		return &exitError{code: 1}
	case bodies == 0:
		return &exitError{code: 2, err: errors.New("check: --list-response: the input holds no JSON-RPC answer (an SSE stream without data)")}
	}
	kept := 0
	for _, it := range items {
		if it.Visible {
			kept++
		}
	}
	fmt.Fprintf(stdout, "%s on %s sees %d of %s (%s)\n", sub, server, kept, plural(len(items), "item"), plural(bodies, "answer"))
	for _, it := range items {
		verdict := "keep  "
		if !it.Visible {
			verdict = "remove"
		}
		line := fmt.Sprintf("  %s %-18s %s", verdict, it.Kind, it.Key)
		if explain || !it.Visible {
			line += "  (" + why(it.Visibility, it.Definition != nil && it.Definition.Superseded) + ")"
		}
		fmt.Fprintln(stdout, line)
	}
	if pinned && tools > 0 {
		fmt.Fprintln(stdout, pinNote(lp.Policy.PinMode()))
	}
	return nil
}

// pinNote says what an offline check of tools cannot know under pinning:
// the live store's observations.
func pinNote(m policy.PinMode) string {
	base := "each tool's baseline is its pins, else (tofu) its definition in the first of these answers"
	if m == policy.PinStrict {
		base = "each tool's baseline is its pins"
	}
	return "pin_mode " + m.String() + ": tools decided as right after these answers were the first observed (no live state store offline: " + base +
		"); a running service's store may hold an earlier baseline or another definition seen within 24 h, under which the seam removes a tool kept here (definition_changed)"
}

// why says what decided a visibility; superseded: a changed definition
// whose pins are all tooldef-v1.
func why(v policy.Visibility, superseded bool) string {
	switch {
	case v.Cause == policy.CauseDefinitionChanged && superseded:
		return "definition_changed: its pins are tooldef-v1 fingerprints, which never match: review the definition and pin it again (extauthz pin prints its " + toolpin.Version + " fingerprint)"
	case v.Cause == policy.CauseDefinitionChanged:
		return "definition_changed: this definition is not in the tool's baseline (its pins; under tofu without pins, the first definition observed): a call needs an approval of it, and the seam does not list it"
	case v.Cause == policy.CauseToolNotListed:
		return "tool_not_listed: no allow rule names the tool literally"
	case v.Concealed:
		return "deny rule " + v.RuleID + " could refuse some calls, with refusal: conceal"
	case v.Cause == policy.CauseRule && v.Visible:
		return v.Decision.String() + " rule " + v.RuleID + " could match"
	case v.Cause == policy.CauseRule:
		return "deny rule " + v.RuleID + " matches every call"
	case v.Cause == policy.CauseDefault:
		return "no rule could match: default " + v.Decision.String()
	}
	return v.Cause.String()
}
