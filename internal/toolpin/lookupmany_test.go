package toolpin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// TestLookupScopeMany: for every state a tool's keys can be in (never
// listed, one definition, two, back and forth, three, pinned, pinned to
// another, pinned by an earlier Version, appeared after the first list),
// under tofu and strict, in the server's scope and a session's,
// LookupScopeMany of the whole list answers each tool as LookupScope does,
// from one GetMany and no Get.
func TestLookupScopeMany(t *testing.T) {
	ctx := context.Background()
	named := func(name, desc string) Definition {
		return mustDef(t, edit(func(m map[string]any) { m["name"], m["description"] = name, desc }))
	}
	fp := func(name, desc string) string { return named(name, desc).Fingerprint }
	v1 := "tooldef-v1" + fp("old", "a")[len(Version):]
	pins := "pins: {payments: {pinned: [" + fp("pinned", "b") + "], other: [" + fp("other", "c") + "], old: [" + v1 + "]}}\n"
	// Each list in turn; "later" lists come after the baseline window.
	first := []Definition{named("one", "a"), named("two", "a"), named("three", "a"), named("back", "a"),
		named("pinned", "b"), named("other", "a"), named("old", "a")}
	second := []Definition{named("two", "b"), named("three", "b"), named("back", "b")}
	later := []Definition{named("three", "c"), named("back", "a"), named("new", "a")}
	tools := []string{"one", "two", "three", "back", "pinned", "other", "old", "new", "never"}
	for _, mode := range []string{"pin_mode: tofu\n", "pin_mode: strict\n"} {
		for _, scope := range []string{"pin_scope: server\n", "pin_scope: session\n"} {
			t.Run(strings.TrimSpace(mode+" "+scope), func(t *testing.T) {
				p, err := policy.Compile("p.yaml", []byte("default: deny\n"+mode+scope+pins))
				if err != nil {
					t.Fatal(err)
				}
				clock := time.Unix(1_800_000_000, 0)
				rc := &readCounter{Reader: state.NewMemory(0, nil)}
				o := Observations{Store: rc, Now: func() time.Time { return clock }}
				sc := Scope(p, "payments", "s1")
				for _, list := range [][]Definition{first, second, nil, later} {
					if list == nil {
						clock = clock.Add(time.Hour)
					}
					for _, d := range list {
						if err := o.Observe(ctx, sc, d); err != nil {
							t.Fatal(err)
						}
					}
				}
				rc.gets, rc.getManys = 0, 0
				got, err := o.LookupScopeMany(ctx, p, "payments", sc, tools)
				if err != nil {
					t.Fatal(err)
				}
				if rc.gets != 0 || rc.getManys != 1 {
					t.Errorf("%d Get and %d GetMany calls, want one GetMany", rc.gets, rc.getManys)
				}
				if len(got) != len(tools) {
					t.Fatalf("%d definitions for %d tools", len(got), len(tools))
				}
				var changed, kept, unlisted, superseded int
				for i, tool := range tools {
					want, err := o.LookupScope(ctx, p, "payments", sc, tool)
					if err != nil {
						t.Fatal(err)
					}
					if got[i] != *want {
						t.Errorf("%s: %+v, LookupScope %+v", tool, got[i], *want)
					}
					switch d := got[i]; {
					case !d.Listed:
						unlisted++
					case d.Superseded:
						superseded++
					case d.Changed:
						changed++
					default:
						kept++
					}
				}
				if unlisted == 0 || superseded == 0 || changed == 0 || kept == 0 {
					t.Errorf("%d unlisted, %d superseded, %d changed, %d unchanged: the list misses a state", unlisted, superseded, changed, kept)
				}
			})
		}
	}
}

// TestLookupScopeManyRefuses: a store that cannot be read, or answers
// fewer values than keys, and a string that is no pin scope of the server
// are errors with no definitions; with pinning off nothing is read.
func TestLookupScopeManyRefuses(t *testing.T) {
	ctx := context.Background()
	p, _ := policy.Compile("p.yaml", []byte("default: deny\npin_mode: tofu\n"))
	tools := []string{"refund", "search"}
	for _, tt := range []struct {
		name  string
		give  state.Reader
		scope string
	}{
		{"store down", downStore{}, "s"},
		{"short answer", shortStore{state.NewMemory(0, nil)}, "s"},
		{"not a scope of the server", state.NewMemory(0, nil), "s session:xyz"},
	} {
		o := Observations{Store: tt.give}
		if defs, err := o.LookupScopeMany(ctx, p, "s", tt.scope, tools); err == nil || defs != nil {
			t.Errorf("%s: %+v %v, want an error", tt.name, defs, err)
		}
	}
	off, _ := policy.Compile("p.yaml", []byte("default: deny\n"))
	if defs, err := (Observations{Store: downStore{}}).LookupScopeMany(ctx, off, "s", "s", tools); defs != nil || err != nil {
		t.Errorf("pinning off: %+v %v, want nil, nil", defs, err)
	}
	if _, err := (Observations{Store: downStore{}}).LookupScopeMany(ctx, p, "s", "s", tools); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("store down: %v, want ErrUnavailable", err)
	}
}
