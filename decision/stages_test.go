package decision

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// The stage tables: one table per stage of Decide, each row a
// decision.Request and the Reason it must get, decided by the rig's real
// verifiers, parser and policy (core_test.go).

const searchBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`

// TestDecideFraming: the HTTP request as the proxy delivered it, before
// the token is looked at (a PUT without a token is method_not_allowed).
func TestDecideFraming(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	bodiless := func(method string, body string, hdr ...string) *Request {
		q := postReq(tok, body, hdr...)
		q.Method = method
		return q
	}
	tests := []struct {
		name string
		give *Request
		want Reason
	}{
		{"POST", postReq(tok, searchBody), ReasonAllowed},
		{"PUT", bodiless("PUT", searchBody), ReasonMethodNotAllowed},
		{"PUT without a token", bodiless("PUT", "", "authorization", ""), ReasonMethodNotAllowed},
		{"lower-case post", bodiless("post", searchBody), ReasonMethodNotAllowed},
		{"partial body true", postReq(tok, searchBody, "x-envoy-auth-partial-body", "true"), ReasonBodyTruncated},
		{"partial body TRUE", postReq(tok, searchBody, "x-envoy-auth-partial-body", "TRUE"), ReasonBodyTruncated},
		{"partial body false", postReq(tok, searchBody, "x-envoy-auth-partial-body", "false"), ReasonAllowed},
		{"content-length exact", postReq(tok, searchBody, "content-length", "95"), ReasonAllowed},
		{"content-length above the body", postReq(tok, searchBody, "content-length", "96"), ReasonBodyTruncated},
		{"content-length below the body", postReq(tok, searchBody, "content-length", "94"), ReasonInvalidRequest},
		{"content-length with a sign", postReq(tok, searchBody, "content-length", "+95"), ReasonInvalidRequest},
		{"content-length not a number", postReq(tok, searchBody, "content-length", "9x"), ReasonInvalidRequest},
		{"content-length twice", postReq(tok, searchBody, "content-length", "95", "content-length", "95"), ReasonInvalidRequest},
		{"GET", bodiless("GET", ""), ReasonAllowed},
		{"GET with partial body false", bodiless("GET", "", "x-envoy-auth-partial-body", "false"), ReasonAllowed},
		{"GET with partial body true", bodiless("GET", "", "x-envoy-auth-partial-body", "true"), ReasonInvalidRequest},
		{"GET with partial body twice", bodiless("GET", "", "x-envoy-auth-partial-body", "false", "x-envoy-auth-partial-body", "false"), ReasonInvalidRequest},
		{"GET with a body", bodiless("GET", "{}"), ReasonInvalidRequest},
		{"GET announcing a body", bodiless("GET", "", "content-length", "2"), ReasonInvalidRequest},
		{"DELETE with content-length 0", bodiless("DELETE", "", "content-length", "0"), ReasonAllowed},
		{"DELETE with a body", bodiless("DELETE", "x"), ReasonInvalidRequest},
		{"GET without a token", bodiless("GET", "", "authorization", ""), ReasonTokenMissing},
	}
	if n := len(searchBody); n != 95 {
		t.Fatalf("searchBody is %d bytes; the content-length rows say 95", n)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(d, tt.give)
			if got.Reason != tt.want {
				t.Fatalf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
			if m := tt.give.Method; (m == "GET" || m == "DELETE") && got.Method != m {
				t.Errorf("Method %q, want %q", got.Method, m)
			}
		})
	}
}

// errVerifier fails every token with err.
type errVerifier struct{ err error }

func (errVerifier) Audiences() []string { return []string{coreAudience} }
func (v errVerifier) Verify(context.Context, string) (*bearer.Principal, error) {
	return nil, v.err
}

// panicVerifier panics: Decide recovers, internal_error.
type panicVerifier struct{}

func (panicVerifier) Audiences() []string { return nil }
func (panicVerifier) Verify(context.Context, string) (*bearer.Principal, error) {
	panic("verifier broke")
}

// TestDecideToken: the Authorization header, the token's checks (real
// RS256 JWTs), the route's audience and sender constraints (DPoP, RFC
// 9449). The detail never quotes the token.
func TestDecideToken(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	noDPoP := r.decider(t, func(c *Config) { c.DPoP = nil })
	tok := r.token(t, nil)
	bound := r.token(t, func(c map[string]any) { c["cnf"] = map[string]any{"jkt": r.jkt(t)} })
	other := testkit.NewKey(t, "core-stranger")
	replayed := r.proof(t, bound, nil)
	if got := decide(d, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", replayed)); got.Reason != ReasonAllowed {
		t.Fatalf("a DPoP-bound token with its proof: %s (%s)", got.Reason, got.Detail)
	}
	tests := []struct {
		name  string
		d     *Decider
		token string // what the detail must not quote
		give  *Request
		want  Reason
	}{
		{"valid", d, tok, postReq(tok, searchBody), ReasonAllowed},
		{"no Authorization", d, "", postReq("", searchBody), ReasonTokenMissing},
		{"two Authorization", d, tok, postReq(tok, searchBody, "authorization", "Bearer "+tok, "authorization", "Bearer "+tok), ReasonTokenMalformed},
		{"Basic", d, "", postReq("", searchBody, "authorization", "Basic YWxpY2U6eA=="), ReasonTokenMalformed},
		{"scheme alone", d, "", postReq("", searchBody, "authorization", "Bearer"), ReasonTokenMalformed},
		{"not a JWS", d, "abc", postReq("abc", searchBody), ReasonTokenMalformed},
		{"lower-case scheme", d, tok, postReq("", searchBody, "authorization", "bearer "+tok), ReasonAllowed},
		{"expired", d, "", postReq(r.token(t, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), searchBody), ReasonTokenExpired},
		{"another issuer", d, "", postReq(r.token(t, func(c map[string]any) { c["iss"] = "https://evil.example.com" }), searchBody), ReasonTokenWrongIssuer},
		{"another audience", d, "", postReq(r.token(t, func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }), searchBody), ReasonTokenWrongAudience},
		{"signed by another key", d, "", postReq(other.SignAs(t, r.user.Kid, r.claims()), searchBody), ReasonTokenInvalid},
		{"an approval as a token", d, "", postReq(r.user.SignTyped(t, ApprovalType, r.claims()), searchBody), ReasonTokenInvalid},
		{"no sub", d, "", postReq(r.token(t, func(c map[string]any) { delete(c, "sub") }), searchBody), ReasonTokenInvalid},
		{"route audience the token lacks", d, tok, withRoute(postReq(tok, searchBody), "", coreAudience2), ReasonTokenWrongAudience},
		{"route audience not configured", d, "", withRoute(postReq(r.token(t, func(c map[string]any) {
			c["aud"] = []string{coreAudience, "https://unconfigured.example.com/mcp"}
		}), searchBody), "", "https://unconfigured.example.com/mcp"), ReasonTokenWrongAudience},
		{"cnf x5t#S256", d, "", postReq(r.token(t, func(c map[string]any) { c["cnf"] = map[string]any{"x5t#S256": "abc"} }), searchBody), ReasonTokenBindingUnsupported},
		{"cnf.jkt without DPoP here", noDPoP, bound, postReq(bound, searchBody), ReasonTokenBindingUnsupported},
		{"DPoP scheme without DPoP here", noDPoP, tok, postReq("", searchBody, "authorization", "DPoP "+tok), ReasonTokenMalformed},
		{"cnf.jkt as Bearer", d, bound, postReq(bound, searchBody), ReasonDPoPProofMissing},
		{"DPoP scheme, token not bound", d, tok, postReq("", searchBody, "authorization", "DPoP "+tok, "dpop", r.proof(t, tok, nil)), ReasonDPoPProofMismatch},
		{"DPoP without a proof", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound), ReasonDPoPProofMissing},
		{"two proofs", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", r.proof(t, bound, nil), "dpop", r.proof(t, bound, nil)), ReasonDPoPProofInvalid},
		{"proof replayed", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", replayed), ReasonDPoPProofReplayed},
		{"proof for GET", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", r.proof(t, bound, func(c map[string]any) { c["htm"] = "GET" })), ReasonDPoPProofMismatch},
		{"proof of another token", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", r.proof(t, tok, nil)), ReasonDPoPProofMismatch},
		{"stale proof", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", r.proof(t, bound, func(c map[string]any) { c["iat"] = time.Now().Add(-time.Hour).Unix() })), ReasonDPoPProofStale},
		{"proof not a JWS", d, bound, postReq("", searchBody, "authorization", "DPoP "+bound, "dpop", "x"), ReasonDPoPProofInvalid},
		{"verifier error of no kind", r.decider(t, func(c *Config) { c.Verifier = errVerifier{errors.New("boom")} }), tok, postReq(tok, searchBody), ReasonTokenInvalid},
		{"verifier error of an unknown kind", r.decider(t, func(c *Config) { c.Verifier = errVerifier{&bearer.TokenError{Kind: bearer.Kind(250)}} }), tok, postReq(tok, searchBody), ReasonInternalError},
		{"verifier deadline", r.decider(t, func(c *Config) { c.Verifier = errVerifier{&bearer.TokenError{Kind: bearer.KindDeadline}} }), tok, postReq(tok, searchBody), ReasonDeadlineExceeded},
		{"verifier panics", r.decider(t, func(c *Config) { c.Verifier = panicVerifier{} }), tok, postReq(tok, searchBody), ReasonInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.d, tt.give)
			if got.Reason != tt.want {
				t.Fatalf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
			checkNoToken(t, got, tt.token)
			if got.Reason != ReasonAllowed && !strings.HasPrefix(got.Detail, "panic: ") {
				// Denied before the parse: the id and method are peeked
				// for the answer, the log and the metrics.
				if string(got.RPCID) != "1" || got.Method != mcpmethod.ToolsCall {
					t.Errorf("peeked id %s, method %q; want 1, tools/call", got.RPCID, got.Method)
				}
				if got.Principal != nil || got.RequestDigest != "" {
					t.Errorf("a refused token left a principal %v or digest %q", got.Principal, got.RequestDigest)
				}
			}
		})
	}
	t.Run("route audience", func(t *testing.T) {
		both := r.token(t, func(c map[string]any) { c["aud"] = []string{coreAudience, coreAudience2} })
		first := decide(d, postReq(both, searchBody))
		routed := decide(d, withRoute(postReq(both, searchBody), "", coreAudience2))
		if !first.Allowed() || !routed.Allowed() || routed.Principal.Audience != coreAudience2 || first.Principal.Audience != coreAudience ||
			routed.RequestDigest == first.RequestDigest {
			t.Errorf("the route's audience is not the one decided and digested: %s %s %q, %s %s %q", first.Reason, first.Principal.Audience,
				first.RequestDigest, routed.Reason, routed.Principal.Audience, routed.RequestDigest)
		}
	})
	t.Run("over the size limit: not peeked", func(t *testing.T) {
		small := r.decider(t, func(c *Config) { c.Limits.MaxBytes = 20 })
		got := decide(small, postReq("", searchBody))
		if got.Reason != ReasonTokenMissing || got.RPCID != nil || got.Method != "" {
			t.Errorf("%s, id %s, method %q", got.Reason, got.RPCID, got.Method)
		}
	})
}

func withRoute(q *Request, server, audience string) *Request {
	q.RouteServer, q.RouteAudience = server, audience
	return q
}

// TestDecideMediaType: exactly application/json in UTF-8 with no coding is
// parsed; everything else is unsupported_media_type (mediatype.go).
func TestDecideMediaType(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	tests := []struct {
		give []string // header name, value pairs
		want Reason
	}{
		{[]string{"content-type", "application/json"}, ReasonAllowed},
		{[]string{"content-type", "Application/JSON"}, ReasonAllowed},
		{[]string{"content-type", " application/json ;  charset=utf-8"}, ReasonAllowed},
		{[]string{"content-type", `application/json; charset="UTF-8"`}, ReasonAllowed},
		{[]string{"content-type", `application/json; charset="utf\-8"`}, ReasonAllowed},
		{[]string{"content-type", "application/json;"}, ReasonAllowed},
		{[]string{"content-type", ""}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json", "content-type", "application/json"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json; charset=utf-8; charset=utf-8"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json; charset=iso-8859-1"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json; charset=utf-16"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json; charset="}, ReasonUnsupportedMediaType},
		{[]string{"content-type", `application/json; charset="utf-8`}, ReasonUnsupportedMediaType},
		{[]string{"content-type", `application/json; charset="utf-8;x"`}, ReasonUnsupportedMediaType},
		{[]string{"content-type", `application/json; charset="utf"-8"`}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json; charset"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json; foo=bar"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/json-seq"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "application/vnd.api+json"}, ReasonUnsupportedMediaType},
		{[]string{"content-type", "text/json"}, ReasonUnsupportedMediaType},
		{[]string{"content-encoding", "identity"}, ReasonAllowed},
		{[]string{"content-encoding", " IDENTITY "}, ReasonAllowed},
		{[]string{"content-encoding", "gzip"}, ReasonUnsupportedMediaType},
		{[]string{"content-encoding", "identity", "content-encoding", "identity"}, ReasonUnsupportedMediaType},
		{[]string{"transfer-encoding", "chunked"}, ReasonAllowed},
		{[]string{"transfer-encoding", "gzip, chunked"}, ReasonUnsupportedMediaType},
		{[]string{"transfer-encoding", "chunked", "transfer-encoding", "chunked"}, ReasonUnsupportedMediaType},
	}
	for _, tt := range tests {
		got := decide(d, postReq(tok, searchBody, tt.give...))
		if got.Reason != tt.want {
			t.Errorf("%q: %s (%s), want %s", tt.give, got.Reason, got.Detail, tt.want)
		}
	}
	// Issue 7's classes D01-D03, moved here from extauthz's
	// TestBodyEncoding (which keeps a few rows for the wire's answer: 415,
	// the id, the message): each header set as the one value given.
	moved := []struct {
		name string
		give map[string]string
		want Reason
	}{
		{"CHARSET name", map[string]string{"content-type": "application/json; CHARSET=Utf-8"}, ReasonAllowed},
		{"tab before parameter", map[string]string{"content-type": "application/json\t; charset=utf-8"}, ReasonAllowed},
		{"utf-7", map[string]string{"content-type": "application/json; charset=utf-7"}, ReasonUnsupportedMediaType},
		{"UTF-7 quoted", map[string]string{"content-type": `application/json; charset="UTF-7"`}, ReasonUnsupportedMediaType},
		{"latin1", map[string]string{"content-type": "application/json; charset=latin1"}, ReasonUnsupportedMediaType},
		{"utf-16le", map[string]string{"content-type": "application/json; charset=utf-16le"}, ReasonUnsupportedMediaType},
		{"utf-32", map[string]string{"content-type": "application/json; charset=utf-32"}, ReasonUnsupportedMediaType},
		{"cesu-8", map[string]string{"content-type": "application/json; charset=cesu-8"}, ReasonUnsupportedMediaType},
		{"empty quoted charset", map[string]string{"content-type": `application/json; charset=""`}, ReasonUnsupportedMediaType},
		{"charset twice, second utf-7", map[string]string{"content-type": "application/json; charset=utf-8; charset=utf-7"}, ReasonUnsupportedMediaType},
		{"RFC 2231 charset*", map[string]string{"content-type": "application/json; charset*=utf-8''utf-7"}, ReasonUnsupportedMediaType},
		{"space around =", map[string]string{"content-type": "application/json; charset = utf-8"}, ReasonUnsupportedMediaType},
		{"other parameter", map[string]string{"content-type": "application/json; profile=x"}, ReasonUnsupportedMediaType},
		{"bare word parameter", map[string]string{"content-type": "application/json; utf-8"}, ReasonUnsupportedMediaType},
		{"json5", map[string]string{"content-type": "application/json5"}, ReasonUnsupportedMediaType},
		{"form", map[string]string{"content-type": "application/x-www-form-urlencoded"}, ReasonUnsupportedMediaType},
		{"two types joined", map[string]string{"content-type": "application/json, text/plain"}, ReasonUnsupportedMediaType},
		{"br", map[string]string{"content-encoding": "br"}, ReasonUnsupportedMediaType},
		{"deflate", map[string]string{"content-encoding": "deflate"}, ReasonUnsupportedMediaType},
		{"identity then gzip", map[string]string{"content-encoding": "identity, gzip"}, ReasonUnsupportedMediaType},
		{"empty content-encoding", map[string]string{"content-encoding": ""}, ReasonUnsupportedMediaType},
	}
	for _, tt := range moved {
		q := postReq(tok, searchBody)
		for k, v := range tt.give {
			q.Headers[k] = []string{v}
		}
		if got := decide(d, q); got.Reason != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, got.Reason, got.Detail, tt.want)
		}
	}
}

// TestDecideParse: the strict parse's refusals, each with its reason and a
// detail that names the place, never a value.
func TestDecideParse(t *testing.T) {
	r := newCoreRig(t)
	tok := r.token(t, nil)
	d := r.decider(t, nil)
	tight := r.decider(t, func(c *Config) {
		c.Limits = mcpparse.Limits{MaxBytes: 200, MaxDepth: 4, MaxKeys: 4, MaxElements: 3, MaxStringLen: 16, MaxBatch: 2}
	})
	tests := []struct {
		name    string
		d       *Decider
		give    string
		version string // MCP-Protocol-Version; "" keeps 2025-11-25
		want    Reason
	}{
		{"empty body", d, "", "", ReasonBodyMissing},
		{"not JSON", d, "{", "", ReasonParseError},
		{"BOM", d, "\ufeff" + searchBody, "", ReasonParseError},
		{"invalid UTF-8", d, toolCall("search", "{\"q\":\"\xff\"}"), "", ReasonInvalidUTF8},
		{"lone surrogate", d, toolCall("search", `{"q":"\ud800"}`), "", ReasonInvalidUTF8},
		{"duplicate key", d, toolCall("search", `{"q":"a","q":"b"}`), "", ReasonDuplicateKey},
		{"case-variant key", d, toolCall("search", `{"q":"a","Q":"b"}`), "", ReasonCaseVariantKey},
		{"trailing data", d, searchBody + "{}", "", ReasonTrailingData},
		{"too large", tight, toolCall("search", `{"q":"`+strings.Repeat("a", 200)+`"}`), "", ReasonBodyTooLarge},
		{"too deep", tight, toolCall("search", `{"q":{"r":{"s":1}}}`), "", ReasonLimitExceeded},
		{"too many keys", tight, toolCall("search", `{"a":1,"b":2,"c":3,"d":4,"e":5}`), "", ReasonLimitExceeded},
		{"too many elements", tight, toolCall("search", `{"q":[1,2,3,4]}`), "", ReasonLimitExceeded},
		{"string too long", tight, toolCall("search", `{"q":"`+strings.Repeat("a", 17)+`"}`), "", ReasonLimitExceeded},
		{"not JSON-RPC 2.0", d, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, "", ReasonInvalidRequest},
		{"empty batch", d, `[]`, "2025-03-26", ReasonInvalidRequest},
		{"tools/call without a name", d, rpc("tools/call", `{"arguments":{}}`), "", ReasonInvalidParams},
		{"lossy number", d, toolCall("search", `{"n":9007199254740993}`), "", ReasonNonCanonicalNumber},
		{"batch on 2025-11-25", d, "[" + searchBody + "]", "", ReasonBatchNotSupported},
		{"__proto__", d, toolCall("search", `{"__proto__":{}}`), "", ReasonReservedKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := postReq(tok, tt.give)
			if tt.version != "" {
				q.Headers["mcp-protocol-version"] = []string{tt.version}
			}
			got := decide(tt.d, q)
			if got.Reason != tt.want {
				t.Fatalf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
			if tt.want != ReasonBodyMissing && !strings.HasPrefix(got.Detail, "mcpparse: ") {
				t.Errorf("detail %q does not say what the parse found", got.Detail)
			}
			if strings.Contains(got.Detail, "aaaa") || strings.Contains(got.Detail, `"b"`) {
				t.Errorf("detail %q quotes a value", got.Detail)
			}
		})
	}
}

// TestParseReason: every parse error kind has its reason of the closed
// set; a kind parseReason does not know is parse_error.
func TestParseReason(t *testing.T) {
	want := map[mcpparse.ErrorKind]Reason{
		mcpparse.ErrSyntax: ReasonParseError, mcpparse.ErrInvalidUTF8: ReasonInvalidUTF8, mcpparse.ErrDuplicateKey: ReasonDuplicateKey,
		mcpparse.ErrCaseVariantKey: ReasonCaseVariantKey, mcpparse.ErrTrailingData: ReasonTrailingData, mcpparse.ErrTooLarge: ReasonBodyTooLarge,
		mcpparse.ErrTooDeep: ReasonLimitExceeded, mcpparse.ErrTooManyKeys: ReasonLimitExceeded, mcpparse.ErrTooManyElements: ReasonLimitExceeded,
		mcpparse.ErrStringTooLong: ReasonLimitExceeded, mcpparse.ErrInvalidRequest: ReasonInvalidRequest, mcpparse.ErrBatchEmpty: ReasonInvalidRequest,
		mcpparse.ErrInvalidParams: ReasonInvalidParams, mcpparse.ErrNonCanonicalNumber: ReasonNonCanonicalNumber,
		mcpparse.ErrBatchNotSupported: ReasonBatchNotSupported, mcpparse.ErrReservedKey: ReasonReservedKey,
		mcpparse.ErrorKind(250): ReasonParseError,
	}
	for k, w := range want {
		if got := parseReason(k); got != w {
			t.Errorf("parseReason(%v) = %s, want %s", k, got, w)
		}
	}
}

// TestDecideMCPHeaders: MCP 2026-07-28's Mcp-Method and Mcp-Name must
// agree with the body (SEP-2243); absent, they are not checked.
func TestDecideMCPHeaders(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	readBody := rpc("resources/read", `{"uri":"file:///reports/q1"}`)
	promptBody := rpc("prompts/get", `{"name":"summarize"}`)
	response := `{"jsonrpc":"2.0","id":5,"result":{}}`
	tests := []struct {
		name string
		body string
		give []string
		want Reason
	}{
		{"none", searchBody, nil, ReasonAllowed},
		{"method and name agree", searchBody, []string{"mcp-method", "tools/call", "mcp-name", "search"}, ReasonAllowed},
		{"base64 name agrees", searchBody, []string{"mcp-name", b64("search")}, ReasonAllowed},
		{"base64 method agrees", searchBody, []string{"mcp-method", b64("tools/call")}, ReasonAllowed},
		{"method disagrees", searchBody, []string{"mcp-method", "tools/list"}, ReasonHeaderMismatch},
		{"method twice", searchBody, []string{"mcp-method", "tools/call", "mcp-method", "tools/call"}, ReasonHeaderMismatch},
		{"method undecodable", searchBody, []string{"mcp-method", "=?base64?!!?="}, ReasonHeaderMismatch},
		{"name disagrees", searchBody, []string{"mcp-name", "delete_all"}, ReasonHeaderMismatch},
		{"name twice", searchBody, []string{"mcp-name", "search", "mcp-name", "search"}, ReasonHeaderMismatch},
		{"name on tools/list", rpc("tools/list", ""), []string{"mcp-name", "x"}, ReasonHeaderMismatch},
		{"uri agrees", readBody, []string{"mcp-name", "file:///reports/q1"}, ReasonAllowed},
		{"uri disagrees", readBody, []string{"mcp-name", "file:///reports/q2"}, ReasonHeaderMismatch},
		{"prompt agrees", promptBody, []string{"mcp-method", "prompts/get", "mcp-name", "summarize"}, ReasonAllowed},
		{"prompt disagrees", promptBody, []string{"mcp-name", "other"}, ReasonHeaderMismatch},
		{"method on a response", response, []string{"mcp-method", "response"}, ReasonHeaderMismatch},
		{"a response without headers", response, nil, ReasonAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(d, postReq(tok, tt.body, tt.give...))
			if got.Reason != tt.want {
				t.Fatalf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
			if tt.want == ReasonHeaderMismatch && got.RPCID == nil {
				t.Error("a header mismatch answers id null; the body's id was parsed")
			}
		})
	}
}

// TestDecidePolicy: the policy stage's outcomes, and what fills them:
// the server, the live policy, the deadline, scopes.
func TestDecidePolicy(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	exporter := r.token(t, func(c map[string]any) { c["scope"] = "ledger:export" })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		d        *Decider
		ctx      context.Context
		give     *Request
		want     Reason
		wantRule string
	}{
		{"allow", d, nil, postReq(tok, searchBody), ReasonAllowed, "search"},
		{"deny", d, nil, postReq(tok, toolCall("delete_all", "{}")), ReasonPolicyDenied, "no-deletes"},
		{"default deny", d, nil, postReq(tok, toolCall("unknown_tool", "{}")), ReasonDefaultDeny, ""},
		{"ask", d, nil, postReq(tok, toolCall("transfer_funds", `{"amount":5}`)), ReasonAuthorizationRequired, "transfers"},
		{"ask by argument", d, nil, postReq(tok, toolCall("issue_refund", `{"amountMinor":9000}`)), ReasonAuthorizationRequired, "big-refunds"},
		{"allow by argument", d, nil, postReq(tok, toolCall("issue_refund", `{"amountMinor":900}`)), ReasonAllowed, "small-refunds"},
		{"method allowed", d, nil, postReq(tok, rpc("tools/list", "")), ReasonAllowed, "list-tools"},
		{"notification", d, nil, postReq(tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`), ReasonAllowed, "initialized"},
		{"client response", d, nil, postReq(tok, `{"jsonrpc":"2.0","id":"s-1","result":{}}`), ReasonAllowed, "client-responses"},
		{"method MCP does not define", d, nil, postReq(tok, rpc("x/unheard", "")), ReasonUnknownMethod, ""},
		{"MCP method no rule names", d, nil, postReq(tok, rpc("resources/list", "")), ReasonDefaultDeny, ""},
		{"resource", d, nil, postReq(tok, rpc("resources/read", `{"uri":"file:///reports/q1"}`)), ReasonAllowed, "read-reports"},
		{"unsafe resource", d, nil, postReq(tok, rpc("resources/read", `{"uri":"file:///reports/%2e%2e/etc"}`)), ReasonUnsafeURI, ""},
		{"prompt", d, nil, postReq(tok, rpc("prompts/get", `{"name":"summarize"}`)), ReasonAllowed, "summarize"},
		{"scope missing", d, nil, postReq(tok, toolCall("export_ledger", "{}")), ReasonInsufficientScope, "export"},
		{"scope held", d, nil, postReq(exporter, toolCall("export_ledger", "{}")), ReasonAllowed, "export"},
		{"deadline passed", d, cancelled, postReq(tok, searchBody), ReasonDeadlineExceeded, ""},
		{"no policy", r.decider(t, func(c *Config) { c.Policies = new(PolicyStore) }), nil, postReq(tok, searchBody), ReasonPolicyUnavailable, ""},
		{"no server", r.decider(t, func(c *Config) { c.ServerID = "" }), nil, postReq(tok, searchBody), ReasonUnknownServer, ""},
		{"the route's server", r.decider(t, func(c *Config) { c.ServerID = "" }), nil, withRoute(postReq(tok, searchBody), coreServer, ""), ReasonAllowed, "search"},
		{"the route's server over ServerID", d, nil, withRoute(postReq(tok, toolCall("issue_refund", `{"amountMinor":1}`)), "github", ""), ReasonDefaultDeny, ""},
		{"server by destination principal", r.decider(t, func(c *Config) {
			c.ServerID, c.ServersByPrincipal = "", map[string]string{"spiffe://cluster.local/ns/mcp/sa/payments": coreServer}
		}), nil, &Request{Method: "POST", Headers: postReq(tok, "").Headers, Body: []byte(searchBody), DestinationPrincipal: "spiffe://cluster.local/ns/mcp/sa/payments"}, ReasonAllowed, "search"},
		{"unknown destination principal", r.decider(t, func(c *Config) {
			c.ServerID, c.ServersByPrincipal = "", map[string]string{"spiffe://cluster.local/ns/mcp/sa/payments": coreServer}
		}), nil, &Request{Method: "POST", Headers: postReq(tok, "").Headers, Body: []byte(searchBody), DestinationPrincipal: "spiffe://cluster.local/ns/mcp/sa/other"}, ReasonUnknownServer, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			got := tt.d.Decide(ctx, tt.give)
			if got.Reason != tt.want || got.RuleID != tt.wantRule {
				t.Fatalf("%s by %q (%s), want %s by %q", got.Reason, got.RuleID, got.Detail, tt.want, tt.wantRule)
			}
			if got.Reason.Verdict() != tt.want.Verdict() || len(got.ID) != 32 || got.BatchIndex != -1 {
				t.Errorf("verdict %s, id %q, batch index %d", got.Reason.Verdict(), got.ID, got.BatchIndex)
			}
			if got.Reason == ReasonAllowed && (got.Server == "" || got.PolicyVersion == "" || got.Principal.Subject != testkit.Subject) {
				t.Errorf("allowed without server %q, policy version %q or principal", got.Server, got.PolicyVersion)
			}
		})
	}
	t.Run("explain", func(t *testing.T) {
		got := decide(r.decider(t, func(c *Config) { c.Explain = true }), postReq(tok, searchBody))
		if !got.Allowed() || got.Trace == nil {
			t.Errorf("%s, trace %v", got.Reason, got.Trace)
		}
		if plain := decide(d, postReq(tok, searchBody)); plain.Trace != nil {
			t.Error("a trace without Explain")
		}
	})
}

// TestNewDecider: what is missing or malformed is an error, never a
// Decider that would decide without it; Config is a copy.
func TestNewDecider(t *testing.T) {
	r := newCoreRig(t)
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" for no error
	}{
		{"valid", func(*Config) {}, ""},
		{"no verifier", func(c *Config) { c.Verifier = nil }, "no token verifier"},
		{"no policies", func(c *Config) { c.Policies = nil }, "no policy store"},
		{"negative limit", func(c *Config) { c.Limits.MaxDepth = -1 }, "negative limit"},
		{"negative batch", func(c *Config) { c.Limits.MaxBatch = -1 }, "negative limit"},
		{"empty server by principal", func(c *Config) { c.ServersByPrincipal = map[string]string{"spiffe://x": ""} }, "both must be set"},
		{"empty principal", func(c *Config) { c.ServersByPrincipal = map[string]string{"": "payments"} }, "both must be set"},
	}
	for _, tt := range tests {
		c := r.cfg
		tt.edit(&c)
		d, err := NewDecider(c)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || d != nil):
			t.Errorf("%s: %v, %v; want an error saying %q", tt.name, d, err, tt.want)
		}
	}
	d := r.decider(t, nil)
	c := d.Config()
	c.ServerID = "changed"
	if d.Config().ServerID != coreServer {
		t.Error("changing Config's copy changed the Decider")
	}
}

// TestInternal: an adapter's fault is a fresh internal_error decision.
func TestInternal(t *testing.T) {
	a, b := Internal("panic: x"), Internal("panic: x")
	if a.Reason != ReasonInternalError || a.Allowed() || a.Detail != "panic: x" || a.BatchIndex != -1 || len(a.ID) != 32 || a.ID == b.ID {
		t.Errorf("Internal: %+v, %+v", a, b)
	}
}
