// Package listfilter removes the items a caller may not use from the JSON-RPC
// answers to MCP list requests (tools/list, prompts/list, resources/list,
// resources/templates/list, tasks/list; MCP 2025-06-18, 2025-11-25,
// 2026-07-28 "Pagination"), and finds the task ids of CreateTaskResult
// answers (MCP 2025-11-25 "Tasks": result.task.taskId; the 2026-07-28 tasks
// extension, SEP-2663: resultType "task" with result.taskId).
//
// It is pure: bytes in, bytes out; which items stay is the caller's Keep
// function (the policy's Policy.Visible, or the task store). The body is
// validated by mcpparse.Parse first (JSON-RPC 2.0 envelope, duplicate and
// case-variant member names, invalid UTF-8, lone surrogates, trailing data,
// both "result" and "error": each an error), batches element by element.
//
// What is rewritten, and how: the output is the input with byte ranges
// spliced, never re-serialized. A list array that loses an item is
// replaced by "[" + the kept items, each byte for byte, joined by "," + "]"
// (the whitespace between items is not kept); an array that loses nothing is
// left as is. Outside list arrays only these bytes change: a leading UTF-8
// BOM is dropped (clients strip it, fetch's json() and the Go decoder
// differently), nextCursor's value when Options.Cursor is set, and
// cacheScope/ttlMs when Options.Cache is set (replaced, or appended to the
// result object). Every other byte is the input's.
//
// Lists are found by shape, in every response of the body whatever its id:
// a result object with a member named (as the Go SDK's decoder matches
// names, bytes.EqualFold) tools, prompts, resources, resourceTemplates or
// tasks whose value is an array. A result with two of them is an error; the
// answer to the caller's own list request (Options.ID) without its list is
// an error; an item that is not an object, lacks its key (name, name, uri,
// uriTemplate, taskId) or has a non-string key is an error; two items with
// the same key in one list are an error. Errors are *Error values: the
// caller fails closed.
package listfilter

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"sync"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Kind is the kind of list a result carries.
type Kind int

// The kinds of list, one per list method.
const (
	Tools Kind = iota + 1
	Prompts
	Resources
	ResourceTemplates
	Tasks
)

var kinds = [...]struct {
	member, key, method string
}{
	Tools:             {"tools", "name", mcpmethod.ToolsList},
	Prompts:           {"prompts", "name", mcpmethod.PromptsList},
	Resources:         {"resources", "uri", mcpmethod.ResourcesList},
	ResourceTemplates: {"resourceTemplates", "uriTemplate", mcpmethod.ResourcesTemplatesList},
	Tasks:             {"tasks", "taskId", mcpmethod.TasksList},
}

// String returns the list's member name ("tools", ..., "tasks").
func (k Kind) String() string {
	if k >= Tools && k <= Tasks {
		return kinds[k].member
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Method returns the list method answered with this kind ("tools/list", ...).
func (k Kind) Method() string {
	if k >= Tools && k <= Tasks {
		return kinds[k].method
	}
	return ""
}

// KindOf returns the kind of list method m answers, and false for any
// other method.
func KindOf(m string) (Kind, bool) {
	for k := Tools; k <= Tasks; k++ {
		if kinds[k].method == m {
			return k, true
		}
	}
	return 0, false
}

// Error is why a body cannot be filtered. The caller must not pass the body.
type Error struct {
	Kind string // "parse", "shape", "duplicate", "keep", "cursor", "transport"
	Msg  string
	Err  error // the mcpparse.ParseError for "parse", Keep's or Cursor's error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "listfilter: " + e.Kind + ": " + e.Msg + ": " + e.Err.Error()
	}
	return "listfilter: " + e.Kind + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// CacheHint is MCP 2026-07-28's CacheableResult for a filtered list:
// cacheScope "private" and ttlMs = min(upstream ttlMs, TTLms).
type CacheHint struct {
	TTLms int64
}

// Options controls Filter.
type Options struct {
	// Limits bounds the parse (mcpparse.Limits; zero fields take
	// mcpparse's defaults, 1 MiB: set MaxBytes for larger catalogs).
	Limits mcpparse.Limits
	// ID is the raw JSON id of the caller's own request and Method its
	// method; when Method is a list method, the response with that id must
	// carry that list (else a "shape" error). Empty: lists by shape only.
	ID     []byte
	Method string
	// Keep decides each item by its key (a tool or prompt name, a resource
	// URI, a uriTemplate, a taskId, decoded) and its bytes as the upstream
	// sent them (a tool's declared annotations). An error fails the filter.
	Keep func(k Kind, key string, item []byte) (bool, error)
	// Observe, when set, sees every item of a list before Keep decides any
	// of them: its key and its bytes as the upstream sent them (tool
	// definition pinning). An error fails the filter.
	Observe func(k Kind, key string, item []byte) error
	// Prepare, when set, is called once per list after Observe saw all its
	// items and before Keep sees the first: keys are the items' keys, in
	// the order Keep is then called with them, once each. The caller reads
	// what it decides the whole list with in one go (the pin state of every
	// tool of a tools list in one store read). keys belong to Filter and
	// are valid until the list's last Keep returns. Its error fails the
	// filter (Kind "keep").
	Prepare func(k Kind, keys []string) error
	// ObserveList, when set, sees each list array's bytes (as the upstream
	// sent them, "[" to "]") before its items; when it reports seen,
	// Observe is not called for that list's items (the caller observed
	// these very bytes before). Its error fails the filter.
	ObserveList func(k Kind, list []byte) (seen bool, err error)
	// Cursor, when set, maps the nextCursor of a list (decoded) to the one
	// handed to the client; its error fails the filter.
	Cursor func(k Kind, upstream string) (string, error)
	// Cache, when set, writes the 2026-07-28 cache members into each list
	// result.
	Cache *CacheHint
	// Response, when set, sees the raw id of every response of the body
	// (result or error; not an error with id null, which answers no
	// request) before its result is filtered: the caller's transport rule
	// (which ids this stream may answer). Its error fails the filter
	// (Kind "transport").
	Response func(id []byte) error
}

// Task is a task id found in a CreateTaskResult, MCP 2025-11-25's
// result.task.taskId or the 2026-07-28 tasks extension's result.taskId
// beside resultType "task", and its TTL in milliseconds (result.task.ttl or
// result.ttlMs): -1 when absent or not a non-negative integer,
// math.MaxInt64 when null (unlimited; the task store caps it).
type Task struct {
	ID    string
	TTLms int64
}

// Response is one response of a filtered body: its raw id and result.
type Response struct {
	ID, Result []byte
}

// Result is what Filter did.
type Result struct {
	// Body is the body to send; it aliases nothing of the input.
	Body []byte
	// Lists is the number of list results found; Kind the kind of the
	// last; Kept and Removed count items over all of them.
	Lists         int
	Kind          Kind
	Kept, Removed int
	// Tasks are the CreateTaskResult task ids found, in body order.
	Tasks []Task
	// Responses are the body's responses, in body order: their ids and
	// results (nil for an error response) as the input holds them (they
	// alias it), for a caller that reads the answer it passes unchanged
	// without parsing it again.
	Responses []Response
	// Changed reports that Body differs from the input.
	Changed bool
}

// edit replaces in[off:end] by with.
type edit struct {
	off, end int
	with     []byte
}

var bom = []byte("\xef\xbb\xbf")

// Filter filters every list in body (one JSON-RPC message or a batch) as
// the package doc says. It never returns a partly filtered body: on error
// Result is zero.
func Filter(body []byte, opt Options) (Result, error) {
	in := body
	var edits []edit
	start := 0
	if bytes.HasPrefix(in, bom) {
		edits = append(edits, edit{0, len(bom), nil})
		start = len(bom)
	}
	parsed, err := mcpparse.Parse(in[start:], mcpparse.ParseOptions{Limits: opt.Limits, AllowBatch: true})
	if err != nil {
		return Result{}, &Error{Kind: "parse", Msg: "not a strict JSON-RPC message", Err: err}
	}
	wantKind, wantList := KindOf(opt.Method)
	var res Result
	for i := range parsed.Messages {
		m := &parsed.Messages[i]
		if m.Kind == mcpparse.KindResponse && opt.Response != nil && (m.Result != nil || string(m.ID) != "null") {
			if err := opt.Response(m.ID); err != nil {
				return Result{}, &Error{Kind: "transport", Msg: "a response this stream may not carry", Err: err}
			}
		}
		if m.Kind == mcpparse.KindResponse {
			res.Responses = append(res.Responses, Response{ID: m.ID, Result: m.Result})
		}
		if m.Kind != mcpparse.KindResponse || m.Result == nil {
			continue
		}
		off := offsetIn(in, m.Result)
		own := wantList && opt.ID != nil && bytes.Equal(m.ID, opt.ID)
		es, err := filterResult(in, off, off+len(m.Result), own, wantKind, &opt, &res)
		if err != nil {
			return Result{}, err
		}
		edits = append(edits, es...)
	}
	res.Body = apply(in, edits)
	res.Changed = len(edits) > 0 && !bytes.Equal(res.Body, body)
	return res, nil
}

// offsetIn returns where sub (a subslice of in) starts in in.
func offsetIn(in, sub []byte) int {
	return cap(in) - cap(sub)
}

func apply(in []byte, edits []edit) []byte {
	out := make([]byte, 0, len(in))
	at := 0
	for _, e := range edits {
		out = append(out, in[at:e.off]...)
		out = append(out, e.with...)
		at = e.end
	}
	return append(out, in[at:]...)
}

// member is one member of an object: its decoded name, and its value's
// kind (first byte) and span.
type member struct {
	name     string
	off, end int // the value
	nameOff  int // the name's opening quote
	// items are the elements of a value that is an array when the name
	// folds to a list member (resultMembers); nil otherwise.
	items []item
}

// item is one element of a list array: its span and, for an object, the
// value span of its last member whose name folds to the list's key.
type item struct {
	off, end       int
	keyOff, keyEnd int
	hasKey         bool
}

// scratch is what filterResult needs per list and gives back: the items of
// the list it walks, their keys, the indexes kept and the keys seen,
// reused through scratchPool so a list allocates none of them.
type scratch struct {
	items []item
	names []string
	kept  []int32
	seen  map[string]struct{}
}

var scratchPool = sync.Pool{New: func() any { return &scratch{seen: map[string]struct{}{}} }}

// maxPooledItems bounds the lists whose scratch goes back to the pool.
const maxPooledItems = 1 << 12

// filterResult filters the result value in[off:end].
func filterResult(in []byte, off, end int, own bool, want Kind, opt *Options, res *Result) ([]edit, error) {
	sc := scratchPool.Get().(*scratch)
	defer func() {
		if cap(sc.items) <= maxPooledItems {
			clear(sc.seen) // no key outlives the call
			clear(sc.names)
			sc.items, sc.names, sc.kept = sc.items[:0], sc.names[:0], sc.kept[:0]
			scratchPool.Put(sc)
		}
	}()
	if in[off] != '{' {
		if own {
			return nil, &Error{Kind: "shape", Msg: "the list result is not an object"}
		}
		return nil, nil
	}
	mems := resultMembers(in, off, sc)
	var list *member
	var kind Kind
	var cursor, scope, ttl *member
	for i := range mems {
		mm := &mems[i]
		for k := Tools; k <= Tasks; k++ {
			if foldEq(mm.name, kinds[k].member) && in[mm.off] == '[' {
				if list != nil {
					return nil, &Error{Kind: "shape", Msg: "a result with two lists (" + kind.String() + ", " + k.String() + ")"}
				}
				list, kind = mm, k
			}
		}
		switch {
		case foldEq(mm.name, "nextCursor"):
			cursor = mm
		case foldEq(mm.name, "cacheScope"):
			scope = mm
		case foldEq(mm.name, "ttlMs"):
			ttl = mm
		}
	}
	if list == nil {
		t, ok, err := taskOfResult(in, mems)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Tasks = append(res.Tasks, t)
		}
	}
	if list == nil {
		if own {
			return nil, &Error{Kind: "shape", Msg: "the " + want.Method() + " result has no " + want.String() + " array"}
		}
		return nil, nil
	}
	if own && kind != want {
		return nil, &Error{Kind: "shape", Msg: "the " + want.Method() + " result carries " + kind.String()}
	}
	res.Lists++
	res.Kind = kind
	var edits []edit
	items := list.items
	observe := opt.Observe
	if observe != nil && opt.ObserveList != nil {
		known, err := opt.ObserveList(kind, in[list.off:list.end])
		if err != nil {
			return nil, &Error{Kind: "keep", Msg: "observing a list", Err: err}
		}
		if known {
			observe = nil
		}
	}
	// Every item is checked and observed before any is decided: Prepare
	// and Keep see the state after the whole list's observations.
	seen, names, kept := sc.seen, sc.names[:0], sc.kept
	for _, it := range items {
		if in[it.off] != '{' {
			return nil, &Error{Kind: "shape", Msg: "a " + kind.String() + " item is not an object"}
		}
		if !it.hasKey || in[it.keyOff] != '"' {
			return nil, &Error{Kind: "shape", Msg: "a " + kind.String() + " item without a string " + kinds[kind].key}
		}
		name, err := decodeString(in[it.keyOff:it.keyEnd])
		if err != nil {
			return nil, &Error{Kind: "shape", Msg: "an undecodable " + kinds[kind].key, Err: err}
		}
		if _, dup := seen[name]; dup {
			return nil, &Error{Kind: "duplicate", Msg: "two " + kind.String() + " items with one " + kinds[kind].key}
		}
		seen[name] = struct{}{}
		names = append(names, name)
		if observe != nil {
			if err := observe(kind, name, in[it.off:it.end]); err != nil {
				return nil, &Error{Kind: "keep", Msg: "observing an item", Err: err}
			}
		}
	}
	sc.names = names
	if opt.Prepare != nil {
		if err := opt.Prepare(kind, names); err != nil {
			return nil, &Error{Kind: "keep", Msg: "preparing a list", Err: err}
		}
	}
	for i, it := range items {
		keep := false
		if opt.Keep != nil {
			var err error
			keep, err = opt.Keep(kind, names[i], in[it.off:it.end])
			if err != nil {
				return nil, &Error{Kind: "keep", Msg: "deciding an item", Err: err}
			}
		}
		if keep {
			kept = append(kept, int32(i))
		}
	}
	sc.kept = kept
	res.Kept += len(kept)
	res.Removed += len(items) - len(kept)
	if len(kept) < len(items) {
		n := 1 + len(kept)
		for _, i := range kept {
			n += items[i].end - items[i].off
		}
		b := make([]byte, 1, n)
		b[0] = '['
		for j, i := range kept {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, in[items[i].off:items[i].end]...)
		}
		edits = append(edits, edit{list.off, list.end, append(b, ']')})
	}
	if cursor != nil && opt.Cursor != nil && in[cursor.off] == '"' {
		up, err := decodeString(in[cursor.off:cursor.end])
		if err != nil {
			return nil, &Error{Kind: "shape", Msg: "an undecodable nextCursor", Err: err}
		}
		sealed, err := opt.Cursor(kind, up)
		if err != nil {
			return nil, &Error{Kind: "cursor", Msg: "sealing nextCursor", Err: err}
		}
		edits = append(edits, edit{cursor.off, cursor.end, mcpparse.AppendJCSString(nil, sealed)})
	}
	if opt.Cache != nil {
		ttlv := opt.Cache.TTLms
		if ttl != nil {
			if n, err := strconv.ParseInt(string(in[ttl.off:ttl.end]), 10, 64); err == nil && n >= 0 && n < ttlv {
				ttlv = n
			}
		}
		ttlText := []byte(strconv.FormatInt(ttlv, 10))
		var add []byte
		if scope != nil {
			edits = append(edits, edit{scope.off, scope.end, []byte(`"private"`)})
		} else {
			add = append(add, `"cacheScope":"private"`...)
		}
		if ttl != nil {
			edits = append(edits, edit{ttl.off, ttl.end, ttlText})
		} else {
			if len(add) > 0 {
				add = append(add, ',')
			}
			add = append(append(add, `"ttlMs":`...), ttlText...)
		}
		if len(add) > 0 {
			close := end - 1 // the result object's '}'
			if len(mems) > 0 {
				add = append([]byte{','}, add...)
			}
			edits = append(edits, edit{close, close, add})
		}
	}
	sortEdits(edits)
	return edits, nil
}

// taskOfResult finds the task a result object (its members mems) creates,
// in either shape:
//   - MCP 2025-11-25 CreateTaskResult: result.task{taskId, ttl}, ttl in
//     milliseconds;
//   - the tasks extension of MCP 2026-07-28 (SEP-2663): resultType "task"
//     with Task's members flat in the result, result.taskId and
//     result.ttlMs (milliseconds).
//
// ok is false for a result of neither shape (a result.task that is not an
// object, or one without taskId, is not a task, as before). A taskId that
// is not a non-empty string, a resultType "task" without a taskId, and a
// result of both shapes (two task ids for one request) are "shape" errors:
// the caller fails closed rather than forwarding a task it cannot bind.
// Duplicate and case-variant member names were refused by mcpparse.
func taskOfResult(in []byte, mems []member) (t Task, ok bool, err error) {
	var task, resultType, flatID, flatTTL *member
	for i := range mems {
		switch m := &mems[i]; {
		case foldEq(m.name, "task"):
			task = m
		case foldEq(m.name, "resultType"):
			resultType = m
		case foldEq(m.name, "taskId"):
			flatID = m
		case foldEq(m.name, "ttlMs"):
			flatTTL = m
		}
	}
	nested := task != nil && in[task.off] == '{'
	var nestedID, nestedTTL *member
	if nested {
		nm := objectMembers(in, task.off)
		for i := range nm {
			switch {
			case foldEq(nm[i].name, "taskId"):
				nestedID = &nm[i]
			case foldEq(nm[i].name, "ttl"):
				nestedTTL = &nm[i]
			}
		}
	}
	rt, _ := memberString(in, resultType)
	flat := rt == "task"
	switch {
	case flat && nestedID != nil:
		return Task{}, false, &Error{Kind: "shape", Msg: `a resultType "task" result that also carries result.task.taskId`}
	case flat:
		id, good := memberString(in, flatID)
		if !good || id == "" {
			return Task{}, false, &Error{Kind: "shape", Msg: `a resultType "task" result without a non-empty string taskId`}
		}
		return Task{ID: id, TTLms: ttlOf(in, flatTTL)}, true, nil
	case nestedID != nil:
		id, good := memberString(in, nestedID)
		if !good || id == "" {
			return Task{}, false, &Error{Kind: "shape", Msg: "a result.task.taskId that is not a non-empty string"}
		}
		return Task{ID: id, TTLms: ttlOf(in, nestedTTL)}, true, nil
	}
	return Task{}, false, nil
}

// memberString decodes m's value when it is a JSON string.
func memberString(in []byte, m *member) (string, bool) {
	if m == nil {
		return "", false
	}
	return jsonscan.Unquote(in[m.off:m.end])
}

// ttlOf reads a task TTL in milliseconds: a non-negative integer as is,
// null (unlimited) as math.MaxInt64 (the task store caps it at its
// maximum), anything else or absent as -1 (the store's default).
func ttlOf(in []byte, m *member) int64 {
	if m == nil {
		return -1
	}
	v := in[m.off:m.end]
	if string(v) == "null" {
		return math.MaxInt64
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
		return n
	}
	return -1
}

func sortEdits(es []edit) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].off < es[j-1].off; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// foldEq reports whether name matches want as encoding/json matches member
// names to fields (bytes.EqualFold: Unicode simple folding, so "toolſ"
// is "tools").
func foldEq(name, want string) bool {
	return bytes.EqualFold([]byte(name), []byte(want))
}

// errUndecodable is decodeString's error: a literal that is not a JSON
// string, which bytes mcpparse validated never hold.
var errUndecodable = errors.New("not a JSON string literal")

// decodeString decodes a JSON string literal already validated by mcpparse,
// as encoding/json decodes it (jsonscan.Unquote).
func decodeString(lit []byte) (string, error) {
	s, ok := jsonscan.Unquote(lit)
	if !ok {
		return "", errUndecodable
	}
	return s, nil
}

// The walks below read JSON that mcpparse.Parse has validated, through
// internal/jsonscan: they assume its grammar and never fail.

// objectMembers lists the members of the object starting at in[off].
func objectMembers(in []byte, off int) []member {
	var out []member
	it := jsonscan.Members(in, off)
	for it.Next() {
		n, _ := decodeString(it.Name())
		out = append(out, member{name: n, off: it.ValueOff(), end: it.ValueEnd(), nameOff: it.NameOff()})
	}
	return out
}

// resultMembers is objectMembers of the result object at in[off], with the
// items of every array member whose name folds to a list member's (one
// walk over the list: its items and their keys are found as it is
// skipped).
//
// The first such member's items are appended to sc.items (which then holds
// them); any other's are allocated.
func resultMembers(in []byte, off int, sc *scratch) []member {
	var out []member
	it := jsonscan.Members(in, off)
	for it.Next() {
		n, _ := decodeString(it.Name())
		j := it.ValueOff()
		m := member{name: n, off: j, nameOff: it.NameOff()}
		if k := listKind(n); k != 0 && in[j] == '[' {
			if sc != nil {
				m.items, m.end = listItems(in, j, kinds[k].key, sc.items[:0])
				sc.items, sc = m.items, nil // the pool keeps what it grew to
			} else {
				m.items, m.end = listItems(in, j, kinds[k].key, nil)
			}
			it.SetValueEnd(m.end)
		} else {
			m.end = it.ValueEnd()
		}
		out = append(out, m)
	}
	return out
}

// listKind is the kind whose list member name folds to, or 0.
func listKind(name string) Kind {
	for k := Tools; k <= Tasks; k++ {
		if foldEq(name, kinds[k].member) {
			return k
		}
	}
	return 0
}

// listItems appends the items of the array at in[off] to out, each
// object's key member (the last named as key, under folding) found, and
// returns them and the array's end.
func listItems(in []byte, off int, key string, out []item) ([]item, int) {
	el := jsonscan.Elements(in, off)
	for el.Next() {
		it := item{off: el.ValueOff()}
		if in[it.off] == '{' {
			m := jsonscan.Members(in, it.off)
			for m.Next() {
				if jsonscan.EqualFold(m.Name(), key) {
					it.keyOff, it.keyEnd, it.hasKey = m.ValueOff(), m.ValueEnd(), true
				}
			}
			it.end = m.End()
			el.SetValueEnd(it.end)
		} else {
			it.end = el.ValueEnd()
		}
		out = append(out, it)
	}
	return out, el.End()
}
