package extauthz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// PolicyLoader keeps a PolicyStore in step with a policy file: compile, then
// swap atomically. A file that cannot be read or compiled keeps the last good
// policy live, is logged with its file:line:col problems and counted in
// policy_reload_errors_total.
type PolicyLoader struct {
	File    string
	Store   *PolicyStore
	Log     *zap.Logger // nil: no logging
	Metrics *Metrics    // nil: no metrics
	// Debounce is how long Watch waits after the last file event before
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
			if l.Metrics != nil {
				l.Metrics.PolicyReloads.Inc()
				l.Metrics.policyVersion(lp.Version)
			}
			if l.Log != nil {
				l.Log.Info("policy loaded", zap.String("file", l.File), zap.String("policy_version", lp.Version))
			}
			return nil
		}
	}
	if l.Metrics != nil {
		l.Metrics.PolicyReloadError.Inc()
	}
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

// Watch reloads the policy whenever its directory changes, until ctx ends
// (WatchFiles on l.File).
func (l *PolicyLoader) Watch(ctx context.Context) error {
	return WatchFiles(ctx, []string{l.File}, l.Debounce, l.Log, func() { _ = l.Load() }) // logged and counted inside
}

// WatchFiles calls reload whenever the directory of one of files changes,
// until ctx ends. It watches directories rather than files because a
// Kubernetes ConfigMap or Secret update swaps the ..data symlink instead of
// writing the file, and editors replace files by rename; reload decides
// (by content) whether anything changed. When a file is a symlink, the
// directory it resolves to is watched too. WatchFiles also calls reload
// once when its watches are in place, so a change between the caller's
// first load and the watch is not missed. Events are debounced (zero
// means 100ms); log, if not nil, gets watch errors.
func WatchFiles(ctx context.Context, files []string, debounce time.Duration, log *zap.Logger, reload func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[filepath.Dir(f)] = true
		if real, err := filepath.EvalSymlinks(f); err == nil {
			dirs[filepath.Dir(real)] = true
		}
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watch %s: %w", d, err)
		}
	}
	if debounce == 0 {
		debounce = 100 * time.Millisecond
	}
	// One load once watched: a change since the caller's Load is not lost.
	timer := time.NewTimer(debounce)
	defer timer.Stop()
	pending := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			// The first event arms the timer; later ones do not push it
			// back, so a directory that keeps changing still reloads.
			if !pending {
				timer.Reset(debounce)
				pending = true
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if log != nil {
				log.Warn("file watch error; reloading to be safe", zap.Error(err))
			}
			if !pending { // e.g. an event overflow: something may have changed
				timer.Reset(debounce)
				pending = true
			}
		case <-timer.C:
			pending = false
			reload()
			// A symlink may now point into a new directory (ConfigMap
			// ..data swap): watch it as well.
			for _, f := range files {
				if real, err := filepath.EvalSymlinks(f); err == nil && !dirs[filepath.Dir(real)] {
					if err := w.Add(filepath.Dir(real)); err == nil {
						dirs[filepath.Dir(real)] = true
					}
				}
			}
		}
	}
}
