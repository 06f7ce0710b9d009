package seamcover

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// clock is a settable clock for Tables.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTable(cfg Config) (*Table, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	cfg.Now = c.now
	return New(cfg), c
}

func TestClassOf(t *testing.T) {
	tests := []struct {
		give, want string
	}{
		{mcpmethod.ToolsList, List},
		{mcpmethod.PromptsList, List},
		{mcpmethod.ResourcesList, List},
		{mcpmethod.ResourcesTemplatesList, List},
		{mcpmethod.TasksList, List},
		{mcpmethod.Batch, List},
		{mcpmethod.HTTPGet, Get},
		{mcpmethod.ToolsCall, Call},
		{"tasks/get", Task},
		{"tasks/result", Task},
		{"tasks/cancel", Task},
		{"initialize", Other},
		{"ping", Other},
		{mcpmethod.HTTPDelete, Other},
		{mcpmethod.Response, Other},
		{"", Other},
	}
	for _, tt := range tests {
		if got := ClassOf(tt.give); got != tt.want {
			t.Errorf("ClassOf(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestTable: an id the processor names before its deadline is met; one it
// does not name is unmet at the first sweep past its deadline, not before;
// a late Met counts met but is not held; every id is forgotten once due.
func TestTable(t *testing.T) {
	tb, c := newTable(Config{Deadline: time.Minute})
	tb.Expect("a", List)
	tb.Expect("b", List)
	tb.Expect("c", Call)
	c.add(10 * time.Second)
	tb.Expect("d", Call)
	if !tb.Met("a", List) || !tb.Met("c", Call) {
		t.Fatal("held ids not met")
	}
	if tb.Met("zz", Call) {
		t.Error("an id never expected was held")
	}
	c.add(50*time.Second - time.Millisecond)
	if n := tb.Sweep(); n != [5]uint64{} {
		t.Errorf("unmet %v before any deadline", n)
	}
	c.add(time.Millisecond)
	if n := tb.Sweep(); n != [5]uint64{1, 0, 0, 0, 0} {
		t.Errorf("unmet %v at b's deadline, want b (list) only", n)
	}
	if tb.Met("b", List) {
		t.Error("b held after its deadline")
	}
	c.add(10 * time.Second)
	if n := tb.Sweep(); n != [5]uint64{0, 0, 0, 1, 0} {
		t.Errorf("unmet %v at d's deadline, want d (call) only", n)
	}
	s := tb.Stats()
	want := Stats{Expected: [5]uint64{2, 0, 0, 2, 0}, Met: [5]uint64{2, 0, 0, 2, 0}, Unmet: [5]uint64{1, 0, 0, 1, 0}}
	if s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
}

// TestTableBound: past Max held ids, Expect holds nothing and counts the
// decision untracked; a sweep frees room.
func TestTableBound(t *testing.T) {
	var untracked []string
	tb, c := newTable(Config{Deadline: time.Minute, Max: 3, OnUntracked: func(c string) { untracked = append(untracked, c) }})
	tb.Expect("a", Get)
	tb.Expect("b", Get)
	tb.Met("b", Get) // met ids stay queued until due: they count
	tb.Expect("c", Task)
	tb.Expect("d", Task)
	if s := tb.Stats(); s.Held != 3 || s.Untracked != [5]uint64{0, 0, 1, 0, 0} || len(untracked) != 1 || untracked[0] != Task {
		t.Fatalf("stats %+v, untracked %v: want 3 held and d untracked", s, untracked)
	}
	if tb.Met("d", Task) {
		t.Error("an untracked id was held")
	}
	c.add(time.Minute)
	if n := tb.Sweep(); n != [5]uint64{0, 1, 1, 0, 0} {
		t.Errorf("unmet %v, want a (get) and c (task)", n)
	}
	tb.Expect("e", Task)
	if s := tb.Stats(); s.Held != 1 || s.Untracked[2] != 1 {
		t.Errorf("stats %+v: want e held", s)
	}
}

// TestTableDeadlines: every class waits Deadline (one minute when not
// set); unknown classes count as other.
func TestTableDeadlines(t *testing.T) {
	for _, tt := range []struct{ give, want time.Duration }{{time.Minute, time.Minute}, {time.Second, time.Second}, {0, time.Minute}} {
		if got := New(Config{Deadline: tt.give}).Deadline(); got != tt.want {
			t.Errorf("Deadline %v: waits %v, want %v", tt.give, got, tt.want)
		}
	}
	tb, _ := newTable(Config{})
	tb.Expect("x", "bogus")
	if s := tb.Stats(); s.Expected != [5]uint64{0, 0, 0, 0, 1} {
		t.Errorf("an unknown class counted %v, want other", s.Expected)
	}
	if tb.Met("x", "bogus") || tb.Stats().Met != [5]uint64{} {
		t.Error("a Met of an unknown class counted")
	}
}

// TestTableCallbacks: the metric hooks see every Expect and Met, and
// OnUnmet one call per sweep with the counts and an unmet id.
func TestTableCallbacks(t *testing.T) {
	got := map[string]int{}
	var unmet [5]uint64
	example := ""
	tb, c := newTable(Config{Deadline: time.Second,
		OnExpect: func(c string) { got["expect "+c]++ },
		OnMet:    func(c string) { got["met "+c]++ },
		OnUnmet:  func(n [5]uint64, id string) { unmet, example = n, id },
	})
	tb.Expect("a", Call)
	tb.Expect("b", Other)
	tb.Met("a", Call)
	tb.Sweep()
	if example != "" {
		t.Fatal("OnUnmet before a deadline")
	}
	c.add(time.Second)
	tb.Sweep()
	want := map[string]int{"expect call": 1, "expect other": 1, "met call": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) || unmet != [5]uint64{0, 0, 0, 0, 1} || example != "b" {
		t.Errorf("hooks %v, unmet %v %q; want %v, other 1, b", got, unmet, example, want)
	}
}

// TestTableCompacts: a long run of expects and sweeps keeps the queues
// within twice what is held.
func TestTableCompacts(t *testing.T) {
	tb, c := newTable(Config{Deadline: time.Second})
	for i := range 10_000 {
		id := fmt.Sprint(i)
		tb.Expect(id, Call)
		tb.Met(id, Call)
		c.add(time.Millisecond)
		if i%100 == 0 {
			tb.Sweep()
		}
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if q := tb.queue; cap(q) > 4*1100 {
		t.Errorf("queue capacity %d for about 1000 held", cap(q))
	}
	if len(tb.pending) != 0 {
		t.Errorf("%d pending, want 0", len(tb.pending))
	}
}

// TestTableConcurrent: Expect, Met and Sweep from many goroutines (run
// with -race) lose no count.
func TestTableConcurrent(t *testing.T) {
	tb := New(Config{Deadline: time.Hour})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				id := fmt.Sprintf("%d-%d", g, i)
				tb.Expect(id, List)
				tb.Met(id, List)
				tb.Sweep()
			}
		}()
	}
	wg.Wait()
	if s := tb.Stats(); s.Expected[0] != 4000 || s.Met[0] != 4000 || s.Unmet[0] != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestTableMemory: a held id costs at most 160 bytes with its id (32 hex
// digits), so DefaultMax stays near 11 MB.
func TestTableMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100k ids")
	}
	tb := New(Config{Deadline: time.Hour})
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	for i := range DefaultMax {
		tb.Expect(fmt.Sprintf("%032x", i), Call)
	}
	runtime.GC()
	runtime.ReadMemStats(&b)
	per := (int64(b.HeapAlloc) - int64(a.HeapAlloc)) / DefaultMax
	t.Logf("%d bytes per held id", per)
	if per > 160 {
		t.Errorf("%d bytes per held id, want at most 160", per)
	}
	runtime.KeepAlive(tb)
}

func TestNilTable(t *testing.T) {
	var tb *Table
	tb.Expect("a", List)
	if tb.Met("a", List) || tb.Sweep() != [5]uint64{} || tb.Stats() != (Stats{}) {
		t.Error("a nil Table counted")
	}
}

func BenchmarkTableExpectMet(b *testing.B) {
	tb := New(Config{Deadline: time.Second})
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := ids[i%len(ids)]
		tb.Expect(id, Call)
		tb.Met(id, Call)
		if i%len(ids) == 0 {
			tb.Sweep()
		}
	}
}
