package decision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// fuzzToken is one Authorization a fuzzed request may carry, and the
// principal the oracle expects when it verifies.
type fuzzToken struct {
	raw         string
	valid       bool
	sub, client string
}

// FuzzDecide decides fuzzed requests (HTTP method, headers, body, one of
// a few real tokens) with the core rig's parts but its stores (so that a
// decision depends on the request alone) and checks, apart from the code
// under test:
//
//   - Decide returns, never with internal_error (which is also what a
//     recovered panic becomes), and its reason is one of the closed set;
//   - a refused request never carries an allow verdict, and an allowed one
//     is a POST, GET or DELETE with a token that verifies, whose request
//     digest recomputes from the body (encoding/json and
//     internal/jcsoracle, an independent RFC 8785) and the token's known
//     claims, element by element for a batch;
//   - the detail never quotes the token;
//   - the same request decided by a reused Decider and by a fresh one gets
//     the same reason, rule and digest.
//
// Headers are lines "name: value" (names lower-cased, as Envoy gives them);
// a name given again adds a value; "name:" removes a default header.
func FuzzDecide(f *testing.F) {
	r := newCoreRig(f)
	tokens := []fuzzToken{
		{raw: r.token(f, nil), valid: true, sub: testkit.Subject, client: "https://agent.example.com/client.json"},
		{raw: r.token(f, func(c map[string]any) {
			c["sub"], c["scope"], c["azp"] = "bob", "ledger:export", "azp-client"
			delete(c, "client_id")
		}), valid: true, sub: "bob", client: "azp-client"},
		{raw: r.token(f, func(c map[string]any) { c["exp"] = 1 })},
		{raw: r.token(f, func(c map[string]any) { c["cnf"] = map[string]any{"jkt": r.jkt(f)} })},
		{raw: "not-a-jwt"},
		{}, // no Authorization
	}
	cfg := r.cfg
	b := *cfg.Binding
	b.Store, b.Results = nil, nil // approvals and keys: state_store_unavailable, the same every time
	cfg.Binding, cfg.Quotas = &b, nil
	fresh := func(t testing.TB) *Decider {
		c := cfg
		c.DPoP = bearer.NewDPoPVerifier(bearer.DPoPConfig{})
		d, err := NewDecider(c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	reused := fresh(f)

	askApproval := r.approval(f, askDigest(f, r.decider(f, nil), postReq(tokens[0].raw, transferBody)), nil)
	seeds := []struct {
		method, headers, body string
		token                 uint8
	}{
		{"POST", "", searchBody, 0},
		{"POST", "", searchBody, 1},
		{"POST", "", searchBody, 2},
		{"POST", "", searchBody, 3},
		{"POST", "", searchBody, 4},
		{"POST", "", searchBody, 5},
		{"GET", "content-type:", "", 0},
		{"DELETE", "content-length: 0", "", 1},
		{"PUT", "", searchBody, 0},
		{"POST", "content-length: 96", searchBody, 0},
		{"POST", "x-envoy-auth-partial-body: true", searchBody, 0},
		{"POST", "content-type: text/plain", searchBody, 0},
		{"POST", "content-type: application/json; charset=\"utf-8\"", searchBody, 0},
		{"POST", "content-encoding: gzip", searchBody, 0},
		{"POST", "", "", 0},
		{"POST", "", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, 0},
		{"POST", "", toolCall("issue_refund", `{"amountMinor":900,"note":"\u00e9\ud83d\ude80 <&>"}`), 0},
		{"POST", "", toolCall("issue_refund", `{"amountMinor":9000}`), 0},
		{"POST", "", toolCall("delete_all", `{}`), 0},
		{"POST", "", toolCall("export_ledger", `{"from":1.5e3}`), 1},
		{"POST", "", rpc("resources/read", `{"uri":"file:///reports/q1"}`), 0},
		{"POST", "", rpc("resources/read", `{"uri":"file:///reports/%2e%2e/x"}`), 0},
		{"POST", "", rpc("prompts/get", `{"name":"summarize","arguments":{"b":"2","a":"1"}}`), 1},
		{"POST", "", rpc("tools/list", `{"cursor":"c"}`), 0},
		{"POST", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
		{"POST", "", `{"jsonrpc":"2.0","id":"s","result":{}}`, 0},
		{"POST", "", rpc("x/unheard", ""), 0},
		{"POST", "mcp-method: tools/call\nmcp-name: search", searchBody, 0},
		{"POST", "mcp-name: other", searchBody, 0},
		{"POST", "mcp-protocol-version: 2025-03-26", "[" + searchBody + "," + rpc("ping", "") + "]", 0},
		{"POST", "mcp-protocol-version:", "[" + searchBody + "," + toolCall("delete_x", "{}") + "]", 1},
		{"POST", "", "[" + searchBody + "]", 0},
		{"POST", "idempotency-key: k-1", searchBody, 0},
		{"POST", "x-mcp-approval: " + askApproval, transferBody, 0},
		{"POST", "x-mcp-approval: x.y.z", transferBody, 0},
		{"POST", "authorization: Bearer a\nauthorization: Bearer b", searchBody, 5},
		{"POST", "authorization: DPoP " + tokens[3].raw + "\ndpop: x", searchBody, 5},
	}
	for _, s := range seeds {
		f.Add(s.method, s.headers, []byte(s.body), s.token)
	}
	f.Fuzz(func(t *testing.T, method, headers string, body []byte, token uint8) {
		tok := tokens[int(token)%len(tokens)]
		q := fuzzRequest(method, headers, body, tok.raw)
		got := reused.Decide(context.Background(), q)
		if got == nil {
			t.Fatal("nil decision")
		}
		if !slices.Contains(Reasons(), got.Reason) {
			t.Fatalf("reason %q is not of the closed set", got.Reason)
		}
		if got.Reason == ReasonInternalError {
			t.Fatalf("internal_error: %s", got.Detail)
		}
		if !hex32.MatchString(got.ID) {
			t.Errorf("decision id %q", got.ID)
		}
		if got.Allowed() != (got.Reason.Verdict().String() == "allow") {
			t.Errorf("reason %s, verdict %s, Allowed %v", got.Reason, got.Reason.Verdict(), got.Allowed())
		}
		if tok.raw != "" {
			checkNoToken(t, got, tok.raw)
		}
		if got.Allowed() {
			checkAllowed(t, q, got, tok)
		}
		again := fresh(t).Decide(context.Background(), fuzzRequest(method, headers, body, tok.raw))
		if again.Reason != got.Reason || again.RuleID != got.RuleID || again.RequestDigest != got.RequestDigest {
			t.Errorf("reused Decider: %s %q %s; fresh: %s %q %s", got.Reason, got.RuleID, got.RequestDigest,
				again.Reason, again.RuleID, again.RequestDigest)
		}
	})
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// fuzzRequest builds the request FuzzDecide decides.
func fuzzRequest(method, headers string, body []byte, token string) *Request {
	h := Headers{"content-type": {"application/json"}, "mcp-protocol-version": {"2025-11-25"}}
	if token != "" {
		h["authorization"] = []string{"Bearer " + token}
	}
	given := map[string]bool{}
	for line := range strings.SplitSeq(headers, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name, value = strings.ToLower(name), strings.TrimLeft(value, " ")
		switch {
		case value == "":
			delete(h, name)
		case given[name]:
			h[name] = append(h[name], value)
		default:
			h[name], given[name] = []string{value}, true
		}
	}
	return &Request{Method: method, Scheme: "https", Host: "mcp.example.com", Path: "/mcp", Headers: h, Body: body}
}

// checkAllowed is the oracle of an allowed decision: what must hold of the
// request, and its digest recomputed without the code under test.
func checkAllowed(t *testing.T, q *Request, got *Decision, tok fuzzToken) {
	t.Helper()
	if !tok.valid {
		t.Fatalf("allowed with a token that does not verify (%q)", tok.raw)
	}
	if got.Principal == nil || got.Principal.Subject != tok.sub || got.Principal.Issuer != coreIssuer || got.Client != tok.client {
		t.Fatalf("allowed as %+v, client %q; the token is %s's of %q", got.Principal, got.Client, tok.sub, tok.client)
	}
	env := map[string]string{"aud": coreAudience, "client": tok.client, "iss": coreIssuer, "server": coreServer,
		"sub": tok.sub, "target": "", "v": "mcp-extauthz/request/v3", "args_digest": oracleDigest(t, []byte("{}"))}
	switch q.Method {
	case "GET", "DELETE":
		if len(q.Body) != 0 {
			t.Fatalf("%s with a body allowed", q.Method)
		}
		env["method"] = q.Method
		if want := envelopeDigest(t, env); got.RequestDigest != want {
			t.Fatalf("digest %s, recomputed %s", got.RequestDigest, want)
		}
		return
	case "POST":
	default:
		t.Fatalf("HTTP %q allowed", q.Method)
	}
	if ct, _ := q.Headers.Get("content-type"); !strings.HasPrefix(strings.ToLower(strings.TrimLeft(ct, " \t")), "application/json") {
		t.Fatalf("content-type %q allowed", ct)
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(q.Body, &batch); err == nil {
		if v, _ := q.Headers.Get("mcp-protocol-version"); v != "" && v != "2025-03-26" {
			t.Fatalf("a batch under %q allowed", v)
		}
		digests := make([]string, len(batch))
		for i, el := range batch {
			digests[i] = envelopeDigest(t, messageEnvelope(t, env, el))
		}
		if !slices.Equal(got.BatchDigests, digests) {
			t.Fatalf("element digests %q, recomputed %q", got.BatchDigests, digests)
		}
		if want := "sha256:" + sha256Hex(strings.Join(digests, ",")); got.RequestDigest != want {
			t.Fatalf("batch digest %s, recomputed %s", got.RequestDigest, want)
		}
		return
	}
	if want := envelopeDigest(t, messageEnvelope(t, env, q.Body)); got.RequestDigest != want {
		t.Fatalf("digest %s, recomputed %s (body %s)", got.RequestDigest, want, q.Body)
	}
}

// messageEnvelope fills env for one JSON-RPC message: its method
// ("response" for a result or error), its target as README's digest
// section names it, and its arguments' digest (tools/call, prompts/get).
func messageEnvelope(t *testing.T, env map[string]string, raw []byte) map[string]string {
	t.Helper()
	var m struct {
		Method *string `json:"method"`
		Params struct {
			Name      *string         `json:"name"`
			URI       *string         `json:"uri"`
			Arguments json.RawMessage `json:"arguments"`
			Ref       struct {
				Name *string `json:"name"`
				URI  *string `json:"uri"`
			} `json:"ref"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("an allowed message encoding/json cannot read: %v: %s", err, raw)
	}
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	if m.Method == nil {
		out["method"] = "response"
		return out
	}
	out["method"] = *m.Method
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch *m.Method {
	case "tools/call", "prompts/get":
		out["target"] = str(m.Params.Name)
		if len(m.Params.Arguments) > 0 && string(m.Params.Arguments) != "null" {
			out["args_digest"] = oracleDigest(t, m.Params.Arguments)
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		out["target"] = str(m.Params.URI)
	case "completion/complete":
		out["target"] = str(m.Params.Ref.Name) + str(m.Params.Ref.URI)
	}
	return out
}

// envelopeDigest is "sha256:" and the hex SHA-256 of env's RFC 8785 form,
// by internal/jcsoracle.
func envelopeDigest(t *testing.T, env map[string]string) string {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return oracleDigest(t, b)
}

func oracleDigest(t testing.TB, b []byte) string {
	t.Helper()
	d, err := jcsoracle.Digest(b)
	if err != nil {
		t.Fatalf("jcsoracle: %v: %s", err, b)
	}
	return d
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
