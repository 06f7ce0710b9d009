package reload

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// published is what the rig's Publish makes live.
type published struct {
	policy  *policy.Policy
	file    string
	version string
}

// rig is a Loader whose Publish compiles a real policy (package policy) and
// publishes it, unless its version is live already, and whose Loaded counts
// the outcomes.
type rig struct {
	loader  *Loader
	current atomic.Pointer[published]
	changes atomic.Int64 // loads that published a new policy
	errs    atomic.Int64 // loads that failed
	// loaded fires after every load (a coalescing notification: a buffer
	// of one, sent without blocking).
	loaded chan struct{}
}

// newRig loads file once (it must hold a valid policy) and returns the rig,
// with the production debounce (100ms). The watcher is not started.
func newRig(t testing.TB, file string) *rig {
	t.Helper()
	r := &rig{loaded: make(chan struct{}, 1)}
	r.loader = &Loader{File: file, Publish: r.publish, Loaded: func(changed bool, err error) {
		if err != nil {
			r.errs.Add(1)
		} else if changed {
			r.changes.Add(1)
		}
		select {
		case r.loaded <- struct{}{}:
		default:
		}
	}}
	if changed, err := r.loader.Load(); err != nil || !changed {
		t.Fatalf("initial Load = %v, %v; want true, nil", changed, err)
	}
	return r
}

func (r *rig) publish(file string, src []byte) (bool, error) {
	p, err := policy.Compile(file, src)
	if err != nil {
		return false, err
	}
	v := testkit.PolicyVersion(src)
	if cur := r.current.Load(); cur != nil && cur.version == v {
		return false, nil
	}
	r.current.Store(&published{policy: p, file: file, version: v})
	return true, nil
}

// live returns the live version, or "" when there is none.
func (r *rig) live() string {
	if p := r.current.Load(); p != nil {
		return p.version
	}
	return ""
}

// watch runs Watch until the test ends and returns once the watcher is
// known to be live. Readiness is proven, not assumed: the live value is set
// to a sentinel and the file is rewritten with its own bytes until the
// watcher's reload puts the file's policy back. Watch must return nil when
// its context ends; the cleanup waits for it, so no goroutine outlives the
// test.
func (r *rig) watch(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.loader.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch returned %v after its context ended, want nil", err)
			}
		case <-time.After(testkit.WaitTimeout):
			t.Errorf("Watch did not return within %v of its context ending", testkit.WaitTimeout)
		}
	})

	want := r.live()
	src, err := os.ReadFile(r.loader.File)
	if err != nil {
		t.Fatal(err)
	}
	r.current.Store(&published{policy: r.current.Load().policy, file: "sentinel", version: "sha256:sentinel"})
	deadline := time.Now().Add(testkit.WaitTimeout)
	for r.live() != want {
		select {
		case err := <-done:
			t.Fatalf("Watch returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("watcher never reloaded after rewriting %s", r.loader.File)
		}
		// Rewrite, then wait for the reload, or rewrite again after three
		// debounces (100ms) if the watches were not yet in place.
		testkit.WriteFile(t, r.loader.File, src)
		select {
		case <-r.loaded:
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// waitLive waits, on the loader's reports, until the live policy is src's.
func (r *rig) waitLive(t testing.TB, what string, src []byte) {
	t.Helper()
	want := testkit.PolicyVersion(src)
	testkit.WaitSignal(t, what+": new policy live", r.loaded, func() bool { return r.live() == want })
}

// TestWatchReloadsFile: a policy written in place, or written beside and
// renamed over (as editors and config tools do), is live within the poll
// deadline and published once per change.
func TestWatchReloadsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	testkit.WriteFile(t, file, testkit.SearchPolicy("v0"))
	r := newRig(t, file)
	r.watch(t)
	base := r.changes.Load() // the initial Load and the watcher's proof of life

	v1 := testkit.SearchPolicy("v1")
	testkit.WriteFile(t, file, v1)
	r.waitLive(t, "os.WriteFile", v1)
	if got := r.changes.Load(); got != base+1 {
		t.Errorf("%d changes reported after WriteFile, want %d", got, base+1)
	}

	v2 := testkit.SearchPolicy("v2")
	tmp := filepath.Join(dir, ".policy.yaml.tmp")
	testkit.WriteFile(t, tmp, v2)
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	r.waitLive(t, "write-to-temp and rename", v2)
	if got := r.changes.Load(); got != base+2 {
		t.Errorf("%d changes reported after rename, want %d", got, base+2)
	}

	if p := r.current.Load(); p.file != file || p.policy == nil {
		t.Errorf("live policy = %+v, want compiled from %s", p, file)
	}
	if got := r.errs.Load(); got != 0 {
		t.Errorf("%d load errors reported, want 0", got)
	}
}

// TestWatchCatchesChangeBeforeStart: a change that lands between the first
// Load and Watch adding its watches (serve loads, then builds the verifier,
// then starts Watch) is not lost: it goes live without any further event.
func TestWatchCatchesChangeBeforeStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, testkit.SearchPolicy("v0"))
	r := newRig(t, file)
	v1 := testkit.SearchPolicy("v1")
	testkit.WriteFile(t, file, v1)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.loader.Watch(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	}()
	r.waitLive(t, "a change made before Watch started", v1)
}

// configMap lays out a mounted Kubernetes ConfigMap volume as the kubelet's
// atomic writer does: the data in a timestamped directory, ..data a symlink
// to it, and each key a symlink through ..data.
type configMap struct {
	t   testing.TB
	dir string
	cur string // the timestamped directory ..data points to
}

func newConfigMap(t testing.TB, src []byte) *configMap {
	t.Helper()
	c := &configMap{t: t, dir: t.TempDir(), cur: "..2026_01_01_v1"}
	c.writeVersion(c.cur, src)
	if err := os.Symlink(c.cur, filepath.Join(c.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "policy.yaml"), c.file()); err != nil {
		t.Fatal(err)
	}
	return c
}

// file is the path the pod reads: dir/policy.yaml.
func (c *configMap) file() string { return filepath.Join(c.dir, "policy.yaml") }

func (c *configMap) writeVersion(name string, src []byte) {
	c.t.Helper()
	if err := os.Mkdir(filepath.Join(c.dir, name), 0o755); err != nil {
		c.t.Fatal(err)
	}
	testkit.WriteFile(c.t, filepath.Join(c.dir, name, "policy.yaml"), src)
}

// update swaps in src the way the kubelet does: new timestamped directory,
// ..data_tmp symlink to it, rename over ..data (atomic), remove the old
// directory.
func (c *configMap) update(name string, src []byte) {
	c.t.Helper()
	c.writeVersion(name, src)
	tmp := filepath.Join(c.dir, "..data_tmp")
	if err := os.Symlink(name, tmp); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		c.t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(c.dir, c.cur)); err != nil {
		c.t.Fatal(err)
	}
	c.cur = name
}

// TestWatchConfigMapSwap: a ConfigMap update (the ..data symlink swap) makes
// the new policy live, and so does the next one, after the directory the
// watcher first resolved has been deleted.
func TestWatchConfigMapSwap(t *testing.T) {
	v1 := testkit.SearchPolicy("cm-v1")
	cm := newConfigMap(t, v1)
	r := newRig(t, cm.file())
	r.watch(t)
	base := r.changes.Load()

	v2 := testkit.SearchPolicy("cm-v2")
	cm.update("..2026_01_01_v2", v2)
	r.waitLive(t, "first ConfigMap swap", v2)

	v3 := testkit.SearchPolicy("cm-v3")
	cm.update("..2026_01_01_v3", v3)
	r.waitLive(t, "second ConfigMap swap", v3)

	if got := r.changes.Load(); got != base+2 {
		t.Errorf("%d changes reported, want %d", got, base+2)
	}
	if got := r.errs.Load(); got != 0 {
		t.Errorf("%d load errors reported, want 0 (a swap must never expose a half-written policy)", got)
	}
}

// TestLoadReturnsPublishError: Publish's error (here a *policy.CompileError
// positioned at file:line) is returned unchanged and reported to Loaded, and
// the live value stays.
func TestLoadReturnsPublishError(t *testing.T) {
	tests := []struct {
		name     string
		give     string
		wantLine int // line of the first problem
	}{
		{
			name:     "bad CEL",
			give:     "default: deny\nallow:\n  - id: broken\n    match: \"*/search\"\n    when: args.query ==\n",
			wantLine: 5,
		},
		{
			name:     "YAML garbage",
			give:     "default: deny\nallow:\n  - id: ok\n    match: \"*/x\"\n\t- tab\n",
			wantLine: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "policy.yaml")
			testkit.WriteFile(t, file, testkit.SearchPolicy("good"))
			r := newRig(t, file)
			before := r.current.Load()

			testkit.WriteFile(t, file, []byte(tt.give))
			changed, err := r.loader.Load()

			var ce *policy.CompileError
			if changed || !errors.As(err, &ce) {
				t.Fatalf("Load = %v, %v (%T); want false and a *policy.CompileError", changed, err, err)
			}
			if re := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:` + fmt.Sprint(tt.wantLine) + `(:\d+)?: `); !re.MatchString(err.Error()) {
				t.Errorf("error text %q does not start with %s:%d:", err, file, tt.wantLine)
			}
			if got := r.current.Load(); got != before {
				t.Errorf("live policy changed to %+v; the last good policy must stay", got)
			}
			if got := r.errs.Load(); got != 1 {
				t.Errorf("%d load errors reported, want 1", got)
			}
			if got := r.changes.Load(); got != 1 {
				t.Errorf("%d changes reported, want 1 (the initial load only)", got)
			}
		})
	}
}

// TestWatchRefusesInvalidPolicy: through the watcher, a broken policy is
// reported while the good one stays live, and the next good write is
// picked up.
func TestWatchRefusesInvalidPolicy(t *testing.T) {
	good := testkit.SearchPolicy("good")
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, good)
	r := newRig(t, file)
	r.watch(t)

	testkit.WriteFile(t, file, []byte("default: deny\nallow:\n  - {id: x, match: \"*/search\", when: \"args.q ==\"}\n"))
	testkit.WaitSignal(t, "the broken write reported", r.loaded, func() bool { return r.errs.Load() >= 1 })
	if got := r.live(); got != testkit.PolicyVersion(good) {
		t.Errorf("live version = %s after a broken write, want the good %s", got, testkit.PolicyVersion(good))
	}

	fixed := testkit.SearchPolicy("fixed")
	testkit.WriteFile(t, file, fixed)
	r.waitLive(t, "the fixed policy after a broken one", fixed)
}

// TestWatchIgnoresFilesBeside: a log written next to a broken policy makes
// no reload loop (issue 12 saw 97 errors in 10s): the broken write is
// refused, and a hundred log lines later the count has not moved.
func TestWatchIgnoresFilesBeside(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	good := testkit.SearchPolicy("good")
	testkit.WriteFile(t, file, good)
	r := newRig(t, file)
	r.watch(t)
	changes := r.changes.Load()

	testkit.WriteFile(t, file, []byte("default: deny\nallow: [{match: x, shadow: yes}]\n"))
	testkit.PollUntil(t, "the broken write refused", func() bool { return r.errs.Load() >= 1 })
	// A loaded machine may split the write's events over two debounce
	// periods: wait until the count holds still.
	refused := r.errs.Load()
	for i := 0; ; i++ {
		time.Sleep(300 * time.Millisecond)
		n := r.errs.Load()
		if n == refused {
			break
		}
		if i == 5 {
			t.Fatalf("load errors keep rising (%d) after one broken write", n)
		}
		refused = n
	}

	logFile, err := os.Create(filepath.Join(dir, "extauthz.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	for i := range 100 {
		if _, err := fmt.Fprintf(logFile, "{\"msg\":\"decision\",\"n\":%d}\n", i); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			time.Sleep(30 * time.Millisecond) // spread over several debounce periods
		}
	}
	time.Sleep(500 * time.Millisecond) // five debounce periods: any reload would have run
	if got := r.errs.Load(); got != refused {
		t.Errorf("%d load errors after log writes beside the policy, want %d", got, refused)
	}
	if got := r.changes.Load(); got != changes {
		t.Errorf("%d changes, want %d", got, changes)
	}
	if got := r.live(); got != testkit.PolicyVersion(good) {
		t.Errorf("live = %s, want the good policy", got)
	}
}

// TestLoadMissingFile: a file that disappears keeps the last good value,
// reports the read error and never calls Publish.
func TestLoadMissingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, testkit.SearchPolicy("good"))
	r := newRig(t, file)
	before := r.current.Load()
	publish := r.loader.Publish
	var calls atomic.Int64
	r.loader.Publish = func(f string, src []byte) (bool, error) { calls.Add(1); return publish(f, src) }
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if changed, err := r.loader.Load(); changed || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load = %v, %v; want false, fs.ErrNotExist", changed, err)
	}
	if r.current.Load() != before || r.errs.Load() != 1 {
		t.Errorf("live = %+v, errors = %d; want the old policy kept and 1 error", r.current.Load(), r.errs.Load())
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("Publish called %d times for a missing file, want 0", n)
	}
}

// TestLoadUnchangedContent: loading content already live reports no change,
// and a change back to an earlier content is a change.
func TestLoadUnchangedContent(t *testing.T) {
	a, b := testkit.SearchPolicy("a"), testkit.SearchPolicy("b")
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, a)
	r := newRig(t, file)
	first := r.current.Load()
	for range 2 {
		if changed, err := r.loader.Load(); changed || err != nil {
			t.Fatalf("Load of the same content = %v, %v; want false, nil", changed, err)
		}
	}
	if r.current.Load() != first {
		t.Error("reloading the same content replaced the live policy")
	}
	for i, src := range [][]byte{b, b, a} {
		testkit.WriteFile(t, file, src)
		if _, err := r.loader.Load(); err != nil {
			t.Fatal(err)
		}
		if got := r.live(); got != testkit.PolicyVersion(src) {
			t.Errorf("step %d: live = %s, want %s", i, got, testkit.PolicyVersion(src))
		}
	}
	if got := r.changes.Load(); got != 3 {
		t.Errorf("%d changes after a, a, a, b, b, a; want 3", got)
	}
}
