package extauthz

import (
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"google.golang.org/grpc/codes"
)

// httpErrorStatus is every reason's HTTP error status, written out here
// independently of the outcomes table (docs/reasons.md, "Status by reason
// and transport"). A reason missing here fails TestDenialStatusTable.
var httpErrorStatus = map[decision.Reason]int{
	decision.ReasonPolicyDenied: 403, decision.ReasonDefaultDeny: 403, decision.ReasonAuthorizationRequired: 403,
	decision.ReasonUnknownMethod: 403, decision.ReasonUnsafeURI: 403, decision.ReasonUnknownServer: 403,
	decision.ReasonTokenMissing: 401, decision.ReasonTokenMalformed: 401, decision.ReasonTokenInvalid: 401, decision.ReasonTokenExpired: 401,
	decision.ReasonTokenWrongIssuer: 401, decision.ReasonTokenWrongAudience: 401,
	decision.ReasonTokenBindingUnsupported: 401, decision.ReasonDPoPProofMissing: 401, decision.ReasonDPoPProofInvalid: 401,
	decision.ReasonDPoPProofMismatch: 401, decision.ReasonDPoPProofStale: 401, decision.ReasonDPoPProofReplayed: 401,
	decision.ReasonIdPUnavailable: 503, decision.ReasonDeadlineExceeded: 503, decision.ReasonPolicyUnavailable: 503,
	decision.ReasonBodyTruncated: 413, decision.ReasonBodyTooLarge: 413, decision.ReasonBodyMissing: 400, decision.ReasonUnsupportedMediaType: 415,
	decision.ReasonMethodNotAllowed: 405, decision.ReasonHeaderMismatch: 400,
	decision.ReasonParseError: 400, decision.ReasonInvalidUTF8: 400, decision.ReasonDuplicateKey: 400, decision.ReasonCaseVariantKey: 400,
	decision.ReasonTrailingData: 400, decision.ReasonLimitExceeded: 400, decision.ReasonInvalidRequest: 400, decision.ReasonInvalidParams: 400,
	decision.ReasonNonCanonicalNumber: 400, decision.ReasonBatchNotSupported: 400, decision.ReasonReservedKey: 400, decision.ReasonArgumentsInvalid: 400,
	decision.ReasonInternalError:     500,
	decision.ReasonInsufficientScope: 403, decision.ReasonApprovalUntrusted: 403, decision.ReasonApprovalExpired: 403,
	decision.ReasonApprovalAudienceMismatch: 403, decision.ReasonApprovalPrincipalMismatch: 403, decision.ReasonApprovalDigestMismatch: 403,
	decision.ReasonApprovalReplayed: 403, decision.ReasonReplaySubstitution: 422, decision.ReasonStateStoreUnavailable: 503,
	decision.ReasonResultRecovered: 200, decision.ReasonDefinitionChanged: 403, decision.ReasonToolNotListed: 403,
	decision.ReasonTaskNotOwned: 403, decision.ReasonRateLimited: 429,
}

// policyReasons are the policy outcomes: the only reasons answered HTTP 200
// (with the JSON-RPC error) on Streamable HTTP under DenialStatusAuto.
var policyReasons = map[decision.Reason]bool{
	decision.ReasonPolicyDenied: true, decision.ReasonDefaultDeny: true, decision.ReasonAuthorizationRequired: true,
	decision.ReasonUnknownMethod: true, decision.ReasonUnsafeURI: true, decision.ReasonUnknownServer: true,
	decision.ReasonApprovalUntrusted: true, decision.ReasonApprovalExpired: true, decision.ReasonApprovalAudienceMismatch: true,
	decision.ReasonApprovalPrincipalMismatch: true, decision.ReasonApprovalDigestMismatch: true, decision.ReasonApprovalReplayed: true,
	decision.ReasonDefinitionChanged: true, decision.ReasonToolNotListed: true,
	decision.ReasonReplaySubstitution: true, decision.ReasonTaskNotOwned: true,
	decision.ReasonRateLimited: true, // 429 + Retry-After otherwise
}

// retryAfter: the reasons a client should retry, and after how long.
// rate_limited's is its quota's wait, rounded up, at least 1 (the table's
// Decision has none).
var retryAfter = map[decision.Reason]string{decision.ReasonIdPUnavailable: "5", decision.ReasonDeadlineExceeded: "1", decision.ReasonStateStoreUnavailable: "1",
	decision.ReasonRateLimited: "1"}

// transport is one way a request arrives.
type transport struct {
	name   string
	method string // JSON-RPC method ("" for a bodiless GET)
	id     []byte // JSON-RPC id; nil for a notification
	batch  int    // batch index, -1 outside batches
	accept []string
}

var transports = []transport{
	{name: "streamable request", method: "tools/call", id: []byte("7"), batch: -1, accept: []string{"application/json, text/event-stream"}},
	{name: "streamable request, accept split", method: "tools/call", id: []byte(`"a"`), batch: -1, accept: []string{"application/json", "TEXT/Event-Stream;q=0.5"}},
	{name: "streamable notification", method: "notifications/progress", batch: -1, accept: []string{"application/json, text/event-stream"}},
	{name: "streamable client response", method: "response", id: []byte("7"), batch: -1, accept: []string{"application/json, text/event-stream"}},
	{name: "batch (2025-03-26)", method: "batch", id: []byte("7"), batch: 0, accept: []string{"application/json, text/event-stream"}},
	{name: "event stream refused (q=0)", method: "tools/call", id: []byte("7"), batch: -1, accept: []string{"application/json, text/event-stream;q=0"}},
	{name: "legacy HTTP+SSE POST", method: "tools/call", id: []byte("7"), batch: -1, accept: []string{"application/json"}},
	{name: "legacy POST without Accept", method: "tools/call", id: []byte("7"), batch: -1},
	{name: "GET stream", method: "GET", batch: -1, accept: []string{"text/event-stream"}},
}

// streamableReq reports whether tr is a JSON-RPC request on Streamable HTTP.
func (tr transport) streamableReq() bool {
	return tr.name == "streamable request" || tr.name == "streamable request, accept split"
}

// TestDenialStatusTable: the HTTP status of every reason on every
// transport in both --denial-status modes, and the headers that go with it.
func TestDenialStatusTable(t *testing.T) {
	for _, r := range decision.Reasons() {
		if r == decision.ReasonAllowed {
			continue
		}
		wantErr, ok := httpErrorStatus[r]
		if !ok {
			t.Errorf("reason %s is missing from the status table", r)
			continue
		}
		for _, mode := range []DenialStatus{DenialStatusAuto, DenialStatusHTTPError} {
			rs := &Responder{ResourceMetadataURL: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", DenialStatus: mode}
			for _, tr := range transports {
				d := &decision.Decision{ID: "d1", Reason: r, Method: tr.method, RPCID: tr.id, BatchIndex: tr.batch}
				if r == decision.ReasonResultRecovered {
					d.Recovered = []byte("{}")
				}
				want := wantErr
				if mode == DenialStatusAuto && policyReasons[r] && tr.streamableReq() {
					want = 200
				}
				resp := rs.ResponseFor(d, &decision.Request{Headers: decision.Headers{"accept": tr.accept}})
				dr := resp.GetDeniedResponse()
				if got := int(dr.GetStatus().GetCode()); got != want {
					t.Errorf("%s, %s, %s: HTTP %d, want %d", r, tr.name, mode, got, want)
				}
				// The gRPC status names the real decision whatever the HTTP status.
				if c := codes.Code(resp.GetStatus().GetCode()); c == codes.OK || resp.GetStatus().GetMessage() != string(r) {
					t.Errorf("%s, %s, %s: gRPC status %v", r, tr.name, mode, resp.GetStatus())
				}
				if got := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue(); got != string(r) {
					t.Errorf("%s: metadata reason %q", r, got)
				}
				www := responseHeader(dr.GetHeaders(), "www-authenticate")
				if (wantErr == 401 || r == decision.ReasonInsufficientScope) != (www != "") {
					t.Errorf("%s, %s: WWW-Authenticate %q", r, tr.name, www)
				}
				if got := responseHeader(dr.GetHeaders(), "retry-after"); got != retryAfter[r] {
					t.Errorf("%s, %s: Retry-After %q, want %q", r, tr.name, got, retryAfter[r])
				}
				if ct := responseHeader(dr.GetHeaders(), "content-type"); ct != "application/json" {
					t.Errorf("%s: content-type %q", r, ct)
				}
			}
		}
	}
}

// TestDenialStatusOnCheck: through Check with the reference policy, a
// policy denial of a Streamable HTTP request is HTTP 200 with the JSON-RPC
// error (its id, decision, reason, digest), while the gRPC status, dynamic
// metadata and log keep the denial; the legacy transport keeps 403.
func TestDenialStatusOnCheck(t *testing.T) {
	srv := staticRig(t, nil)
	tests := []struct {
		name       string
		body       string
		accept     string
		wantStatus int
		wantReason decision.Reason
		wantDec    string
		wantCode   int
	}{
		{"deny, Streamable HTTP", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`, "application/json, text/event-stream", 200, decision.ReasonPolicyDenied, "deny", CodeForbidden},
		{"ask, Streamable HTTP", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"issue_refund","arguments":{"orderId":"o","amountMinor":4000,"currency":"EUR"}}}`, "application/json, text/event-stream", 200, decision.ReasonAuthorizationRequired, "ask", CodeAuthorizationRequired},
		{"ask, task-augmented call", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"issue_refund","arguments":{"orderId":"o","amountMinor":4000,"currency":"EUR"},"task":{"ttl":60000}}}`, "application/json, text/event-stream", 200, decision.ReasonAuthorizationRequired, "ask", CodeAuthorizationRequired},
		{"default deny, Streamable HTTP", `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/passwd"}}}`, "application/json, text/event-stream", 200, decision.ReasonDefaultDeny, "deny", CodeForbidden},
		{"deny, legacy HTTP+SSE", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`, "application/json", 403, decision.ReasonPolicyDenied, "deny", CodeForbidden},
		{"deny notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, "application/json, text/event-stream", 403, decision.ReasonUnknownMethod, "deny", CodeMethodNotFound},
		{"malformed stays 400", `{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}`, "application/json, text/event-stream", 400, decision.ReasonDuplicateKey, "deny", CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq(tt.body)
			c.Headers["accept"] = tt.accept
			resp, err := srv.Check(t.Context(), c.CheckRequest(true))
			if err != nil {
				t.Fatal(err)
			}
			d, status := parseDenial(t, resp)
			if status != tt.wantStatus || decision.Reason(d.Error.Data.Reason) != tt.wantReason || d.Error.Data.Decision != tt.wantDec || d.Error.Code != tt.wantCode {
				t.Errorf("HTTP %d %s %s code %d; want %d %s %s %d", status, d.Error.Data.Reason, d.Error.Data.Decision, d.Error.Code,
					tt.wantStatus, tt.wantReason, tt.wantDec, tt.wantCode)
			}
			if codes.Code(resp.GetStatus().GetCode()) == codes.OK {
				t.Error("gRPC status OK on a denial")
			}
			md := resp.GetDynamicMetadata().GetFields()
			if md["decision"].GetStringValue() != tt.wantDec || md["reason"].GetStringValue() != string(tt.wantReason) {
				t.Errorf("metadata %v", md)
			}
		})
	}
}

// TestReferencePolicySession: what the official SDKs send in a normal
// session passes the reference policy.
func TestReferencePolicySession(t *testing.T) {
	srv := staticRig(t, nil)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"total":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"user"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"},"task":{"ttl":60000}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t-1"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tasks/result","params":{"taskId":"t-1"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tasks/cancel","params":{"taskId":"t-1"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-9","status":"working","createdAt":"2025-11-25T00:00:00Z","lastUpdatedAt":"2025-11-25T00:00:00Z","ttl":null}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"roots":[{"uri":"file:///data"}]}}`,
	} {
		c := postReq(body)
		c.Headers["accept"] = "application/json, text/event-stream"
		resp, err := srv.Check(t.Context(), c.CheckRequest(true))
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetOkResponse() == nil {
			t.Errorf("%s: denied: %s", body, resp.GetDeniedResponse().GetBody())
		}
	}
}

// TestWWWAuthenticateNamesRouteAudience: a 401 advertises the metadata of
// the route's audience (context extension mcp_audience) in a gateway, else
// the configured URL; token_missing carries no error attribute (RFC 6750
// section 3.1), other token reasons error="invalid_token".
func TestWWWAuthenticateNamesRouteAudience(t *testing.T) {
	rs := &Responder{ResourceMetadataURL: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"}
	tests := []struct {
		give   map[string]string
		reason decision.Reason
		want   string
	}{
		{nil, decision.ReasonTokenMissing, `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`},
		{map[string]string{ContextExtensionAudience: "https://mcp.example.com/payments/mcp"}, decision.ReasonTokenMissing,
			`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/payments/mcp"`},
		{map[string]string{ContextExtensionAudience: "https://mcp.example.com/github/mcp"}, decision.ReasonTokenExpired,
			`Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/github/mcp"`},
		{map[string]string{ContextExtensionAudience: "not a URI"}, decision.ReasonTokenInvalid,
			`Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`},
	}
	for _, tt := range tests {
		d := &decision.Decision{ID: "d", Reason: tt.reason, BatchIndex: -1}
		resp := rs.ResponseFor(d, &decision.Request{RouteAudience: tt.give[ContextExtensionAudience]})
		if got := responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate"); got != tt.want {
			t.Errorf("%v %s: %q, want %q", tt.give, tt.reason, got, tt.want)
		}
	}
}

// FuzzAcceptEventStream: the Accept parser never panics, and only a value
// that names text/event-stream (any case) makes a request Streamable HTTP.
func FuzzAcceptEventStream(f *testing.F) {
	for _, s := range []string{"application/json, text/event-stream", "text/event-stream;q=0", "TEXT/EVENT-STREAM ; q=0.001", "text/event-stream;q=x", "*/*", ";;,,=", "text/event-stream;a=b;q=1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		d := &decision.Decision{RPCID: []byte("1"), Method: "tools/call", BatchIndex: -1}
		got := streamableRequest(d, decision.Headers{"accept": {accept}})
		if got && !strings.Contains(strings.ToLower(accept), "text/event-stream") {
			t.Fatalf("%q counted as Streamable HTTP", accept)
		}
	})
}
