package state

import (
	"testing"
	"time"
)

// TestIntervalMicros: the interval the Redis script refills by is never
// shorter than the quota's.
func TestIntervalMicros(t *testing.T) {
	tests := []struct {
		give time.Duration
		want int64
	}{
		{time.Microsecond, 1},
		{1999 * time.Nanosecond, 2},
		{1001 * time.Nanosecond, 2},
		{time.Second / 3, 333334},
		{6 * time.Second, 6_000_000},
	}
	for _, tt := range tests {
		if got := intervalMicros(tt.give); got != tt.want {
			t.Errorf("intervalMicros(%v) = %d, want %d", tt.give, got, tt.want)
		}
	}
}
