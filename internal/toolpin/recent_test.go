package toolpin

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
)

// TestListSeen: a tools array is seen only in the scope it was observed
// in, byte for byte, for a quarter of the observation TTL; a Recent
// without room for it, or none, remembers nothing.
func TestListSeen(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	o := Observations{Store: state.NewMemory(0, nil), Recent: &Recent{}, Now: func() time.Time { return clock }}
	list := []byte(`[` + base + `]`)
	if seen, _ := o.ListSeen("s", list); seen {
		t.Fatal("seen before observed")
	}
	_, at := o.ListSeen("s", list)
	o.ListObserved("s", list, at)
	if seen, _ := o.ListSeen("s", list); !seen {
		t.Fatal("not seen once observed")
	}
	other := append([]byte{}, list...)
	other[len(other)-2] = ' ' // the last '}' of the tool: another list
	for _, tt := range []struct {
		name  string
		scope string
		list  []byte
		want  bool
	}{
		{"same", "s", list, true},
		{"a copy", "s", append([]byte{}, list...), true},
		{"other scope", "s2", list, false},
		{"other bytes", "s", other, false},
		{"a prefix", "s", list[:len(list)-1], false},
	} {
		if seen, _ := o.ListSeen(tt.scope, tt.list); seen != tt.want {
			t.Errorf("%s: seen %v, want %v", tt.name, seen, tt.want)
		}
	}
	clock = clock.Add(DefaultTTL/4 - time.Second)
	if seen, _ := o.ListSeen("s", list); !seen {
		t.Error("forgotten before a quarter of the TTL")
	}
	clock = clock.Add(time.Second)
	if seen, _ := o.ListSeen("s", list); seen {
		t.Error("seen a quarter of the TTL after it was observed")
	}

	small := Observations{Store: o.Store, Recent: &Recent{MaxListBytes: len(list) - 1}, Now: o.Now}
	small.ListObserved("s", list, clock)
	if seen, _ := small.ListSeen("s", list); seen {
		t.Error("a list over MaxListBytes was remembered")
	}
	few := Observations{Store: o.Store, Recent: &Recent{Max: 2}, Now: o.Now}
	for _, s := range []string{"a", "b", "c"} {
		few.ListObserved(s, list, clock)
	}
	if n := few.Recent.nlists; n > 2 {
		t.Errorf("%d lists held, Max 2", n)
	}
	none := Observations{Store: o.Store, Now: o.Now}
	none.ListObserved("s", list, clock)
	if seen, _ := none.ListSeen("s", list); seen {
		t.Error("no Recent, and a list is seen")
	}
}

// TestObserveRecentKeys: Observe's allocation-free Recent key tells apart
// scopes and names that a plain concatenation would join.
func TestObserveRecentKeys(t *testing.T) {
	cs := &countingStore{Reader: state.NewMemory(0, nil)}
	o := Observations{Store: cs, Recent: &Recent{}}
	ctx := context.Background()
	d := mustDef(t, base)
	if err := o.Observe(ctx, "s:1", d); err != nil {
		t.Fatal(err)
	}
	n := cs.calls
	d2 := d
	d2.Name = "1:" + d.Name
	if err := o.Observe(ctx, "s", d2); err != nil || cs.calls == n {
		t.Errorf("another scope and name joined into one key: %v, %d calls", err, cs.calls-n)
	}
	n = cs.calls
	if err := o.Observe(ctx, "s:1", d); err != nil || cs.calls != n {
		t.Errorf("a repeat reached the store: %v, %d calls", err, cs.calls-n)
	}
}
