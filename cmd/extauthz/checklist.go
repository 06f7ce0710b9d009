package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// listItem is one item of a captured list answer and how it was decided.
type listItem struct {
	kind       listfilter.Kind
	key        string
	vis        policy.Visibility
	superseded bool // definition_changed against tooldef-v1 pins only
}

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
// (decision.ItemDefinition): as a tools/call of each right after the list
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
	var items []listItem
	errTasks := errors.New("tasks/list answers depend on the task store: check them on a running service")
	ctx := context.Background() // an in-memory store: nothing to wait for
	pinned := lp.Policy.PinMode() != policy.PinOff
	var defs *toolpin.Observations
	if pinned {
		// The seam's observations, in a store of this run's own: no
		// session, so the server's scope.
		defs = &toolpin.Observations{Store: state.NewMemory(math.MaxInt, nil)}
	}
	tools := 0
	keep := func(k listfilter.Kind, key string, raw []byte) (bool, error) {
		if k == listfilter.Tasks {
			return false, errTasks
		}
		in, ok := decision.ItemInput(k, key, server, claims)
		if !ok {
			items = append(items, listItem{kind: k, key: key, vis: policy.Visibility{Decision: policy.Deny, Cause: policy.CauseInvalidInput}})
			return false, nil
		}
		def, err := decision.ItemDefinition(ctx, lp.Policy, defs, server, server, k, key)
		if err != nil {
			return false, err
		}
		in.Definition = def
		v := lp.Policy.Visible(in)
		items = append(items, listItem{kind: k, key: key, vis: v, superseded: def != nil && def.Superseded})
		if k == listfilter.Tools {
			tools++
		}
		return v.Visible, nil
	}
	opt := listfilter.Options{Limits: mcpparse.Limits{MaxBytes: 64 << 20, MaxKeys: 1 << 22, MaxElements: 1 << 24, MaxStringLen: 16 << 20}, Keep: keep}
	if pinned {
		opt.Observe = func(k listfilter.Kind, key string, item []byte) error {
			if k != listfilter.Tools {
				return nil
			}
			return defs.Observe(ctx, server, decision.ItemObserved(key, item, nil))
		}
	}
	var ferr error
	bodies := 0
	filter := func(body []byte) error {
		res, err := listfilter.Filter(body, opt)
		if err != nil {
			return err
		}
		if res.Lists == 0 && carriesResult(body, opt.Limits) {
			return errNoList
		}
		return nil
	}
	if isSSE(in) {
		f := sse.New(len(in) + 1)
		onEvent := func(ev *sse.Event) error {
			if len(bytes.TrimSpace(ev.Go.Data)) == 0 && len(bytes.TrimSpace(ev.TS.Data)) == 0 {
				return nil
			}
			data := ev.TS.Data
			if len(bytes.TrimSpace(ev.Go.Data)) > 0 {
				data = ev.Go.Data
			}
			bodies++
			if err := filter(data); err != nil && ferr == nil {
				ferr = err
			}
			return nil
		}
		if err := f.Write(in, onEvent); err != nil {
			ferr = err
		} else if err := f.Close(onEvent); err != nil {
			ferr = err
		}
	} else {
		bodies = 1
		ferr = filter(in)
	}
	switch {
	case errors.Is(ferr, errTasks):
		return &exitError{code: 2, err: fmt.Errorf("check: %w", ferr)}
	case ferr != nil:
		fmt.Fprintf(stdout, "refused: the seam would answer a JSON-RPC error instead of this list (response_unfilterable): %v\n", ferr)
		return &exitError{code: 1}
	case bodies == 0:
		return &exitError{code: 2, err: errors.New("check: --list-response: the input holds no JSON-RPC answer (an SSE stream without data)")}
	}
	kept := 0
	for _, it := range items {
		if it.vis.Visible {
			kept++
		}
	}
	fmt.Fprintf(stdout, "%s on %s sees %d of %s (%s)\n", sub, server, kept, plural(len(items), "item"), plural(bodies, "answer"))
	sort.SliceStable(items, func(i, j int) bool { return items[i].kind < items[j].kind })
	for _, it := range items {
		verdict := "keep  "
		if !it.vis.Visible {
			verdict = "remove"
		}
		line := fmt.Sprintf("  %s %-18s %s", verdict, it.kind.String(), it.key)
		if explain || !it.vis.Visible {
			line += "  (" + why(it.vis, it.superseded) + ")"
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

// isSSE reports whether b looks like an event stream rather than JSON.
func isSSE(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	t := strings.TrimLeft(string(b[:min(len(b), 64)]), " \t\r\n")
	for _, p := range []string{"data:", "event:", "id:", ":", "retry:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// errNoList is a result without a list: for a list request the seam
// refuses it (listfilter.Options.Method), whatever else it holds.
var errNoList = errors.New("the result carries no list (tools, prompts, resources or resourceTemplates), which the seam refuses as the answer to a list request: it cannot tell what the client would read")

// carriesResult reports whether body (strict JSON-RPC, as listfilter.Filter
// accepted it) holds a response with a result.
func carriesResult(body []byte, lim mcpparse.Limits) bool {
	parsed, err := mcpparse.Parse(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), mcpparse.ParseOptions{Limits: lim, AllowBatch: true})
	if err != nil {
		return false
	}
	for _, m := range parsed.Messages {
		if m.Kind == mcpparse.KindResponse && m.Result != nil {
			return true
		}
	}
	return false
}
