package extproc

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	envoycfg "github.com/mcp-extauthz/mcp-extauthz/envoy"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
)

// shippedList is the harness route of envoy/sidecar.yaml's route for
// x-mcp-method method, with x-mcp-cursor "sealed" when sealed (as Check
// sets them: Decision.Method, Decision.SealedCursor; its ExtProcPerRoute
// merged on the filter's
// processing_mode, envoycfg.ExtProcFor) and the harness Envoy with the file's
// allowed_override_modes: what Envoy would do with that file.
func shippedList(t *testing.T, c *envoy, method string, sealed bool) route {
	t.Helper()
	y, err := os.ReadFile("../envoy/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoycfg.ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	hcms, err := envoycfg.HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hcms {
		ep, _, err := envoycfg.ExtProc(h.HCM)
		if err != nil || ep == nil {
			continue
		}
		if ep.GetAllowModeOverride() {
			c.allowed = ep.GetAllowedOverrideModes()
		} else {
			c.allowed = nil
		}
		rc := h.HCM.GetRouteConfig()
		for _, vh := range rc.GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				if !picks(t, r, method, sealed) {
					continue
				}
				eff, err := envoycfg.ExtProcFor(ep, rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig())
				if err != nil || eff.Disabled {
					t.Fatalf("the route for %s: %v, disabled %v", method, err, eff.Disabled)
				}
				m := eff.Mode
				if m.GetRequestBodyMode() != procfv3.ProcessingMode_NONE && m.GetRequestBodyMode() != procfv3.ProcessingMode_BUFFERED {
					t.Fatalf("request_body_mode %v: the harness plays NONE and BUFFERED only", m.GetRequestBodyMode())
				}
				return route{requestHeaders: m.GetRequestHeaderMode() == procfv3.ProcessingMode_SEND,
					requestBody: m.GetRequestBodyMode() == procfv3.ProcessingMode_BUFFERED, responseBody: m.GetResponseBodyMode(),
					failOpen: eff.FailureModeAllow}
			}
		}
	}
	t.Fatalf("envoy/sidecar.yaml: no ext_proc route for %s", method)
	return route{}
}

// picks reports whether r is the route Envoy picks first for a POST to
// /mcp whose x-mcp-method is method, with x-mcp-cursor "sealed" when
// sealed: a prefix "/" match whose header matchers (x-mcp-method,
// x-mcp-cursor and :method, exact or a safe_regex matched whole, as Envoy
// matches) all hold. Routes are tried in order (shippedList).
func picks(t *testing.T, r *routev3.Route, method string, sealed bool) bool {
	t.Helper()
	if r.GetMatch().GetPrefix() != "/" {
		return false
	}
	hdrs := map[string]string{envoycfg.MethodHeader: method, ":method": "POST"}
	if sealed {
		hdrs[envoycfg.CursorHeader] = "sealed"
	}
	for _, h := range r.GetMatch().GetHeaders() {
		v, ok := hdrs[h.GetName()]
		sm := h.GetStringMatch()
		switch {
		case !ok:
			return false
		case sm.GetExact() != "":
			if sm.GetExact() != v {
				return false
			}
		case sm.GetSafeRegex().GetRegex() != "":
			if !regexp.MustCompile("^(?:" + sm.GetSafeRegex().GetRegex() + ")$").MatchString(v) {
				return false
			}
		default:
			t.Fatalf("route %s: a header matcher the test does not model: %v", r.GetName(), h)
		}
	}
	return true
}

// subjects accepts "Bearer <subject>" for Check's side of the round trip.
type subjects struct{}

func (subjects) Audiences() []string { return []string{audience} }

func (subjects) Verify(_ context.Context, tok string) (*bearer.Principal, error) {
	return &bearer.Principal{Issuer: issuer, Subject: tok, Audience: audience}, nil
}

// TestSealedCursorThroughShippedConfig: a paginated tools/list through
// envoy/sidecar.yaml's routes as that file configures them: page 1 (no
// cursor) on the route that opens at the response headers, page 2 on the
// one Check's x-mcp-cursor picks (request body BUFFERED); with the file's
// allowed_override_modes the processor's override at the response headers
// matches an allowed entry exactly (else Envoy would ignore it and pass the
// page unfiltered), the client gets a sealed nextCursor, Check (the
// Decider, on the same key and policy) admits it for alice, marks it
// (SealedCursor) and refuses bob's replay (invalid_params), and the
// upstream gets its own cursor back; the same holds for a page answered as
// SSE.
func TestSealedCursorThroughShippedConfig(t *testing.T) {
	f := newFixture(t)
	rt1, rt2 := shippedList(t, f.envoy, "tools/list", false), shippedList(t, f.envoy, "tools/list", true)
	if rt1.requestHeaders || rt1.requestBody || rt2.requestHeaders {
		t.Fatalf("envoy/sidecar.yaml: a list's route %+v, a sealed list's %+v: want no request headers, and the request body only with a cursor", rt1, rt2)
	}
	if !rt2.requestBody {
		t.Fatal("envoy/sidecar.yaml's route of a tools/list with a sealed cursor sends no request body: the upstream would get the sealed cursor")
	}
	src, err := os.ReadFile("../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lp, err := decision.CompilePolicy("examples/policy.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if lp.Version != f.version {
		t.Fatalf("policy versions differ: %s, %s", lp.Version, f.version)
	}
	store := new(decision.PolicyStore)
	store.Store(lp)
	decider, err := decision.NewDecider(decision.Config{ServerID: "payments", Policies: store, Verifier: subjects{}, Cursors: f.sealer})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(who, body string) *decision.Decision {
		return decider.Decide(context.Background(), &decision.Request{Method: "POST", Headers: decision.Headers{
			"authorization": {"Bearer " + who}, "content-type": {"application/json"},
			"accept": {"application/json, text/event-stream"}, "mcp-protocol-version": {"2025-11-25"},
		}, Body: []byte(body)})
	}

	page1 := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"delete_repo","inputSchema":{"type":"object"}}],"nextCursor":"up-2"}}`
	tests := []struct {
		name     string
		answer   func(exchange) exchange
		respMode procfv3.ProcessingMode_BodySendMode
	}{
		{"json", func(x exchange) exchange { return jsonAnswer(x, page1) }, procfv3.ProcessingMode_BUFFERED},
		{"sse", func(x exchange) exchange { return sseAnswer(x, "event: message\ndata: "+page1+"\n\n") }, procfv3.ProcessingMode_STREAMED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Page 1: no cursor in the request; the page is filtered and its
			// nextCursor sealed.
			first := f.listRequest("alice", "tools/list", "1", "")
			if d := decide("alice", first.reqBody); d.Reason != decision.ReasonAllowed || d.SealedCursor {
				t.Fatalf("Check of page 1: %s, sealed cursor %v", d.Reason, d.SealedCursor)
			}
			got := f.envoy.do(t, rt1, tt.answer(first))
			check(t, "page 1", got)
			if want := envoycfg.ProcessorOverride(procfv3.ProcessingMode_NONE, tt.respMode); !proto.Equal(got.override, want) || !got.honoured {
				t.Fatalf("override %v (honoured %v), want %v honoured by the shipped allowed_override_modes", got.override, got.honoured, want)
			}
			body := got.body // JSON, or one SSE event: its data line
			if i := strings.Index(body, "data:"); tt.respMode == procfv3.ProcessingMode_STREAMED && i >= 0 {
				body = strings.TrimSpace(body[i+len("data:"):])
			}
			var res struct {
				Result struct {
					Tools      []struct{ Name string }
					NextCursor string
				}
			}
			if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Tools) != 1 || res.Result.Tools[0].Name != "search" {
				t.Fatalf("page 1 as the client got it: %s (%v)", got.body, err)
			}
			sealed := res.Result.NextCursor
			if !strings.HasPrefix(sealed, cursor.Prefix) || strings.Contains(sealed, "up-2") {
				t.Fatalf("nextCursor %q, want sealed", sealed)
			}
			// Page 2: Check admits alice's sealed cursor and refuses bob's
			// replay of it; the upstream gets its own cursor back.
			params := `,"params":{"cursor":"` + sealed + `"}`
			second := f.listRequest("alice", "tools/list", "2", params)
			if d := decide("alice", second.reqBody); d.Reason != decision.ReasonAllowed || !d.SealedCursor {
				t.Fatalf("Check of alice's page 2: %s, sealed cursor %v", d.Reason, d.SealedCursor)
			}
			if r := decide("bob", f.listRequest("bob", "tools/list", "2", params).reqBody).Reason; r != decision.ReasonInvalidParams {
				t.Fatalf("Check of bob's replay: %s, want %s", r, decision.ReasonInvalidParams)
			}
			page2 := f.envoy.do(t, rt2, jsonAnswer(second, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`))
			if page2.upstreamBody != `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"up-2"}}` {
				t.Fatalf("the upstream got %s, want its own cursor back", page2.upstreamBody)
			}
			if !page2.honoured {
				t.Fatalf("page 2's override %v not honoured", page2.override)
			}
		})
	}
}

// TestShippedRoutesOnProcessorOutage: with the processor unreachable, every
// route of the shipped sidecar fails closed (status_on_error), a
// tools/call's answer and an initialize's too: none passes unread.
func TestShippedRoutesOnProcessorOutage(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e := newEnvoy(extprocv3.NewExternalProcessorClient(conn))
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo","inputSchema":{"type":"object"}}]}}`
	tests := []struct {
		method     string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}`, 500, ""},
		{"initialize", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`, 500, ""},
		{"ping", list, 500, ""},
		{"tools/list", list, 500, ""},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"working"}}`, 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			rt := shippedList(t, e, tt.method, false)
			x := exchange{method: "POST", reqHdrs: map[string]string{"content-type": "application/json"}, reqBody: `{"jsonrpc":"2.0","id":1,"method":"` + tt.method + `"}`,
				meta:   map[string]string{"decision_id": "d-1", "decision": "allow", "method": tt.method, "server": "payments", "principal": "alice", "issuer": issuer},
				status: 200, hdrs: map[string]string{"content-type": "application/json"}, chunks: []string{tt.body}}
			got := e.do(t, rt, x)
			if got.status != tt.wantStatus || got.body != tt.wantBody {
				t.Errorf("got %d %q (local reply %v %s), want %d %q", got.status, got.body, got.localReply, got.details, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus != 200 && !got.localReply {
				t.Errorf("a refused %s is not Envoy's local reply", tt.method)
			}
		})
	}
}
