// Package decisionlog builds the logger of the decision lines: one JSON
// line per Check (extauthz.Server.Log), buffered so a Check costs no write.
package decisionlog

import (
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Decision log buffering: lines are written in batches of up to
// bufferBytes, and at least every flush interval (by default
// flushInterval), so a line reaches the output at most that late
// (and is lost if the process is killed with SIGKILL before then). One
// write per batch instead of one per Check.
const (
	bufferBytes   = 256 << 10
	flushInterval = time.Second
)

// New returns the JSON logger for the decision lines (one per Check,
// extauthz.Server.Log) writing to w: buffered (see bufferBytes), no
// caller or stack trace capture (a decision line is always written from the
// same place), unsampled, timestamps "ts" in RFC 3339 with nanoseconds.
// flush bounds how long a line waits in the buffer (0 means
// flushInterval). stop flushes what is buffered and ends the
// flushing goroutine; call it once, after the gRPC server has stopped.
// Lines below level are dropped.
func New(w io.Writer, level zapcore.LevelEnabler, flush time.Duration) (log *zap.Logger, stop func() error) {
	if flush <= 0 {
		flush = flushInterval
	}
	ws := &zapcore.BufferedWriteSyncer{
		WS:            zapcore.AddSync(w),
		Size:          bufferBytes,
		FlushInterval: flush,
	}
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "ts"
	ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	ec.CallerKey = zapcore.OmitKey
	ec.StacktraceKey = zapcore.OmitKey
	core := zapcore.NewCore(zapcore.NewJSONEncoder(ec), ws, level)
	return zap.New(core), ws.Stop
}
