package extauthz

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// caseLine is one line of ../shared/cases/cases.jsonl.
type caseLine struct {
	ID      string          `json:"id"`
	Request json.RawMessage `json:"request"`
	Expect  string          `json:"expect"`
}

// caseWant is the outcome a case must get under testdata/cases-policy.yaml,
// which translates the cases' policy words: deny delete_* and delete-*,
// ask transfer_*, allow read_*, tools/list and file:///srv/docs/*, default ask.
type caseWant struct {
	reason decision.Reason
	status int
	code   int // JSON-RPC error.code; 0 for allowed
	id     string
}

var caseWants = map[string]caseWant{
	"C01": {decision.ReasonCaseVariantKey, 400, CodeInvalidRequest, "null"},
	"C02": {decision.ReasonDuplicateKey, 400, CodeInvalidRequest, "null"},
	"C03": {decision.ReasonCaseVariantKey, 400, CodeInvalidRequest, "null"},
	"C04": {decision.ReasonTrailingData, 400, CodeParseError, "null"},
	"C05": {decision.ReasonBatchNotSupported, 400, CodeInvalidRequest, "null"},
	"C06": {decision.ReasonUnsupportedMediaType, 415, CodeInvalidRequest, "10"},
	"C07": {decision.ReasonPolicyDenied, 403, CodeForbidden, "11"},
	"C08": {decision.ReasonUnknownMethod, 403, CodeMethodNotFound, "12"},
	"C09": {decision.ReasonInvalidRequest, 400, CodeInvalidRequest, "null"},
	"C10": {decision.ReasonPolicyDenied, 403, CodeForbidden, "13"},
	"C11": {decision.ReasonPolicyDenied, 403, CodeForbidden, "15"},
	"C12": {decision.ReasonUnsafeURI, 403, CodeForbidden, "17"},
	"C13": {decision.ReasonBodyTruncated, 413, CodeRequestRejected, "null"},
	"C14": {decision.ReasonPolicyDenied, 403, CodeForbidden, "20"},
	"C15": {decision.ReasonParseError, 400, CodeParseError, "null"},
	"C16": {decision.ReasonTokenWrongAudience, 401, CodeUnauthenticated, "23"},
	"C17": {decision.ReasonAllowed, 200, 0, ""},
	"C18": {decision.ReasonNonCanonicalNumber, 400, CodeInvalidParams, "null"},
	"C19": {decision.ReasonInvalidUTF8, 400, CodeParseError, "null"},
}

// caseRig is a server on loopback with the cases policy and an identity
// provider whose clock the test moves.
type caseRig struct {
	idp    *testkit.IdP
	k1, k2 *testkit.Key
	clock  *testkit.Clock
	tokens map[string]string
}

func newCaseRig(t *testing.T) (*caseRig, func(*capture.Request, bool) (decision.Reason, int, int, string)) {
	rig := &caseRig{k1: testkit.NewKey(t, "k1"), k2: testkit.NewKey(t, "k2"), clock: testkit.NewClock()}
	rig.idp = testkit.NewIdP(t, rig.k1)
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: rig.idp.Issuer(), Audiences: []string{testAudience}, Now: rig.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The cases state HTTP errors (403 for a policy denial): they run under
	// --denial-status http-error; TestDenialStatusTable covers auto.
	srv := newTestServer(compileStore(t, filepath.Join("testdata", "cases-policy.yaml")), v, nil)
	srv.Responder.DenialStatus = DenialStatusHTTPError
	client := startGRPC(t, srv)
	claims := rig.idp.Claims()
	wrongAud := rig.idp.Claims()
	wrongAud["aud"] = []string{"some-other-client"}
	rig.tokens = map[string]string{
		"{{TOKEN_OK}}":         rig.k1.Sign(t, claims),
		"{{TOKEN_WRONG_AUD}}":  rig.k1.Sign(t, wrongAud),
		"{{TOKEN_ROTATED_K2}}": rig.k2.Sign(t, claims),
	}
	do := func(c *capture.Request, pack bool) (decision.Reason, int, int, string) {
		t.Helper()
		for k, v := range c.Headers {
			for ph, tok := range rig.tokens {
				v = strings.ReplaceAll(v, ph, tok)
			}
			c.Headers[k] = v
		}
		resp := check(t, client, c.CheckRequest(pack))
		if resp.GetOkResponse() != nil {
			okHeaders(t, resp)
			return decision.ReasonAllowed, 200, 0, ""
		}
		d, status := parseDenial(t, resp)
		return decision.Reason(d.Error.Data.Reason), status, d.Error.Code, string(d.ID)
	}
	return rig, do
}

func loadCases(t *testing.T) []caseLine {
	t.Helper()
	var out []caseLine
	for _, l := range testkit.JSONLines(t, filepath.Join(sharedDir, "cases", "cases.jsonl")) {
		var c caseLine
		l.Decode(t, &c)
		out = append(out, c)
	}
	return out
}

// TestCases runs every case of ../shared/cases/cases.jsonl as Envoy would
// send it (raw_body, and the string body where the bytes are valid UTF-8).
// A case without an expectation here fails: each new case must be decided.
func TestCases(t *testing.T) {
	rig, do := newCaseRig(t)
	// Prime the key cache with k1, then rotate to k2 a minute later (C17).
	if r, _, _, _ := do(caseReq(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), true); r != decision.ReasonAllowed {
		t.Fatalf("priming request: %s", r)
	}
	rig.idp.SetKeys(rig.k2)
	rig.clock.Advance(time.Minute)

	// C17 goes first: its k2 token must trigger the refetch. After it, the
	// valid token is the one signed by the key the provider now serves.
	cases := loadCases(t)
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].ID == "C17" && cases[j].ID != "C17" })
	for i, c := range cases {
		if i == 1 {
			rig.tokens["{{TOKEN_OK}}"] = rig.tokens["{{TOKEN_ROTATED_K2}}"]
			wrongAud := rig.idp.Claims()
			wrongAud["aud"] = []string{"some-other-client"}
			rig.tokens["{{TOKEN_WRONG_AUD}}"] = rig.k2.Sign(t, wrongAud)
		}
		t.Run(c.ID, func(t *testing.T) {
			want, ok := caseWants[c.ID]
			if !ok {
				t.Fatalf("case %s has no expectation in caseWants: decide it (expect: %s)", c.ID, c.Expect)
			}
			capt, err := capture.Parse(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			reason, status, code, id := do(capt, true)
			if reason != want.reason || status != want.status || code != want.code || id != want.id {
				t.Errorf("got %s %d code %d id %s; want %s %d code %d id %s (expect: %s)",
					reason, status, code, id, want.reason, want.status, want.code, want.id, c.Expect)
			}
		})
	}
}

func caseReq(body string) *capture.Request {
	return &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body), Headers: map[string]string{
		"content-type": "application/json", "authorization": "Bearer {{TOKEN_OK}}", "mcp-protocol-version": "2025-11-25",
	}}
}

// TestCaseKinds covers each case's whole kind of fault, beyond its literal
// input.
func TestCaseKinds(t *testing.T) {
	_, do := newCaseRig(t)
	withHeader := func(c *capture.Request, k, v string) *capture.Request {
		if v == "" {
			delete(c.Headers, k)
		} else {
			c.Headers[k] = v
		}
		return c
	}
	tests := []struct {
		name       string
		give       *capture.Request
		wantReason decision.Reason
		wantStatus int
	}{
		// C01-C03: case variants and duplicates, at any depth and either order.
		{"C02 reversed duplicate", caseReq(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_repo","name":"read_file","arguments":{}}}`), decision.ReasonDuplicateKey, 400},
		{"duplicate via escape", caseReq(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","\u006eame":"delete_repo"}}`), decision.ReasonDuplicateKey, 400},
		{"duplicate deep in arguments", caseReq(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"a":{"p":1,"p":2}}}}`), decision.ReasonDuplicateKey, 400},
		{"Method case variant", caseReq(`{"jsonrpc":"2.0","id":4,"Method":"tools/call","method":"tools/list"}`), decision.ReasonCaseVariantKey, 400},
		{"PARAMS case variant", caseReq(`{"jsonrpc":"2.0","id":4,"method":"tools/list","PARAMS":{}}`), decision.ReasonCaseVariantKey, 400},
		{"case variants in arguments", caseReq(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a","Path":"/etc"}}}`), decision.ReasonCaseVariantKey, 400},
		{"C03 name is a number", caseReq(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5,"arguments":{}}}`), decision.ReasonInvalidParams, 400},
		{"C03 name is an object", caseReq(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":{"x":1}}}`), decision.ReasonInvalidParams, 400},
		{"C03 name missing", caseReq(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}`), decision.ReasonInvalidParams, 400},
		{"C03 name empty", caseReq(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":""}}`), decision.ReasonInvalidParams, 400},
		// C04: trailing data; whitespace alone is fine.
		{"C04 trailing whitespace", caseReq("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\"}\r\n\t "), decision.ReasonAllowed, 200},
		{"C04 trailing garbage", caseReq(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}x`), decision.ReasonTrailingData, 400},
		// C05: batches.
		{"C05 empty batch", caseReq(`[]`), decision.ReasonBatchNotSupported, 400},
		{"C05 batch of notifications", caseReq(`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`), decision.ReasonBatchNotSupported, 400},
		{"empty batch on 2025-03-26", withHeader(caseReq(`[]`), "mcp-protocol-version", ""), decision.ReasonInvalidRequest, 400},
		{"batch on 2025-03-26 with a denied element", withHeader(caseReq(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repo"}}]`), "mcp-protocol-version", "2025-03-26"), decision.ReasonPolicyDenied, 403},
		{"batch on 2025-03-26 all allowed", withHeader(caseReq(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/x"}}}]`), "mcp-protocol-version", "2025-03-26"), decision.ReasonAllowed, 200},
		// C06/C07: media types.
		{"C06 missing content-type", withHeader(caseReq(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`), "content-type", ""), decision.ReasonUnsupportedMediaType, 415},
		{"C07 space before parameter", withHeader(caseReq(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"delete_repo"}}`), "content-type", "application/json ;charset=utf-8"), decision.ReasonPolicyDenied, 403},
		{"C07 vendor +json", withHeader(caseReq(`{"jsonrpc":"2.0","id":11,"method":"tools/list"}`), "content-type", "application/vnd.foo+json"), decision.ReasonUnsupportedMediaType, 415},
		// C08: unknown method spellings.
		{"C08 trailing space", caseReq(`{"jsonrpc":"2.0","id":12,"method":"tools/call ","params":{"name":"delete_repo"}}`), decision.ReasonUnknownMethod, 403},
		{"C08 double slash", caseReq(`{"jsonrpc":"2.0","id":12,"method":"tools//call","params":{"name":"delete_repo"}}`), decision.ReasonUnknownMethod, 403},
		{"C08 NUL", caseReq(`{"jsonrpc":"2.0","id":12,"method":"tools/call\u0000","params":{"name":"delete_repo"}}`), decision.ReasonUnknownMethod, 403},
		// C09: ids.
		{"C09 null id on a request", caseReq(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"delete_repo"}}`), decision.ReasonInvalidRequest, 400},
		{"C09 notification of a read", caseReq(`{"jsonrpc":"2.0","method":"tools/list"}`), decision.ReasonInvalidRequest, 400},
		{"fractional id", caseReq(`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`), decision.ReasonInvalidRequest, 400},
		// C10/C11: loose deny, exact allow.
		{"C10 READ_FILE is not allowed by read_*", caseReq(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"READ_FILE","arguments":{}}}`), decision.ReasonAuthorizationRequired, 403},
		{"C11 delete__repo", caseReq(`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"delete__repo"}}`), decision.ReasonPolicyDenied, 403},
		{"C11 fullwidth", caseReq(`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"ＤＥＬＥＴＥ.repo"}}`), decision.ReasonPolicyDenied, 403},
		// C12: resources.
		{"C12 control allow", caseReq(`{"jsonrpc":"2.0","id":18,"method":"resources/read","params":{"uri":"file:///srv/docs/a.md"}}`), decision.ReasonAllowed, 200},
		{"C12 one segment only", caseReq(`{"jsonrpc":"2.0","id":18,"method":"resources/read","params":{"uri":"file:///srv/docs/sub/a.md"}}`), decision.ReasonAuthorizationRequired, 403},
		{"C12 encoded slash", caseReq(`{"jsonrpc":"2.0","id":18,"method":"resources/read","params":{"uri":"file:///srv/docs/..%2F..%2Fetc%2Fpasswd"}}`), decision.ReasonUnsafeURI, 403},
		{"C12 encoded dots", caseReq(`{"jsonrpc":"2.0","id":18,"method":"resources/read","params":{"uri":"file:///srv/docs/%2e%2e/x"}}`), decision.ReasonUnsafeURI, 403},
		// C13/C14: body delivery.
		{"C13 content-length longer than body", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "4096"), decision.ReasonBodyTruncated, 413},
		{"C14 no body delivered", withHeader(caseReq(``), "content-length", "80"), decision.ReasonBodyTruncated, 413},
		{"C14 no body, no length", caseReq(``), decision.ReasonBodyMissing, 400},
		{"content-length shorter than body", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "5"), decision.ReasonInvalidRequest, 400},
		{"content-length with a sign", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "+47"), decision.ReasonInvalidRequest, 400},
		{"content-length negative", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "-1"), decision.ReasonInvalidRequest, 400},
		{"content-length junk", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "47abc"), decision.ReasonInvalidRequest, 400},
		{"content-length list", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "47, 47"), decision.ReasonInvalidRequest, 400},
		{"content-length above 2^63-1", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "9223372036854775808"), decision.ReasonInvalidRequest, 400},
		{"content-length exact", withHeader(caseReq(`{"jsonrpc":"2.0","id":19,"method":"tools/list"}`), "content-length", "47"), decision.ReasonAllowed, 200},
		{"GET announcing a body", func() *capture.Request {
			c := withHeader(caseReq(``), "content-length", "50")
			c.Method = "GET"
			return c
		}(), decision.ReasonInvalidRequest, 400},
		{"GET with a partial body", func() *capture.Request {
			c := withHeader(caseReq(``), "x-envoy-auth-partial-body", "true")
			c.Method = "GET"
			return c
		}(), decision.ReasonInvalidRequest, 400},
		{"batch with Mcp-Name", withHeader(withHeader(caseReq(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file"}}]`), "mcp-protocol-version", "2025-03-26"), "mcp-name", "delete_repo"), decision.ReasonHeaderMismatch, 400},
		// HTTP methods.
		{"PUT", func() *capture.Request { c := caseReq(``); c.Method = "PUT"; return c }(), decision.ReasonMethodNotAllowed, 405},
		{"GET with a body", func() *capture.Request { c := caseReq(`{}`); c.Method = "GET"; return c }(), decision.ReasonInvalidRequest, 400},
		// C19: other invalid bytes, lone surrogates.
		{"C19 0xFE", caseReq("{\"jsonrpc\":\"2.0\",\"id\":29,\"method\":\"tools/call\",\"params\":{\"name\":\"transfer_funds\",\"arguments\":{\"memo\":\"a\xfe\"}}}"), decision.ReasonInvalidUTF8, 400},
		{"C19 lone surrogate", caseReq(`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"memo":"a\ud800"}}}`), decision.ReasonInvalidUTF8, 400},
		// MCP 2026-07-28 headers against the body.
		{"Mcp-Method disagrees", withHeader(caseReq(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"delete_repo"}}`), "mcp-method", "tools/list"), decision.ReasonHeaderMismatch, 400},
		{"Mcp-Name disagrees", withHeader(withHeader(caseReq(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"delete_repo"}}`), "mcp-method", "tools/call"), "mcp-name", "read_file"), decision.ReasonHeaderMismatch, 400},
		{"Mcp-Name base64 agrees", withHeader(withHeader(caseReq(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"read_file","arguments":{}}}`), "mcp-method", "tools/call"), "mcp-name", "=?base64?cmVhZF9maWxl?="), decision.ReasonAllowed, 200},
		{"Mcp-Name base64 disagrees", withHeader(withHeader(caseReq(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"delete_repo"}}`), "mcp-method", "tools/call"), "mcp-name", "=?base64?cmVhZF9maWxl?="), decision.ReasonHeaderMismatch, 400},
		{"Mcp-Method is case-sensitive", withHeader(caseReq(`{"jsonrpc":"2.0","id":30,"method":"tools/list"}`), "mcp-method", "Tools/List"), decision.ReasonHeaderMismatch, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pack := range []bool{true, false} {
				if !pack && !utf8.Valid(tt.give.Body) {
					continue // Envoy's string body cannot carry these bytes
				}
				reason, status, _, _ := do(cloneCapture(tt.give), pack)
				if reason != tt.wantReason || status != tt.wantStatus {
					t.Errorf("raw_body=%v: got %s %d, want %s %d", pack, reason, status, tt.wantReason, tt.wantStatus)
				}
			}
		})
	}
}

func cloneCapture(c *capture.Request) *capture.Request {
	d := *c
	d.Headers = make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		d.Headers[k] = v
	}
	return &d
}

// staticVerifier accepts any token as one principal, for tests of the
// decision path alone.
type staticVerifier struct{ p bearer.Principal }

func (v staticVerifier) Audiences() []string { return []string{v.p.Audience} }

func (v staticVerifier) Verify(context.Context, string) (*bearer.Principal, error) {
	p := v.p
	return &p, nil
}

// TestC18ApprovalDigest: an approval recorded for {"amount":9007199254740992}
// (args_sha256 a2102c7f…) must not cover 9007199254740993, which is refused
// before hashing, while 2^53 itself keeps exactly the recorded digest.
func TestC18ApprovalDigest(t *testing.T) {
	d, err := decision.NewDecider(decision.Config{ServerID: testServerID, Policies: compileStore(t, filepath.Join("testdata", "cases-policy.yaml")),
		Verifier: staticVerifier{bearer.Principal{Issuer: "https://idp.example.com", Subject: testSubject, Audience: testAudience}}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(amount string) *decision.Request {
		c := caseReq(`{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"amount":` + amount + `}}}`)
		c.Headers["authorization"] = "Bearer static-token" // any well-formed token: the verifier is static
		return RequestFromCheck(c.CheckRequest(true))
	}
	got := d.Decide(t.Context(), req("9007199254740992"))
	if got.Reason != decision.ReasonAuthorizationRequired || got.ArgsDigest != "sha256:a2102c7fa09a83bf190218094fc70210b6ae22b18f2669457afe43fd8d00f107" {
		t.Fatalf("2^53: %s %s", got.Reason, got.ArgsDigest)
	}
	if got := d.Decide(t.Context(), req("9007199254740993")); got.Reason != decision.ReasonNonCanonicalNumber || got.ArgsDigest != "" {
		t.Fatalf("2^53+1: %s %s", got.Reason, got.ArgsDigest)
	}
}
