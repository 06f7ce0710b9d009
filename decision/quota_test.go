package decision

import (
	"context"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

func quotaOf(t testing.TB, src string) *policy.Quota {
	t.Helper()
	p, err := policy.Compile("q.yaml", []byte("default: deny\nquotas:\n"+src))
	if err != nil {
		t.Fatal(err)
	}
	return p.Quotas()[0]
}

// TestQuotaKey: a bucket per quota, server and caller as the quota's per
// says; nothing of the claims is in the key.
func TestQuotaKey(t *testing.T) {
	alice := &bearer.Principal{Issuer: "https://a.example", Subject: "alice", Claims: map[string]any{"client_id": "app-1"}}
	bob := &bearer.Principal{Issuer: "https://a.example", Subject: "bob", Claims: map[string]any{"client_id": "app-1"}}
	aliceB := &bearer.Principal{Issuer: "https://b.example", Subject: "alice", Claims: map[string]any{"azp": "app-1"}}
	carol := &bearer.Principal{Issuer: "https://a.example", Subject: "carol", Claims: map[string]any{"azp": "app-2"}}
	perPrincipal := quotaOf(t, "  - {id: q, match: x, limit: 1, window: 1s}\n")
	perClient := quotaOf(t, "  - {id: q, match: x, limit: 1, window: 1s, per: client}\n")
	everyone := quotaOf(t, "  - {id: q, match: x, limit: 1, window: 1s, per: everyone}\n")
	other := quotaOf(t, "  - {id: r, match: x, limit: 1, window: 1s}\n")
	tests := []struct {
		name     string
		a, b     string
		wantSame bool
	}{
		{"per principal: two subjects", quotaKey(perPrincipal, "s", alice), quotaKey(perPrincipal, "s", bob), false},
		{"per principal: one subject of two issuers", quotaKey(perPrincipal, "s", alice), quotaKey(perPrincipal, "s", aliceB), false},
		{"per principal: two servers", quotaKey(perPrincipal, "s", alice), quotaKey(perPrincipal, "t", alice), false},
		{"per principal: two quotas", quotaKey(perPrincipal, "s", alice), quotaKey(other, "s", alice), false},
		{"per client: one client_id", quotaKey(perClient, "s", alice), quotaKey(perClient, "s", bob), true},
		{"per client: azp of another issuer", quotaKey(perClient, "s", alice), quotaKey(perClient, "s", aliceB), false},
		{"per client: two clients", quotaKey(perClient, "s", alice), quotaKey(perClient, "s", carol), false},
		{"per client is not per principal", quotaKey(perClient, "s", alice), quotaKey(perPrincipal, "s", alice), false},
		{"everyone", quotaKey(everyone, "s", alice), quotaKey(everyone, "s", carol), true},
		{"everyone, two servers", quotaKey(everyone, "s", alice), quotaKey(everyone, "t", alice), false},
		// The client is policy.ClientOf's (CEL client, the log, the
		// digest): an empty client_id is no client_id, azp names it.
		{"per client: empty client_id, then azp", quotaKey(perClient, "s", &bearer.Principal{Issuer: "https://a.example", Subject: "dan", Claims: map[string]any{"client_id": "", "azp": "app-2"}}),
			quotaKey(perClient, "s", carol), true},
		{"per client: empty client_id, two azp", quotaKey(perClient, "s", &bearer.Principal{Issuer: "https://a.example", Subject: "dan", Claims: map[string]any{"client_id": "", "azp": "app-2"}}),
			quotaKey(perClient, "s", &bearer.Principal{Issuer: "https://a.example", Subject: "dan", Claims: map[string]any{"client_id": "", "azp": "app-3"}}), false},
		{"length-prefixed: no field runs into the next", quotaKey(perPrincipal, "s", &bearer.Principal{Issuer: "ab", Subject: "c"}),
			quotaKey(perPrincipal, "s", &bearer.Principal{Issuer: "a", Subject: "bc"}), false},
	}
	for _, tt := range tests {
		if (tt.a == tt.b) != tt.wantSame || len(tt.a) != 38 {
			t.Errorf("%s: %s vs %s, want same %v", tt.name, tt.a, tt.b, tt.wantSame)
		}
	}
}

// BenchmarkQuotaTake is what one quota adds to a Check on one replica: its
// key and a Take of a Memory bucket: "held" has tokens out (a bucket of
// 1e6 refilled one per 2.7s: admitted, then refused once empty), "fresh"
// is full again at nearly every call (one per microsecond), so its Take
// makes the bucket anew.
func BenchmarkQuotaTake(b *testing.B) {
	p := &bearer.Principal{Issuer: "https://idp.example.com", Subject: "alice"}
	for _, tt := range []struct {
		name string
		q    *policy.Quota
	}{
		{"held", quotaOf(b, "  - {id: q, match: x, limit: 1000000, window: 744h}\n")},
		{"fresh", quotaOf(b, "  - {id: q, match: x, limit: 1000000, window: 1s}\n")},
	} {
		b.Run(tt.name, func(b *testing.B) {
			m := state.NewMemory(0, nil)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := m.Take(ctx, quotaKey(tt.q, "payments", p), tt.q.Interval(), tt.q.Burst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
