package decision

import (
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// stepUp returns reason when the token holds every scope the deciding rule
// requires (each itself or a scope that implies it under the policy's
// scope_hierarchy: policy.Policy.ScopeSatisfied), else insufficient_scope
// with el.RequiredScopes set to every scope the operation needs, as the
// rules name them, missing or not: one challenge names them all (MCP
// authorization 2025-11-25 scope step-up, SEP-2350: the client adds them
// to what it holds; RFC 6750 section 3.1).
func stepUp(p *policy.Policy, el *Decision, need []string, reason Reason) Reason {
	if len(need) == 0 {
		return reason
	}
	var have []string
	if el.Principal != nil {
		have = tokenScopes(el.Principal.Claims)
	}
	for _, s := range need {
		if !p.ScopeSatisfied(have, s) {
			el.RequiredScopes = need
			return ReasonInsufficientScope
		}
	}
	return reason
}

// tokenScopes returns the token's scopes: the "scope" claim (RFC 9068
// section 2.2.3, RFC 8693 section 4.2) when present, else "scp" (as some
// identity providers name it). A string is split on U+0020 only (RFC 6749
// section 3.3: scope = scope-token *( SP scope-token )), so a tab, a line
// break, NBSP or U+2003 never separates: "openid\tmcp:search" is one piece,
// and no piece that is not a scope-token (printable ASCII but space, '"'
// and '\') is a scope. A JSON array (Spring Authorization Server, Okta
// "scp") is its string elements that are scope-tokens. Anything else, or a
// present claim of another type, grants none; CEL's
// claims.scope.split(" ") reads a string the same way.
func tokenScopes(claims map[string]any) []string {
	v, ok := claims["scope"]
	if !ok {
		v = claims["scp"]
	}
	var out []string
	switch v := v.(type) {
	case string:
		for tok := range strings.SplitSeq(v, " ") {
			if isScopeToken(tok) {
				out = append(out, tok)
			}
		}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && isScopeToken(s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// isScopeToken reports whether s is an RFC 6749 section 3.3 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
