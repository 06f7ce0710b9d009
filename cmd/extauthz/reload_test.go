package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/lifecycle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/reload"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// policyRig is serve's policy loader (newPolicyLoader) with its own
// registry, metrics and observed log, loaded once from file.
type policyRig struct {
	loader  *reload.Loader
	store   *decision.PolicyStore
	metrics *metrics.Metrics
	logs    *observer.ObservedLogs
}

func newPolicyRig(t testing.TB, file string) *policyRig {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	store := &decision.PolicyStore{}
	m := newMetrics(prometheus.NewRegistry())
	l := newPolicyLoader(file, &policyReload{store: store, m: m, log: zap.New(core)})
	if _, err := l.Load(); err != nil {
		t.Fatalf("initial Load: %v", err)
	}
	return &policyRig{loader: l, store: store, metrics: m, logs: logs}
}

func (r *policyRig) reloads() float64      { return testutil.ToFloat64(r.metrics.PolicyReloads) }
func (r *policyRig) reloadErrors() float64 { return testutil.ToFloat64(r.metrics.PolicyReloadError) }

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
			good := testkit.SearchPolicy("good")
			file := filepath.Join(t.TempDir(), "policy.yaml")
			testkit.WriteFile(t, file, good)
			r := newPolicyRig(t, file)
			ready := &lifecycle.Readiness{Checks: []func() error{r.store.Ready}, OnReady: r.metrics.SetReady}
			before := r.store.Load()

			testkit.WriteFile(t, file, []byte(tt.give))
			_, err := r.loader.Load()

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
			if got := r.store.Load(); got != before {
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
			if errs[0].Message != "policy reload refused; keeping the last good policy" {
				t.Errorf("error line %q", errs[0].Message)
			}
			fields := errs[0].ContextMap()
			probs, _ := fields["problems"].([]any)
			if len(probs) != len(ce.Problems) || !strings.HasPrefix(fmt.Sprint(probs[0]), fmt.Sprintf("%s:%d:", file, tt.wantLine)) {
				t.Errorf("logged problems = %v, want %d starting with %s:%d:", fields["problems"], len(ce.Problems), file, tt.wantLine)
			}
			if fields["kept_policy_version"] != testkit.PolicyVersion(good) || fields["file"] != file {
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

// TestLoadMissingFile: a policy file that disappears keeps the last good
// policy, reports the read error and counts it.
func TestLoadMissingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, testkit.SearchPolicy("good"))
	r := newPolicyRig(t, file)
	before := r.store.Load()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := r.loader.Load(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load = %v, want fs.ErrNotExist", err)
	}
	if r.store.Load() != before || r.reloadErrors() != 1 {
		t.Errorf("live = %+v, errors = %v; want the old policy kept and 1 error", r.store.Load(), r.reloadErrors())
	}
}

// TestLoadCountsChangesOnly: loading unchanged content publishes nothing and
// counts nothing; a change back to an earlier content is a change; the
// policy_info series names the live version only.
func TestLoadCountsChangesOnly(t *testing.T) {
	a, b := testkit.SearchPolicy("a"), testkit.SearchPolicy("b")
	file := filepath.Join(t.TempDir(), "policy.yaml")
	testkit.WriteFile(t, file, a)
	r := newPolicyRig(t, file)
	first := r.store.Load()

	for range 2 {
		if _, err := r.loader.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if r.store.Load() != first {
		t.Error("reloading the same content replaced the live policy")
	}
	if got := r.reloads(); got != 1 {
		t.Errorf("policy_reloads_total = %v after loading the same content three times, want 1", got)
	}
	if n := r.logs.FilterMessage("policy loaded").Len(); n != 1 {
		t.Errorf("%d \"policy loaded\" lines, want 1", n)
	}

	for i, src := range [][]byte{b, b, a} {
		testkit.WriteFile(t, file, src)
		if _, err := r.loader.Load(); err != nil {
			t.Fatal(err)
		}
		if got := r.store.Load().Version; got != testkit.PolicyVersion(src) {
			t.Errorf("step %d: live = %s, want %s", i, got, testkit.PolicyVersion(src))
		}
		if lp := r.store.Load(); lp.File != file || lp.Policy == nil {
			t.Errorf("step %d: live policy = %+v, want compiled from %s", i, lp, file)
		}
	}
	if got := r.reloads(); got != 3 {
		t.Errorf("policy_reloads_total = %v after a, b, b, a; want 3", got)
	}
	if got := testutil.ToFloat64(r.metrics.PolicyInfo.WithLabelValues(testkit.PolicyVersion(a))); got != 1 {
		t.Errorf("policy_info{version=a} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(r.metrics.PolicyInfo); n != 1 {
		t.Errorf("policy_info has %d series, want only the live version", n)
	}
	if got := r.reloadErrors(); got != 0 {
		t.Errorf("policy_reload_errors_total = %v, want 0", got)
	}
}
