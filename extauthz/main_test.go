package extauthz

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: the
// watcher, the servers and their clients must all be stopped by their
// owners.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
