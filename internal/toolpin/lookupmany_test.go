package toolpin

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"strconv"
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
				if again, err := o.LookupScopeMany(ctx, p, "payments", sc, tools); err != nil || !slices.Equal(again, got) {
					t.Errorf("asked again (its keys remembered): %+v %v", again, err)
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

// TestListKeysCache: a list asked again is answered from the cache, the
// very keys manyKeys builds; another order, another scope, another policy
// (a pin takes a tool's baseline key away) or an entry whose keys name
// other tools (a hash collision) gets its own keys, never another list's;
// the cache stays within its bounds.
func TestListKeysCache(t *testing.T) {
	tofu, _ := policy.Compile("p.yaml", []byte("default: deny\npin_mode: tofu\n"))
	pinned, _ := policy.Compile("p.yaml", []byte("default: deny\npin_mode: tofu\npins: {s: {b: ["+mustDef(t, base).Fingerprint+"]}}\n"))
	var c listKeysCache
	build := func(p *policy.Policy, scope string, tools ...string) []string {
		k, _ := manyKeys(p, "s", scope, tools)
		return k
	}
	first := c.get(tofu, "s", "s", []string{"a", "b"})
	if !slices.Equal(first, build(tofu, "s", "a", "b")) || len(first) != 8 {
		t.Fatalf("keys %q", first)
	}
	if again := c.get(tofu, "s", "s", []string{"a", "b"}); &again[0] != &first[0] {
		t.Error("a list asked again was built again")
	}
	for _, tt := range []struct {
		name  string
		p     *policy.Policy
		scope string
		tools []string
	}{
		{"another order", tofu, "s", []string{"b", "a"}},
		{"another scope", tofu, "s session:" + strings.Repeat("0", 32), []string{"a", "b"}},
		{"a pin", pinned, "s", []string{"a", "b"}},
		{"one tool more", tofu, "s", []string{"a", "b", "c"}},
	} {
		if got, want := c.get(tt.p, "s", tt.scope, tt.tools), build(tt.p, tt.scope, tt.tools...); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", tt.name, got, want)
		}
	}
	if got := build(pinned, "s", "a", "b"); len(got) != 7 {
		t.Errorf("a pinned tool's keys: %q", got)
	}
	// An entry under the id of a, b that names other tools.
	var h maphash.Hash
	h.SetSeed(listSeed)
	h.WriteString("x")
	h.WriteByte(0)
	c.mu.Lock()
	other := build(tofu, "s", "y")
	c.m[listKeysID{p: tofu, scope: "s", sum: h.Sum64()}] = other
	c.bytes += keysBytes(other)
	c.mu.Unlock()
	if got := c.get(tofu, "s", "s", []string{"x"}); !slices.Equal(got, build(tofu, "s", "x")) {
		t.Errorf("a colliding entry answered: %q", got)
	}
	for i := range 2 * listKeysMax {
		c.get(tofu, "s", "s", []string{"t" + strconv.Itoa(i)})
	}
	c.mu.RLock()
	n, size := len(c.m), c.bytes
	total := 0
	for _, k := range c.m {
		total += keysBytes(k)
	}
	c.mu.RUnlock()
	if n > listKeysMax || size > listKeysMaxBytes || size != total {
		t.Errorf("%d lists, %d bytes counted, %d held", n, size, total)
	}
}
