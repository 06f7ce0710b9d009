package extauthz

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestReadmeReasons keeps the reason table (docs/reasons.md, "Reasons
// (closed set)") true: every reason listed
// once, with the HTTP status and JSON-RPC code the service answers.
func TestReadmeReasons(t *testing.T) {
	b := []byte(testkit.Docs(t, ".."))
	row := regexp.MustCompile("(?m)^\\| `([a-z_0-9]+)` \\| ([0-9–]+) \\| (-?[0-9]+|–) \\|")
	listed := map[decision.Reason]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		r := decision.Reason(m[1])
		o, ok := outcomes[r]
		if !ok {
			t.Errorf("README lists %s, which is not a reason", r)
			continue
		}
		listed[r] = true
		if r.Verdict().String() == "allow" { // allowed and result_recovered: no denial status or code
			continue
		}
		if m[2] != strconv.Itoa(o.http) || m[3] != strconv.Itoa(o.code) {
			t.Errorf("README: %s %s %s; the service answers %d %d", r, m[2], m[3], o.http, o.code)
		}
	}
	for _, r := range decision.Reasons() {
		if !listed[r] {
			t.Errorf("README does not list reason %s", r)
		}
	}
}
