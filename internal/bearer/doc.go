// Package bearer verifies OAuth bearer tokens (RFC 6750; RFC 9068 JWT access
// tokens, explicitly typed as RFC 8725 section 3.11 asks) and DPoP proofs
// (RFC 9449) for the service: a compact JWS (RFC 7515) read and verified in
// one bounded pass, OIDC discovery (OpenID Connect Discovery 1.0, by go-oidc),
// JSON Web Key Sets (RFC 7517) fixed, read from a file or fetched from a
// jwks_uri, a bounded cache of verified tokens, and the DPoP proof checks a
// sidecar can make. Failures are *TokenError or *DPoPError carrying a Kind;
// the caller maps kinds to its own denial reasons. It imports nothing of the
// service (extauthz, cmd): metrics and logs are callbacks.
package bearer
