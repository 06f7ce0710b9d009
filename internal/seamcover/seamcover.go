// Package seamcover sees a response seam that never runs: Check admitted a
// request that must meet the ext_proc processor (every route to an MCP
// server opens a side stream, envoy/sidecar.yaml), and no processor of
// this process saw its decision within the deadline of its route. A
// config that drops the ext_proc filter, disables it on a route, names a
// CDS cluster that matches no Service (ext_proc then fails open on Envoys
// without envoyproxy/envoy#45189), or a missing Istio EnvoyFilter leaves
// answers unfiltered and tasks unbound without one error; this counts it.
//
// A Table holds the decision ids Check marked (Expect) until the processor
// names them (Met) or their deadline passes (Sweep: unmet). It is exact
// only when the Check and the side stream of one request reach the same
// process: the sidecar layout (Envoy dials 127.0.0.1), or one replica.
// With several replicas behind one Service, Envoy picks a host per gRPC
// stream (ext_authz and ext_proc are separate streams, and separate
// clusters in the shipped configs), so a side stream often lands on
// another replica: that replica counts it met, this one unmet. The counts
// Expected and Met summed over every replica stay exact there (the
// shipped alert compares those); Unmet of one replica does not.
//
// Memory is bounded: at most Max ids are held (met ones stay queued until
// their deadline), each about 110 bytes with its id (TestTableMemory); past Max, Expect
// counts the decision untracked and holds nothing.
package seamcover

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// The classes of a decision, by the route it takes and so the moment its
// side stream opens: list (lists and batches: request headers), get (GET
// streams: request headers), task (tasks/*), call (tools/call) and other
// (everything else): response headers. They are the values of the
// metrics' class label, and of ext_proc_streams_total's route label.
const (
	List  = "list"
	Get   = "get"
	Task  = "task"
	Call  = "call"
	Other = "other"
)

// Classes are every class, in label order.
var Classes = []string{List, Get, Task, Call, Other}

// ClassOf is the class of a decision on method (Check's method: an MCP
// method name, or mcpmethod's pseudo-methods batch, GET, DELETE, response).
func ClassOf(method string) string {
	switch {
	case method == mcpmethod.Batch:
		return List
	case method == mcpmethod.HTTPGet:
		return Get
	case method == mcpmethod.ToolsCall:
		return Call
	case strings.HasPrefix(method, "tasks/"):
		if _, ok := listfilter.KindOf(method); ok {
			return List // tasks/list
		}
		return Task
	}
	if _, ok := listfilter.KindOf(method); ok {
		return List
	}
	return Other
}

// Known reports whether c is one of Classes.
func Known(c string) bool { return classIndex(c) >= 0 }

func classIndex(c string) int {
	for i, k := range Classes {
		if k == c {
			return i
		}
	}
	return -1
}

// DefaultMax is the default bound on the ids a Table holds: about 11 MB.
const DefaultMax = 100_000

// Config configures a Table.
type Config struct {
	// Deadline is how long a decision may wait for the processor. Every
	// shipped route opens its side stream with the response headers (a
	// list with a sealed cursor with its request body, earlier), so this
	// is the time the MCP server takes to start its answer (the shipped
	// routes have no route timeout; a call or tasks/result may take
	// minutes).
	Deadline time.Duration
	// Max bounds the ids held (default DefaultMax).
	Max int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnExpect, OnMet and OnUnmet count (metrics); OnUntracked a
	// decision Expect could not hold (Max reached). Each may be nil.
	OnExpect, OnMet, OnUntracked func(class string)
	// OnUnmet is called once per Sweep that found unmet decisions: their
	// number by class (the order of Classes) and one of their ids.
	OnUnmet func(byClass [5]uint64, example string)
}

// Stats are a Table's counts since it was made, by class (the order of
// Classes), and the ids it holds now.
type Stats struct {
	Expected, Met, Unmet, Untracked [5]uint64
	Held                            int
}

// entry is one queued id: met ones stay queued until due.
type entry struct {
	id    string
	class int8
	due   time.Time
}

// Table is the in-memory table of marked decisions. Its methods are safe
// for concurrent use; a nil *Table holds and counts nothing.
type Table struct {
	cfg     Config
	mu      sync.Mutex
	pending map[string]int8 // ids not met yet: their class
	// queue holds the ids in due order (one deadline for all); head is
	// its first entry not swept yet.
	queue []entry
	head  int
	stats Stats
}

// New returns a Table for cfg. A Deadline <= 0 is one minute.
func New(cfg Config) *Table {
	if cfg.Deadline <= 0 {
		cfg.Deadline = time.Minute
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Table{cfg: cfg, pending: make(map[string]int8)}
}

// Deadline is how long a decision may wait for the processor.
func (t *Table) Deadline() time.Duration { return t.cfg.Deadline }

// Expect holds decision id of class c (one of Classes; anything else is
// Other) until Met names it or its deadline passes. An empty id is
// ignored.
func (t *Table) Expect(id, c string) {
	if t == nil || id == "" {
		return
	}
	ci := classIndex(c)
	if ci < 0 {
		c, ci = Other, classIndex(Other)
	}
	due := t.cfg.Now().Add(t.cfg.Deadline)
	t.mu.Lock()
	t.stats.Expected[ci]++
	if len(t.queue)-t.head >= t.cfg.Max {
		t.stats.Untracked[ci]++
		t.mu.Unlock()
		call(t.cfg.OnExpect, c)
		call(t.cfg.OnUntracked, c)
		return
	}
	t.queue = append(t.queue, entry{id: id, class: int8(ci), due: due})
	t.pending[id] = int8(ci)
	t.mu.Unlock()
	call(t.cfg.OnExpect, c)
}

// Met records that the processor saw decision id, marked class c by Check
// (the class travels in the metadata, so a side stream on another replica
// counts under the class Check gave it). It reports whether this Table
// held the id (false: another replica's decision, one past its deadline,
// or an untracked one). A c outside Classes is not counted.
func (t *Table) Met(id, c string) bool {
	if t == nil || !Known(c) {
		return false
	}
	t.mu.Lock()
	t.stats.Met[classIndex(c)]++
	_, held := t.pending[id]
	delete(t.pending, id)
	t.mu.Unlock()
	call(t.cfg.OnMet, c)
	return held
}

// Sweep counts the held decisions past their deadline that no processor
// met as unmet, forgets every id past its deadline, and returns the
// unmet ones' number by class.
func (t *Table) Sweep() [5]uint64 {
	var n [5]uint64
	if t == nil {
		return n
	}
	now := t.cfg.Now()
	example := ""
	t.mu.Lock()
	es, h := t.queue, t.head
	for ; h < len(es) && !es[h].due.After(now); h++ {
		e := es[h]
		if ci, ok := t.pending[e.id]; ok {
			delete(t.pending, e.id)
			n[ci]++
			t.stats.Unmet[ci]++
			example = e.id
		}
		es[h] = entry{}
	}
	// Compact once the swept prefix is half the slice, so the slice stays
	// within twice what is held.
	if h > 0 && h >= len(es)/2 {
		es = append(es[:0], es[h:]...)
		h = 0
	}
	t.queue, t.head = es, h
	t.mu.Unlock()
	if example != "" && t.cfg.OnUnmet != nil {
		t.cfg.OnUnmet(n, example)
	}
	return n
}

// Run sweeps every interval until ctx ends.
func (t *Table) Run(ctx context.Context, interval time.Duration) {
	if t == nil {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.Sweep()
		}
	}
}

// Stats returns the counts so far and the ids held.
func (t *Table) Stats() Stats {
	if t == nil {
		return Stats{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Held = len(t.queue) - t.head
	return s
}

func call(f func(string), c string) {
	if f != nil {
		f(c)
	}
}
