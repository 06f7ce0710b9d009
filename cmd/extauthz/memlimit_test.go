package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestParseCgroupLimit(t *testing.T) {
	for _, tt := range []struct {
		give string
		want int64
	}{
		{"134217728\n", 134217728},
		{"max\n", 0},
		{"9223372036854771712\n", 0}, // cgroup v1 "unlimited"
		{"", 0},
		{"-1", 0},
	} {
		if got := parseCgroupLimit(tt.give); got != tt.want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", tt.give, got, tt.want)
		}
	}
}

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore
	cgroup := func() (int64, string) { return 100 << 20, "memory.max" }
	noEnv := func(string) string { return "" }

	got, from := setMemoryLimit(noEnv, cgroup)
	if want := int64(90 << 20); got != want || from != "memory.max" || debug.SetMemoryLimit(-1) != want {
		t.Errorf("cgroup 100 MiB: set %d from %q (runtime %d), want %d", got, from, debug.SetMemoryLimit(-1), want)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if got, _ := setMemoryLimit(func(string) string { return "64MiB" }, cgroup); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set: setMemoryLimit changed the limit (%d)", got)
	}
	if got, _ := setMemoryLimit(noEnv, func() (int64, string) { return 0, "" }); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("no cgroup limit: setMemoryLimit set %d", got)
	}
}

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100)) // restore
	if got := setGCPercent(func(string) string { return "" }); got != "200" || debug.SetGCPercent(100) != defaultGCPercent {
		t.Errorf("GOGC unset: %s", got)
	}
	if got := setGCPercent(func(string) string { return "50" }); got != "50" || debug.SetGCPercent(100) != 100 {
		t.Errorf("GOGC=50 set: setGCPercent changed the GC target (%s)", got)
	}
}
