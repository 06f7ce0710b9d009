package decisionlog

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zapcore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lockedBuffer is a bytes.Buffer safe for the flushing goroutine and the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDecisionLoggerFlushInterval: a line is written within the flush
// interval without stop.
func TestDecisionLoggerFlushInterval(t *testing.T) {
	var out lockedBuffer
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
