package decision

import "testing"

// TestListenTarget: a subscriptions/listen's target is its URIs as a JSON
// array in request order, RFC 8785 escaped.
func TestListenTarget(t *testing.T) {
	if got := listenTarget([]string{"file:///a", `file:///b"c`}); got != `["file:///a","file:///b\"c"]` {
		t.Errorf("listenTarget = %s", got)
	}
}
