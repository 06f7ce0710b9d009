package extauthz

import (
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// wwwAuthenticate builds the challenge c of a 401 (the outcome table's
// challenge column) with the RFC 9728 section 5.1 resource_metadata
// parameter (omitted when resourceMetadata is empty): RFC 6750 section 3's
// Bearer challenge, or RFC 9449 section 7.1's DPoP challenge (with the
// accepted algs) when the request used the DPoP scheme or c is about a
// DPoP proof (challengeDPoPRequired, challengeDPoPProof). The error is
// invalid_dpop_proof for challengeDPoPProof, absent for challengeNoToken,
// and invalid_token otherwise. challengeScope is insufficientScopeChallenge's.
func wwwAuthenticate(c challenge, reqHeaders decision.Headers, resourceMetadata string) string {
	auth, _ := reqHeaders.Get("authorization")
	scheme, _, _ := strings.Cut(auth, " ")
	dpop := strings.EqualFold(scheme, "DPoP") || c == challengeDPoPRequired || c == challengeDPoPProof
	var b strings.Builder
	var params []string
	switch c {
	case challengeNoToken:
	case challengeDPoPProof:
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
