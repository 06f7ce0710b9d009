package extauthz

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
)

// The tests below cover issue 7's classes of request the service and the
// MCP server could read differently, each beyond the literal case of
// cases-2.jsonl.

const searchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`

// TestBodyEncoding: only application/json bodies in UTF-8, not
// content-encoded, are decided (D01-D03); what Check answers for the
// others: 415, the request's id, one message. The media-type grammar's
// table is the core's (decision.TestDecideMediaType).
func TestBodyEncoding(t *testing.T) {
	srv := staticRig(t, nil)
	tests := []struct {
		name    string
		give    map[string]string // headers set on top of postReq's
		wantOK  bool
		wantRsn decision.Reason
	}{
		{"plain", map[string]string{"content-type": "application/json"}, true, decision.ReasonAllowed},
		{"charset UTF-8 quoted", map[string]string{"content-type": `application/json;charset="UTF-8"`}, true, decision.ReasonAllowed},
		{"utf-7", map[string]string{"content-type": "application/json; charset=utf-7"}, false, decision.ReasonUnsupportedMediaType},
		{"gzip", map[string]string{"content-encoding": "gzip"}, false, decision.ReasonUnsupportedMediaType},
		{"gzip transfer coding", map[string]string{"transfer-encoding": "gzip, chunked"}, false, decision.ReasonUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq(searchCall)
			for k, v := range tt.give {
				c.Headers[k] = v
			}
			resp, err := srv.Check(t.Context(), c.CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantOK {
				okHeaders(t, resp)
				return
			}
			d, status := parseDenial(t, resp)
			if decision.Reason(d.Error.Data.Reason) != tt.wantRsn || status != 415 {
				t.Errorf("got %s %d, want %s 415", d.Error.Data.Reason, status, tt.wantRsn)
			}
			if string(d.ID) != "1" {
				t.Errorf("id = %s, want 1", d.ID)
			}
			// One message for every cause: it names the type, the charset
			// and the content coding, not only Content-Type.
			if m := d.Error.Message; m != mediaTypeMessage {
				t.Errorf("message = %q, want %q", m, mediaTypeMessage)
			}
		})
	}
}

const mediaTypeMessage = "Unsupported media type: the body must be application/json, UTF-8, not content-encoded"

// TestBodyDecidedText: what the media type admits is still one strict JSON
// text: a BOM, comments, JSON5 and a json-seq record separator are refused
// by the parser.
func TestBodyDecidedText(t *testing.T) {
	srv := staticRig(t, nil)
	tests := []struct {
		name string
		give string
		want decision.Reason
	}{
		{"BOM", "\xef\xbb\xbf" + searchCall, decision.ReasonParseError},
		{"UTF-16 BOM", "\xff\xfe{}", decision.ReasonInvalidUTF8},
		{"line comment", "// c\n" + searchCall, decision.ReasonParseError},
		{"block comment", `{"jsonrpc":"2.0",/*x*/"id":1,"method":"tools/list"}`, decision.ReasonParseError},
		{"JSON5 unquoted key", `{jsonrpc:"2.0","id":1,"method":"tools/list"}`, decision.ReasonParseError},
		{"JSON5 single quotes", `{'jsonrpc':'2.0','id':1,'method':'tools/list'}`, decision.ReasonParseError},
		{"JSON5 trailing comma", `{"jsonrpc":"2.0","id":1,"method":"tools/list",}`, decision.ReasonParseError},
		{"json-seq record separator", "\x1e" + searchCall, decision.ReasonParseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := srv.Check(t.Context(), postReq(tt.give).CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := parseDenial(t, resp); decision.Reason(d.Error.Data.Reason) != tt.want {
				t.Errorf("got %s, want %s", d.Error.Data.Reason, tt.want)
			}
		})
	}
}

// TestFoldedHeadersRemoved: a client header whose name folds onto the
// x-mcp-* family ('_' and '-', case, other punctuation), or is a
// non-canonical spelling of a header the service decides on (mcp-*,
// authorization, dpop, content-*), never reaches the upstream (D04); other
// headers, and the canonical spellings, are left alone.
func TestFoldedHeadersRemoved(t *testing.T) {
	tests := []struct {
		give       string
		wantRemove bool
	}{
		{"x_mcp_principal", true},
		{"x-mcp_principal", true},
		{"x_mcp-principal", true},
		{"x_mcp_tool", true},
		{"x_mcp_decision_id", true},
		{"x-mcp-approved", true},
		{"x_mcp_approved", true},
		{"x.mcp.principal", true},
		{"x-mcp-", true},
		{"x__mcp_principal", false}, // folds to x--mcp-: not the family
		{"xmcp-principal", false},
		{"x-mcpprincipal", false},
		{"mcp-session-id", false},
		{"mcp_session_id", true},
		{"mcp_method", true},
		{"mcp-param_amount", true},
		{"authori_zation", false}, // folds to authori-zation: not a decided header
		{"content_type", true},
		{"content_length", true},
		{"transfer_encoding", true},
		{"dpop", false},
		{"d_pop", false},
		{"x-tenant_id", false}, // not ours: the upstream's own business
		{"mcp", false},
		{"idempotency_key", true}, // replays: the upstream reads a fresh key
		{"idempotency.key", true},
		{"idempotency-key", false},
		{"request_id", true}, // the configured --idempotency-header (srv.Responder.DecidedHeaders)
		{"request-id", false},
		{"x-request-id", false},
		{"accept", false},
	}
	srv := staticRig(t, nil)
	srv.Responder.DecidedHeaders = []string{"request-id"}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			c := postReq(searchCall)
			c.Headers[tt.give] = "admin"
			resp, err := srv.Check(t.Context(), c.CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			okHeaders(t, resp)
			got := slices.Contains(resp.GetOkResponse().GetHeadersToRemove(), tt.give)
			if got != tt.wantRemove {
				t.Errorf("removed = %v, want %v (headers_to_remove %v)", got, tt.wantRemove, resp.GetOkResponse().GetHeadersToRemove())
			}
		})
	}
}

// TestBodilessRequests: GET and DELETE are bodiless; Envoy's
// x-envoy-auth-partial-body: false on an empty buffered body does not make
// one (D13), anything that announces, cuts or carries a body does.
func TestBodilessRequests(t *testing.T) {
	srv := staticRig(t, nil)
	tests := []struct {
		name   string
		method string
		give   map[string]string
		body   string
		want   decision.Reason
	}{
		{"GET", "GET", nil, "", decision.ReasonAllowed},
		{"DELETE", "DELETE", nil, "", decision.ReasonAllowed},
		{"GET partial false", "GET", map[string]string{"x-envoy-auth-partial-body": "false"}, "", decision.ReasonAllowed},
		{"DELETE partial false", "DELETE", map[string]string{"x-envoy-auth-partial-body": "false"}, "", decision.ReasonAllowed},
		{"DELETE partial FALSE", "DELETE", map[string]string{"x-envoy-auth-partial-body": "FALSE"}, "", decision.ReasonAllowed},
		{"DELETE content-length 0", "DELETE", map[string]string{"content-length": "0", "x-envoy-auth-partial-body": "false"}, "", decision.ReasonAllowed},
		{"DELETE partial true", "DELETE", map[string]string{"x-envoy-auth-partial-body": "true"}, "", decision.ReasonInvalidRequest},
		{"DELETE partial garbage", "DELETE", map[string]string{"x-envoy-auth-partial-body": "no"}, "", decision.ReasonInvalidRequest},
		{"DELETE partial false with a body", "DELETE", map[string]string{"x-envoy-auth-partial-body": "false"}, "{}", decision.ReasonInvalidRequest},
		{"GET announcing a body", "GET", map[string]string{"content-length": "2", "x-envoy-auth-partial-body": "false"}, "", decision.ReasonInvalidRequest},
		{"GET with a body", "GET", nil, "x", decision.ReasonInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capture.Request{Method: tt.method, Path: "/mcp", Body: []byte(tt.body), Headers: map[string]string{
				"authorization": "Bearer t", "mcp-session-id": "s",
			}}
			for k, v := range tt.give {
				c.Headers[k] = v
			}
			resp, err := srv.Check(t.Context(), c.CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == decision.ReasonAllowed {
				okHeaders(t, resp)
				return
			}
			if d, _ := parseDenial(t, resp); decision.Reason(d.Error.Data.Reason) != tt.want {
				t.Errorf("got %s, want %s", d.Error.Data.Reason, tt.want)
			}
		})
	}
}

// TestTargetsDecided: targets carried outside params.name and params.uri
// are decided (D08), names are bounded before folding, and resource URIs
// are decided in their normal form (D05-D07), through Check.
func TestTargetsDecided(t *testing.T) {
	srv := staticRig(t, nil)
	listen := func(uris string) string {
		return `{"jsonrpc":"2.0","id":17,"method":"subscriptions/listen","params":{"notifications":{"resourcesListChanged":true,"resourceSubscriptions":[` + uris + `]}}}`
	}
	read := func(uri string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"` + uri + `"}}`
	}
	tests := []struct {
		name    string
		give    string
		version string
		want    decision.Reason
	}{
		{"listen, no subscriptions", `{"jsonrpc":"2.0","id":17,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, "2026-07-28", decision.ReasonAllowed},
		{"listen to a report", listen(`"file:///reports/q1.csv"`), "2026-07-28", decision.ReasonAllowed},
		{"listen to a secret", listen(`"file:///secret/payroll.csv"`), "2026-07-28", decision.ReasonDefaultDeny},
		{"listen to a report and a secret", listen(`"file:///reports/q1.csv","file:///secret/payroll.csv"`), "2026-07-28", decision.ReasonDefaultDeny},
		{"listen through a dot segment", listen(`"file:///reports/../secret/payroll.csv"`), "2026-07-28", decision.ReasonUnsafeURI},
		{"listen, case-variant member", `{"jsonrpc":"2.0","id":17,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[],"ResourceSubscriptions":["file:///secret/x"]}}}`, "2026-07-28", decision.ReasonCaseVariantKey},
		{"listen, URI not a string", listen(`1`), "2026-07-28", decision.ReasonInvalidParams},
		{"read a report", read("file:///reports/q1.csv"), "2025-11-25", decision.ReasonAllowed},
		{"read a report, empty segment", read("file:///reports//q1.csv"), "2025-11-25", decision.ReasonAllowed},
		{"read a report, UNC on Windows", read("file:////reports/q1.csv"), "2025-11-25", decision.ReasonUnsafeURI},
		{"read a report's NTFS stream", read("file:///reports/q1.csv::$DATA"), "2025-11-25", decision.ReasonUnsafeURI},
		{"read a Windows device", read("file:///reports/nul.csv"), "2025-11-25", decision.ReasonUnsafeURI},
		{"read an 8.3 short name", read("file:///reports/Q1~1.CSV"), "2025-11-25", decision.ReasonUnsafeURI},
		{"read a report, a trailing dot", read("file:///reports/q1.csv."), "2025-11-25", decision.ReasonAllowed},
		{"read a report, localhost", read("file://localhost/reports/q1.csv"), "2025-11-25", decision.ReasonAllowed},
		{"read below reports through //", read("file:///reports//sub/x"), "2025-11-25", decision.ReasonDefaultDeny},
		{"fullwidth solidus", read(`file:///reports/a\uff0f..\uff0fetc`), "2025-11-25", decision.ReasonUnsafeURI},
		{"fullwidth solidus, no dots", read(`file:///reports/a\uff0fb`), "2025-11-25", decision.ReasonUnsafeURI},
		{"userinfo", read("https://user@example.com/"), "2025-11-25", decision.ReasonUnsafeURI},
		{"tool name of 128", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + strings.Repeat("s", 128) + `"}}`, "2025-11-25", decision.ReasonDefaultDeny},
		{"tool name of 129", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + strings.Repeat("s", 129) + `"}}`, "2025-11-25", decision.ReasonInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq(tt.give)
			c.Headers["mcp-protocol-version"] = tt.version
			resp, err := srv.Check(t.Context(), c.CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == decision.ReasonAllowed {
				okHeaders(t, resp)
				return
			}
			if d, _ := parseDenial(t, resp); decision.Reason(d.Error.Data.Reason) != tt.want {
				t.Errorf("got %s, want %s", d.Error.Data.Reason, tt.want)
			}
		})
	}
}

// TestListenDigestNamesEveryURI: the request digest of a
// subscriptions/listen names its URIs (target: their JSON array), so an
// approval of one listen never covers a listen of other or more URIs.
func TestListenDigestNamesEveryURI(t *testing.T) {
	srv := staticRig(t, nil)
	digest := func(uris string) string {
		t.Helper()
		c := postReq(`{"jsonrpc":"2.0","id":17,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` + uris + `]}}}`)
		c.Headers["mcp-protocol-version"] = "2026-07-28"
		resp, err := srv.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		return okHeaders(t, resp)[HeaderRequestDigest]
	}
	a := digest(`"file:///reports/q1.csv"`)
	tests := []string{
		`"file:///reports/q2.csv"`,
		`"file:///reports/q1.csv","file:///reports/q2.csv"`,
		`"file:///reports/q2.csv","file:///reports/q1.csv"`,
	}
	seen := map[string]bool{a: true}
	for _, give := range tests {
		d := digest(give)
		if d == "" || seen[d] {
			t.Errorf("listen of [%s]: digest %q repeats another listen's", give, d)
		}
		seen[d] = true
	}
	if got := digest(`"file:///reports/q1.csv"`); got != a {
		t.Errorf("the same listen gives %s, then %s", a, got)
	}
}
