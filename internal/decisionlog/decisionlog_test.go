package decisionlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"go.uber.org/goleak"
	"go.uber.org/zap/zapcore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDecisionLoggerFlushInterval: a line is written within the flush
// interval without stop.
func TestDecisionLoggerFlushInterval(t *testing.T) {
	var out testkit.Buffer
	log, stop := New(&out, zapcore.InfoLevel, 10*time.Millisecond)
	defer func() { _ = stop() }()
	log.Info("decision")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"msg":"decision"`) {
		if time.Now().After(deadline) {
			t.Fatal("line not flushed within 10s at a 10ms interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// counts records what Counters are told.
type counts struct {
	mu                      sync.Mutex
	errors, dropped, blocks map[string]int
	blocked                 chan struct{} // one value per DecisionLogBlock
}

func newCounts() *counts {
	return &counts{errors: map[string]int{}, dropped: map[string]int{}, blocks: map[string]int{}, blocked: make(chan struct{}, 100)}
}

func (c *counts) DecisionLogWriteError(s string)  { c.mu.Lock(); c.errors[s]++; c.mu.Unlock() }
func (c *counts) DecisionLogDrop(s string, n int) { c.mu.Lock(); c.dropped[s] += n; c.mu.Unlock() }
func (c *counts) DecisionLogBlock(s string) {
	c.mu.Lock()
	c.blocks[s]++
	c.mu.Unlock()
	c.blocked <- struct{}{}
}

func (c *counts) get(m map[string]int, s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m[s]
}

// stalledSink holds every Write until release is closed (or its context
// ends), then keeps the lines; err, if set, fails every Write.
type stalledSink struct {
	release chan struct{}
	err     error
	mu      sync.Mutex
	lines   []string
	closed  bool
}

func newStalledSink() *stalledSink { return &stalledSink{release: make(chan struct{})} }

func (s *stalledSink) Name() string { return "test" }
func (s *stalledSink) Write(ctx context.Context, b []byte) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.err != nil {
		return s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	return nil
}
func (s *stalledSink) Close(context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
func (s *stalledSink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// line is a log message longer than a chunk of a 1 KiB buffer (64 bytes),
// so each chunk holds one line.
func line(i int) string { return fmt.Sprintf("decision %03d %s", i, strings.Repeat("x", 80)) }

// TestDropWhenTheSinkStalls: with the sink stalled, the buffer holds one
// line per chunk (16); later lines are dropped and counted, and the Check
// (here the caller of Info) never waits. The kept lines are written once
// the sink moves, in order.
func TestDropWhenTheSinkStalls(t *testing.T) {
	sink, c := newStalledSink(), newCounts()
	log, stop := NewLogger([]Sink{sink}, Options{BufferBytes: 1024, FlushInterval: time.Hour, Counters: c})
	for i := range 20 {
		log.Info(line(i))
	}
	if got := c.get(c.dropped, "test"); got != 4 {
		t.Errorf("dropped %d, want 4 (20 lines, 16 chunks)", got)
	}
	close(sink.release)
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sink.got()
	if len(got) != 16 || !strings.Contains(got[0], "decision 000") || !strings.Contains(got[15], "decision 015") {
		t.Errorf("written %d lines (%.30q … ), want lines 0..15 in order", len(got), got)
	}
	if c.get(c.blocks, "test") != 0 || !sink.closed {
		t.Errorf("blocks %d, closed %v", c.get(c.blocks, "test"), sink.closed)
	}
}

// TestBlockWaitsForTheSink: under Block, the line that finds no room waits
// (counted) until the sink takes a chunk; nothing is dropped.
func TestBlockWaitsForTheSink(t *testing.T) {
	sink, c := newStalledSink(), newCounts()
	log, stop := NewLogger([]Sink{sink}, Options{BufferBytes: 1024, FlushInterval: time.Hour, Counters: c, Overflow: Block})
	for i := range 16 {
		log.Info(line(i))
	}
	done := make(chan struct{})
	go func() { log.Info(line(16)); close(done) }()
	<-c.blocked // the 17th line is waiting
	select {
	case <-done:
		t.Fatal("the 17th line returned with every chunk in use")
	default:
	}
	close(sink.release)
	<-done
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sink.got(); len(got) != 17 || c.get(c.dropped, "test") != 0 || c.get(c.blocks, "test") != 1 {
		t.Errorf("written %d, dropped %d, blocked %d; want 17, 0, 1", len(got), c.get(c.dropped, "test"), c.get(c.blocks, "test"))
	}
}

// TestWriteErrorsCounted: a failed write counts an error and its lines as
// dropped, and is reported once.
func TestWriteErrorsCounted(t *testing.T) {
	sink, c := newStalledSink(), newCounts()
	close(sink.release)
	sink.err = errors.New("disk full")
	var reported []string
	log, stop := NewLogger([]Sink{sink}, Options{FlushInterval: time.Hour, Counters: c,
		OnError: func(s string, err error) { reported = append(reported, s+": "+err.Error()) }})
	log.Info("a")
	log.Info("b")
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.get(c.errors, "test") != 1 || c.get(c.dropped, "test") != 2 || len(reported) != 1 || reported[0] != "test: disk full" {
		t.Errorf("errors %d dropped %d reported %v", c.get(c.errors, "test"), c.get(c.dropped, "test"), reported)
	}
}

// TestStopGivesUpAtTheDeadline: a sink that does not move by the deadline
// costs its lines, counted and named in stop's error.
func TestStopGivesUpAtTheDeadline(t *testing.T) {
	sink, c := newStalledSink(), newCounts()
	log, stop := NewLogger([]Sink{sink}, Options{FlushInterval: time.Hour, Counters: c})
	log.Info("a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := stop(ctx)
	// The stalled Write returns on its cancelled context: an error, its
	// line dropped.
	if err != nil && !strings.Contains(err.Error(), "not flushed") {
		t.Fatal(err)
	}
	if c.get(c.dropped, "test") != 1 {
		t.Errorf("dropped %d, want 1", c.get(c.dropped, "test"))
	}
	log.Info("after stop")
	if c.get(c.dropped, "test") != 2 {
		t.Errorf("a line after stop: dropped %d, want 2", c.get(c.dropped, "test"))
	}
}

// TestFileSinkReopensARotatedFile: after a rename (logrotate create) the
// next batch goes to a new file at the path.
func TestFileSinkReopensARotatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	s, err := FileSink(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{path + ".1": "one\n", path: "two\n"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
}

func TestParseOverflow(t *testing.T) {
	for give, want := range map[string]Overflow{"drop": Drop, "block": Block} {
		if got, err := ParseOverflow(give); err != nil || got != want {
			t.Errorf("ParseOverflow(%q) = %v, %v", give, got, err)
		}
	}
	if _, err := ParseOverflow("Drop"); err == nil {
		t.Error("ParseOverflow(Drop) accepted")
	}
}
