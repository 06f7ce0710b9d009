package extproc

import (
	"bytes"
	"context"
	"errors"
	"math"
	"sort"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// ListItem is one item of a captured list answer as CheckList decided it.
type ListItem struct {
	// Kind is the list's member: "tools", "prompts", "resources" or
	// "resourceTemplates"; Key the item's name, URI or URI template.
	Kind, Key string
	decision.ItemDecision
}

// ListCheck is what CheckList read of a captured answer.
type ListCheck struct {
	// Items are every item of every list read, ordered by kind (tools,
	// prompts, resources, templates), in the answer's order within one.
	Items []ListItem
	// Answers is the number of JSON-RPC bodies read (one for JSON, one per
	// SSE event with data); Tools the number of tools items.
	Answers, Tools int
}

// ErrTasksOffline is CheckList's error for a tasks/list answer: its items
// are decided by the task store, which an offline check does not have.
var ErrTasksOffline = errors.New("tasks/list answers depend on the task store: check them on a running service")

// errNoList is a result without a list: for a list request the seam
// refuses it (listfilter.Options.Method), whatever else it holds.
var errNoList = errors.New("the result carries no list (tools, prompts, resources or resourceTemplates), which the seam refuses as the answer to a list request: it cannot tell what the client would read")

// checkListLimits bound one captured body: far above the seam's (the
// service's MaxBody), since the input is the author's own file.
var checkListLimits = mcpparse.Limits{MaxBytes: 64 << 20, MaxKeys: 1 << 22, MaxElements: 1 << 24, MaxStringLen: 16 << 20}

// CheckList decides a captured list answer in (a JSON-RPC body, or an SSE
// stream of them) for a principal with claims on server under pol, with
// the code the seam filters with (listfilter framing, decision.ListItems):
// for `extauthz check --list-response`. Each body is filtered as the seam
// filters the answer to a list request; a body the seam would refuse
// (response_unfilterable: not strict JSON-RPC, duplicate items, a result
// that carries no list) ends in an error naming why, with what was read
// until then. A tasks/list answer is ErrTasksOffline.
//
// With pinning on (decision.Pinned), tools are decided as the seam
// decides them: observed into a state store of this call's own, empty
// before the first body (no live store offline; the pin scope is
// server's, there is no session), then decided with what it holds and the
// policy's pins. A running service's store may hold more (an earlier
// baseline, another definition seen within the observation TTL), under
// which the seam removes a tool kept here. Not done: cursors (nothing to
// seal), task binding, the 2026-07-28 cache hint.
func CheckList(ctx context.Context, pol *decision.Policy, server string, claims map[string]any, in []byte) (ListCheck, error) {
	var out ListCheck
	var kinds []listfilter.Kind // out.Items[i]'s, to order them
	items := &decision.ListItems{Policy: pol, Server: server, Scope: server, Claims: claims}
	opt := listfilter.Options{Limits: checkListLimits}
	opt.Keep = func(k listfilter.Kind, key string, raw []byte) (bool, error) {
		if k == listfilter.Tasks {
			return false, ErrTasksOffline
		}
		d, err := items.MaySee(ctx, k, key)
		if err != nil {
			return false, err
		}
		out.Items = append(out.Items, ListItem{Kind: k.String(), Key: key, ItemDecision: d})
		kinds = append(kinds, k)
		if k == listfilter.Tools {
			out.Tools++
		}
		return d.Visible, nil
	}
	if decision.Pinned(pol) {
		// The seam's observations, in a store of this call's own.
		items.Definitions = &toolpin.Observations{Store: state.NewMemory(math.MaxInt, nil)}
		opt.Observe = func(k listfilter.Kind, key string, item []byte) error {
			if k != listfilter.Tools {
				return nil
			}
			return items.Definitions.Observe(ctx, server, decision.ItemObserved(key, item, nil))
		}
		opt.Prepare = func(k listfilter.Kind, keys []string) error { return items.Prepare(ctx, k, keys) }
	}
	var ferr error
	filter := func(body []byte) error {
		res, err := listfilter.Filter(body, opt)
		if err != nil {
			return err
		}
		if res.Lists == 0 && bodyCarriesResult(body, opt.Limits) {
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
			out.Answers++
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
		out.Answers = 1
		ferr = filter(in)
	}
	order := make([]int, len(out.Items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return kinds[order[i]] < kinds[order[j]] })
	sorted := make([]ListItem, len(out.Items))
	for i, at := range order {
		sorted[i] = out.Items[at]
	}
	out.Items = sorted
	return out, ferr
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

// bodyCarriesResult reports whether body (strict JSON-RPC, as
// listfilter.Filter accepted it) holds a response with a result.
func bodyCarriesResult(body []byte, lim mcpparse.Limits) bool {
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
