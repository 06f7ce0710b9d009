package extauthz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// corpusRecord is one line of ../shared/corpus/mcp-real/*.jsonl.
type corpusRecord struct {
	Session string          `json:"session"`
	Seq     int             `json:"seq"`
	HTTP    json.RawMessage `json:"http"`
	JSONRPC *struct {
		Method    string          `json:"method"`
		ID        json.RawMessage `json:"id"`
		ToolOrURI *string         `json:"tool_or_uri"`
	} `json:"jsonrpc"`
	line []byte
}

func loadCorpus(t testing.TB) []corpusRecord {
	t.Helper()
	var out []corpusRecord
	for _, l := range testkit.JSONLines(t, filepath.Join(sharedDir, "corpus", "mcp-real", "*.jsonl")) {
		var r corpusRecord
		l.Decode(t, &r)
		r.line = l.Text
		out = append(out, r)
	}
	return out
}

// wantForCorpus is what the reference policy (examples/policy.yaml) decides
// for each request the SDK clients sent.
func wantForCorpus(r corpusRecord, body []byte) decision.Reason {
	if r.JSONRPC == nil || r.JSONRPC.Method != "tools/call" {
		return decision.ReasonAllowed // lifecycle, lists, reports/*, summarize, completion, GET, DELETE
	}
	switch tool := *r.JSONRPC.ToolOrURI; {
	case tool == "issue_refund" && bytes.Contains(body, []byte("9007199254740993")):
		return decision.ReasonNonCanonicalNumber // 2^53+1 from the Go clients: would share a digest with 2^53
	case tool == "issue_refund" && bytes.Contains(body, []byte("9007199254740992")):
		return decision.ReasonAuthorizationRequired // ask: amountMinor > 2500
	case tool == "issue_refund":
		return decision.ReasonDefaultDeny // CHF 1250: the allow rule wants EUR
	case tool == "read_file":
		return decision.ReasonDefaultDeny // /reports/… and ../../etc/passwd are not inside /data
	case tool == "delete_repo":
		return decision.ReasonPolicyDenied
	case tool == "search":
		return decision.ReasonAllowed
	}
	return "unexpected tool"
}

// independentArgsDigest computes the arguments digest without mcpparse:
// encoding/json to find params.arguments, internal/jcsoracle (which shares
// no code, number formatter included, with mcpparse) for RFC 8785.
func independentArgsDigest(t testing.TB, body []byte) string {
	t.Helper()
	var msg struct {
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	args := []byte("{}")
	if len(body) > 0 {
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatal(err)
		}
		if len(msg.Params.Arguments) > 0 {
			args = msg.Params.Arguments
		}
	}
	d, err := jcsoracle.Digest(args)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// independentRequestDigest recomputes the request digest from README's
// specification of its envelope.
func independentRequestDigest(t testing.TB, aud, iss, server, method, target string, body []byte) string {
	t.Helper()
	var msg struct {
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	args := json.RawMessage("{}")
	if len(body) > 0 {
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatal(err)
		}
		if len(msg.Params.Arguments) > 0 {
			args = msg.Params.Arguments
		}
	}
	argsDigest, err := jcsoracle.Digest(args)
	if err != nil {
		t.Fatal(err)
	}
	env, err := json.Marshal(map[string]any{
		"v": "mcp-extauthz/request/v3", "aud": aud, "client": "", "iss": iss, "sub": testSubject,
		"server": server, "method": method, "target": target, "args_digest": argsDigest,
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := jcsoracle.Digest(env)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// independentListenTarget is README's target of a subscriptions/listen:
// the resourceSubscriptions URIs as a JSON array, in RFC 8785 form ("" when
// there are none).
func independentListenTarget(t testing.TB, body []byte) string {
	t.Helper()
	var msg struct {
		Params struct {
			Notifications struct {
				ResourceSubscriptions json.RawMessage `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	subs := msg.Params.Notifications.ResourceSubscriptions
	if len(subs) == 0 || string(subs) == "[]" || string(subs) == "null" {
		return ""
	}
	canon, err := jcsoracle.Transform(subs)
	if err != nil {
		t.Fatal(err)
	}
	return string(canon)
}

// corpusGolden is one line of testdata/corpus.golden.json. The request
// digest is not pinned there, since it covers the loopback issuer's URL,
// which changes per run; every request's request digest (allowed, denied
// and asked) and arguments digest are instead recomputed independently in
// the test.
type corpusGolden struct {
	Request    string `json:"request"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason"`
	RuleID     string `json:"rule_id"`
	HTTPStatus int    `json:"http_status"`
	ArgsDigest string `json:"args_digest,omitempty"`
}

// TestCorpusReplay sends every captured request of the real SDK clients
// through a real gRPC client to the server on loopback, with a real token
// verified through OIDC discovery and the JWKS of a loopback identity
// provider, once with body and once with raw_body.
func TestCorpusReplay(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	client := startGRPC(t, newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), nil))
	token := key.Sign(t, idp.Claims())

	var golden []corpusGolden
	seen := map[decision.Reason]int{}
	for _, r := range loadCorpus(t) {
		capt, err := capture.Parse(r.line)
		if err != nil {
			t.Fatal(err)
		}
		capt.Headers["authorization"] = "Bearer " + token
		want := wantForCorpus(r, capt.Body)
		for _, pack := range []bool{true, false} {
			name := fmt.Sprintf("%s/%d/raw_body=%v", r.Session, r.Seq, pack)
			t.Run(name, func(t *testing.T) {
				resp := check(t, client, capt.CheckRequest(pack))
				g := corpusGolden{Request: name}
				method, target := "GET", ""
				if r.JSONRPC != nil {
					method = r.JSONRPC.Method
					if r.JSONRPC.ToolOrURI != nil {
						target = *r.JSONRPC.ToolOrURI
					}
				} else if capt.Method == "DELETE" {
					method = "DELETE"
				}
				if method == "subscriptions/listen" {
					target = independentListenTarget(t, capt.Body)
				}
				wantRD := independentRequestDigest(t, testAudience, idp.Issuer(), testServerID, method, target, capt.Body)
				if want == decision.ReasonAllowed {
					h := okHeaders(t, resp)
					wantDigest := independentArgsDigest(t, capt.Body)
					if h[HeaderArgsDigest] != wantDigest {
						t.Errorf("x-mcp-args-digest = %s, independently %s", h[HeaderArgsDigest], wantDigest)
					}
					if h[HeaderMethod] != method {
						t.Errorf("x-mcp-method = %q, want %q", h[HeaderMethod], method)
					}
					if method == "tools/call" && h[HeaderTool] != target {
						t.Errorf("x-mcp-tool = %q, want %q", h[HeaderTool], target)
					}
					if h[HeaderRequestDigest] != wantRD {
						t.Errorf("x-mcp-request-digest = %s, independently %s", h[HeaderRequestDigest], wantRD)
					}
					if h[HeaderPrincipal] != testSubject || len(h[HeaderDecisionID]) != 32 {
						t.Errorf("principal %q, decision id %q", h[HeaderPrincipal], h[HeaderDecisionID])
					}
					g.Decision, g.Reason, g.HTTPStatus, g.ArgsDigest = "allow", string(decision.ReasonAllowed), 200, h[HeaderArgsDigest]
					g.RuleID = resp.GetDynamicMetadata().GetFields()["rule_id"].GetStringValue()
				} else {
					d, status := parseDenial(t, resp)
					if decision.Reason(d.Error.Data.Reason) != want {
						t.Fatalf("reason = %s, want %s", d.Error.Data.Reason, want)
					}
					if want != decision.ReasonNonCanonicalNumber && !bytes.Equal(d.ID, r.JSONRPC.ID) {
						t.Errorf("error id = %s, want the request's id %s byte for byte", d.ID, r.JSONRPC.ID)
					}
					if want == decision.ReasonAuthorizationRequired && d.Error.Data.Decision != "ask" {
						t.Errorf("decision = %s, want ask", d.Error.Data.Decision)
					}
					g.Decision, g.Reason, g.RuleID, g.HTTPStatus = d.Error.Data.Decision, d.Error.Data.Reason, d.Error.Data.RuleID, status
					// Denied and asked requests carry the digest an approval
					// binds to: recomputed here, not trusted from the code.
					// A number refused before hashing has none.
					argsDigest := resp.GetDynamicMetadata().GetFields()["args_digest"].GetStringValue()
					switch {
					case want == decision.ReasonNonCanonicalNumber:
						if d.Error.Data.RequestDigest != "" || argsDigest != "" {
							t.Errorf("digests %q %q for a body refused before hashing", d.Error.Data.RequestDigest, argsDigest)
						}
					case d.Error.Data.RequestDigest != wantRD:
						t.Errorf("request_digest = %s, independently %s", d.Error.Data.RequestDigest, wantRD)
					case argsDigest != independentArgsDigest(t, capt.Body):
						t.Errorf("args_digest = %s, independently %s", argsDigest, independentArgsDigest(t, capt.Body))
					}
					g.ArgsDigest = argsDigest
				}
				seen[want]++
				golden = append(golden, g)
			})
		}
	}
	for _, r := range []decision.Reason{decision.ReasonAllowed, decision.ReasonPolicyDenied, decision.ReasonDefaultDeny, decision.ReasonAuthorizationRequired, decision.ReasonNonCanonicalNumber} {
		if seen[r] == 0 {
			t.Errorf("the corpus replay never produced %s", r)
		}
	}
	sort.Slice(golden, func(i, j int) bool { return golden[i].Request < golden[j].Request })
	compareGolden(t, "corpus.golden.json", golden)
}

// compareGolden compares v, as indented JSON, with testdata/name; -update
// rewrites the file.
func compareGolden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if want, same := testkit.Golden(t, path, got); !same {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d vs %d lines", len(al), len(bl))
}
