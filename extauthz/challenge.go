package extauthz

import (
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// wwwAuthenticate builds the challenge of a 401 with the RFC 9728
// section 5.1 resource_metadata parameter (omitted when resourceMetadata is
// empty): RFC 6750 section 3's Bearer challenge, or
// RFC 9449 section 7.1's DPoP challenge (with the accepted algs) when the
// request used the DPoP scheme or the reason is about a DPoP proof. The
// error is invalid_dpop_proof for a proof that failed, invalid_token for
// any other token fault, and absent when no token was sent.
func wwwAuthenticate(r decision.Reason, reqHeaders decision.Headers, resourceMetadata string) string {
	auth, _ := reqHeaders.Get("authorization")
	scheme, _, _ := strings.Cut(auth, " ")
	dpop := strings.EqualFold(scheme, "DPoP") || strings.HasPrefix(string(r), "dpop_")
	var b strings.Builder
	var params []string
	switch {
	case r == decision.ReasonTokenMissing:
	case dpop && r != decision.ReasonDPoPProofMissing && strings.HasPrefix(string(r), "dpop_"):
		params = append(params, `error="invalid_dpop_proof"`)
	default:
		params = append(params, `error="invalid_token"`)
	}
	if dpop {
		b.WriteString("DPoP")
		params = append(params, `algs="`+strings.Join(bearer.SigningAlgorithms, " ")+`"`)
	} else {
		b.WriteString("Bearer")
	}
	if resourceMetadata != "" {
		params = append(params, `resource_metadata="`+resourceMetadata+`"`)
	}
	if len(params) > 0 {
		b.WriteString(" " + strings.Join(params, ", "))
	}
	return b.String()
}

// insufficientScopeChallenge is the RFC 6750 section 3 challenge of a 403
// insufficient_scope, with the scopes needed and the RFC 9728
// resource_metadata URL (as on every 401 and 403 challenge).
func insufficientScopeChallenge(scopes []string, resourceMetadata string) string {
	c := `Bearer error="insufficient_scope", scope="` + strings.Join(scopes, " ") + `"`
	if resourceMetadata != "" {
		c += `, resource_metadata="` + resourceMetadata + `"`
	}
	return c
}
