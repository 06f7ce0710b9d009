package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// settingClass is how an offline decision (check, test) treats a serve
// setting.
type settingClass int

const (
	// honoured: the setting changes a decision or its answer, and the
	// offline assembly (assemble) honours it as serve does.
	honoured settingClass = iota + 1
	// notDecision: the setting changes no decision and no answer to Check
	// (listening, logging, telemetry, shutdown, caches, the seam's ttl).
	notDecision
	// namedOffline: what the setting points at lives outside any file (a
	// live store, a live key set, an introspection endpoint, the seam's
	// observations): offline it is not consulted, and check and test name
	// it on stderr (offlineNotes) with the word in the map's value.
	namedOffline
)

// serveSettings classifies every serve flag; TestEveryServeSettingClassified
// fails on a flag missing here, so a new flag is classified when it is
// added. namedOffline settings map to the words their offline note names.
var serveSettings = map[string]struct {
	class settingClass
	note  string // namedOffline: a word of its offline line
}{
	"policy": {class: honoured}, "issuer": {class: honoured}, "audience": {class: honoured}, "token-typ": {class: honoured},
	"server-id": {class: honoured}, "server-id-by-principal": {class: honoured}, "case-sensitive-keys": {class: honoured},
	"resource-metadata-url": {class: honoured}, "denial-status": {class: honoured},
	"max-body-bytes": {class: honoured}, "max-json-depth": {class: honoured}, "max-json-keys": {class: honoured},
	"max-json-elements": {class: honoured}, "max-string-bytes": {class: honoured},
	"dry-run": {class: honoured}, "idempotency-header": {class: honoured}, "idempotency-meta": {class: honoured},
	"idempotency-ttl": {class: honoured}, "approval-url": {class: honoured}, "approval-max-lifetime": {class: honoured},
	"conceal-as": {class: honoured}, "conceal-json-response": {class: honoured},
	"response-seam": {class: honoured}, "cursor-key-file": {class: honoured},
	"decision-key-file": {class: honoured}, "allow-test-keys": {class: honoured},

	"jwks-file":                          {namedOffline, "--jwks-file"},
	"state-store":                        {namedOffline, "--state-store"},
	"state-store-memory-per-replica-ok":  {namedOffline, "--state-store"},
	"state-store-password-file":          {namedOffline, "--state-store"},
	"state-store-sentinel-password-file": {namedOffline, "--state-store"},
	"state-store-tls-ca-file":            {namedOffline, "--state-store"},
	"state-store-tls-cert-file":          {namedOffline, "--state-store"},
	"state-store-tls-key-file":           {namedOffline, "--state-store"},
	"state-store-tls-server-name":        {namedOffline, "--state-store"},
	"state-store-wait-replicas":          {namedOffline, "--state-store"},
	"state-store-wait-timeout":           {namedOffline, "--state-store"},
	"approver-issuer":                    {namedOffline, "--approver-issuer"},
	"approver-jwks-file":                 {namedOffline, "--approver-issuer"},
	"idempotency-result-max-bytes":       {namedOffline, "--idempotency-result-max-bytes"},
	"token-mode":                         {namedOffline, "--token-mode"},
	"introspection-endpoint":             {namedOffline, "--token-mode"},
	"introspection-client-id":            {namedOffline, "--token-mode"},
	"introspection-client-secret-file":   {namedOffline, "--token-mode"},
	"introspection-client-key-file":      {namedOffline, "--token-mode"},
	"introspection-cache-ttl":            {namedOffline, "--token-mode"},
	"introspection-timeout":              {namedOffline, "--token-mode"},

	"config": {class: notDecision}, "grpc-addr": {class: notDecision}, "http-addr": {class: notDecision},
	"log-level": {class: notDecision}, "drain-period": {class: notDecision}, "shutdown-timeout": {class: notDecision},
	"token-cache-size": {class: notDecision}, "jwks-refresh-interval": {class: notDecision},
	"tls-cert-file": {class: notDecision}, "tls-key-file": {class: notDecision}, "client-ca-file": {class: notDecision},
	"resource-documentation": {class: notDecision}, "decision-jwks-out": {class: notDecision},
	"list-cache-ttl": {class: notDecision}, "seam-deadline": {class: notDecision},
	"decision-log": {class: notDecision}, "decision-log-buffer-bytes": {class: notDecision}, "decision-log-file": {class: notDecision},
	"decision-log-overflow": {class: notDecision}, "decision-log-sample-allowed": {class: notDecision},
	"metrics-server": {class: notDecision}, "otlp-ca-file": {class: notDecision}, "otlp-cert-file": {class: notDecision},
	"otlp-endpoint": {class: notDecision}, "otlp-key-file": {class: notDecision}, "trace-sample-ratio": {class: notDecision},
}

// TestEveryServeSettingClassified: every serve flag is classified, and
// nothing else is.
func TestEveryServeSettingClassified(t *testing.T) {
	seen := map[string]bool{}
	commandFlags("serve").VisitAll(func(f *flag.Flag) {
		seen[f.Name] = true
		s, ok := serveSettings[f.Name]
		switch {
		case !ok:
			t.Errorf("serve flag --%s is not classified in serveSettings: say whether it changes a decision, and if so honour it in assemble or name it in offlineNotes", f.Name)
		case s.class == namedOffline && s.note == "":
			t.Errorf("--%s: a namedOffline setting names the words of its offline line", f.Name)
		}
	})
	for name := range serveSettings {
		if !seen[name] {
			t.Errorf("serveSettings classifies --%s, which serve does not have", name)
		}
	}
}

// TestOfflineNamesWhatItCannotConsult: with every namedOffline setting in
// effect, check's offline lines name each of them, and a check of the
// quick start names its state store and approver on stderr.
func TestOfflineNamesWhatItCannotConsult(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yaml")
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	body := "policy: " + abs("examples/policy.yaml") + "\nissuer: https://idp.example.com\naudience: [https://mcp.example.com/mcp]\nserver-id: payments\n" +
		"jwks-file: " + abs("examples/jwks.json") + "\nallow-test-keys: true\n" +
		"state-store: redis://extauthz:s3cret@127.0.0.1:1/0\napprover-issuer: https://approvals.example.com\n" +
		"approver-jwks-file: " + abs("examples/approver-jwks.json") + "\nresponse-seam: true\n" +
		"token-mode: both\nintrospection-client-id: extauthz\nintrospection-client-secret-file: secret\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeConfig([]string{"--config", conf}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := compilePolicyFile(cfg.PolicyFile)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(offlineNotes(cfg, lp.Policy, false), "\n")
	for name, s := range serveSettings {
		if s.class == namedOffline && !strings.Contains(notes, s.note) {
			t.Errorf("--%s in effect, but no offline line names %s:\n%s", name, s.note, notes)
		}
	}
	if strings.Contains(notes, "s3cret") {
		t.Errorf("an offline line shows the state store's password:\n%s", notes)
	}
	code, _, errs := runOut(t, "check", "--config", "examples/config.yaml", "examples/requests/search-allowed.json")
	if code != 0 || !strings.Contains(errs, "offline: --state-store memory") || !strings.Contains(errs, "offline: --approver-issuer") {
		t.Errorf("check --config examples/config.yaml: exit %d, stderr:\n%s", code, errs)
	}
}

// agreementScenario is a serve configuration (settings over the quick
// start's) and the requests it is checked with besides the shared set.
type agreementScenario struct {
	name     string
	settings string // YAML lines over the base config
	// want: request name → a part of its served answer (answerOf) that
	// shows the settings at work, so agreement is never agreement on
	// settings without effect.
	want map[string]string
}

// agreementRequest is one captured request; {{TOKEN}} in a header stands
// for a token of alice.
type agreementRequest struct {
	name string
	capt *capture.Request
}

// post is a captured POST /mcp of body with the quick start's headers and
// extra headers (name, value pairs).
func post(name, body string, headers ...string) agreementRequest {
	h := map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream",
		"authorization": "Bearer {{TOKEN}}", "mcp-protocol-version": "2025-11-25", "host": "mcp.example.com",
		"content-length": fmt.Sprint(len(body))}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return agreementRequest{name: name, capt: &capture.Request{Method: "POST", Path: "/mcp", Headers: h, Body: []byte(body)}}
}

// sharedRequests are the requests every scenario decides: examples/requests,
// every request of the real-SDK corpus, the adversarial cases
// (testdata/shared/cases), and requests near the limits,
// the concealment, the idempotency key and the cursor.
func sharedRequests(t *testing.T) []agreementRequest {
	t.Helper()
	var out []agreementRequest
	files, _ := filepath.Glob("examples/requests/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := capture.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, agreementRequest{name: f, capt: c})
	}
	for _, l := range testkit.JSONLines(t, "testdata/shared/corpus/mcp-real/*.jsonl") {
		c, err := capture.Parse(l.Text)
		if err != nil {
			t.Fatalf("%s:%d: %v", l.File, l.N, err)
		}
		if c.Method == "POST" || c.Method == "GET" || c.Method == "DELETE" {
			out = append(out, agreementRequest{name: fmt.Sprintf("%s:%d", l.File, l.N), capt: c})
		}
	}
	// The adversarial cases (strict parsing, framing, headers), each with
	// alice's token wherever it names one.
	for _, l := range testkit.JSONLines(t, "testdata/shared/cases/*.jsonl") {
		var v struct {
			Request json.RawMessage `json:"request"`
		}
		l.Decode(t, &v)
		if v.Request == nil {
			continue
		}
		c, err := capture.Parse([]byte(`{"request":` + string(v.Request) + `}`))
		if err != nil {
			t.Fatalf("%s:%d: %v", l.File, l.N, err)
		}
		out = append(out, agreementRequest{name: fmt.Sprintf("%s:%d", l.File, l.N), capt: c})
	}
	deep := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","filters":{"a":{"b":{"c":1}}}}}}`
	out = append(out,
		post("deep arguments", deep),
		post("long string", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"`+strings.Repeat("q", 300)+`"}}}`),
		post("many members", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","a":1,"b":2,"c":3,"d":4,"e":5,"f":6}}}`),
		post("case-variant arguments", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","Query":"y"}}}`),
		post("unknown tool", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`),
		post("big refund, idempotency key", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"issue_refund","arguments":{"currency":"EUR","amountMinor":9000}}}`, "idempotency-key", "k-6"),
		post("search, idempotency key", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, "idempotency-key", "k-7"),
		post("search, _meta idempotency key", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"},"_meta":{"io.mcp-extauthz/idempotency-key":"m-8"}}}`),
		post("tools/list with a forged cursor", `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"bm90LXNlYWxlZA"}}`),
		post("tools/list", `{"jsonrpc":"2.0","id":10,"method":"tools/list"}`),
		post("tasks/get of nobody's task", `{"jsonrpc":"2.0","id":11,"method":"tasks/get","params":{"taskId":"t-1"}}`),
		post("ping", `{"jsonrpc":"2.0","id":12,"method":"ping"}`),
		post("no token", `{"jsonrpc":"2.0","id":13,"method":"ping"}`, "authorization", ""),
		post(workloadRequest, `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`),
	)
	return out
}

// agreementScenarios cover every honoured setting but the base config's
// (policy, issuer, audience, server-id, allow-test-keys) at least once.
var agreementScenarios = []agreementScenario{
	{name: "quick start", want: map[string]string{
		"deep arguments": `reason="allowed"`, "case-variant arguments": `reason="case_variant_key"`,
		"tools/list with a forged cursor": `reason="allowed"`, "ping": `reason="allowed"`,
	}},
	{name: "tight parse limits", settings: "max-json-depth: 2\nmax-json-keys: 6\nmax-json-elements: 12\nmax-string-bytes: 64\n", want: map[string]string{
		"deep arguments": `detail="mcpparse: too_deep`, "many members": `reason="limit_exceeded"`, "ping": `reason="allowed"`,
	}},
	{name: "moderate parse limits", settings: "max-json-depth: 4\nmax-json-keys: 40\nmax-string-bytes: 256\n", want: map[string]string{
		"deep arguments": `reason="limit_exceeded"`, "long string": `detail="mcpparse: string_too_long`, "many members": `reason="allowed"`,
	}},
	{name: "body limit", settings: "max-body-bytes: 200\n", want: map[string]string{
		"long string": `detail="mcpparse: too_large`, "ping": `reason="allowed"`,
	}},
	{name: "cursor key and the response seam", settings: "cursor-key-file: {{CURSOR_KEY}}\nresponse-seam: true\n", want: map[string]string{
		"tools/list with a forged cursor": `reason="invalid_params"`, "tasks/get of nobody's task": `reason="task_not_owned"`, "ping": `seam_class=`,
	}},
	{name: "dry run", settings: "dry-run: true\n", want: map[string]string{
		"unknown tool": `dry_run="true"`,
	}},
	{name: "case-sensitive keys", settings: "case-sensitive-keys: [payments]\n", want: map[string]string{
		"case-variant arguments": `reason="allowed"`,
	}},
	{name: "no server id, server by principal", settings: "server-id: \"\"\nserver-id-by-principal: [\"spiffe://cluster.local/ns/mcp/sa/payments=payments\"]\n", want: map[string]string{
		"ping": `reason="unknown_server"`, workloadRequest: `reason="allowed"`,
	}},
	{name: "denial status and concealment", settings: "denial-status: http-error\nconceal-as: typescript-sdk\nconceal-json-response: true\nresource-metadata-url: https://mcp.example.com/.well-known/oauth-protected-resource/other\n", want: map[string]string{
		"unknown tool": ` http=403 `, "no token": `/.well-known/oauth-protected-resource/other`,
	}},
	{name: "idempotency in _meta, approval url", settings: "idempotency-header: X-Retry-Key\nidempotency-meta: io.mcp-extauthz/idempotency-key\nidempotency-ttl: 1h\napproval-url: https://approve.example.com/{digest}\napproval-max-lifetime: 10m\n", want: map[string]string{
		"big refund, idempotency key": `"approval_url":"https://approve.example.com/sha256`,
	}},
	{name: "signed decisions, token types", settings: "decision-key-file: {{DECISION_KEY}}\ntoken-typ: [application/okta-internal-at+jwt]\n", want: map[string]string{
		"ping": `x-mcp-decision: <signed>`,
	}},
}

// TestOfflineAgreesWithServe: for every scenario, a real serve on
// 127.0.0.1:0 and the offline check of the same config file answer every
// request of the set alike: the decision's metadata (decision_id aside),
// the gRPC status, the HTTP status, headers and body Envoy would send
// (decision ids replaced; a signed decision's presence only).
func TestOfflineAgreesWithServe(t *testing.T) {
	dir := t.TempDir()
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	cursorKey := filepath.Join(dir, "cursor-key")
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i + 1)
	}
	if err := os.WriteFile(cursorKey, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	decisionKey := filepath.Join(dir, "decision-key.json")
	dk, _ := json.Marshal(edKey(t, "d1"))
	if err := os.WriteFile(decisionKey, dk, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cursor.ReadKeyFile([]byte(base64.StdEncoding.EncodeToString(k))); err != nil {
		t.Fatal(err)
	}
	base := "policy: " + abs("examples/policy.yaml") + "\nissuer: https://idp.example.com\naudience: [https://mcp.example.com/mcp]\n" +
		"jwks-file: " + abs("examples/jwks.json") + "\nallow-test-keys: true\nstate-store-memory-per-replica-ok: true\nhttp-addr: \"\"\ngrpc-addr: 127.0.0.1:0\ndrain-period: 0s\n"
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(tok.String())
	requests := sharedRequests(t)
	covered := map[string]bool{"policy": true, "issuer": true, "audience": true, "server-id": true, "allow-test-keys": true}
	for i, sc := range agreementScenarios {
		t.Run(sc.name, func(t *testing.T) {
			settings := strings.NewReplacer("{{CURSOR_KEY}}", cursorKey, "{{DECISION_KEY}}", decisionKey).Replace(sc.settings)
			body := settings + base
			if !strings.Contains(settings, "server-id:") {
				body += "server-id: payments\n"
			}
			for _, line := range strings.Split(settings, "\n") {
				if name, _, ok := strings.Cut(line, ":"); ok {
					covered[name] = true
				}
			}
			conf := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", i))
			if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := parseServeConfig([]string{"--config", conf}, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			addr := startServeGRPC(t, "--config", conf)
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			client := authv3.NewAuthorizationClient(conn)
			disagree := 0
			for _, r := range requests {
				c := withToken(r.capt, token)
				cr := c.CheckRequest(true)
				if r.name == workloadRequest {
					cr.Attributes.Destination = &authv3.AttributeContext_Peer{Principal: "spiffe://cluster.local/ns/mcp/sa/payments"}
				}
				served, err := client.Check(t.Context(), cr)
				if err != nil {
					t.Fatal(err)
				}
				off, err := decideOffline(t.Context(), cfg, cfg.JWKSFile, policytest.Principal{}, cr, false)
				if err != nil {
					t.Fatalf("%s: offline: %v", r.name, err)
				}
				if w, ok := sc.want[r.name]; ok && !strings.Contains(answerOf(served), w) {
					t.Errorf("%s: served %s, want %s in it", r.name, answerOf(served), w)
				}
				if got, want := answerOf(off.resp), answerOf(served); got != want {
					disagree++
					t.Errorf("%s: offline and served disagree\noffline: %s\nserved:  %s", r.name, got, want)
				}
			}
			if disagree == 0 {
				t.Logf("%d requests agree", len(requests))
			}
		})
	}
	for name, s := range serveSettings {
		if s.class == honoured && !covered[name] {
			t.Errorf("no scenario sets --%s, which offline decisions honour", name)
		}
	}
}

// workloadRequest is the request sent to the destination principal of
// the payments workload (Istio's SPIFFE id).
const workloadRequest = "to the payments workload"

// tokenPlaceholderRE matches {{TOKEN}} and the cases' {{TOKEN_…}}.
var tokenPlaceholderRE = regexp.MustCompile(`\{\{TOKEN[A-Z_]*\}\}`)

var grpcAddrRE = regexp.MustCompile(`"grpc_addr":"([^"]+)"`)

// answerOf is resp as one comparable string: the gRPC status code, the
// dynamic metadata, and the HTTP answer (status, headers, body) of a
// denial or the headers of an OK response, with the decision id as <id>
// and a signed decision as <signed>.
func answerOf(resp *authv3.CheckResponse) string {
	md := resp.GetDynamicMetadata().GetFields()
	id := md["decision_id"].GetStringValue()
	var b strings.Builder
	fmt.Fprintf(&b, "status=%d", resp.GetStatus().GetCode())
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, md[k].GetStringValue())
	}
	var headers []string
	if dr := resp.GetDeniedResponse(); dr != nil {
		fmt.Fprintf(&b, " http=%d body=%s", dr.GetStatus().GetCode(), dr.GetBody())
		for _, h := range dr.GetHeaders() {
			headers = append(headers, h.GetHeader().GetKey()+": "+h.GetHeader().GetValue())
		}
	}
	if ok := resp.GetOkResponse(); ok != nil {
		for _, h := range ok.GetHeaders() {
			v := h.GetHeader().GetValue()
			if h.GetHeader().GetKey() == "x-mcp-decision" {
				v = "<signed>"
			}
			headers = append(headers, h.GetHeader().GetKey()+": "+v)
		}
		headers = append(headers, "removed: "+strings.Join(ok.GetHeadersToRemove(), ","))
	}
	sort.Strings(headers)
	fmt.Fprintf(&b, " headers=%q", headers)
	if id == "" {
		return b.String()
	}
	return strings.ReplaceAll(b.String(), id, "<id>")
}

// startServeGRPC runs `extauthz serve args...` until the test ends and
// returns its gRPC address.
func startServeGRPC(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	if g := stderr.waitFor(grpcAddrRE, 10*time.Second); g != nil {
		return g[1]
	}
	t.Fatalf("serve did not start: %s", stderr.String())
	return ""
}

// withToken is c with {{TOKEN}} or a corpus placeholder in its
// Authorization header replaced by token.
func withToken(c *capture.Request, token string) *capture.Request {
	out := *c
	out.Headers = map[string]string{}
	for k, v := range c.Headers {
		if k == "authorization" {
			v = tokenPlaceholderRE.ReplaceAllLiteralString(strings.ReplaceAll(v, "PLACEHOLDER_TOKEN", token), token)
			if v == "" {
				continue
			}
		}
		out.Headers[k] = v
	}
	return &out
}

// TestCheckExplainDetail: check --explain prints the decision's detail
// (which limit, where) alike offline and from a running service
// (--addr: the dynamic metadata's detail); without --explain neither does.
func TestCheckExplainDetail(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yaml")
	abs, _ := filepath.Abs("examples/config.yaml")
	src, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	// The quick start with max-json-depth 2, its files where they are.
	body := strings.NewReplacer("policy: policy.yaml", "policy: "+filepath.Join(filepath.Dir(abs), "policy.yaml"),
		"jwks-file: jwks.json", "jwks-file: "+filepath.Join(filepath.Dir(abs), "jwks.json"),
		"approver-jwks-file: approver-jwks.json", "approver-jwks-file: "+filepath.Join(filepath.Dir(abs), "approver-jwks.json"),
		"cursor-key-file: TEST-ONLY-cursor-key", "cursor-key-file: "+filepath.Join(filepath.Dir(abs), "TEST-ONLY-cursor-key"),
	).Replace(string(src)) + "max-json-depth: 2\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	req := filepath.Join(dir, "deep.json")
	if err := os.WriteFile(req, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","filters":{"a":1}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startServeGRPC(t, "--config", conf, "--grpc-addr", "127.0.0.1:0", "--http-addr", "", "--drain-period", "0s")
	_, tok, _ := runOut(t, "token", "--config", conf, "--sub", "alice")
	const want = "detail:         mcpparse: too_deep at offset 84: nested deeper than 2 (at /params/arguments)"
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"offline", []string{"check", "--config", conf, "--explain", req}},
		{"served", []string{"check", "--addr", addr, "--token", tok, "--explain", req}},
	} {
		code, out, errs := runOut(t, tt.args...)
		if code != 1 || !strings.Contains(out, "reason:         limit_exceeded\n") || !strings.Contains(out, want+"\n") {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s%s", tt.name, code, want, out, errs)
		}
		code, out, _ = runOut(t, slices.DeleteFunc(tt.args, func(a string) bool { return a == "--explain" })...)
		if code != 1 || strings.Contains(out, "detail:") {
			t.Errorf("%s without --explain: exit %d, want 1 and no detail:\n%s", tt.name, code, out)
		}
	}
}

// TestTestCommandConfig: extauthz test --config decides the example
// policy's tests with the config's settings: the quick start's pass; with
// max-json-depth 2 the deep requests fail limit_exceeded, and the offline
// lines are on stderr.
func TestTestCommandConfig(t *testing.T) {
	code, out, errs := runOut(t, "test", "--config", "examples/config.yaml", "examples/")
	if code != 0 || !strings.Contains(out, "PASS: ") || !strings.Contains(errs, "offline: --state-store memory") {
		t.Fatalf("test --config examples/config.yaml: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yaml")
	policy, _ := filepath.Abs("examples/policy.yaml")
	if err := os.WriteFile(conf, []byte("policy: "+policy+"\nissuer: https://idp.example.com\naudience: [https://mcp.example.com/mcp]\nmax-json-depth: 2\nstate-store-memory-per-replica-ok: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runOut(t, "test", "--config", conf, "examples/")
	if code != 1 || !strings.Contains(out, "reason limit_exceeded, want ") || !strings.Contains(out, "FAIL: ") {
		t.Errorf("test --config with max-json-depth 2: exit %d, want 1 with limit_exceeded failures\n%s", code, out)
	}
	code, out, _ = runOut(t, "test", "examples/")
	if code != 0 {
		t.Errorf("test without --config: exit %d\n%s", code, out)
	}
}

// TestValidateConfig: validate --config compiles the config's policy and
// builds its decision service as serve would, refusing what serve refuses
// at start (here a published cursor key without allow-test-keys).
func TestValidateConfig(t *testing.T) {
	code, out, errs := runOut(t, "validate", "--config", "examples/config.yaml")
	if code != 0 || !strings.Contains(out, "ok examples/policy.yaml policy_version sha256:") || !strings.Contains(out, "ok examples/config.yaml\n") {
		t.Errorf("validate --config examples/config.yaml: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yaml")
	policy, _ := filepath.Abs("examples/policy.yaml")
	key, _ := filepath.Abs("examples/TEST-ONLY-cursor-key")
	if err := os.WriteFile(conf, []byte("policy: "+policy+"\nissuer: https://idp.example.com\naudience: [https://mcp.example.com/mcp]\ncursor-key-file: "+key+"\nstate-store-memory-per-replica-ok: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runOut(t, "validate", "--config", conf)
	if code != 1 || !strings.Contains(out, "FAIL "+conf+": --cursor-key-file") || !strings.Contains(out, "published test key") {
		t.Errorf("validate --config with a published cursor key: exit %d, want 1\n%s%s", code, out, errs)
	}
}

// TestApproveDigestWithConfigLimits: approve decides a captured request's
// digest with the config's parse limits, as serve would: a request serve
// refuses limit_exceeded has no digest to approve.
func TestApproveDigestWithConfigLimits(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yaml")
	policy, _ := filepath.Abs("examples/policy.yaml")
	write := func(depth string) {
		if err := os.WriteFile(conf, []byte("policy: "+policy+"\nissuer: https://idp.example.com\naudience: [https://mcp.example.com/mcp]\nserver-id: payments\n"+
			"approver-issuer: https://approvals.example.com\nstate-store-memory-per-replica-ok: true\n"+depth), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := filepath.Abs("examples/TEST-ONLY-approver-key.jwk.json")
	write("")
	code, out, errs := runOut(t, "approve", "--config", conf, "--key", key, "--sub", "alice", "examples/requests/big-refund-ask.json")
	if code != 0 || strings.Count(strings.TrimSpace(out), ".") != 2 {
		t.Fatalf("approve of a captured request: exit %d\n%s%s", code, out, errs)
	}
	write("max-json-depth: 2\n")
	code, _, errs = runOut(t, "approve", "--config", conf, "--key", key, "--sub", "alice", "examples/requests/big-refund-ask.json")
	if code != 2 || !strings.Contains(errs, "no single request digest (limit_exceeded)") {
		t.Errorf("approve with max-json-depth 2: exit %d, want 2 and limit_exceeded\n%s", code, errs)
	}
}
