package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extproc"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// listItem is one item of a captured list answer and how it was decided.
type listItem struct {
	kind listfilter.Kind
	key  string
	vis  policy.Visibility
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
	keep := func(k listfilter.Kind, key string, raw []byte) (bool, error) {
		if k == listfilter.Tasks {
			return false, errTasks
		}
		in, ok := extproc.ItemInput(k, key, server, claims)
		if !ok {
			items = append(items, listItem{k, key, policy.Visibility{Decision: policy.Deny, Cause: policy.CauseInvalidInput}})
			return false, nil
		}
		in.Definition = extproc.ItemDefinition(lp.Policy, k, raw, nil)
		v := lp.Policy.Visible(in)
		items = append(items, listItem{k, key, v})
		return v.Visible, nil
	}
	opt := listfilter.Options{Limits: mcpparse.Limits{MaxBytes: 64 << 20, MaxKeys: 1 << 22, MaxElements: 1 << 24, MaxStringLen: 16 << 20}, Keep: keep}
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
			line += "  (" + why(it.vis) + ")"
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// why says what decided a visibility.
func why(v policy.Visibility) string {
	switch {
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
