package extauthz

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// waitTimeout bounds every wait below: long enough for a loaded CI machine
// under -race, far above what a working watcher needs (one debounce).
const waitTimeout = 10 * time.Second

// pollUntil polls cond every few milliseconds until it holds, and fails the
// test with what when it does not within waitTimeout. Only for conditions
// that nothing signals (a listener that closes); prefer waitSignal.
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitSignal re-checks cond each time signal fires (a coalescing
// notification: a buffer of one, sent without blocking) until it holds, and
// fails the test with what when it does not within waitTimeout.
func waitSignal(t testing.TB, what string, signal <-chan struct{}, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for !cond() {
		select {
		case <-signal:
		case <-timeout.C:
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
	}
}

// notify sends on a coalescing notification channel without blocking.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// searchPolicy is a valid policy that allows */search under the rule id
// searchID, so two such policies decide the same request alike but report
// different rule ids.
func searchPolicy(searchID string) []byte {
	return fmt.Appendf(nil, `default: deny
deny:
  - id: no-deletes
    match: "*/delete_*"
allow:
  - id: %s
    match: "*/search"
methods:
  allow: [initialize, tools/list]
`, searchID)
}

// versionOf is the Version CompilePolicy gives src.
func versionOf(src []byte) string { return mcpparse.Digest(src) }

// writePolicyFile writes src to file, failing the test on error.
func writePolicyFile(t testing.TB, file string, src []byte) {
	t.Helper()
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
}

// loaderRig is a PolicyLoader with its own registry, metrics and observed
// log.
type loaderRig struct {
	loader  *PolicyLoader
	metrics *metrics.Metrics
	logs    *observer.ObservedLogs
	// logged fires after every line the loader logs: each load that
	// publishes a policy or refuses one writes exactly one, after the store
	// and the metrics are updated.
	logged chan struct{}
}

// newLoaderRig loads file once (it must hold a valid policy) and returns the
// loader, with the production debounce (100ms). The watcher is not started.
func newLoaderRig(t testing.TB, file string) *loaderRig {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	logged := make(chan struct{}, 1)
	core = zapcore.RegisterHooks(core, func(zapcore.Entry) error { notify(logged); return nil })
	m := NewMetrics(prometheus.NewRegistry())
	l := &PolicyLoader{File: file, Store: &PolicyStore{}, Log: zap.New(core), Metrics: m}
	if err := l.Load(); err != nil {
		t.Fatalf("initial Load: %v", err)
	}
	return &loaderRig{loader: l, metrics: m, logs: logs, logged: logged}
}

// reloads returns policy_reloads_total.
func (r *loaderRig) reloads() float64 { return testutil.ToFloat64(r.metrics.PolicyReloads) }

// reloadErrors returns policy_reload_errors_total.
func (r *loaderRig) reloadErrors() float64 { return testutil.ToFloat64(r.metrics.PolicyReloadError) }

// live returns the live policy version, or "" when there is none.
func (r *loaderRig) live() string {
	if lp := r.loader.Store.Load(); lp != nil {
		return lp.Version
	}
	return ""
}

// watch runs Watch until the test ends and returns once the watcher is
// known to be live. Readiness is proven, not assumed: the store is set to a
// sentinel and the policy file is rewritten with its own bytes until the
// watcher's reload puts the file's policy back. Watch must return nil when
// its context ends; the cleanup waits for it, so no goroutine outlives the
// test.
func (r *loaderRig) watch(t testing.TB) {
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
		case <-time.After(waitTimeout):
			t.Errorf("Watch did not return within %v of its context ending", waitTimeout)
		}
	})

	want := r.live()
	src, err := os.ReadFile(r.loader.File)
	if err != nil {
		t.Fatal(err)
	}
	sentinel := &LoadedPolicy{Policy: r.loader.Store.Load().Policy, File: "sentinel", Version: "sha256:sentinel"}
	r.loader.Store.Store(sentinel)
	deadline := time.Now().Add(waitTimeout)
	for r.live() != want {
		select {
		case err := <-done:
			t.Fatalf("Watch returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("watcher never reloaded after rewriting %s", r.loader.File)
		}
		// Rewrite, then wait for the reload's log line, or rewrite again
		// after three debounces (100ms) if the watches were not yet in
		// place.
		writePolicyFile(t, r.loader.File, src)
		select {
		case <-r.logged:
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// waitLive waits, on the loader's log lines, until the live policy is
// src's.
func (r *loaderRig) waitLive(t testing.TB, what string, src []byte) {
	t.Helper()
	want := versionOf(src)
	waitSignal(t, what+": new policy live", r.logged, func() bool { return r.live() == want })
}

// TestWatchReloadsFile: a policy written in place, or written beside and
// renamed over (as editors and config tools do), is live within the poll
// deadline and counted once per change.
func TestWatchReloadsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	writePolicyFile(t, file, searchPolicy("v0"))
	r := newLoaderRig(t, file)
	r.watch(t)
	base := r.reloads() // the initial Load and the watcher's proof of life

	v1 := searchPolicy("v1")
	writePolicyFile(t, file, v1)
	r.waitLive(t, "os.WriteFile", v1)
	if got := r.reloads(); got != base+1 {
		t.Errorf("policy_reloads_total = %v after WriteFile, want %v", got, base+1)
	}

	v2 := searchPolicy("v2")
	tmp := filepath.Join(dir, ".policy.yaml.tmp")
	writePolicyFile(t, tmp, v2)
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	r.waitLive(t, "write-to-temp and rename", v2)
	if got := r.reloads(); got != base+2 {
		t.Errorf("policy_reloads_total = %v after rename, want %v", got, base+2)
	}

	if lp := r.loader.Store.Load(); lp.File != file || lp.Policy == nil {
		t.Errorf("live policy = %+v, want compiled from %s", lp, file)
	}
	if got := testutil.ToFloat64(r.metrics.PolicyInfo.WithLabelValues(versionOf(v2))); got != 1 {
		t.Errorf("policy_info{version=v2} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(r.metrics.PolicyInfo); n != 1 {
		t.Errorf("policy_info has %d series, want only the live version", n)
	}
	if got := r.reloadErrors(); got != 0 {
		t.Errorf("policy_reload_errors_total = %v, want 0", got)
	}
}

// TestWatchCatchesChangeBeforeStart: a change that lands between the first
// Load and Watch adding its watches (serve loads, then builds the verifier,
// then starts Watch) is not lost: it goes live without any further event.
func TestWatchCatchesChangeBeforeStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, file, searchPolicy("v0"))
	r := newLoaderRig(t, file)
	v1 := searchPolicy("v1")
	writePolicyFile(t, file, v1)

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
	writePolicyFile(c.t, filepath.Join(c.dir, name, "policy.yaml"), src)
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
	v1 := searchPolicy("cm-v1")
	cm := newConfigMap(t, v1)
	r := newLoaderRig(t, cm.file())
	r.watch(t)
	base := r.reloads()

	v2 := searchPolicy("cm-v2")
	cm.update("..2026_01_01_v2", v2)
	r.waitLive(t, "first ConfigMap swap", v2)

	v3 := searchPolicy("cm-v3")
	cm.update("..2026_01_01_v3", v3)
	r.waitLive(t, "second ConfigMap swap", v3)

	if got := r.reloads(); got != base+2 {
		t.Errorf("policy_reloads_total = %v, want %v", got, base+2)
	}
	if got := r.reloadErrors(); got != 0 {
		t.Errorf("policy_reload_errors_total = %v, want 0 (a swap must never expose a half-written policy)", got)
	}
}

// TestLoadRefusesInvalidPolicy: a policy that does not compile leaves the
// last good one live, is returned as a *policy.CompileError positioned at
// file:line, counted, logged with its problems, and does not make the
// service unready.
func TestLoadRefusesInvalidPolicy(t *testing.T) {
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
			name:     "unknown CEL function",
			give:     "default: deny\nallow:\n  - id: broken\n    match: \"*/search\"\n    when: nosuchfn(args.query)\n",
			wantLine: 5,
		},
		{
			name:     "YAML garbage",
			give:     "default: deny\nallow:\n  - id: ok\n    match: \"*/x\"\n\t- tab\n",
			wantLine: 5,
		},
		{
			name:     "not YAML at all",
			give:     "{{{{\n",
			wantLine: 1,
		},
		{
			name:     "default allow",
			give:     "default: allow\n",
			wantLine: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := searchPolicy("good")
			file := filepath.Join(t.TempDir(), "policy.yaml")
			writePolicyFile(t, file, good)
			r := newLoaderRig(t, file)
			ready := readiness(r.loader.Store, nil, r.metrics)
			before := r.loader.Store.Load()

			writePolicyFile(t, file, []byte(tt.give))
			err := r.loader.Load()

			var ce *policy.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v (%T), want a *policy.CompileError", err, err)
			}
			if len(ce.Problems) == 0 || ce.Problems[0].File != file || ce.Problems[0].Line != tt.wantLine {
				t.Errorf("problems = %+v, want the first at %s line %d", ce.Problems, file, tt.wantLine)
			}
			if re := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:` + fmt.Sprint(tt.wantLine) + `(:\d+)?: `); !re.MatchString(err.Error()) {
				t.Errorf("error text %q does not start with %s:%d:", err, file, tt.wantLine)
			}
			if got := r.loader.Store.Load(); got != before {
				t.Errorf("live policy changed to %+v; the last good policy must stay", got)
			}
			if got := r.reloadErrors(); got != 1 {
				t.Errorf("policy_reload_errors_total = %v, want 1", got)
			}
			if got := r.reloads(); got != 1 {
				t.Errorf("policy_reloads_total = %v, want 1 (the initial load only)", got)
			}

			errs := r.logs.FilterLevelExact(zapcore.ErrorLevel).All()
			if len(errs) != 1 {
				t.Fatalf("%d error lines, want 1: %v", len(errs), r.logs.All())
			}
			fields := errs[0].ContextMap()
			probs, _ := fields["problems"].([]any)
			if len(probs) != len(ce.Problems) || !strings.HasPrefix(fmt.Sprint(probs[0]), fmt.Sprintf("%s:%d:", file, tt.wantLine)) {
				t.Errorf("logged problems = %v, want %d starting with %s:%d:", fields["problems"], len(ce.Problems), file, tt.wantLine)
			}
			if fields["kept_policy_version"] != versionOf(good) || fields["file"] != file {
				t.Errorf("error line fields = %v", fields)
			}

			if ok, why := ready.Ready(); !ok {
				t.Errorf("Ready = false (%s) after a refused reload, want true", why)
			}
			if got := testutil.ToFloat64(r.metrics.Ready); got != 1 {
				t.Errorf("mcp_extauthz_ready = %v, want 1", got)
			}
		})
	}
}

// TestWatchRefusesInvalidPolicy: through the watcher, a broken policy is
// counted and logged while the good one stays live, and the next good
// write is picked up.
func TestWatchRefusesInvalidPolicy(t *testing.T) {
	good := searchPolicy("good")
	file := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, file, good)
	r := newLoaderRig(t, file)
	r.watch(t)

	writePolicyFile(t, file, []byte("default: deny\nallow:\n  - {id: x, match: \"*/search\", when: \"args.q ==\"}\n"))
	waitSignal(t, "policy_reload_errors_total to count the broken write", r.logged, func() bool { return r.reloadErrors() >= 1 })
	if got := r.live(); got != versionOf(good) {
		t.Errorf("live version = %s after a broken write, want the good %s", got, versionOf(good))
	}
	if n := r.logs.FilterMessage("policy reload refused; keeping the last good policy").Len(); n == 0 {
		t.Error("no error line for the refused policy")
	}

	fixed := searchPolicy("fixed")
	writePolicyFile(t, file, fixed)
	r.waitLive(t, "the fixed policy after a broken one", fixed)
}

// TestWatchIgnoresFilesBeside: a log written next to a broken policy makes
// no reload loop (issue 12 saw 97 errors in 10s): the broken write is
// refused, and a hundred log lines later the count has not moved.
func TestWatchIgnoresFilesBeside(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	good := searchPolicy("good")
	writePolicyFile(t, file, good)
	r := newLoaderRig(t, file)
	r.watch(t)
	reloads := r.reloads()

	writePolicyFile(t, file, []byte("default: deny\nallow: [{match: x, shadow: yes}]\n"))
	pollUntil(t, "the broken write refused", func() bool { return r.reloadErrors() >= 1 })
	// A loaded machine may split the write's events over two debounce
	// periods: wait until the count holds still.
	refused := r.reloadErrors()
	for i := 0; ; i++ {
		time.Sleep(300 * time.Millisecond)
		n := r.reloadErrors()
		if n == refused {
			break
		}
		if i == 5 {
			t.Fatalf("policy_reload_errors_total keeps rising (%v) after one broken write", n)
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
	if got := r.reloadErrors(); got != refused {
		t.Errorf("policy_reload_errors_total = %v after log writes beside the policy, want %v", got, refused)
	}
	if got := r.reloads(); got != reloads {
		t.Errorf("policy_reloads_total = %v, want %v", got, reloads)
	}
	if got := r.live(); got != versionOf(good) {
		t.Errorf("live = %s, want the good policy", got)
	}
}

// TestLoadMissingFile: a policy file that disappears keeps the last good
// policy and reports the read error.
func TestLoadMissingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, file, searchPolicy("good"))
	r := newLoaderRig(t, file)
	before := r.loader.Store.Load()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := r.loader.Load(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load = %v, want fs.ErrNotExist", err)
	}
	if r.loader.Store.Load() != before || r.reloadErrors() != 1 {
		t.Errorf("live = %+v, errors = %v; want the old policy kept and 1 error", r.loader.Store.Load(), r.reloadErrors())
	}
}

// TestLoadCountsChangesOnly: loading unchanged content publishes nothing and
// counts nothing; a change back to an earlier content is a change.
func TestLoadCountsChangesOnly(t *testing.T) {
	a, b := searchPolicy("a"), searchPolicy("b")
	file := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, file, a)
	r := newLoaderRig(t, file)
	first := r.loader.Store.Load()

	for range 2 {
		if err := r.loader.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if r.loader.Store.Load() != first {
		t.Error("reloading the same content replaced the live policy")
	}
	if got := r.reloads(); got != 1 {
		t.Errorf("policy_reloads_total = %v after loading the same content three times, want 1", got)
	}
	if n := r.logs.FilterMessage("policy loaded").Len(); n != 1 {
		t.Errorf("%d \"policy loaded\" lines, want 1", n)
	}

	for i, src := range [][]byte{b, b, a} {
		writePolicyFile(t, file, src)
		if err := r.loader.Load(); err != nil {
			t.Fatal(err)
		}
		if got := r.live(); got != versionOf(src) {
			t.Errorf("step %d: live = %s, want %s", i, got, versionOf(src))
		}
	}
	if got := r.reloads(); got != 3 {
		t.Errorf("policy_reloads_total = %v after a, b, b, a; want 3", got)
	}
}

// TestReloadIsAtomic: Checks running while the policy flips between A and B
// always report the rule id of the policy version they report: a Check never
// decides with one policy and labels the answer with the other.
func TestReloadIsAtomic(t *testing.T) {
	a, b := searchPolicy("a-search"), searchPolicy("b-search")
	want := map[string]string{versionOf(a): "a-search", versionOf(b): "b-search"}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, file, a)
	r := newLoaderRig(t, file)
	srv := staticRig(t, nil)
	srv.Decider.Policies = r.loader.Store
	req := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`).CheckRequest(true)

	const (
		checkers = 8
		minSwaps = 200
	)
	var (
		stop       atomic.Bool
		seen       [2]atomic.Int64 // Checks answered under A, under B
		checks     atomic.Int64
		wg         sync.WaitGroup
		mismatchMu sync.Mutex
		mismatches []string
	)
	for range checkers {
		wg.Go(func() {
			for !stop.Load() {
				resp, err := srv.Check(context.Background(), req)
				checks.Add(1)
				if err != nil || resp.GetOkResponse() == nil {
					mismatchMu.Lock()
					mismatches = append(mismatches, fmt.Sprintf("not allowed: %v %v", resp.GetStatus(), err))
					mismatchMu.Unlock()
					continue
				}
				md := resp.GetDynamicMetadata().GetFields()
				v, rule := md["policy_version"].GetStringValue(), md["rule_id"].GetStringValue()
				if want[v] != rule {
					mismatchMu.Lock()
					mismatches = append(mismatches, fmt.Sprintf("policy_version %s with rule_id %q", v, rule))
					mismatchMu.Unlock()
				}
				if v == versionOf(a) {
					seen[0].Add(1)
				} else {
					seen[1].Add(1)
				}
			}
		})
	}

	deadline := time.Now().Add(waitTimeout)
	swaps := 0
	for swaps < minSwaps || seen[0].Load() == 0 || seen[1].Load() == 0 {
		// Past the deadline the assertions below report what was missed.
		if time.Now().After(deadline) {
			break
		}
		src := a
		if swaps%2 == 0 {
			src = b
		}
		writePolicyFile(t, file, src)
		if err := r.loader.Load(); err != nil {
			t.Error(err)
			break
		}
		swaps++
	}
	stop.Store(true)
	wg.Wait()

	if len(mismatches) > 0 {
		t.Errorf("%d of %d Checks mixed two policies, e.g. %s", len(mismatches), checks.Load(), mismatches[0])
	}
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Errorf("Checks saw A %d times and B %d times; the test needs both", seen[0].Load(), seen[1].Load())
	}
	if swaps < minSwaps {
		t.Errorf("%d policy swaps within %v, want at least %d", swaps, waitTimeout, minSwaps)
	}
	if got := r.reloads(); got != float64(swaps+1) {
		t.Errorf("policy_reloads_total = %v after %d swaps, want %d", got, swaps, swaps+1)
	}
	t.Logf("%d swaps, %d Checks (A %d, B %d)", swaps, checks.Load(), seen[0].Load(), seen[1].Load())
}
