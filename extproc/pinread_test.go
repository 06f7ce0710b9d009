package extproc

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// storeCalls counts the calls that reach a store.
type storeCalls struct {
	state.Reader
	gets, getManys, claims int
}

func (c *storeCalls) Get(ctx context.Context, k string) (string, bool, error) {
	c.gets++
	return c.Reader.Get(ctx, k)
}

func (c *storeCalls) GetMany(ctx context.Context, keys ...string) ([]string, []bool, error) {
	c.getManys++
	return c.Reader.GetMany(ctx, keys...)
}

func (c *storeCalls) Claim(ctx context.Context, k, v string, ttl time.Duration) (bool, string, error) {
	c.claims++
	return c.Reader.Claim(ctx, k, v, ttl)
}

// TestListOneRead: with pinning on, each tools list of an answer costs
// one store read (one GetMany of every key of its tools) and no Get,
// whatever its size, observed tool by tool or seen whole lately (toolpin
// ListSeen); a list seen lately is still decided with what the store holds
// then: a definition another replica observed since hides its tool. With
// pinning off nothing is read.
func TestListOneRead(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile("p.yaml", src)
	if err != nil || pol.PinMode() != policy.PinTOFU {
		t.Fatalf("the reference policy: %v, %v", err, pol.PinMode())
	}
	shared := state.NewMemory(100000, nil)
	// replica is one process of the service: its own memory of lists, the
	// store shared; list returns the answer it passes in session and the
	// store calls it made.
	replica := func(p *policy.Policy) func(session, body string, responses respRule) (string, storeCalls) {
		sc := &storeCalls{Reader: shared}
		srv := New(Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(p), "v" },
			Definitions: &toolpin.Observations{Store: sc, Recent: &toolpin.Recent{}}, Fingerprints: &toolpin.Cache{}})
		return func(session, body string, responses respRule) (string, storeCalls) {
			t.Helper()
			before := *sc
			st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice", claims: map[string]any{"sub": "alice"},
				policyVersion: "v", isList: true, session: session, rpcID: []byte("1"), mode: modeJSON, responses: responses}
			r, err := st.responseBody(context.Background(), &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true})
			if err != nil {
				t.Fatal(err)
			}
			out := r.GetResponseBody().GetResponse().GetBodyMutation().GetBody()
			return string(out), storeCalls{gets: sc.gets - before.gets, getManys: sc.getManys - before.getManys, claims: sc.claims - before.claims}
		}
	}
	a, b := replica(pol), replica(pol)
	big := string(list500(500))
	for _, tt := range []struct {
		name         string
		list         func(string, string, respRule) (string, storeCalls)
		session      string
		give         string
		responses    respRule
		wantGetManys int
		wantClaims   bool
	}{
		{"500 tools, first seen", a, "s1", big, respOwn, 1, true},
		{"500 tools, seen whole lately", a, "s1", big, respOwn, 1, false},
		{"another replica", b, "s1", big, respOwn, 1, true},
		{"2 tools", a, "s2", toolsBody, respOwn, 1, true},
		{"2 tools, seen whole lately", a, "s2", toolsBody, respOwn, 1, false},
		{"a batch of two lists", a, "s2", "[" + toolsBody + "," + strings.Replace(toolsBody, `"id":1`, `"id":2`, 1) + "]", respAny, 2, false},
	} {
		out, calls := tt.list(tt.session, tt.give, tt.responses)
		if strings.Contains(out, `"error"`) || strings.Contains(out, "delete_") || !strings.Contains(out, `"search"`) {
			t.Fatalf("%s: not filtered: %.200s", tt.name, out)
		}
		if calls.gets != 0 || calls.getManys != tt.wantGetManys || (calls.claims > 0) != tt.wantClaims {
			t.Errorf("%s: %d Get, %d GetMany, %d Claim; want %d GetMany, claims %v", tt.name, calls.gets, calls.getManys, calls.claims, tt.wantGetManys, tt.wantClaims)
		}
	}

	// b observes another definition of search; a's next list, the very
	// bytes it saw whole lately, no longer shows search.
	changed := strings.Replace(toolsBody, `"name":"search"`, `"name":"search","description":"v2"`, 1)
	if out, _ := b("s2", changed, respOwn); strings.Contains(out, `"search"`) {
		t.Errorf("the changed definition is listed: %s", out)
	}
	if out, calls := a("s2", toolsBody, respOwn); strings.Contains(out, `"search"`) || calls.claims != 0 || calls.getManys != 1 {
		t.Errorf("a list seen lately, after a change elsewhere: %d claims, %d GetMany, %s", calls.claims, calls.getManys, out)
	}

	off, err := policy.Compile("p.yaml", bytes.Replace(src, []byte("pin_mode: tofu"), []byte("pin_mode: off"), 1))
	if err != nil {
		t.Fatal(err)
	}
	if out, calls := replica(off)("s1", big, respOwn); calls != (storeCalls{}) || strings.Contains(out, "delete_") {
		t.Errorf("pinning off: %+v, %.200s", calls, out)
	}
}
