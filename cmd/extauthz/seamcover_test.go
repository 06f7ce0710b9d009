package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	procfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// seamRequest is one MCP request the stand-in sends, and the seam class
// Check marks it with.
type seamRequest struct {
	method, body, class string
}

var seamRequests = []seamRequest{
	{"POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "list"},
	{"GET", "", "get"},
	{"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"refunds"}}}`, "call"},
	{"POST", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "other"},
}

// standIn plays Envoy's HTTP filter chain of one bootstrap for the seam:
// ext_authz's Check over gRPC, the route re-picked on the headers Check
// set (clear_route_cache), and, where the ext_proc filter is in the chain
// and on for that route (envoy.ExtProcFor), the side stream's first
// message with Check's metadata forwarded: the request headers on routes
// that send them, else the response headers of a 200 JSON answer. It stops
// there (what the processor does next is extproc's tests').
type standIn struct {
	hcm   *hcmv3.HttpConnectionManager
	authz authv3.AuthorizationClient
	proc  extprocv3.ExternalProcessorClient
	token string
}

// pickRoute is the first route of the HCM's route config whose header
// matchers (exact and safe_regex, the kinds the shipped routes use) hold
// for hdrs; its virtual host too. Prefix matches are taken as "/" (every
// route to the MCP server), path_separated_prefix as never (the metadata
// route).
func pickRoute(t *testing.T, rc *routev3.RouteConfiguration, hdrs map[string]string) (*routev3.VirtualHost, *routev3.Route) {
	t.Helper()
	for _, vh := range rc.GetVirtualHosts() {
	routes:
		for _, r := range vh.GetRoutes() {
			if r.GetMatch().GetPrefix() != "/" {
				continue
			}
			for _, hm := range r.GetMatch().GetHeaders() {
				v, ok := hdrs[hm.GetName()]
				sm := hm.GetStringMatch()
				switch {
				case !ok:
					continue routes
				case sm.GetExact() != "":
					if v != sm.GetExact() {
						continue routes
					}
				case sm.GetSafeRegex() != nil:
					if !regexp.MustCompile(`^(?:` + sm.GetSafeRegex().GetRegex() + `)$`).MatchString(v) {
						continue routes
					}
				default:
					t.Fatalf("route %s: header matcher %v not modelled", r.GetName(), hm)
				}
			}
			return vh, r
		}
	}
	t.Fatalf("no route for %v", hdrs)
	return nil, nil
}

// send runs one request through the stand-in and reports whether it
// reached the processor. Check must admit it.
func (s *standIn) send(t *testing.T, rq seamRequest) bool {
	t.Helper()
	hdrs := map[string]string{
		"host": "mcp.example.com", "authorization": "Bearer " + s.token, "accept": "application/json, text/event-stream",
		"mcp-protocol-version": "2025-11-25", "mcp-session-id": "s1",
	}
	if rq.method == "POST" {
		hdrs["content-type"] = "application/json"
		hdrs["content-length"] = fmt.Sprint(len(rq.body))
	}
	c := &capture.Request{Method: rq.method, Path: "/mcp", Headers: hdrs, Body: []byte(rq.body)}
	resp, err := s.authz.Check(t.Context(), c.CheckRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	ok := resp.GetOkResponse()
	if ok == nil {
		t.Fatalf("%s %s: denied: %v", rq.method, rq.body, resp.GetStatus())
	}
	after := map[string]string{":method": rq.method}
	for k, v := range hdrs {
		after[k] = v
	}
	for _, h := range ok.GetHeaders() {
		after[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	ep, _, err := envoy.ExtProc(s.hcm)
	if err != nil {
		t.Fatal(err)
	}
	if ep == nil {
		return false // no ext_proc filter in the chain
	}
	rc := s.hcm.GetRouteConfig()
	vh, r := pickRoute(t, rc, after)
	eff, err := envoy.ExtProcFor(ep, rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig())
	if err != nil {
		t.Fatal(err)
	}
	if eff.Disabled {
		return false
	}
	md := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{}}
	for _, ns := range eff.ForwardNS {
		if ns == "envoy.filters.http.ext_authz" {
			md.FilterMetadata[ns] = resp.GetDynamicMetadata()
		}
	}
	stream, err := s.proc.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	hm := func(kv ...string) *corev3.HeaderMap {
		m := &corev3.HeaderMap{}
		for i := 0; i < len(kv); i += 2 {
			m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
		}
		return m
	}
	first := &extprocv3.ProcessingRequest{MetadataContext: md}
	if eff.Mode.GetRequestHeaderMode() == procfv3.ProcessingMode_SEND {
		first.Request = &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hm(":method", rq.method, ":path", "/mcp", "authorization", "Bearer "+s.token, "mcp-session-id", "s1", "mcp-protocol-version", "2025-11-25")}}
	} else {
		first.Request = &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: hm(":status", "200", "content-type", "application/json")}}
	}
	if err := stream.Send(first); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("%s %s: processor: %v", rq.method, rq.body, err)
	}
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) && t.Context().Err() == nil {
				t.Logf("side stream ended: %v", err)
			}
			break
		}
	}
	return true
}

// sidecarHCM loads envoy/sidecar.yaml (validated) and returns it and its
// MCP listener's HTTP connection manager, for a test to edit.
func sidecarHCM(t *testing.T) (*bootstrapv3.Bootstrap, *hcmv3.HttpConnectionManager) {
	t.Helper()
	y, err := os.ReadFile("envoy/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoy.ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := envoy.HTTPConnectionManagers(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Listener == "mcp" {
			return b, h.HCM
		}
	}
	t.Fatal("no mcp listener in envoy/sidecar.yaml")
	return nil, nil
}

// seamCounts reads the seam_* counters of /metrics by class.
func seamCounts(t *testing.T, httpAddr, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	re := regexp.MustCompile(`(?m)^mcp_extauthz_seam_` + name + `_total\{class="([a-z]+)"\} ([0-9]+)$`)
	for _, m := range re.FindAllStringSubmatch(scrape(t, httpAddr), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestSeamCoverage runs serve with --response-seam and drives the shipped
// sidecar config, and that config with the seam taken off one route or
// all of them, through an Envoy stand-in: every admitted request the
// config does not hand to the processor counts unmet (metric, /statusz,
// a warning line), by its class, within its deadline; the shipped config
// leaves none.
func TestSeamCoverage(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, h *hcmv3.HttpConnectionManager)
		want map[string]string // seam_unmet_total by class
	}{
		{"shipped sidecar", func(*testing.T, *hcmv3.HttpConnectionManager) {},
			map[string]string{"list": "0", "get": "0", "task": "0", "call": "0", "other": "0"}},
		{"no ext_proc filter", func(t *testing.T, h *hcmv3.HttpConnectionManager) {
			_, at, _ := envoy.ExtProc(h)
			h.HttpFilters = append(h.HttpFilters[:at], h.HttpFilters[at+1:]...)
		}, map[string]string{"list": "1", "get": "1", "task": "0", "call": "1", "other": "1"}},
		{"GET route without the seam", func(t *testing.T, h *hcmv3.HttpConnectionManager) {
			off, err := anypb.New(&procfv3.ExtProcPerRoute{Override: &procfv3.ExtProcPerRoute_Disabled{Disabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range h.GetRouteConfig().GetVirtualHosts()[0].GetRoutes() {
				for _, hm := range r.GetMatch().GetHeaders() {
					if hm.GetName() == ":method" {
						r.TypedPerFilterConfig[envoy.ExtProcFilter] = off
					}
				}
			}
		}, map[string]string{"list": "0", "get": "1", "task": "0", "call": "0", "other": "0"}},
	}
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, hcm := sidecarHCM(t)
			tt.edit(t, hcm)
			grpcAddr, httpAddr, stderr := startServe(t, "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
				"--drain-period", "0s", "--seam-deadline", "200ms")
			conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			s := &standIn{hcm: hcm, authz: authv3.NewAuthorizationClient(conn), proc: extprocv3.NewExternalProcessorClient(conn), token: strings.TrimSpace(tok.String())}
			for _, rq := range seamRequests {
				s.send(t, rq)
			}
			// Every id is swept within its deadline (200ms) and a sweep (1s).
			var st Status
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				_, body := testkit.Get(t, "http://"+httpAddr+"/statusz")
				st = Status{}
				if err := json.Unmarshal([]byte(body), &st); err != nil {
					t.Fatal(err)
				}
				if st.ResponseSeam == nil {
					t.Fatalf("/statusz has no response_seam: %s", body)
				}
				if st.ResponseSeam.Held == 0 || time.Now().After(deadline) {
					break
				}
			}
			if got := seamCounts(t, httpAddr, "unmet"); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("seam_unmet_total %v, want %v", got, tt.want)
			}
			wantExpected := map[string]string{"list": "1", "get": "1", "task": "0", "call": "1", "other": "1"}
			if got := seamCounts(t, httpAddr, "expected"); fmt.Sprint(got) != fmt.Sprint(wantExpected) {
				t.Errorf("seam_expected_total %v, want %v", got, wantExpected)
			}
			// What the processor saw is what Check marked less what it did not.
			wantMet := map[string]string{}
			for c, e := range wantExpected {
				wantMet[c] = e
				if tt.want[c] == "1" {
					wantMet[c] = "0"
				}
			}
			if got := seamCounts(t, httpAddr, "met"); fmt.Sprint(got) != fmt.Sprint(wantMet) {
				t.Errorf("seam_met_total %v, want %v", got, wantMet)
			}
			var unmet uint64
			for _, c := range []string{"list", "get", "call", "other"} {
				var n uint64
				fmt.Sscan(tt.want[c], &n)
				unmet += n
				if st.ResponseSeam.Unmet[c] != n {
					t.Errorf("/statusz response_seam.unmet.%s = %d, want %d", c, st.ResponseSeam.Unmet[c], n)
				}
			}
			if st.ResponseSeam.UnmetTotal != unmet {
				t.Errorf("/statusz response_seam.unmet_total = %d, want %d", st.ResponseSeam.UnmetTotal, unmet)
			}
			warned := strings.Contains(stderr.String(), `"kind":"seam_unmet"`)
			if warned != (unmet > 0) {
				t.Errorf("warning logged %v, want %v:\n%s", warned, unmet > 0, stderr.String())
			}
		})
	}
}
