package extauthz

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Test identities. The issuer is the loopback identity provider's URL,
// known only once it listens.
const (
	testAudience = "https://mcp.example.com/mcp"
	testServerID = "payments"
	testSubject  = "alice"
)

// sharedDir is the repository's copy of the shared test data (corpus,
// cases, schemas; TestSharedCopy in mcpparse keeps it equal to ../shared).
var sharedDir = filepath.Join("..", "testdata", "shared")

// testKey is an RSA signing key with its kid.
type testKey struct {
	kid  string
	priv *rsa.PrivateKey
}

var (
	keyCacheMu sync.Mutex
	keyCache   = map[string]*testKey{}
)

// newTestKey returns an RSA-2048 key named kid, generated once per test binary.
func newTestKey(t testing.TB, kid string) *testKey {
	t.Helper()
	keyCacheMu.Lock()
	defer keyCacheMu.Unlock()
	if k, ok := keyCache[kid]; ok {
		return k
	}
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k := &testKey{kid: kid, priv: priv}
	keyCache[kid] = k
	return k
}

func (k *testKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: "RS256", Use: "sig"}
}

// sign signs claims with k as RS256 under its kid.
func (k *testKey) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	return k.signAs(t, k.kid, claims)
}

// signAs signs claims with k as RS256, naming kid in the header.
func (k *testKey) signAs(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	return signJWS(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"), claims)
}

// signJWS signs claims (as JSON) with key and opts and returns the compact
// serialization.
func signJWS(t testing.TB, key jose.SigningKey, opts *jose.SignerOptions, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testIdP is an OpenID provider on loopback: discovery document and JWKS,
// with keys that can be rotated and a switch that takes it down.
type testIdP struct {
	srv        *httptest.Server
	mu         sync.Mutex
	keys       []jose.JSONWebKey
	extra      []json.RawMessage // served after keys as they are: members go-jose cannot encode (X25519…)
	down       atomic.Bool
	garbage    atomic.Bool
	delay      atomic.Int64 // nanoseconds added to every answer
	jwksGets   atomic.Int64
	discovered atomic.Int64
}

func newTestIdP(t testing.TB, keys ...*testKey) *testIdP {
	t.Helper()
	idp := &testIdP{}
	idp.setKeys(keys...)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if !idp.serve(w) {
			return
		}
		idp.discovered.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                idp.srv.URL,
			"jwks_uri":                              idp.srv.URL + "/jwks",
			"authorization_endpoint":                idp.srv.URL + "/authorize",
			"token_endpoint":                        idp.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		idp.jwksGets.Add(1)
		if !idp.serve(w) {
			return
		}
		idp.mu.Lock()
		set := struct {
			Keys []any `json:"keys"`
		}{}
		for _, k := range idp.keys {
			set.Keys = append(set.Keys, k)
		}
		for _, k := range idp.extra {
			set.Keys = append(set.Keys, k)
		}
		idp.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	idp.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: mux}}
	idp.srv.Start()
	t.Cleanup(idp.srv.Close)
	return idp
}

// serve applies the fault switches; it reports whether to answer normally.
func (idp *testIdP) serve(w http.ResponseWriter) bool {
	if d := idp.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if idp.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return false
	}
	if idp.garbage.Load() {
		_, _ = w.Write([]byte("<html>not json"))
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	return true
}

func (idp *testIdP) setKeys(keys ...*testKey) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.keys = nil
	for _, k := range keys {
		idp.keys = append(idp.keys, k.public())
	}
}

// setExtraKeys sets the raw JWK Set members served after the signing keys.
func (idp *testIdP) setExtraKeys(extra ...json.RawMessage) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.extra = extra
}

func (idp *testIdP) issuer() string { return idp.srv.URL }

// claims returns valid claims for the idp, audience and subject.
func (idp *testIdP) claims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": idp.issuer(), "sub": testSubject, "aud": []string{testAudience},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": "mcp:tools",
	}
}

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
func newDiscoveryVerifier(t testing.TB, idp *testIdP) *bearer.OIDCVerifier {
	t.Helper()
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.issuer(), Audiences: []string{testAudience}})
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
		Decider:   mustDecider(decision.Config{ServerID: testServerID, Verifier: v, Policies: store, Limits: mcpparse.DefaultLimits()}),
		Responder: &Responder{ResourceMetadataURL: resourcemeta.URL(testAudience)},
		Log:       log,
	}
}

// startGRPC serves srv on 127.0.0.1:0 and returns a connected client.
func startGRPC(t testing.TB, srv authv3.AuthorizationServer) authv3.AuthorizationClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(4<<20), grpc.ForceServerCodecV2(CheckCodec{}))
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
	return authv3.NewAuthorizationClient(conn)
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
