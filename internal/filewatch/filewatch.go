// Package filewatch tells when one file may have changed: written in place,
// replaced by rename (editors, config tools), reached through a symlink
// whose target moved, or swapped in by a Kubernetes ConfigMap volume (the
// kubelet's atomic writer renames the ..data symlink). Events for other
// files in the same directories are ignored, so a log written next to the
// file costs nothing.
package filewatch

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is the quiet time Watch waits for when Options.Debounce
// is zero.
const DefaultDebounce = 100 * time.Millisecond

// Options tune Watch.
type Options struct {
	// Debounce: after the first event, wait this long before calling
	// onChange, so a burst of writes is one call. Later events do not push
	// the call back, so a file that keeps changing is still reloaded.
	Debounce time.Duration
	// OnError, if set, receives the watcher's errors (e.g. an event queue
	// overflow); Watch then calls onChange to be safe.
	OnError func(error)
}

// Watch calls onChange after the file at path may have changed, until ctx
// ends; it returns nil then. It watches path's directory and, when path is
// a symlink, the directory of its target (re-resolved after every change),
// and reacts only to events naming path, its target, or the ..data entry
// beside path. It also calls onChange once when its watches are in place,
// so a change between the caller's first read and Watch is not lost.
// onChange runs on Watch's goroutine; the content decides whether anything
// changed. The error is a watch that could not be set up.
func Watch(ctx context.Context, path string, o Options, onChange func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	path = filepath.Clean(path)
	dirs := map[string]bool{}
	watchDir := func(d string) error {
		if dirs[d] {
			return nil
		}
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watch %s: %w", d, err)
		}
		dirs[d] = true
		return nil
	}
	if err := watchDir(filepath.Dir(path)); err != nil {
		return err
	}
	// relevant names: path, ..data beside it, and path's resolved target.
	relevant := map[string]bool{}
	resolve := func() {
		clear(relevant)
		relevant[path] = true
		relevant[filepath.Join(filepath.Dir(path), "..data")] = true
		if real, err := filepath.EvalSymlinks(path); err == nil {
			real = filepath.Clean(real)
			relevant[real] = true
			_ = watchDir(filepath.Dir(real)) // best effort: the next swap retries
		}
	}
	resolve()

	debounce := o.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	timer := time.NewTimer(debounce) // the call once watched
	defer timer.Stop()
	pending := true
	arm := func() {
		if !pending {
			timer.Reset(debounce)
			pending = true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if relevant[filepath.Clean(ev.Name)] {
				arm()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if o.OnError != nil {
				o.OnError(err)
			}
			arm() // e.g. an overflow: something may have changed
		case <-timer.C:
			pending = false
			// A symlink may now point into a new directory: watch it before
			// reading, so a write right after the read is not missed.
			resolve()
			onChange()
		}
	}
}

// WatchAll watches each of paths as Watch does and calls onChange after any
// of them may have changed, for one path at a time, until ctx ends; it
// returns nil then, or the first watch that could not be set up (stopping
// the others). o.OnError receives watch errors prefixed with the path. It
// owns its goroutines and waits for them.
func WatchAll(ctx context.Context, paths []string, o Options, onChange func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // onChange runs for one path at a time
	errs := make(chan error, len(paths))
	for _, p := range paths {
		po := o
		if o.OnError != nil {
			po.OnError = func(err error) { o.OnError(fmt.Errorf("%s: %w", p, err)) }
		}
		go func() {
			errs <- Watch(ctx, p, po, func() {
				mu.Lock()
				defer mu.Unlock()
				onChange()
			})
		}()
	}
	var first error
	for range paths {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // stop the others
		}
	}
	return first
}
