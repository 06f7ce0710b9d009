package testkit

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"
)

// WaitTimeout bounds every wait of this package: long enough for a loaded
// CI machine under -race, far above what a working component needs. It
// is a bound on a wait, never a measurement.
const WaitTimeout = 10 * time.Second

// PollUntil polls cond every few milliseconds until it holds, and fails
// the test with what when it does not within WaitTimeout. Only for
// conditions that nothing signals (a listener that closes, a file watcher's
// reload); prefer WaitSignal.
func PollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", WaitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitSignal re-checks cond each time signal fires (a coalescing
// notification: a buffer of one, sent with Notify) until it holds, and
// fails the test with what when it does not within WaitTimeout.
func WaitSignal(t testing.TB, what string, signal <-chan struct{}, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(WaitTimeout)
	defer timeout.Stop()
	for !cond() {
		select {
		case <-signal:
		case <-timeout.C:
			t.Fatalf("timed out after %v waiting for %s", WaitTimeout, what)
		}
	}
}

// Notify sends on a coalescing notification channel (capacity one)
// without blocking.
func Notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Clock is a settable clock (for key-set rate limits, token expiry, DPoP
// windows), safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at the current time.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Buffer is a bytes.Buffer safe for a writing goroutine (a logger's
// flusher) and the test reading it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WriteFile writes b to path (mode 0644), failing the test on error.
func WriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteAtomic replaces path the way editors and the kubelet do: it writes
// a temporary file beside it (mode 0600) and renames it over path.
func WriteAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
