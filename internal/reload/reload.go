// Package reload keeps a live value in step with a file: read the file, hand
// its bytes to a callback that compiles, validates and publishes them, and
// report the outcome. A file that cannot be read or compiled leaves the last
// good value live (caddy keeps the old config when a new one fails;
// go-control-plane validates a snapshot before publishing it). The package
// knows neither the policy nor the service: the caller logs and counts.
package reload

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/filewatch"
)

// Loader reloads File through Publish. Its zero value with File and Publish
// set is ready to use; loads are serialized.
type Loader struct {
	File string
	// Publish compiles and validates src (the bytes of file) and publishes
	// the result atomically. It returns whether the live value changed (false
	// for content already live); with an error the live value must stay as
	// it was.
	Publish func(file string, src []byte) (changed bool, err error)
	// Loaded, if set, is told the outcome of every load (Load's and
	// Watch's), in order: it runs under the loader's lock right after
	// Publish returns or the read fails. It is where the caller logs and
	// counts.
	Loaded func(changed bool, err error)
	// OnWatchError, if set, receives the watcher's errors (e.g. an event
	// queue overflow); Watch then reloads to be safe.
	OnWatchError func(error)
	// Debounce is how long Watch waits after the first event of a burst
	// before reloading; zero means filewatch.DefaultDebounce (100ms).
	Debounce time.Duration

	mu sync.Mutex
}

// Load reads File and hands its bytes to Publish. It returns whether the
// live value changed, or the read error (an *fs.PathError) or Publish's
// error unchanged; the live value is then as it was.
func (l *Loader) Load() (changed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	src, err := os.ReadFile(l.File)
	if err == nil {
		changed, err = l.Publish(l.File, src)
	}
	if l.Loaded != nil {
		l.Loaded(changed, err)
	}
	return changed, err
}

// Watch calls Load whenever File may have changed (written, replaced by
// rename, its symlink target moved, or a ConfigMap ..data swap; see
// filewatch.Watch) until ctx ends, and returns nil then. Other files in its
// directory are ignored; Publish decides whether the content changed. Watch
// loads once when its watches are in place, so a change between the
// caller's first Load and Watch is not missed. Load outcomes go to Loaded;
// the error is a watch that could not be set up.
func (l *Loader) Watch(ctx context.Context) error {
	return filewatch.Watch(ctx, l.File, filewatch.Options{Debounce: l.Debounce, OnError: l.OnWatchError},
		func() { _, _ = l.Load() }) // the outcome goes to Loaded
}
