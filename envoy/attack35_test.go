package envoy

import (
	"os"
	"strings"
	"testing"
)

// TestAttack35ShadowedSealedRoute: a header-less route of another path
// match placed ahead of the sealed-cursor route, matching every path,
// would shadow it in Envoy (first match wins): a list with a sealed cursor
// would reach the MCP server on a route that sends no request body to the
// processor (its cursor unswapped). CheckInvariants refuses it (each path
// group must route a sealed list to a body route of its own).
func TestAttack35ShadowedSealedRoute(t *testing.T) {
	sidecar, err := os.ReadFile("sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(sidecar)
	i := strings.Index(y, catchAllStart)
	j := strings.Index(y, "          http_filters:")
	if i < 0 || j < i {
		t.Fatal("catch-all route not found")
	}
	catchAll := y[i:j]
	// The same route, matching every path by prefix "" (another pathKey).
	shadow := strings.Replace(catchAll, `- match: { prefix: "/" }`, `- match: { prefix: "" }`, 1)
	if shadow == catchAll {
		t.Fatal("catch-all match not found")
	}
	const sealedStart = "              # A list (or batch) with a sealed params.cursor"
	if !strings.Contains(y, sealedStart) {
		t.Fatal("sealed route not found")
	}
	y = strings.Replace(y, sealedStart, shadow+sealedStart, 1)
	b, err := ValidateBootstrapYAML([]byte(y))
	if err != nil {
		t.Fatalf("mutated config no longer loads: %v", err)
	}
	if err := CheckInvariants(b); err == nil || !strings.Contains(err.Error(), `picks route prefix:"", which does not send the request body`) {
		t.Errorf("a route matching every path ahead of the sealed-cursor route: %v", err)
	}
}
