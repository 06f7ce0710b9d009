package extauthz

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time so far (all threads: the
// garbage collector's work included).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU runs loop (the benchmark's b.Loop loop) and reports the CPU time
// per iteration as cpu-ns/op: on a shared machine ns/op counts the time
// other processes hold the CPU, CPU time does not.
func measureCPU(b *testing.B, loop func()) {
	start := cpuTime(b)
	loop()
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	}
}
