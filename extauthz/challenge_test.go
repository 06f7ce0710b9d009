package extauthz

import (
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// TestChallengeColumn: the WWW-Authenticate each reason's denial carries,
// from the outcome table's challenge column, written here from RFC 6750
// section 3 and 3.1, RFC 9449 section 7.1 and RFC 9728 section 5.1: for a
// Bearer request and a DPoP one. Reasons not listed carry none.
func TestChallengeColumn(t *testing.T) {
	const rm = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	algs := `algs="` + strings.Join(bearer.SigningAlgorithms, " ") + `"`
	invalidToken := [2]string{`Bearer error="invalid_token", resource_metadata="` + rm + `"`,
		`DPoP error="invalid_token", ` + algs + `, resource_metadata="` + rm + `"`}
	invalidProof := [2]string{`DPoP error="invalid_dpop_proof", ` + algs + `, resource_metadata="` + rm + `"`,
		`DPoP error="invalid_dpop_proof", ` + algs + `, resource_metadata="` + rm + `"`}
	scope := `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="` + rm + `"`
	want := map[decision.Reason][2]string{ // Bearer request, DPoP request
		decision.ReasonTokenMissing:            {`Bearer resource_metadata="` + rm + `"`, `DPoP ` + algs + `, resource_metadata="` + rm + `"`},
		decision.ReasonTokenMalformed:          invalidToken,
		decision.ReasonTokenInvalid:            invalidToken,
		decision.ReasonTokenExpired:            invalidToken,
		decision.ReasonTokenWrongIssuer:        invalidToken,
		decision.ReasonTokenWrongAudience:      invalidToken,
		decision.ReasonTokenBindingUnsupported: invalidToken,
		decision.ReasonDPoPProofMissing:        {invalidToken[1], invalidToken[1]},
		decision.ReasonDPoPProofInvalid:        invalidProof,
		decision.ReasonDPoPProofMismatch:       invalidProof,
		decision.ReasonDPoPProofStale:          invalidProof,
		decision.ReasonDPoPProofReplayed:       invalidProof,
		decision.ReasonInsufficientScope:       {scope, scope},
	}
	rs := &Responder{ResourceMetadataURL: rm}
	for _, r := range decision.Reasons() {
		for i, auth := range []string{"Bearer x", "DPoP x"} {
			d := &decision.Decision{ID: "0123456789abcdef0123456789abcdef", Reason: r, BatchIndex: -1,
				RequiredScopes: []string{"files:read", "files:write"}, Recovered: []byte("{}")}
			got := responseHeader(rs.Response(d, decision.Headers{"authorization": {auth}}).GetDeniedResponse().GetHeaders(), "www-authenticate")
			if w := want[r][i]; got != w {
				t.Errorf("%s, %s request: WWW-Authenticate %q, want %q", r, strings.Fields(auth)[0], got, w)
			}
		}
		// The column agrees with the class: every token refusal (401) has
		// a challenge, and nothing else but insufficient_scope.
		o := outcomeOf(r)
		if (o.class == classToken) != (o.challenge != challengeNone && o.challenge != challengeScope) {
			t.Errorf("%s: class %d, challenge %d", r, o.class, o.challenge)
		}
	}
}
