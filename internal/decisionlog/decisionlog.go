// Package decisionlog builds the logger of the decision lines: one JSON
// line per Check (extauthz.Server.Log), written by a goroutine per sink
// (stdout, a file, OTLP logs) from a bounded buffer, so that a Check never
// waits for a sink's I/O, and a stalled or broken sink costs lines, counted,
// instead of stalling every Check (Overflow Drop, the default), or holds
// Checks until it drains (Overflow Block, counted too). Lines are flushed
// at least every flush interval and when the logger is stopped.
package decisionlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Defaults of Options.
const (
	// DefaultBufferBytes bounds the lines held for one sink: 1 MiB, about
	// 1,500 lines of 700 bytes, in chunks of a sixteenth.
	DefaultBufferBytes = 1 << 20
	// DefaultFlushInterval is how long a line may wait for a fuller chunk.
	DefaultFlushInterval = time.Second
	// chunks is how many pieces a sink's buffer is cut into: one is filled
	// while others wait for the sink or are being written.
	chunks = 16
)

// Sink is where a decision line ends up. Write is called from one goroutine
// at a time with whole lines, each ending in '\n'; it must not keep lines.
// Close is called once, after the last Write.
type Sink interface {
	Name() string // the sink label of the metrics: stdout, file, otlp
	Write(ctx context.Context, lines []byte) error
	Close(ctx context.Context) error
}

// Overflow is what a line does when its sink's buffer is full.
type Overflow int

const (
	// Drop loses the line and counts it (decision_log_dropped_total): a
	// stalled sink never stalls a Check. The default.
	Drop Overflow = iota
	// Block makes the Check wait until the sink has taken a chunk, and
	// counts the wait (decision_log_blocked_total): no line is lost to a
	// full buffer, but a stalled sink stalls every Check until Envoy's
	// timeout denies them.
	Block
)

// ParseOverflow parses "drop" or "block".
func ParseOverflow(s string) (Overflow, error) {
	switch s {
	case "drop":
		return Drop, nil
	case "block":
		return Block, nil
	}
	return Drop, fmt.Errorf("%q: want drop or block", s)
}

// Counters counts what happens to lines (internal/metrics.Metrics does).
type Counters interface {
	DecisionLogWriteError(sink string)
	DecisionLogDrop(sink string, n int)
	DecisionLogBlock(sink string)
}

// Options configure NewLogger.
type Options struct {
	Level         zapcore.LevelEnabler // lines below it are not written; nil is info
	Overflow      Overflow
	BufferBytes   int           // per sink; 0 is DefaultBufferBytes. A line longer than a chunk still fits, alone
	FlushInterval time.Duration // 0 is DefaultFlushInterval
	Counters      Counters      // nil counts nothing
	// OnError is told of a failed write (at most once per ten seconds per
	// sink; every one is counted); nil says nothing.
	OnError func(sink string, err error)
}

// NewLogger returns the JSON logger of the decision lines writing to every
// sink: no caller or stack trace capture (a decision line is always written
// from the same place), unsampled (extauthz samples allowed lines itself),
// timestamps "ts" in RFC 3339 with nanoseconds. stop flushes what is
// buffered, waits for the sinks until ctx ends (lines still held then are
// counted as dropped and named in the error) and closes them; call it
// once, after the gRPC server has stopped.
func NewLogger(sinks []Sink, o Options) (log *zap.Logger, stop func(ctx context.Context) error) {
	if o.Level == nil {
		o.Level = zapcore.InfoLevel
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = DefaultBufferBytes
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "ts"
	ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	ec.CallerKey = zapcore.OmitKey
	ec.StacktraceKey = zapcore.OmitKey
	cores := make([]zapcore.Core, 0, len(sinks))
	queues := make([]*queue, 0, len(sinks))
	for _, s := range sinks {
		q := newQueue(s, &o)
		queues = append(queues, q)
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(ec), q, o.Level))
	}
	stop = func(ctx context.Context) error {
		var errs []error
		for _, q := range queues {
			if err := q.stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	return zap.New(zapcore.NewTee(cores...)), stop
}

// New is NewLogger with one sink writing to w (named stdout), Overflow
// Block and a flush interval of flush (0: DefaultFlushInterval); stop
// waits at most 10 seconds.
func New(w io.Writer, level zapcore.LevelEnabler, flush time.Duration) (log *zap.Logger, stop func() error) {
	l, s := NewLogger([]Sink{WriterSink("stdout", w)}, Options{Level: level, Overflow: Block, FlushInterval: flush})
	return l, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s(ctx)
	}
}

// chunk is a piece of a sink's buffer: whole lines.
type chunk struct {
	b     []byte
	lines int
}

// queue is one sink's buffer and writer: a zapcore.WriteSyncer whose
// Write copies the line into the chunk being filled.
type queue struct {
	sink      Sink
	o         *Options
	chunkSize int

	mu     sync.Mutex
	cur    *chunk // being filled; nil until a line needs it
	closed bool

	free chan *chunk // chunks not in use
	full chan *chunk // chunks for the writer, in order; never blocks (room for all)

	ctx       context.Context // the writer's; cancelled when stop gives up
	cancel    context.CancelFunc
	done      chan struct{} // the writer returned
	tickDone  chan struct{}
	stopTick  chan struct{}
	lastError time.Time
}

func newQueue(s Sink, o *Options) *queue {
	q := &queue{
		sink: s, o: o, chunkSize: max(o.BufferBytes/chunks, 1),
		free: make(chan *chunk, chunks), full: make(chan *chunk, chunks),
		done: make(chan struct{}), tickDone: make(chan struct{}), stopTick: make(chan struct{}),
	}
	for range chunks {
		q.free <- &chunk{}
	}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.write()
	go q.tick()
	return q
}

// Write takes one encoded line (zap writes each entry once, whole).
func (q *queue) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.dropped(1)
		return len(p), nil
	}
	if q.cur != nil && len(q.cur.b) > 0 && len(q.cur.b)+len(p) > q.chunkSize {
		q.full <- q.cur
		q.cur = nil
	}
	if q.cur == nil {
		if q.cur = q.take(); q.cur == nil {
			q.dropped(1)
			return len(p), nil
		}
	}
	if q.cur.b == nil {
		q.cur.b = make([]byte, 0, q.chunkSize)
	}
	q.cur.b = append(q.cur.b, p...)
	q.cur.lines++
	return len(p), nil
}

// Sync is a no-op: lines are flushed by the interval and by stop.
func (q *queue) Sync() error { return nil }

// take returns a free chunk: at once, or under Block after waiting for
// one; nil under Drop when none is free. q.mu is held.
func (q *queue) take() *chunk {
	select {
	case c := <-q.free:
		return c
	default:
	}
	if q.o.Overflow == Drop {
		return nil
	}
	if q.o.Counters != nil {
		q.o.Counters.DecisionLogBlock(q.sink.Name())
	}
	return <-q.free
}

func (q *queue) dropped(n int) {
	if q.o.Counters != nil && n > 0 {
		q.o.Counters.DecisionLogDrop(q.sink.Name(), n)
	}
}

// flush hands the chunk being filled to the writer.
func (q *queue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cur != nil && len(q.cur.b) > 0 {
		q.full <- q.cur
		q.cur = nil
	}
}

func (q *queue) tick() {
	defer close(q.tickDone)
	t := time.NewTicker(q.o.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-q.stopTick:
			return
		case <-t.C:
			q.flush()
		}
	}
}

// write sends full chunks to the sink until full is closed.
func (q *queue) write() {
	defer close(q.done)
	for c := range q.full {
		if err := q.sink.Write(q.ctx, c.b); err != nil {
			if q.o.Counters != nil {
				q.o.Counters.DecisionLogWriteError(q.sink.Name())
			}
			q.dropped(c.lines)
			if q.o.OnError != nil && time.Since(q.lastError) >= 10*time.Second {
				q.lastError = time.Now()
				q.o.OnError(q.sink.Name(), err)
			}
		}
		c.b, c.lines = c.b[:0], 0
		q.free <- c
	}
}

// stop flushes, waits for the writer until ctx ends and closes the sink.
func (q *queue) stop(ctx context.Context) error {
	close(q.stopTick)
	<-q.tickDone
	q.mu.Lock()
	if q.cur != nil && len(q.cur.b) > 0 {
		q.full <- q.cur
		q.cur = nil
	}
	q.closed = true
	close(q.full)
	q.mu.Unlock()
	var err error
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancel() // an exporter gives up; a stalled writer may not
		select {
		case <-q.done:
		case <-time.After(time.Second):
			left := 0
			for c := range q.full {
				left += c.lines
			}
			q.dropped(left)
			err = fmt.Errorf("decision log %s: not flushed before the shutdown deadline; %d lines dropped", q.sink.Name(), left)
			q.cancel()
			return err // the sink is still in use: not closed
		}
	}
	q.cancel()
	if cerr := q.sink.Close(ctx); cerr != nil {
		err = fmt.Errorf("decision log %s: %w", q.sink.Name(), cerr)
	}
	return err
}
