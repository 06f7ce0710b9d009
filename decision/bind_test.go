package decision

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

const transferBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"amount":5}}}`

// brokenStore fails every call, as an unreachable Redis does.
type brokenStore struct{}

var errBroken = errors.New("state store unavailable: connection refused")

func (brokenStore) Claim(context.Context, string, string, time.Duration) (bool, string, error) {
	return false, "", errBroken
}
func (brokenStore) Release(context.Context, string, string) error { return errBroken }
func (brokenStore) Ping(context.Context) error                    { return errBroken }
func (brokenStore) Close() error                                  { return nil }

// askDigest is the request digest of q as the rig decides it (an ask).
func askDigest(t testing.TB, d *Decider, q *Request) string {
	t.Helper()
	dec := decide(d, q)
	if dec.Reason != ReasonAuthorizationRequired || dec.RequestDigest == "" {
		t.Fatalf("%s (%s), want an ask with a digest", dec.Reason, dec.Detail)
	}
	return dec.RequestDigest
}

// TestDecideApprovals: an approval (real JWS of the approver key) admits
// the ask it names once; each check of verifyApproval has its reason, and
// an approval never admits what the policy denies or a batch.
func TestDecideApprovals(t *testing.T) {
	r := newCoreRig(t)
	tok := r.token(t, nil)
	digest := askDigest(t, r.decider(t, nil), postReq(tok, transferBody))
	stranger := testkit.NewKey(t, "core-stranger")
	now := time.Now()
	tests := []struct {
		name string
		edit func(*Config)                           // nil: the rig's
		give func(t testing.TB, d *Decider) *Request // the request, after any setup on d
		want Reason
	}{
		{"no approval", nil, func(t testing.TB, _ *Decider) *Request { return postReq(tok, transferBody) }, ReasonAuthorizationRequired},
		{"approval in the header", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, nil))
		}, ReasonAllowed},
		{"approval in _meta", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, metaCall("transfer_funds", `{"amount":5}`, `{"`+MetaApproval+`":"`+r.approval(t, digest, nil)+`"}`))
		}, ReasonAllowed},
		{"approval in both, the same", nil, func(t testing.TB, _ *Decider) *Request {
			a := r.approval(t, digest, nil)
			return postReq(tok, metaCall("transfer_funds", `{"amount":5}`, `{"`+MetaApproval+`":"`+a+`"}`), HeaderApproval, " "+a)
		}, ReasonAllowed},
		{"approval in both, different", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, metaCall("transfer_funds", `{"amount":5}`, `{"`+MetaApproval+`":"`+r.approval(t, digest, nil)+`"}`),
				HeaderApproval, r.approval(t, digest, nil))
		}, ReasonApprovalUntrusted},
		{"two approval headers", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, nil), HeaderApproval, r.approval(t, digest, nil))
		}, ReasonApprovalUntrusted},
		{"_meta approval not a string", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, metaCall("transfer_funds", `{"amount":5}`, `{"`+MetaApproval+`":7}`))
		}, ReasonApprovalUntrusted},
		{"replayed", nil, func(t testing.TB, d *Decider) *Request {
			a := r.approval(t, digest, nil)
			if got := decide(d, postReq(tok, transferBody, HeaderApproval, a)); got.Reason != ReasonAllowed {
				t.Fatalf("first use: %s (%s)", got.Reason, got.Detail)
			}
			return postReq(tok, transferBody, HeaderApproval, a)
		}, ReasonApprovalReplayed},
		{"not a JWS", nil, func(t testing.TB, _ *Decider) *Request { return postReq(tok, transferBody, HeaderApproval, "x.y") }, ReasonApprovalUntrusted},
		{"typ JWT", nil, func(t testing.TB, _ *Decider) *Request {
			c := testkit.ClaimsOf(t, r.approval(t, digest, nil))
			return postReq(tok, transferBody, HeaderApproval, r.appr.Sign(t, c))
		}, ReasonApprovalUntrusted},
		{"typ application/mcp-approval+jwt", nil, func(t testing.TB, _ *Decider) *Request {
			c := testkit.ClaimsOf(t, r.approval(t, digest, nil))
			return postReq(tok, transferBody, HeaderApproval, r.appr.SignTyped(t, "application/"+strings.ToUpper(ApprovalType), c))
		}, ReasonAllowed},
		{"signed by another key", nil, func(t testing.TB, _ *Decider) *Request {
			c := testkit.ClaimsOf(t, r.approval(t, digest, nil))
			return postReq(tok, transferBody, HeaderApproval, stranger.SignTyped(t, ApprovalType, c))
		}, ReasonApprovalUntrusted},
		{"signed by the users' issuer key", nil, func(t testing.TB, _ *Decider) *Request {
			c := testkit.ClaimsOf(t, r.approval(t, digest, nil))
			return postReq(tok, transferBody, HeaderApproval, r.user.SignTyped(t, ApprovalType, c))
		}, ReasonApprovalUntrusted},
		{"expired", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) {
				c["iat"], c["exp"] = now.Add(-20*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
			}))
		}, ReasonApprovalExpired},
		{"an audience no verifier accepts", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }))
		}, ReasonApprovalAudienceMismatch},
		{"another guarded audience", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["aud"] = coreAudience2 }))
		}, ReasonApprovalAudienceMismatch},
		{"another subject", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["sub"] = "mallory" }))
		}, ReasonApprovalPrincipalMismatch},
		{"another digest", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, mcpparse.Digest([]byte("other")), nil))
		}, ReasonApprovalDigestMismatch},
		{"other arguments", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, toolCall("transfer_funds", `{"amount":6}`), HeaderApproval, r.approval(t, digest, nil))
		}, ReasonApprovalDigestMismatch},
		{"no jti", nil, approvalWithout(r, tok, digest, "jti"), ReasonApprovalUntrusted},
		{"no approver", nil, approvalWithout(r, tok, digest, "approver"), ReasonApprovalUntrusted},
		{"no iat", nil, approvalWithout(r, tok, digest, "iat"), ReasonApprovalUntrusted},
		{"no digest", nil, approvalWithout(r, tok, digest, "digest"), ReasonApprovalUntrusted},
		{"nbf ahead", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["nbf"] = now.Add(time.Minute).Unix() }))
		}, ReasonApprovalUntrusted},
		{"nbf past", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["nbf"] = now.Add(-time.Minute).Unix() }))
		}, ReasonAllowed},
		{"iat ahead", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() }))
		}, ReasonApprovalUntrusted},
		{"lifetime over the maximum", nil, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["exp"] = now.Add(2 * time.Hour).Unix() }))
		}, ReasonApprovalUntrusted},
		{"lifetime under a raised maximum", func(c *Config) { c.Binding.ApprovalMaxLifetime = 3 * time.Hour }, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { c["exp"] = now.Add(2 * time.Hour).Unix() }))
		}, ReasonAllowed},
		{"no approver configured", func(c *Config) { c.Binding.Approvals = nil }, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, nil))
		}, ReasonApprovalUntrusted},
		{"approver keys unavailable", func(c *Config) {
			c.Binding.Approvals = errVerifier{&bearer.TokenError{Kind: bearer.KindUnavailable, Err: errors.New("jwks")}}
		}, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, nil))
		}, ReasonIdPUnavailable},
		{"no store", func(c *Config) { c.Binding.Store = nil }, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, nil))
		}, ReasonStateStoreUnavailable},
		{"store unreachable", func(c *Config) { c.Binding.Store = brokenStore{} }, func(t testing.TB, _ *Decider) *Request {
			return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, nil))
		}, ReasonStateStoreUnavailable},
		{"approval of a denied call", nil, func(t testing.TB, d *Decider) *Request {
			q := postReq(tok, toolCall("delete_all", "{}"))
			return postReq(tok, toolCall("delete_all", "{}"), HeaderApproval, r.approval(t, decide(d, q).RequestDigest, nil))
		}, ReasonPolicyDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.store = state.NewMemory(0, nil) // every row spends its approvals anew
			r.cfg.Binding.Store, r.cfg.Quotas, r.cfg.Binding.Results = r.store, r.store, &state.Results{Store: r.store}
			d := r.decider(t, tt.edit)
			q := tt.give(t, d)
			got := decide(d, q)
			if got.Reason != tt.want {
				t.Fatalf("%s (%s), want %s", got.Reason, got.Detail, tt.want)
			}
			switch got.Reason {
			case ReasonAllowed:
				if got.Approver != "bob@example.com" || got.ApprovalID == "" || got.ApprovalURL != "" || got.Retry {
					t.Errorf("admitted by approval: approver %q, id %q, url %q, retry %v", got.Approver, got.ApprovalID, got.ApprovalURL, got.Retry)
				}
			case ReasonPolicyDenied:
				if got.ApprovalURL != "" {
					t.Errorf("a denial names an approval URL %q", got.ApprovalURL)
				}
			default:
				if want := "https://approvals.example.com/approve?digest=" + url.QueryEscape(got.RequestDigest); tt.edit == nil && got.ApprovalURL != want {
					t.Errorf("approval URL %q, want %q", got.ApprovalURL, want)
				}
				// An approval that verified but could not be spent
				// (replayed, no store) is named, for the log; one that did
				// not verify is not.
				spent := got.Reason == ReasonApprovalReplayed || got.Reason == ReasonStateStoreUnavailable
				if !spent && (got.Approver != "" || got.ApprovalID != "") {
					t.Errorf("refused, yet approver %q, id %q", got.Approver, got.ApprovalID)
				}
			}
			if a := q.Headers[HeaderApproval]; len(a) > 0 {
				checkNoToken(t, got, a[0])
			}
		})
	}
}

// approvalWithout is a request carrying an approval of digest without
// claim name.
func approvalWithout(r *coreRig, tok, digest, name string) func(testing.TB, *Decider) *Request {
	return func(t testing.TB, _ *Decider) *Request {
		return postReq(tok, transferBody, HeaderApproval, r.approval(t, digest, func(c map[string]any) { delete(c, name) }))
	}
}

// TestDecideApprovalNotSpent: an approval presented with an allowed call
// is not looked at, and admits its own ask afterwards.
func TestDecideApprovalNotSpent(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	a := r.approval(t, askDigest(t, d, postReq(tok, transferBody)), nil)
	if got := decide(d, postReq(tok, searchBody, HeaderApproval, a)); !got.Allowed() || got.ApprovalID != "" {
		t.Fatalf("allowed call with an approval: %s, approval id %q", got.Reason, got.ApprovalID)
	}
	if got := decide(d, postReq(tok, transferBody, HeaderApproval, a)); !got.Allowed() || got.ApprovalID == "" {
		t.Errorf("the ask it names: %s (%s)", got.Reason, got.Detail)
	}
}

// TestDecideIdempotency: an idempotency key binds its first request's
// digest: the same request again is a retry, another is
// replay_substitution; keys are scoped to the principal; a malformed key
// is invalid_request; with an approval, the approval is spent on the
// digest and the key together.
func TestDecideIdempotency(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	bob := r.token(t, func(c map[string]any) { c["sub"] = "bob" })
	key := func(k string) []string { return []string{DefaultIdempotencyHeader, k} }
	steps := []struct {
		name      string
		give      *Request
		want      Reason
		wantRetry bool
	}{
		{"first", postReq(tok, searchBody, key("k-1")...), ReasonAllowed, false},
		{"retry", postReq(tok, searchBody, key("k-1")...), ReasonAllowed, true},
		{"retry as an sf-string", postReq(tok, searchBody, key(`"k-1"`)...), ReasonAllowed, true},
		{"retry with the key in _meta", postReq(tok, metaCall("search", `{"q":"x"}`, `{"io.mcp-extauthz/idempotency-key":"k-1"}`)), ReasonAllowed, true},
		{"another request under the key", postReq(tok, toolCall("search", `{"q":"y"}`), key("k-1")...), ReasonReplaySubstitution, false},
		{"the key of another principal", postReq(bob, toolCall("search", `{"q":"y"}`), key("k-1")...), ReasonAllowed, false},
		{"header and _meta differ", postReq(tok, metaCall("search", `{"q":"x"}`, `{"io.mcp-extauthz/idempotency-key":"k-2"}`), key("k-1")...), ReasonInvalidRequest, false},
		{"_meta key not a string", postReq(tok, metaCall("search", `{"q":"x"}`, `{"io.mcp-extauthz/idempotency-key":1}`)), ReasonInvalidRequest, false},
		{"_meta key empty", postReq(tok, metaCall("search", `{"q":"x"}`, `{"io.mcp-extauthz/idempotency-key":""}`)), ReasonInvalidRequest, false},
		{"two key headers", postReq(tok, searchBody, DefaultIdempotencyHeader, "a", DefaultIdempotencyHeader, "a"), ReasonInvalidRequest, false},
		{"key with a space", postReq(tok, searchBody, key("a b")...), ReasonInvalidRequest, false},
		{"key of 256 characters", postReq(tok, searchBody, key(strings.Repeat("k", 256))...), ReasonInvalidRequest, false},
		{"unclosed sf-string", postReq(tok, searchBody, key(`"k-1`)...), ReasonInvalidRequest, false},
		{"a key on a denied call", postReq(tok, toolCall("delete_all", "{}"), key("k-3")...), ReasonPolicyDenied, false},
		{"a key on an ask", postReq(tok, transferBody, key("k-4")...), ReasonAuthorizationRequired, false},
	}
	for _, tt := range steps {
		got := decide(d, tt.give)
		if got.Reason != tt.want || got.Retry != tt.wantRetry {
			t.Errorf("%s: %s retry %v (%s), want %s retry %v", tt.name, got.Reason, got.Retry, got.Detail, tt.want, tt.wantRetry)
		}
		if got.Reason == ReasonAllowed && !strings.HasPrefix(got.IdempotencyKeyID, "idem:") {
			t.Errorf("%s: key id %q", tt.name, got.IdempotencyKeyID)
		}
	}

	t.Run("with an approval", func(t *testing.T) {
		digest := askDigest(t, d, postReq(tok, transferBody))
		a := r.approval(t, digest, nil)
		first := decide(d, postReq(tok, transferBody, append(key("t-1"), HeaderApproval, a)...))
		retry := decide(d, postReq(tok, transferBody, append(key("t-1"), HeaderApproval, a)...))
		other := decide(d, postReq(tok, transferBody, append(key("t-2"), HeaderApproval, a)...))
		bare := decide(d, postReq(tok, transferBody, HeaderApproval, a))
		switch {
		case !first.Allowed() || first.Retry:
			t.Errorf("first: %s retry %v (%s)", first.Reason, first.Retry, first.Detail)
		case !retry.Allowed() || !retry.Retry:
			t.Errorf("retry under the key: %s retry %v (%s)", retry.Reason, retry.Retry, retry.Detail)
		case other.Reason != ReasonApprovalReplayed:
			t.Errorf("under another key: %s (%s)", other.Reason, other.Detail)
		case bare.Reason != ReasonApprovalReplayed:
			t.Errorf("without a key: %s (%s)", bare.Reason, bare.Detail)
		}
		// The replay under t-2 released its key: t-2 is free for the
		// request it is sent with next.
		if got := decide(d, postReq(tok, searchBody, key("t-2")...)); !got.Allowed() || got.Retry {
			t.Errorf("t-2 after the replay: %s retry %v", got.Reason, got.Retry)
		}
	})

	t.Run("store", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			store state.Store
		}{{"none", nil}, {"unreachable", brokenStore{}}} {
			d := r.decider(t, func(c *Config) { c.Binding.Store = tt.store })
			if got := decide(d, postReq(tok, searchBody, key("s-1")...)); got.Reason != ReasonStateStoreUnavailable {
				t.Errorf("%s: %s", tt.name, got.Reason)
			}
			if got := decide(d, postReq(tok, searchBody)); !got.Allowed() {
				t.Errorf("%s, no key: %s", tt.name, got.Reason)
			}
		}
	})
}

// getBroken is a Memory whose Get fails: recorded results cannot be read.
type getBroken struct{ *state.Memory }

func (getBroken) Get(context.Context, string) (string, bool, error) { return "", false, errBroken }

// TestDecideRecoverResults: a retry of a call whose rule says
// recover_results is answered from the recorded result
// (result_recovered, an allow verdict); before one is recorded it runs
// again.
func TestDecideRecoverResults(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	charge := postReq(tok, toolCall("charge", `{"cents":5}`), DefaultIdempotencyHeader, "c-1")
	first := decide(d, charge)
	if !first.Allowed() || !first.RecoverResults || first.IdempotencyKeyID == "" {
		t.Fatalf("first: %s, recover %v, key %q", first.Reason, first.RecoverResults, first.IdempotencyKeyID)
	}
	if got := decide(d, charge); !got.Allowed() || !got.Retry || got.Recovered != nil {
		t.Fatalf("retry before a result: %s retry %v", got.Reason, got.Retry)
	}
	if _, err := r.cfg.Binding.Results.Record(context.Background(), first.IdempotencyKeyID, []byte(`{"content":[]}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	got := decide(d, charge)
	if got.Reason != ReasonResultRecovered || string(got.Recovered) != `{"content":[]}` || got.Reason.Verdict().String() != "allow" {
		t.Errorf("retry after a result: %s %s", got.Reason, got.Recovered)
	}
	broken := r.decider(t, func(c *Config) { c.Binding.Results = &state.Results{Store: getBroken{r.store}} })
	if got := decide(broken, charge); got.Reason != ReasonStateStoreUnavailable {
		t.Errorf("results unreadable: %s", got.Reason)
	}
}

// TestVerifyApprovalDefinition: an approval of a definition_changed call
// must name the observed definition (tooldef), and none covers an
// ambiguous one.
func TestVerifyApprovalDefinition(t *testing.T) {
	r := newCoreRig(t)
	def, err := toolpin.Parse([]byte(`{"name":"search","inputSchema":{"type":"object"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	digest := mcpparse.Digest([]byte("request"))
	dec := func(fp string) *Decision {
		return &Decision{Reason: ReasonDefinitionChanged, RequestDigest: digest, ToolFingerprint: fp,
			Principal: &bearer.Principal{Issuer: coreIssuer, Subject: testkit.Subject, Audience: coreAudience}}
	}
	tests := []struct {
		name    string
		tooldef any // nil: absent
		dec     *Decision
		want    Reason
	}{
		{"names the definition", def.Fingerprint, dec(def.Fingerprint), ""},
		{"names none", nil, dec(def.Fingerprint), ReasonApprovalDigestMismatch},
		{"names another", "tooldef-v2:sha256:" + strings.Repeat("0", 64), dec(def.Fingerprint), ReasonApprovalDigestMismatch},
		{"ambiguous definition", toolpin.AmbiguousFingerprint, dec(toolpin.AmbiguousFingerprint), ReasonApprovalDigestMismatch},
	}
	for _, tt := range tests {
		a := r.approval(t, digest, func(c map[string]any) {
			if tt.tooldef != nil {
				c["tooldef"] = tt.tooldef
			}
		})
		_, got := r.cfg.Binding.verifyApproval(context.Background(), a, tt.dec)
		if got != tt.want {
			t.Errorf("%s: %q (%s), want %q", tt.name, got, tt.dec.Detail, tt.want)
		}
	}
}

// TestDecideBatch: a batch (MCP 2025-03-26) is allowed only when every
// element is, named batch with the digest of its elements' digests; the
// first refused element decides, with id null; approvals and idempotency
// keys never admit one.
func TestDecideBatch(t *testing.T) {
	r := newCoreRig(t)
	d := r.decider(t, nil)
	tok := r.token(t, nil)
	batch := func(hdr []string, els ...string) *Request {
		q := postReq(tok, "["+strings.Join(els, ",")+"]", hdr...)
		q.Headers["mcp-protocol-version"] = []string{"2025-03-26"}
		return q
	}
	list := rpc("tools/list", "")
	t.Run("allowed", func(t *testing.T) {
		single := func(body string) *Decision { return decide(d, postReq(tok, body)) }
		s1, s2 := single(searchBody), single(list)
		for _, q := range []*Request{batch(nil, searchBody, list), func() *Request {
			q := batch(nil, searchBody, list)
			delete(q.Headers, "mcp-protocol-version")
			return q
		}()} {
			got := decide(d, q)
			if got.Reason != ReasonAllowed || got.Method != mcpmethod.Batch || got.BatchIndex != -1 || got.RuleID != "search" {
				t.Fatalf("%s %q index %d rule %q (%s)", got.Reason, got.Method, got.BatchIndex, got.RuleID, got.Detail)
			}
			if len(got.BatchDigests) != 2 || got.BatchDigests[0] != s1.RequestDigest || got.BatchDigests[1] != s2.RequestDigest {
				t.Errorf("element digests %q, want %q, %q", got.BatchDigests, s1.RequestDigest, s2.RequestDigest)
			}
			if want := mcpparse.Digest([]byte(s1.RequestDigest + "," + s2.RequestDigest)); got.RequestDigest != want {
				t.Errorf("batch digest %s, want %s", got.RequestDigest, want)
			}
			if len(got.BatchElements) != 2 || got.BatchElements[0].Target != "search" || got.BatchElements[1].Method != "tools/list" ||
				got.BatchElements[0].ArgsDigest != s1.ArgsDigest {
				t.Errorf("elements %+v", got.BatchElements)
			}
		}
	})
	tests := []struct {
		name      string
		give      *Request
		want      Reason
		wantIndex int
	}{
		{"second element denied", batch(nil, searchBody, toolCall("delete_all", "{}")), ReasonPolicyDenied, 1},
		{"first denied, second asks", batch(nil, toolCall("delete_all", "{}"), transferBody), ReasonPolicyDenied, 0},
		{"an ask in a batch", batch(nil, list, transferBody), ReasonAuthorizationRequired, 1},
		{"an approved ask in a batch", batch([]string{HeaderApproval, r.approval(t, askDigest(t, d, postReq(tok, transferBody)), nil)}, transferBody), ReasonAuthorizationRequired, 0},
		{"a key on a batch is not bound", batch([]string{DefaultIdempotencyHeader, "b-1"}, searchBody), ReasonAllowed, -1},
		{"the same key, another batch", batch([]string{DefaultIdempotencyHeader, "b-1"}, list), ReasonAllowed, -1},
		{"Mcp-Method on a batch", batch([]string{"mcp-method", "tools/call"}, searchBody), ReasonHeaderMismatch, -1},
		{"Mcp-Name on a batch", batch([]string{"mcp-name", "search"}, searchBody), ReasonHeaderMismatch, -1},
		{"over the batch limit", batch(nil, list, list, list), ReasonLimitExceeded, -1},
	}
	small := r.decider(t, func(c *Config) { c.Limits.MaxBatch = 2 })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dd := d
			if strings.HasPrefix(tt.name, "over") {
				dd = small
			}
			got := decide(dd, tt.give)
			if got.Reason != tt.want || got.BatchIndex != tt.wantIndex {
				t.Fatalf("%s at %d (%s), want %s at %d", got.Reason, got.BatchIndex, got.Detail, tt.want, tt.wantIndex)
			}
			if got.Reason != ReasonAllowed && got.RPCID != nil {
				t.Errorf("a refused batch answers id %s, want null", got.RPCID)
			}
			if tt.wantIndex >= 0 && (len(got.BatchDigests) == 0 || got.ApprovalID != "") {
				t.Errorf("refused element: digests %q, approval %q", got.BatchDigests, got.ApprovalID)
			}
			if tt.want == ReasonHeaderMismatch && got.Method != mcpmethod.Batch {
				t.Errorf("method %q, want batch", got.Method)
			}
		})
	}
}

// quotaObserved records QuotaObserver's calls.
type quotaObserved []string

func (q *quotaObserved) observe(id, outcome string) { *q = append(*q, id+" "+outcome) }

// brokenBuckets fails every Take.
type brokenBuckets struct{}

func (brokenBuckets) Take(context.Context, string, time.Duration, int) (bool, time.Duration, error) {
	return false, 0, errBroken
}

// TestDecideQuotas: a quota's bucket admits its limit and then refuses
// rate_limited with the wait; a deny rule decides before any token is
// taken; without a bucket store the quota fails closed, or open where it
// says on_store_error: allow.
func TestDecideQuotas(t *testing.T) {
	r := newCoreRig(t)
	tok := r.token(t, nil)
	lookup := func(tool string) *Request { return postReq(tok, toolCall(tool, "{}")) }
	tests := []struct {
		name      string
		buckets   QuotaBuckets
		give      []*Request
		want      Reason
		wantRule  string
		wantCalls []string
	}{
		{"admitted", nil, []*Request{lookup("lookup")}, ReasonAllowed, "lookup", []string{"lookups admitted"}},
		{"used up", nil, []*Request{lookup("lookup"), lookup("lookup")}, ReasonRateLimited, "lookups", []string{"lookups admitted", "lookups limited"}},
		{"another tool", nil, []*Request{lookup("lookup"), lookup("lookup_other")}, ReasonAllowed, "lookup", []string{"lookups admitted"}},
		{"store unreachable", brokenBuckets{}, []*Request{lookup("lookup")}, ReasonStateStoreUnavailable, "lookups", []string{"lookups store_refused"}},
		{"store unreachable, fail open", brokenBuckets{}, []*Request{lookup("lookup_open")}, ReasonAllowed, "lookup", []string{"lookups-open store_admitted"}},
		{"denied first", nil, []*Request{postReq(tok, toolCall("delete_lookup", "{}"))}, ReasonPolicyDenied, "no-deletes", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen quotaObserved
			d := r.decider(t, func(c *Config) {
				c.Quotas, c.QuotaObserver = state.NewMemory(0, nil), seen.observe
				if tt.buckets != nil {
					c.Quotas = tt.buckets
				}
			})
			var got *Decision
			for _, q := range tt.give {
				got = decide(d, q)
			}
			if got.Reason != tt.want || got.RuleID != tt.wantRule || strings.Join(seen, ";") != strings.Join(tt.wantCalls, ";") {
				t.Fatalf("%s by %q, observed %q (%s); want %s by %q, %q", got.Reason, got.RuleID, seen, got.Detail, tt.want, tt.wantRule, tt.wantCalls)
			}
			if (got.Reason == ReasonRateLimited) != (got.RetryAfter > 0) {
				t.Errorf("retry after %v on %s", got.RetryAfter, got.Reason)
			}
		})
	}
	t.Run("no bucket store", func(t *testing.T) {
		d := r.decider(t, func(c *Config) { c.Quotas = nil })
		if got := decide(d, lookup("lookup")); got.Reason != ReasonStateStoreUnavailable || !strings.Contains(got.Detail, "no quota bucket store") {
			t.Errorf("%s (%s)", got.Reason, got.Detail)
		}
		if got := decide(d, lookup("lookup_open")); !got.Allowed() {
			t.Errorf("fail open: %s", got.Reason)
		}
	})
}
