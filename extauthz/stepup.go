package extauthz

import (
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// stepUp returns reason when the token holds every scope the deciding rule
// requires, else insufficient_scope with el.RequiredScopes set, so the
// client can obtain a token with them (MCP authorization 2025-11-25, scope
// step-up; RFC 6750 section 3.1).
func stepUp(el *Decision, need []string, reason Reason) Reason {
	if len(need) == 0 {
		return reason
	}
	var have []string
	if el.Principal != nil {
		have = tokenScopes(el.Principal.Claims)
	}
	for _, s := range need {
		found := false
		for _, h := range have {
			found = found || h == s
		}
		if !found {
			el.Decision = policy.Deny
			el.RequiredScopes = need
			return ReasonInsufficientScope
		}
	}
	return reason
}

// tokenScopes returns the token's scopes: the space-separated "scope" claim
// (RFC 9068 section 2.2.3, RFC 8693 section 4.2), else the "scp" claim as a
// list or a space-separated string (as some identity providers issue it).
func tokenScopes(claims map[string]any) []string {
	switch v := claims["scope"].(type) {
	case string:
		return strings.Fields(v)
	}
	switch v := claims["scp"].(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
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
