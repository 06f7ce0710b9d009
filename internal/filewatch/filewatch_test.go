package filewatch

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const debounce = 20 * time.Millisecond

// quiet is how long a test waits to see that nothing happens: many
// debounce periods.
const quiet = 15 * debounce

type rig struct {
	t     *testing.T
	calls atomic.Int64
	ch    chan struct{}
}

// start runs Watch on path until the test ends and waits for its first
// call (made once the watches are in place).
func start(t *testing.T, path string) *rig {
	r := &rig{t: t, ch: make(chan struct{}, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, path, Options{Debounce: debounce}, func() { r.calls.Add(1); r.ch <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v", err)
		}
	})
	r.wait("the first call")
	return r
}

func (r *rig) wait(what string) {
	r.t.Helper()
	select {
	case <-r.ch:
	case <-time.After(5 * time.Second):
		r.t.Fatalf("no call after %s", what)
	}
}

// settle counts the calls that still come until none has come for quiet.
func (r *rig) settle() int {
	n := 0
	for {
		select {
		case <-r.ch:
			n++
		case <-time.After(quiet):
			return n
		}
	}
}

// none asserts no call comes within quiet.
func (r *rig) none(what string) {
	r.t.Helper()
	select {
	case <-r.ch:
		r.t.Fatalf("a call after %s, want none", what)
	case <-time.After(quiet):
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A log written next to the file, over and over, never calls onChange;
// the file itself does, once per burst.
func TestWatchOnlyTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	write(t, file, "v0")
	r := start(t, file)

	log := filepath.Join(dir, "extauthz.log")
	for i := range 50 {
		write(t, log, time.Now().String()+string(rune('a'+i%26)))
		write(t, filepath.Join(dir, "policy.yaml.swp"), "x")
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.none("writes to other files in the directory")

	for i := range 10 { // a burst is one call per debounce period, at most one per write
		write(t, file, "v1"+string(rune('a'+i)))
	}
	r.wait("a write to the file")
	if n := r.settle(); n > 9 {
		t.Errorf("%d more calls after a burst of 10 writes", n)
	}

	tmp := filepath.Join(dir, ".policy.yaml.tmp")
	write(t, tmp, "v2")
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	r.wait("a rename onto the file")
	r.settle()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	r.wait("removing the file")
}

// A ConfigMap volume: the file is a symlink through ..data, which the
// kubelet swaps by rename; each swap calls onChange, and other keys of the
// ConfigMap written beside do not.
func TestWatchConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, src string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name, "policy.yaml"), src)
	}
	version("..v1", "v1")
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "policy.yaml")
	if err := os.Symlink(filepath.Join("..data", "policy.yaml"), file); err != nil {
		t.Fatal(err)
	}
	r := start(t, file)

	write(t, filepath.Join(dir, "..v1", "other-key.yaml"), "x")
	r.none("another file in the data directory")

	for i, name := range []string{"..v2", "..v3"} {
		version(name, name)
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		r.wait("ConfigMap swap " + name)
		r.settle()
		if i == 0 {
			if err := os.RemoveAll(filepath.Join(dir, "..v1")); err != nil {
				t.Fatal(err)
			}
			r.none("removing the old data directory") // its file is no longer the target
		}
	}
	// A write through the symlink to the current target counts too.
	write(t, filepath.Join(dir, "..v3", "policy.yaml"), "v3b")
	r.wait("a write to the symlink's target")
}

func TestWatchMissingDirectory(t *testing.T) {
	err := Watch(context.Background(), filepath.Join(t.TempDir(), "nope", "policy.yaml"), Options{}, func() {})
	if err == nil {
		t.Fatal("Watch of a file in a missing directory succeeded")
	}
}

// TestWatchAllStopsOnFirstError: a path whose directory cannot be watched
// ends WatchAll with that error, and the other watches with it.
func TestWatchAllStopsOnFirstError(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a.yaml")
	write(t, good, "a")
	err := WatchAll(t.Context(), []string{good, filepath.Join(dir, "missing", "b.yaml")}, Options{}, func() {})
	if err == nil {
		t.Fatal("WatchAll returned nil for an unwatchable path")
	}
}
