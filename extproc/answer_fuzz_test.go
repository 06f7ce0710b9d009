package extproc

import (
	"slices"
	"strings"
	"testing"
)

// FuzzAnswer drives whole answers through the processor as Envoy does
// (status, Content-Type, content-encoding, the route, the request's id and
// method, the body cut into chunks anywhere) and asserts the seam's rule:
// no modelled client reading (clients_test.go: TypeScript, Go, Python) of
// what leaves the processor delivers a list naming delete_repo, which the
// reference policy denies alice on every call. The route byte's high bit
// picks a fresh processor; otherwise one processor serves every input, its
// state (pins, tasks, lists seen) carried from the earlier ones.
func FuzzAnswer(f *testing.F) {
	list := toolsBody
	for _, s := range []struct {
		route   uint8
		status  uint16
		ctype   string
		method  string
		id      string
		resume  bool
		body    string
		cutting uint16
	}{
		{0, 200, "application/json", "tools/list", "1", false, list, 0},
		{128, 200, "application/json", "tools/list", "1", false, list, 0},
		{0, 200, "text/event-stream", "tools/list", "1", false, "event: message\ndata: " + list + "\n\n", 7},
		{1, 200, "text/event-stream", "ping", "5", false, "data: " + list + "\n\n", 3},
		{1, 202, "application/json", "tools/call", "1", false, list, 0},
		{1, 200, `application/json; profile="text/event-stream"`, "initialize", "0", false, "[" + list + "]", 0},
		{2, 200, "application/json", "GET", "", true, "data: " + list + "\n\n", 5},
		{2, 200, "text/event-stream", "GET", "", false, "\u00ef\u00bb\u00bfdata: " + list + "\n\n", 1},
		{0, 200, "text/event-stream", "tools/list", "1", false, "data: \u2028data: " + list + "\n\n", 2},
		{0, 200, "text/event-stream", "tools/list", "1", false, "data: {\"a\":\r" + list + "\n\n", 4},
		{1, 300, "application/json", "ping", "1", false, list, 0},
		{1, 500, "text/plain", "ping", "1", false, list, 0},
	} {
		f.Add(s.route, s.status, s.ctype, s.method, s.id, s.resume, s.body, s.cutting)
	}
	// The shared processor lives as long as the fuzz target (f's cleanup),
	// not the first input: one made in the first input's t stopped with it,
	// and every later input then waited on a dead processor.
	shared := newFixture(f)
	f.Fuzz(func(t *testing.T, route uint8, status uint16, ctype, method, id string, resume bool, body string, cutting uint16) {
		if status < 200 || status > 599 || len(body) > 1<<16 || strings.ContainsAny(ctype, "\r\n\x00") {
			return
		}
		fx := shared // reused: pins, tasks and definitions of earlier inputs
		if route&0x80 != 0 {
			fx = newFixture(t) // fresh: a processor that saw nothing before
		}
		rt, x := callRoute, exchange{method: "POST", status: int(status), hdrs: map[string]string{"content-type": ctype}}
		switch route % 3 {
		case 0:
			rt = listRoute
			x = fx.listRequest("alice", "tools/list", "1", "")
			x.status, x.hdrs = int(status), map[string]string{"content-type": ctype}
			method, id = "tools/list", "1"
		case 2:
			rt, method, id = getRoute, "GET", ""
			x.method = "GET"
			x.reqHdrs = map[string]string{"authorization": "Bearer " + fx.tokens["alice"]}
			if resume {
				x.reqHdrs["last-event-id"] = "1"
			}
		}
		if x.meta == nil {
			x.meta = fx.meta("alice", method, id)
		}
		n := int(cutting%61) + 1
		for b := body; len(b) > 0; {
			k := min(n, len(b))
			x.chunks, b = append(x.chunks, b[:k]), b[k:]
		}
		got := fx.envoy.do(t, rt, x)
		if got.reset {
			return // nothing reached the client past the reset
		}
		a := answer{get: x.method == "GET", status: got.status, body: got.body}
		if c, ok := got.hdrs["content-type"]; ok {
			a.ctypes = []string{c}
		}
		for name, read := range clientReaders {
			if slices.Contains(listedNames(read(a)), "delete_repo") {
				t.Fatalf("the %s client reads delete_repo: in %d %q %q, out %d %v %q", name, status, ctype, body, a.status, a.ctypes, a.body)
			}
		}
	})
}
