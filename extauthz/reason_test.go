package extauthz

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"

	"google.golang.org/grpc/codes"
)

// wantOutcome is how a reason must be answered, written here from the
// rules (docs/reasons.md, "What Envoy gets back", RFC 6750, JSON-RPC 2.0, MCP), not
// copied from the outcomes table: every reason the source declares must
// have a line here, so a new reason fails this test until someone decides
// its answer.
type wantOutcome struct {
	decision string // allow, deny or ask, as written into error.data.decision
	grpc     codes.Code
	http     int
	code     int // JSON-RPC error.code; 0 for allowed
}

var (
	wantAllowed = wantOutcome{"allow", codes.OK, 200, 0}
	// Policy outcomes: 403 with our forbidden code.
	wantForbidden = wantOutcome{"deny", codes.PermissionDenied, 403, -32010}
	// No valid token, or its binding not proven: 401, RFC 6750 section 3.
	wantUnauthenticated = wantOutcome{"deny", codes.Unauthenticated, 401, -32012}
	// An approval that does not lift the ask: 403 with the ask's code.
	wantApprovalRefused = wantOutcome{"ask", codes.PermissionDenied, 403, -32011} // the policy asked; no valid approval answered
	// A dependency of ours is unavailable: 503, retryable.
	wantUnavailable = wantOutcome{"deny", codes.Unavailable, 503, -32014}
)

var wantOutcomes = map[string]wantOutcome{
	"allowed":                wantAllowed,
	"policy_denied":          wantForbidden,
	"default_deny":           wantForbidden,
	"authorization_required": {"ask", codes.PermissionDenied, 403, -32011},
	"unknown_method":         {"deny", codes.PermissionDenied, 403, -32601},
	"unsafe_uri":             wantForbidden,
	"unknown_server":         wantForbidden,

	"token_missing":             wantUnauthenticated,
	"token_malformed":           wantUnauthenticated,
	"token_invalid":             wantUnauthenticated,
	"token_expired":             wantUnauthenticated,
	"token_wrong_issuer":        wantUnauthenticated,
	"token_wrong_audience":      wantUnauthenticated,
	"token_binding_unsupported": wantUnauthenticated,
	"dpop_proof_missing":        wantUnauthenticated,
	"dpop_proof_invalid":        wantUnauthenticated,
	"dpop_proof_mismatch":       wantUnauthenticated,
	"dpop_proof_stale":          wantUnauthenticated,
	"dpop_proof_replayed":       wantUnauthenticated,
	"idp_unavailable":           wantUnavailable,

	// Approvals, idempotency keys and step-up (issue 10).
	"insufficient_scope":          wantForbidden,
	"approval_untrusted":          wantApprovalRefused,
	"approval_expired":            wantApprovalRefused,
	"approval_audience_mismatch":  wantApprovalRefused,
	"approval_principal_mismatch": wantApprovalRefused,
	"approval_digest_mismatch":    wantApprovalRefused,
	"approval_replayed":           wantApprovalRefused,
	"replay_substitution":         {"deny", codes.PermissionDenied, 422, -32013},
	"state_store_unavailable":     wantUnavailable,
	"result_recovered":            {"allow", codes.AlreadyExists, 200, 0},
	"definition_changed":          wantApprovalRefused,
	"tool_not_listed":             wantForbidden,
	"task_not_owned":              {"deny", codes.PermissionDenied, 403, -32010},
	"rate_limited":                {"deny", codes.ResourceExhausted, 429, -32017},

	"body_truncated":         {"deny", codes.InvalidArgument, 413, -32013},
	"body_missing":           {"deny", codes.InvalidArgument, 400, -32600},
	"body_too_large":         {"deny", codes.InvalidArgument, 413, -32013},
	"unsupported_media_type": {"deny", codes.InvalidArgument, 415, -32600},
	"method_not_allowed":     {"deny", codes.InvalidArgument, 405, -32013},
	"header_mismatch":        {"deny", codes.InvalidArgument, 400, -32020},

	"parse_error":          {"deny", codes.InvalidArgument, 400, -32700},
	"invalid_utf8":         {"deny", codes.InvalidArgument, 400, -32700},
	"duplicate_key":        {"deny", codes.InvalidArgument, 400, -32600},
	"case_variant_key":     {"deny", codes.InvalidArgument, 400, -32600},
	"trailing_data":        {"deny", codes.InvalidArgument, 400, -32700},
	"limit_exceeded":       {"deny", codes.InvalidArgument, 400, -32700},
	"invalid_request":      {"deny", codes.InvalidArgument, 400, -32600},
	"invalid_params":       {"deny", codes.InvalidArgument, 400, -32602},
	"non_canonical_number": {"deny", codes.InvalidArgument, 400, -32602},
	"batch_not_supported":  {"deny", codes.InvalidArgument, 400, -32600},
	"reserved_key":         {"deny", codes.InvalidArgument, 400, -32602},
	"arguments_invalid":    {"deny", codes.InvalidArgument, 400, -32602},

	"deadline_exceeded":  wantUnavailable,
	"policy_unavailable": wantUnavailable,
	"internal_error":     {"deny", codes.Internal, 500, -32015},
}

// declaredReasons parses decision/reason.go and returns every constant of type
// Reason: name → value.
func declaredReasons(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "decision", "reason.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				if prev, dup := out[v]; dup {
					t.Errorf("reason %q declared twice (%s, %s)", v, prev, name.Name)
				}
				out[v] = name.Name
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Reason constants found in reason.go")
	}
	return out
}

// readmeReasons parses the reason table (docs/reasons.md, "Reasons
// (closed set)"): reason → [HTTP, code].
func readmeReasons(t *testing.T) map[string][2]string {
	t.Helper()
	b := []byte(testkit.Docs(t, ".."))
	row := regexp.MustCompile("(?m)^\\| `([a-z_0-9]+)` \\| ([0-9–]+) \\| (-?[0-9]+|–) \\|")
	out := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("README lists %s twice", m[1])
		}
		out[m[1]] = [2]string{m[2], m[3]}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestReasonTable enumerates the reasons three ways independently of the
// outcomes table (the constants in reason.go, docs/reasons.md's table, and
// wantOutcomes above), requires the same set everywhere, and checks the
// answer the Responder actually builds for each against wantOutcomes.
func TestReasonTable(t *testing.T) {
	declared := declaredReasons(t)
	readme := readmeReasons(t)
	inOutcomes, inReasons := map[string]bool{}, map[string]bool{}
	for r := range outcomes {
		inOutcomes[string(r)] = true
	}
	for _, r := range decision.Reasons() {
		inReasons[string(r)] = true
	}
	for _, r := range sortedKeys(declared) {
		if _, ok := wantOutcomes[r]; !ok {
			t.Errorf("reason %s (%s) has no expectation in wantOutcomes: decide its answer", r, declared[r])
		}
		if _, ok := readme[r]; !ok {
			t.Errorf("README's reason table lacks %s", r)
		}
		if !inOutcomes[r] {
			t.Errorf("reason %s has no entry in outcomes (it would answer as internal_error)", r)
		}
		if !inReasons[r] {
			t.Errorf("reason %s is missing from decision.Reasons()", r)
		}
	}
	for _, set := range []struct {
		name string
		keys []string
	}{{"wantOutcomes", sortedKeys(wantOutcomes)}, {"README", sortedKeys(readme)}, {"outcomes", sortedKeys(inOutcomes)}, {"decision.Reasons", sortedKeys(inReasons)}} {
		for _, r := range set.keys {
			if _, ok := declared[r]; !ok {
				t.Errorf("%s lists %s, which reason.go does not declare", set.name, r)
			}
		}
	}

	rs := &Responder{ResourceMetadataURL: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"}
	for _, r := range sortedKeys(declared) {
		want, ok := wantOutcomes[r]
		if !ok {
			continue
		}
		t.Run(r, func(t *testing.T) {
			if got := readme[r]; got != [2]string{httpCell(want), codeCell(want)} {
				t.Errorf("README says %s %s; want %s %s", got[0], got[1], httpCell(want), codeCell(want))
			}
			d := &decision.Decision{ID: "0123456789abcdef0123456789abcdef", Reason: decision.Reason(r), BatchIndex: -1}
			if r == string(decision.ReasonResultRecovered) {
				d.Recovered = []byte("{}")
			}
			resp := rs.Response(d, decision.Headers{"authorization": {"Bearer x"}})
			if got := codes.Code(resp.GetStatus().GetCode()); got != want.grpc {
				t.Errorf("gRPC status %v, want %v", got, want.grpc)
			}
			if r == string(decision.ReasonResultRecovered) {
				// Allowed, answered by Envoy from the recorded result: a
				// local reply, never the upstream.
				d.Recovered, d.RPCID = []byte(`{"content":[]}`), []byte("9")
				dr := rs.Response(d, nil).GetDeniedResponse()
				if dr == nil || int(dr.GetStatus().GetCode()) != want.http || dr.GetBody() != `{"jsonrpc":"2.0","id":9,"result":{"content":[]}}` {
					t.Errorf("recovered answer %v", dr)
				}
				d.Recovered = nil // never an empty result: fail closed
				if dr := rs.Response(d, nil).GetDeniedResponse(); dr == nil || dr.GetStatus().GetCode() != 500 {
					t.Errorf("a recovered answer without a result: %v", dr)
				}
				return
			}
			if want.decision == "allow" {
				if resp.GetOkResponse() == nil {
					t.Fatal("allowed is not answered with an OkHttpResponse")
				}
				return
			}
			dr := resp.GetDeniedResponse()
			if dr == nil {
				t.Fatal("a denial reason is answered without a DeniedHttpResponse")
			}
			if got := int(dr.GetStatus().GetCode()); got != want.http {
				t.Errorf("HTTP %d, want %d", got, want.http)
			}
			var body struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Decision string `json:"decision"`
						Reason   string `json:"reason"`
					} `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(dr.GetBody()), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != want.code || body.Error.Message == "" || body.Error.Data.Reason != r || body.Error.Data.Decision != want.decision {
				t.Errorf("body %s; want code %d, reason %s, decision %s", dr.GetBody(), want.code, r, want.decision)
			}
			if www := responseHeader(dr.GetHeaders(), "www-authenticate"); (want.http == 401 || r == "insufficient_scope") != (www != "") {
				t.Errorf("WWW-Authenticate %q on a %d", www, want.http)
			}
			if got := d.Reason.Verdict().String(); got != want.decision {
				t.Errorf("verdict %s, want %s", got, want.decision)
			}
		})
	}
}

func httpCell(w wantOutcome) string {
	if w.decision == "allow" {
		return "–"
	}
	return strconv.Itoa(w.http)
}

func codeCell(w wantOutcome) string {
	if w.decision == "allow" {
		return "–"
	}
	return strconv.Itoa(w.code)
}
