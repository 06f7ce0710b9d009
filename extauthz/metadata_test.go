package extauthz

import (
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
)

// TestMetadataOnTheWire: the dynamic metadata of a CheckResponse, as the
// service puts it on the wire (marshalCheckResponse) and Envoy reads it
// back (proto.Unmarshal), parses (decision.ParseMetadata, as the response
// seam reads it) to exactly decision.MetadataOf the decision: allowed,
// allowed as a retry, dry-run, denied and asked, with and without a
// principal.
func TestMetadataOnTheWire(t *testing.T) {
	alice := &bearer.Principal{Subject: "alice", Issuer: "https://idp.example.com"}
	base := decision.Decision{ID: "0123456789abcdef0123456789abcdef", Method: "tools/call", Server: "payments", Tool: "issue_refund",
		Target: "issue_refund", ArgsDigest: "sha256:aa", RequestDigest: "sha256:bb", PolicyVersion: "sha256:cc", RuleID: "r",
		RPCID: []byte(`"id-1"`), ProtocolVersion: "2025-11-25", TaskRequested: true, SessionHash: "sh", BatchIndex: -1,
		RecoverResults: true, IdempotencyKeyID: "ik"}
	tests := []struct {
		name    string
		give    func(d *decision.Decision)
		dryRun  bool
		wantOK  bool
		wantKey string // recover_key
	}{
		{name: "allowed", give: func(d *decision.Decision) { d.Reason, d.Principal = decision.ReasonAllowed, alice }, wantOK: true, wantKey: "ik"},
		{name: "allowed retry", give: func(d *decision.Decision) { d.Reason, d.Principal, d.Retry = decision.ReasonAllowed, alice, true }, wantOK: true},
		{name: "dry run of a denial", give: func(d *decision.Decision) { d.Reason, d.Principal = decision.ReasonPolicyDenied, alice }, dryRun: true, wantOK: true},
		{name: "denied", give: func(d *decision.Decision) { d.Reason, d.Principal = decision.ReasonPolicyDenied, alice }},
		{name: "asked", give: func(d *decision.Decision) { d.Reason, d.Principal = decision.ReasonAuthorizationRequired, alice }},
		{name: "no token", give: func(d *decision.Decision) { d.Reason = decision.ReasonTokenMissing }},
	}
	rs := &Responder{MarkSeam: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			tt.give(&d)
			resp := rs.Response(&d, nil)
			if tt.dryRun {
				resp = rs.DryRunResponse(&d, nil)
			}
			if (resp.GetOkResponse() != nil) != tt.wantOK {
				t.Fatalf("ok response: %v, want %v", resp.GetOkResponse() != nil, tt.wantOK)
			}
			b, ok := marshalCheckResponse(resp)
			if !ok {
				t.Fatal("not encodable")
			}
			var got authv3.CheckResponse
			if err := proto.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			f := got.GetDynamicMetadata().GetFields()
			md, err := decision.ParseMetadata(func(k string) (string, bool) { v, ok := f[k]; return v.GetStringValue(), ok })
			if err != nil {
				t.Fatal(err)
			}
			seam := ""
			if tt.wantOK {
				seam = seamcover.ClassOf(d.Method)
			}
			if want := decision.MetadataOf(&d, tt.dryRun, seam); md != want {
				t.Errorf("parsed %+v\nwant   %+v", md, want)
			}
			if md.RecoverKey != tt.wantKey {
				t.Errorf("recover_key %q, want %q", md.RecoverKey, tt.wantKey)
			}
			subject := ""
			if d.Principal != nil {
				subject = d.Principal.Subject
			}
			if md.DecisionID != d.ID || md.Reason != d.Reason || md.RPCID != `"id-1"` || md.Principal != subject {
				t.Errorf("parsed %+v from %+v", md, d)
			}
		})
	}
}
