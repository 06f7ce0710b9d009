package policy

import (
	"strings"
	"testing"
	"time"
)

const quotaPolicy = `default: deny
deny:
  - id: no-deletes
    match: "*/delete_*"
allow:
  - "*/*"
  - "resource:docs/file:///pub/**"
methods:
  allow: [tools/list, GET]
quotas:
  - id: search-per-user
    match: "*/search"
    limit: 10
    window: 1m
  - id: all-tools-per-client
    match: "payments/*"
    per: client
    limit: 100
    window: 1h
    burst: 20
    on_store_error: allow
  - id: deletes
    match: "*/delete_*"
    limit: 1
    window: 1s
  - id: lists
    method: tools/list
    per: everyone
    limit: 5
    window: 10s
    when: claims.tier != "gold"
  - id: docs
    match: "resource:docs/file:///pub/**"
    limit: 3
    window: 24h
`

func TestQuotaCompile(t *testing.T) {
	p := mustCompile(t, quotaPolicy)
	type q struct {
		ID       string
		Per      QuotaPer
		Limit    int
		Window   time.Duration
		Burst    int
		FailOpen bool
		Interval time.Duration
	}
	want := []q{
		{"search-per-user", QuotaPerPrincipal, 10, time.Minute, 10, false, 6 * time.Second},
		{"all-tools-per-client", QuotaPerClient, 100, time.Hour, 20, true, 36 * time.Second},
		{"deletes", QuotaPerPrincipal, 1, time.Second, 1, false, time.Second},
		{"lists", QuotaPerEveryone, 5, 10 * time.Second, 5, false, 2 * time.Second},
		{"docs", QuotaPerPrincipal, 3, 24 * time.Hour, 3, false, 8 * time.Hour},
	}
	got := p.Quotas()
	if len(got) != len(want) {
		t.Fatalf("%d quotas, want %d", len(got), len(want))
	}
	for i, tt := range want {
		g := got[i]
		if (q{g.ID, g.Per, g.Limit, g.Window, g.Burst, g.FailOpen, g.Interval()}) != tt {
			t.Errorf("quota %d = %+v, want %+v", i, q{g.ID, g.Per, g.Limit, g.Window, g.Burst, g.FailOpen, g.Interval()}, tt)
		}
	}
}

// Quotas are decided after the deny rules and before ask, allow and the
// default: a denied request is charged to none; any other to every quota
// that matches it.
func TestQuotaEvaluate(t *testing.T) {
	p := mustCompile(t, quotaPolicy)
	tests := []struct {
		name string
		give *Input
		want []string // quota ids
	}{
		{"a tool with a per-principal and a per-client quota", toolCall("payments", "search", nil), []string{"search-per-user", "all-tools-per-client"}},
		{"the same tool elsewhere", toolCall("crm", "search", nil), []string{"search-per-user"}},
		{"loose match, as deny rules", toolCall("crm", "SEARCH", nil), []string{"search-per-user"}},
		{"no quota", toolCall("crm", "lookup", nil), nil},
		{"a deny rule decides before the quotas", toolCall("crm", "delete_repo", nil), nil},
		{"a prompt no quota names", &Input{Op: OpRequest, Method: "prompts/get", Server: "payments", Prompt: "x"}, nil},
		{"method quota, when true", &Input{Op: OpRequest, Method: "tools/list", Server: "payments"}, []string{"lists"}},
		{"method quota, when false", &Input{Op: OpRequest, Method: "tools/list", Server: "payments", Claims: map[string]any{"tier": "gold"}}, nil},
		{"resource quota", resRead("docs", "file:///pub/a/b.md"), []string{"docs"}},
		{"resource outside the quota", resRead("docs", "file:///priv/a.md"), nil},
		{"unsafe URI: refused before the quotas", resRead("docs", "file:///pub/../etc/passwd"), nil},
		{"listen: its URIs' quotas", &Input{Op: OpRequest, Method: "subscriptions/listen", Server: "docs", URIs: []string{"file:///pub/a", "file:///pub/b"}}, []string{"docs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := p.Evaluate(tt.give)
			var got []string
			for _, q := range res.Quotas {
				got = append(got, q.ID)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Quotas = %q, want %q (decision %s %s)", got, tt.want, res.Decision, res.RuleID)
			}
		})
	}
}

// Charging never changes the decision: the same policy without quotas
// decides every input alike.
func TestQuotaDecisionUnchanged(t *testing.T) {
	with := mustCompile(t, quotaPolicy)
	without := mustCompile(t, quotaPolicy[:strings.Index(quotaPolicy, "quotas:")])
	for _, in := range []*Input{
		toolCall("payments", "search", nil), toolCall("crm", "delete_x", nil), method("tools/list"),
		resRead("docs", "file:///pub/x"), promptGet("payments", "p"), {Op: OpHTTPGet, Server: "payments"},
	} {
		a, b := with.Evaluate(in), without.Evaluate(in)
		if outcomeOf(a) != outcomeOf(b) {
			t.Errorf("%+v: with quotas %v, without %v", in, outcomeOf(a), outcomeOf(b))
		}
	}
}

func TestQuotaCompileErrors(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{"quotas: {}", "quotas must be a list"},
		{"quotas: [search]", "a quota must be a mapping"},
		{"quotas: [{limit: 1, window: 1s}]", "missing match or method"},
		{"quotas: [{match: a, method: ping, limit: 1, window: 1s}]", "not both"},
		{"quotas: [{match: a, window: 1s}]", "missing limit"},
		{"quotas: [{match: a, limit: 1}]", "missing window"},
		{"quotas: [{match: a, limit: 0, window: 1s}]", "limit must be a whole number from 1"},
		{"quotas: [{match: a, limit: 1.5, window: 1s}]", "limit must be a whole number"},
		{`quotas: [{match: a, limit: "10", window: 1s}]`, "limit must be a whole number"},
		{"quotas: [{match: a, limit: 2000000, window: 1s}]", "limit must be a whole number from 1 to 1000000"},
		{"quotas: [{match: a, limit: 1, window: 1ms}]", "window must be a duration from 1s"},
		{"quotas: [{match: a, limit: 1, window: 60}]", "window must be a string"},
		{"quotas: [{match: a, limit: 1, window: 32d}]", "window must be a duration"},
		{"quotas: [{match: a, limit: 1, window: 800h}]", "window must be a duration"},
		{"quotas: [{match: a, limit: 1, window: 720h, burst: 2}]", "takes longer than"},
		{"quotas: [{match: a, limit: 1, window: 1s, per: user}]", "per must be principal, client or everyone"},
		{"quotas: [{match: a, limit: 1, window: 1s, on_store_error: open}]", "on_store_error must be deny"},
		{"quotas: [{match: a, limit: 1, window: 1s, Limit: 2}]", `unknown key "Limit"`},
		{"quotas: [{method: tools/call, limit: 1, window: 1s}]", "decided by tool rules"},
		{"quotas: [{match: a, limit: 1, window: 1s, when: 'args.x +'}]", "Syntax error"},
		{"allow: [{id: x, match: a}]\nquotas: [{id: x, match: a, limit: 1, window: 1s}]", "duplicate rule id"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := Compile("q.yaml", []byte("default: deny\n"+tt.give+"\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A request only one quota matches gets that quota's own slice: charging
// allocates nothing in the policy.
func TestQuotaEvaluateAllocs(t *testing.T) {
	p := mustCompile(t, quotaPolicy)
	in := toolCall("crm", "search", nil)
	allocs := testing.AllocsPerRun(100, func() { _ = p.Evaluate(in) })
	if allocs > 0 {
		t.Errorf("Evaluate allocates %.0f times with one quota, want 0", allocs)
	}
}
