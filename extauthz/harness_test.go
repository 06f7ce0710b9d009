package extauthz

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Test identities. The issuer is the loopback identity provider's URL,
// known only once it listens.
const (
	testAudience = testkit.Audience
	testServerID = "payments"
	testSubject  = testkit.Subject
)

// sharedDir is the repository's copy of the shared test data (corpus,
// cases, schemas; TestSharedCopy in mcpparse keeps it equal to ../shared).
var sharedDir = filepath.Join("..", "testdata", "shared")

// referencePolicy compiles examples/policy.yaml.
func referencePolicy(t testing.TB) *decision.PolicyStore {
	t.Helper()
	return compileStore(t, filepath.Join("..", "examples", "policy.yaml"))
}

func compileStore(t testing.TB, file string) *decision.PolicyStore {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := decision.CompilePolicy(file, src)
	if err != nil {
		t.Fatalf("compile %s: %v", file, err)
	}
	s := &decision.PolicyStore{}
	s.Store(lp)
	return s
}

// newDiscoveryVerifier verifies tokens through OIDC discovery at idp.
func newDiscoveryVerifier(t testing.TB, idp *testkit.IdP) *bearer.OIDCVerifier {
	t.Helper()
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	return v
}

// newTestServer returns a Check server with the given pieces.
func newTestServer(store *decision.PolicyStore, v bearer.TokenVerifier, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{
		Decider: mustDecider(decision.Config{ServerID: testServerID, Verifier: v, Policies: store, Limits: mcpparse.DefaultLimits(),
			Definitions: toolpin.Observations{Store: state.NewMemory(0, nil)}}),
		Responder: &Responder{ResourceMetadataURL: resourcemeta.URL(testAudience)},
		Log:       log,
	}
}

// startGRPC serves srv on 127.0.0.1:0 as serve does (CheckCodec, 4 MiB
// messages) and returns a connected client.
func startGRPC(t testing.TB, srv authv3.AuthorizationServer) authv3.AuthorizationClient {
	t.Helper()
	return authv3.NewAuthorizationClient(dialGRPC(t, srv, grpc.MaxRecvMsgSize(4<<20), grpc.ForceServerCodecV2(CheckCodec{})))
}

// dialGRPC serves srv on 127.0.0.1:0 with a gRPC server of opts until the
// test ends and returns a plaintext client connection to it.
func dialGRPC(t testing.TB, srv authv3.AuthorizationServer, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis := testkit.Listen(t)
	gs := grpc.NewServer(opts...)
	authv3.RegisterAuthorizationServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
	})
	return conn
}

// check sends req over gRPC and fails the test on an RPC error, which Check
// must never return.
func check(t testing.TB, c authv3.AuthorizationClient, req *authv3.CheckRequest) *authv3.CheckResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Check(ctx, req)
	if err != nil {
		t.Fatalf("Check returned an RPC error (fails open under failure_mode_allow): %v", err)
	}
	if resp == nil {
		t.Fatal("Check returned a nil response")
	}
	return resp
}

// denial is the JSON-RPC error body of a DeniedHttpResponse.
type denial struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Decision      string `json:"decision"`
			Reason        string `json:"reason"`
			RuleID        string `json:"rule_id"`
			RequestDigest string `json:"request_digest"`
			DecisionID    string `json:"decision_id"`
			PolicyVersion string `json:"policy_version"`
			// ToolFingerprint: on definition_changed, what an approval's
			// tooldef claim must name.
			ToolFingerprint string `json:"tool_fingerprint"`
			// Pointer and Keyword: on arguments_invalid, where and why.
			Pointer string `json:"pointer"`
			Keyword string `json:"keyword"`
		} `json:"data"`
	} `json:"error"`
}

// parseDenial decodes and sanity-checks a denied response.
func parseDenial(t testing.TB, resp *authv3.CheckResponse) (*denial, int) {
	t.Helper()
	dr := resp.GetDeniedResponse()
	if dr == nil {
		t.Fatalf("want a DeniedHttpResponse, got %v", resp)
	}
	if resp.GetStatus().GetCode() == 0 {
		t.Fatal("denied response with status OK")
	}
	var d denial
	if err := json.Unmarshal([]byte(dr.GetBody()), &d); err != nil {
		t.Fatalf("denial body is not JSON: %v: %s", err, dr.GetBody())
	}
	if d.JSONRPC != "2.0" || d.Error.Code == 0 || d.Error.Data.Reason == "" || d.Error.Data.DecisionID == "" {
		t.Fatalf("denial body incomplete: %s", dr.GetBody())
	}
	if ct := responseHeader(dr.GetHeaders(), "content-type"); ct != "application/json" {
		t.Fatalf("content-type = %q", ct)
	}
	return &d, int(dr.GetStatus().GetCode())
}

// okHeaders returns the headers an OkHttpResponse sets.
func okHeaders(t testing.TB, resp *authv3.CheckResponse) map[string]string {
	t.Helper()
	ok := resp.GetOkResponse()
	if ok == nil || resp.GetStatus().GetCode() != 0 {
		body := ""
		if dr := resp.GetDeniedResponse(); dr != nil {
			body = dr.GetBody()
		}
		t.Fatalf("want OK, got status %v %s", resp.GetStatus(), body)
	}
	out := map[string]string{}
	for _, h := range ok.GetHeaders() {
		out[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	return out
}

// responseHeader returns the value of name among hs, or "".
func responseHeader(hs []*corev3.HeaderValueOption, name string) string {
	for _, h := range hs {
		if h.GetHeader().GetKey() == name {
			return h.GetHeader().GetValue()
		}
	}
	return ""
}

// newMetrics is serve's metrics: every reason's series created at zero.
func newMetrics(reg prometheus.Registerer) *metrics.Metrics {
	return metrics.New(reg, MetricReasons())
}

// configure replaces srv's Decider by one whose configuration f changed
// (decision.NewDecider validates it). Call it before srv decides in
// parallel.
func configure(t testing.TB, srv *Server, f func(*decision.Config)) {
	t.Helper()
	c := srv.Decider.Config()
	f(&c)
	d, err := decision.NewDecider(c)
	if err != nil {
		t.Fatal(err)
	}
	srv.Decider = d
}

// newDecisionID returns a fresh decision id, for Decisions built by tests.
func newDecisionID() string { return decision.Internal("").ID }

// mustDecider is decision.NewDecider for a configuration known to be valid.
func mustDecider(c decision.Config) *decision.Decider {
	d, err := decision.NewDecider(c)
	if err != nil {
		panic(err)
	}
	return d
}
