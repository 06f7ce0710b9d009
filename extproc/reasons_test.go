package extproc

import (
	"os"
	"strings"
	"testing"
)

// TestReasonsDocumented: README's closed set of the seam's reasons is the
// Reason constants, every one of them.
func TestReasonsDocumented(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "The seam's refusals carry `data.reason` from a closed set")
	if i < 0 {
		t.Fatal("README lacks the seam's closed set of reasons")
	}
	set := readme[i : i+strings.Index(readme[i:], "\n\n")]
	reasons := []string{ReasonNoMetadata, ReasonPrincipal, ReasonToken, ReasonCompressed, ReasonRedirect, ReasonContentType,
		ReasonCharset, ReasonUnexpected, ReasonUnfilterable, ReasonTooLarge, ReasonInvalidCursor, ReasonResultOnError}
	for _, r := range reasons {
		if !strings.Contains(set, "`"+r+"`") {
			t.Errorf("README's set lacks %s", r)
		}
	}
	if n := strings.Count(set, "`") / 2; n != len(reasons)+3 { // + data.reason, extproc.Reason*, reason
		t.Errorf("README's set names %d, the code %d", n-3, len(reasons))
	}
}
