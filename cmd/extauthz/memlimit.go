package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultGCPercent is the garbage collector's target (GOGC) unless GOGC is
// set. A Check allocates far more than it keeps (the live heap is the
// policy, caches and the bodies in flight), so Go's default of 100
// collects often for little. Measured with bench/run.sh on the 64 KiB
// tools/call: 100 → 3.8 ms CPU per Check, 200 → 3.0 ms (peak RSS 57 MB),
// 400 → 3.0 ms (peak RSS 113 MB). 200 takes the gain and stays within a
// 64 MiB sidecar budget; the memory limit below bounds the rest.
const defaultGCPercent = 200

// setGCPercent sets the GC target to defaultGCPercent unless GOGC is set,
// and returns the value in force.
func setGCPercent(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(defaultGCPercent)
	return strconv.Itoa(defaultGCPercent)
}

// memoryLimitFraction of the container's memory limit becomes the Go
// runtime's soft memory limit: the garbage collector works harder as the
// heap nears it instead of letting the container be OOM-killed, and the
// rest covers stacks, the binary and memory the runtime does not count.
const memoryLimitFraction = 0.9

// setMemoryLimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) to memoryLimitFraction of the cgroup memory limit
// read by cgroupLimit, unless GOMEMLIMIT is set (the runtime then already
// applies it). It returns the limit set in bytes and where it came from,
// or 0 when it set none (GOMEMLIMIT set, or no cgroup limit).
func setMemoryLimit(getenv func(string) string, cgroupLimit func() (int64, string)) (int64, string) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, ""
	}
	limit, source := cgroupLimit()
	if limit <= 0 {
		return 0, ""
	}
	l := int64(float64(limit) * memoryLimitFraction)
	debug.SetMemoryLimit(l)
	return l, source
}

// readCgroupMemoryLimit returns this process's cgroup memory limit in bytes
// and the file it read: cgroup v2 memory.max, else cgroup v1
// memory.limit_in_bytes. 0 means none found or unlimited ("max", or v1's
// near-2^63 value).
func readCgroupMemoryLimit() (int64, string) {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		return parseCgroupLimit(string(b)), f
	}
	return 0, ""
}

// parseCgroupLimit parses the contents of memory.max or
// memory.limit_in_bytes: bytes, or 0 for "max", unlimited or malformed.
func parseCgroupLimit(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
