package extproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// flakyStore counts the claims that reach a store, and fails them while
// down.
type flakyStore struct {
	state.Reader
	claims int
	down   bool
}

func (f *flakyStore) Claim(ctx context.Context, k, v string, ttl time.Duration) (bool, string, error) {
	if f.down {
		return false, "", state.ErrUnavailable
	}
	f.claims++
	return f.Reader.Claim(ctx, k, v, ttl)
}

// TestListObservedOnce: with pinning on, a tools/list answered again byte
// for byte in the same scope is filtered alike without observing its tools
// again (toolpin ListSeen), its log line saying tools_unchanged, not
// repeating them; a
// list that changed, one in another session
// (pin_scope session), and one after a list whose observation failed are
// observed again, tool by tool; a list refused for its shape is not
// remembered.
func TestListObservedOnce(t *testing.T) {
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile("p.yaml", src)
	if err != nil || pol.PinScope() != policy.PinScopeSession {
		t.Fatalf("the reference policy: %v, scope %v", err, pol.PinScope())
	}
	fs := &flakyStore{Reader: state.NewMemory(1000, nil)}
	obs := &toolpin.Observations{Store: fs, Recent: &toolpin.Recent{}}
	core, logs := observer.New(zap.InfoLevel)
	srv := New(Config{Policy: func() (*decision.Policy, string) { return decision.PolicyOf(pol), "v" }, Definitions: obs, Fingerprints: &toolpin.Cache{},
		Log: zap.New(core)})
	// loggedTools is the "tools" member of the last "list filtered" line.
	loggedTools := func() string {
		t.Helper()
		lines := logs.FilterMessage("list filtered").All()
		if len(lines) == 0 {
			t.Fatal("no list filtered line")
		}
		tools, ok := lines[len(lines)-1].ContextMap()["tools"]
		if !ok {
			t.Fatalf("no tools in %v", lines[len(lines)-1].ContextMap())
		}
		return fmt.Sprint(tools)
	}
	list := func(session, body string) (string, int) {
		t.Helper()
		before := fs.claims
		st := &stream{s: srv, haveMeta: true, decision: "d", method: "tools/list", server: "payments", principal: "alice", claims: map[string]any{"sub": "alice"},
			policyVersion: "v", isList: true, session: session, rpcID: []byte("1"), mode: modeJSON}
		r, err := st.responseBody(context.Background(), &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true})
		if err != nil {
			t.Fatal(err)
		}
		out := r.GetResponseBody().GetResponse().GetBodyMutation().GetBody()
		return string(out), fs.claims - before
	}
	first, n := list("s1", toolsBody)
	if first != toolsKept || n == 0 {
		t.Fatalf("first list: %d claims, %s", n, first)
	}
	firstTools := loggedTools()
	if !strings.Contains(firstTools, "delete_repo") || !strings.Contains(firstTools, toolpin.Version+":sha256:") {
		t.Fatalf("first list logged tools %s", firstTools)
	}
	if again, n := list("s1", toolsBody); again != first || n != 0 {
		t.Errorf("repeat: %d claims, %s", n, again)
	}
	// Its tools are not logged again: the first line has them.
	if last := logs.FilterMessage("list filtered").All(); len(last) < 2 {
		t.Fatal("no line for the repeat")
	} else if m := last[len(last)-1].ContextMap(); m["tools"] != nil || m["tools_unchanged"] != true {
		t.Errorf("repeat's line: %v, want no tools and tools_unchanged", m)
	}
	if _, n := list("s2", toolsBody); n == 0 {
		t.Error("another session's list was not observed")
	}
	changed := strings.Replace(toolsBody, `"name":"search"`, `"name":"search","description":"v2"`, 1)
	if _, n := list("s1", changed); n == 0 {
		t.Error("a changed list was not observed")
	}
	ctx := context.Background()
	if def, err := obs.Lookup(ctx, pol, "payments", "s1", "search"); err != nil || !def.Changed {
		t.Errorf("the changed definition is not seen: %+v %v", def, err)
	}

	// A store that fails refuses the list and remembers nothing of it.
	fs.down = true
	other := strings.Replace(toolsBody, `"name":"search"`, `"name":"search","title":"t"`, 1)
	if out, _ := list("s1", other); !strings.Contains(out, ReasonUnfilterable) {
		t.Fatalf("store down: %s", out)
	}
	fs.down = false
	if _, n := list("s1", other); n == 0 {
		t.Error("a list whose observation failed was remembered")
	}

	// A duplicate tool refuses the list after its tools were observed: the
	// list is not remembered either.
	dup := strings.Replace(toolsBody, `"name":"delete_repo"`, `"name":"search"`, 1)
	if dup == toolsBody {
		t.Fatal("toolsBody has no delete_repo")
	}
	if out, _ := list("s3", dup); !strings.Contains(out, ReasonUnfilterable) {
		t.Fatalf("duplicate: %s", out)
	}
	if seen, _ := obs.ListSeen(toolpin.Scope(pol, "payments", "s3"), listArray(t, dup)); seen {
		t.Error("a refused list is remembered")
	}
}

// listArray is the tools array of a tools/list answer, as sent.
func listArray(t *testing.T, body string) []byte {
	t.Helper()
	i := strings.Index(body, `"tools":[`)
	j := strings.LastIndex(body, "]")
	if i < 0 || j < i {
		t.Fatalf("no tools array in %s", body)
	}
	return bytes.Clone([]byte(body[i+len(`"tools":`) : j+1]))
}
