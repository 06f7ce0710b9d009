package extauthz

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// PolicyLoader keeps a PolicyStore in step with a policy file: compile, then
// swap atomically. A file that cannot be read or compiled keeps the last good
// policy live, is logged with its file:line:col problems and counted in
// policy_reload_errors_total.
type PolicyLoader struct {
	File    string
	Store   *PolicyStore
	Log     *zap.Logger      // nil: no logging
	Metrics *metrics.Metrics // nil: no metrics
	// Debounce is how long Watch waits after the first event of a burst before
	// reloading; zero means 100ms.
	Debounce time.Duration

	mu sync.Mutex // serializes loads
}

// Load reads and compiles the file and publishes it if its version differs
// from the live one. It returns the read or compile error (a
// *policy.CompileError for a bad policy); the live policy is then unchanged.
func (l *PolicyLoader) Load() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	src, err := os.ReadFile(l.File)
	if err == nil {
		var lp *LoadedPolicy
		if lp, err = CompilePolicy(l.File, src); err == nil {
			if cur := l.Store.Load(); cur != nil && cur.Version == lp.Version {
				return nil
			}
			l.Store.Store(lp)
			l.Metrics.PolicyPublished(lp.Version)
			if l.Log != nil {
				l.Log.Info("policy loaded", zap.String("file", l.File), zap.String("policy_version", lp.Version))
			}
			return nil
		}
	}
	l.Metrics.PolicyRefused()
	if l.Log != nil {
		fields := []zap.Field{zap.String("file", l.File), zap.Error(err)}
		var ce *policy.CompileError
		if errors.As(err, &ce) {
			probs := make([]string, len(ce.Problems))
			for i, p := range ce.Problems {
				probs[i] = p.String()
			}
			fields = append(fields, zap.Strings("problems", probs))
		}
		if cur := l.Store.Load(); cur != nil {
			fields = append(fields, zap.String("kept_policy_version", cur.Version))
		}
		l.Log.Error("policy reload refused; keeping the last good policy", fields...)
	}
	return err
}

// Watch reloads the policy whenever the file may have changed (written,
// replaced by rename, its symlink target moved, or a ConfigMap ..data swap;
// see filewatch.Watch), until ctx ends. Other files in its directory are
// ignored. The content hash decides whether anything changed. Watch loads
// once when its watches are in place, so a change between the caller's
// first Load and Watch is not missed.
func (l *PolicyLoader) Watch(ctx context.Context) error {
	return filewatch.Watch(ctx, l.File, filewatch.Options{
		Debounce: l.Debounce,
		OnError: func(err error) {
			if l.Log != nil {
				l.Log.Warn("policy watch error; reloading to be safe", zap.Error(err))
			}
		},
	}, func() { _ = l.Load() }) // logged and counted inside
}

// Ready returns nil once a policy is stored, else why not (a readiness
// check).
func (s *PolicyStore) Ready() error {
	if s.Load() == nil {
		return errNoPolicy
	}
	return nil
}

var errNoPolicy = errors.New("no policy compiled")
