package extauthz

import (
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Decision log buffering: lines are written in batches of up to
// decisionLogBufferBytes, and at least every flush interval (by default
// decisionLogFlushInterval), so a line reaches the output at most that late
// (and is lost if the process is killed with SIGKILL before then). One
// write per batch instead of one per Check.
const (
	decisionLogBufferBytes   = 256 << 10
	decisionLogFlushInterval = time.Second
)

// NewDecisionLogger returns the JSON logger for the decision lines (one per
// Check, Server.Log) writing to w: buffered (see decisionLogBufferBytes), no
// caller or stack trace capture (a decision line is always written from the
// same place), unsampled, timestamps "ts" in RFC 3339 with nanoseconds.
// flush bounds how long a line waits in the buffer (0 means
// decisionLogFlushInterval). stop flushes what is buffered and ends the
// flushing goroutine; call it once, after the gRPC server has stopped.
// Lines below level are dropped.
func NewDecisionLogger(w io.Writer, level zapcore.LevelEnabler, flush time.Duration) (log *zap.Logger, stop func() error) {
	if flush <= 0 {
		flush = decisionLogFlushInterval
	}
	ws := &zapcore.BufferedWriteSyncer{
		WS:            zapcore.AddSync(w),
		Size:          decisionLogBufferBytes,
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
