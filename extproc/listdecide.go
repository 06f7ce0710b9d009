package extproc

import (
	"bytes"
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// filterOptions are the listfilter options for this stream.
func (st *stream) filterOptions(ctx context.Context) listfilter.Options {
	opt := listfilter.Options{Limits: st.limits(), ID: st.rpcID, Method: st.method}
	switch st.responses {
	case respOwn:
		opt.Response = func(id []byte) error {
			if sameID(id, st.rpcID) {
				return nil
			}
			return errUnexpected
		}
	case respNone:
		opt.Response = func([]byte) error { return errUnexpected }
	}
	pol, version := (*decision.Policy)(nil), ""
	if f := st.s.cfg.Policy; f != nil {
		pol, version = f()
	}
	// The core decides each item (decision.ListItems); the pin state of
	// the list being decided is read whole first (Prepare).
	items := &decision.ListItems{Policy: pol, Definitions: st.s.cfg.Definitions,
		Server: st.server, Principal: st.owner, Claims: st.claims}
	if t := st.s.cfg.Tasks; t != nil {
		items.Tasks = t
	}
	opt.Keep = func(k listfilter.Kind, key string, raw []byte) (bool, error) {
		if st.claims == nil && st.principal != "" {
			// A list's shape on a stream whose Check carried no claims
			// (a tools/call's answer: decision.ClaimsFor): no item can be
			// decided for the caller, so none is shown.
			return false, nil
		}
		d, err := items.MaySee(ctx, k, key)
		return d.Visible, err
	}
	if decision.Pinned(pol) {
		scope := st.pinScope(pol)
		items.Scope = scope
		// After the list's observations, its tools' pin state in one
		// store read (ItemDefinitions), even for a list seen lately: a
		// definition observed elsewhere since must still hide its tool.
		opt.Prepare = func(k listfilter.Kind, keys []string) error {
			return items.Prepare(ctx, k, keys)
		}
		if defs := st.s.cfg.Definitions; defs != nil {
			opt.ObserveList = func(k listfilter.Kind, list []byte) (bool, error) {
				if k != listfilter.Tools {
					return false, nil
				}
				seen, at := defs.ListSeen(scope, list)
				if !seen {
					st.observing = append(st.observing, observingList{scope: scope, list: list, at: at})
					return false, nil
				}
				st.listed.lately++ // logged with its tools when this process observed it
				return true, nil
			}
		}
		opt.Observe = func(k listfilter.Kind, key string, item []byte) error {
			if k == listfilter.Prompts && st.s.cfg.Definitions != nil {
				// The prompt's declared arguments, for Check's argument
				// validation; a prompt that does not parse records none.
				if name, schema, err := toolpin.PromptArgumentsSchema(item); err == nil && name == key {
					return st.s.cfg.Definitions.ObservePromptArguments(ctx, scope, name, schema)
				}
				return nil
			}
			if k != listfilter.Tools {
				return nil
			}
			if st.s.cfg.Definitions == nil {
				return errors.New("pin_mode is on but tool definitions cannot be recorded here")
			}
			// Not strict JSON to the fingerprint: pinned by its raw
			// bytes, with no hints (every annotation at its worst case).
			d := decision.ItemObserved(key, item, st.s.cfg.Fingerprints)
			st.listed.add(d, d.Raw)
			return st.s.cfg.Definitions.Observe(ctx, scope, d)
		}
	}
	if c := st.s.cfg.Cursors; c != nil {
		// Sealed to the policy that filtered this page (the live one,
		// which the next page's Check will compare with).
		opt.Cursor = func(k listfilter.Kind, up string) (string, error) {
			b := st.binding(k.Method())
			b.PolicyVersion = version
			return c.Seal(b, up)
		}
	}
	if st.protocol >= Revision2026 && len(st.protocol) == len(Revision2026) {
		opt.Cache = &listfilter.CacheHint{TTLms: st.s.cfg.CacheTTLms}
	}
	return opt
}

// pinScope is the toolpin scope of this stream's definitions: from the
// request's session when the route sent the request headers, else from the
// session hash Check handed over (the same scope: toolpin.ScopeOfHash),
// so a definition seen on any route is recorded in its session.
func (st *stream) pinScope(pol *decision.Policy) string {
	return decision.PinScope(pol, st.server, st.session, st.sessionHash) // one per list: it hashes the session id
}

// sameID reports whether two raw JSON-RPC ids are the same id: byte for
// byte, or in RFC 8785 form (a server's SDK decodes the request's id and
// writes it again: "\u0031" comes back "1", 1.0 comes back 1). A string
// and a number are never the same (the TypeScript client's Number(id)
// would equate "2" and 2; the seam does not).
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, err := mcpparse.Canonicalize(a, mcpparse.Limits{})
	if err != nil {
		return false
	}
	cb, err := mcpparse.Canonicalize(b, mcpparse.Limits{})
	return err == nil && bytes.Equal(ca, cb)
}

// errUnexpected is a response the stream's rule (respRule) refuses.
var errUnexpected = errors.New("a JSON-RPC response to a request this stream does not carry")

// filter runs the list filter on one JSON body, binds the task ids it
// finds and records the counts.
func (st *stream) filter(ctx context.Context, body []byte) (listfilter.Result, error) {
	opt := st.filterOptions(ctx)
	st.observing = st.observing[:0]
	res, err := listfilter.Filter(body, opt)
	if err != nil {
		st.observing = st.observing[:0] // not every tool was observed
		return res, err
	}
	if defs := st.s.cfg.Definitions; len(st.observing) > 0 && defs != nil {
		// Every tool of these lists was observed (Filter fails on the
		// first Observe error): a repeat of one costs no Observe.
		for _, l := range st.observing {
			defs.ListObserved(l.scope, l.list, l.at)
		}
		st.observing = st.observing[:0]
	}
	if res.Lists > 0 {
		st.lists += res.Lists
		st.kept += res.Kept
		st.removed += res.Removed
		st.kind = res.Kind
		st.s.cfg.Metrics.ListFiltered(res.Kind.String(), "ok", res.Removed)
	}
	st.bindTasks(ctx, res.Tasks)
	return res, nil
}

func (st *stream) bindTasks(ctx context.Context, tasks []listfilter.Task) {
	for _, t := range tasks {
		tk := st.s.cfg.Tasks
		if tk == nil {
			st.s.cfg.Log.Warn("task not bound: no task store", zap.String("decision_id", st.decision))
			continue
		}
		if err := tk.Bind(ctx, st.server, t.ID, st.owner, t.TTLms); err != nil {
			// The task stays unbound (or another's): its later task calls
			// are refused, which fails closed.
			st.s.cfg.Log.Warn("task not bound", zap.String("decision_id", st.decision), zap.Error(err))
		}
	}
}

// refusedList counts and logs a list answer replaced by an error.
func (st *stream) refusedList(reason string, err error) {
	st.refused = true
	kind := "unknown"
	if k, ok := listfilter.KindOf(st.method); ok {
		kind = k.String()
	}
	st.s.cfg.Metrics.ListFiltered(kind, "refused", 0)
	st.s.cfg.Log.Info("list refused",
		zap.String("kind", "list_filter"), zap.String("decision_id", st.decision), zap.String("method", st.method),
		zap.String("server", st.server), zap.String("policy_version", st.policyVersion),
		zap.String("result", "refused"), zap.String("reason", reason), zap.NamedError("cause", err))
}

// logFiltered writes the one decision-log line of a filtered list; for
// tools/list with pinning on it carries the fingerprints of every tool
// listed, kept or removed (pinlog.go: "tools", bounded by
// MaxLoggedToolBytes), for extauthz pin --decision-log.
func (st *stream) logFiltered() {
	if st.lists == 0 {
		return
	}
	fields := []zap.Field{zap.String("kind", "list_filter"), zap.String("decision_id", st.decision), zap.String("method", st.method),
		zap.String("server", st.server), zap.String("policy_version", st.policyVersion),
		zap.String("list", st.kind.String()), zap.Int("lists", st.lists), zap.Int("kept", st.kept), zap.Int("removed", st.removed),
		zap.String("result", "ok")}
	st.s.cfg.Log.Info("list filtered", append(fields, st.listed.fields()...)...)
}
