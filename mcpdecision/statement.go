// Package mcpdecision is the signed decision of mcp-extauthz (issue 28): on
// every allowed request, Check gives the MCP server a short-lived statement
// of what it decided, a compact JWS (RFC 7515) of type mcp-decision+jwt
// signed with Ed25519 (EdDSA, RFC 8037) or ECDSA P-256 (ES256, RFC 7518),
// in the request header x-mcp-decision; and the MCP server, immediately
// before it runs a tool, checks that what it is about to execute is what
// was decided: the statement verifies against the published key set, names
// this server's audience, has not expired nor been used, and its method,
// target and arguments digest are those of the request as the server's own
// SDK decoded it (RFC 8785 over the decoded arguments, not over the bytes
// on the wire).
//
// Signer writes statements (the service's side); Verifier checks them
// (the server's side); package mcpdecision/gosdk adapts Verifier to the Go
// MCP SDK as one receiving middleware, and js/mcp-decision is the same
// verifier for the TypeScript SDK. docs/digests.md, "Signed decisions" gives the
// algorithm for servers in other languages, and testdata/vectors.json the
// vectors every implementation passes.
//
// Not done here: RFC 9421 HTTP Message Signatures (SEP-2752); signing
// answers; verifying GET and DELETE requests (the SDK adapters see JSON-RPC
// messages only).
package mcpdecision

import (
	"context"
)

// Type is the JOSE typ of a statement (RFC 7515 section 4.1.9, RFC 8725
// section 3.11): never accepted as an access token, an approval or anything
// else.
const Type = "mcp-decision+jwt"

// Header is the request header that carries the statement to the MCP server.
const Header = "x-mcp-decision"

// MaxLifetime bounds exp - iat of a statement: one minute.
const MaxLifetime = 60

// IssuedAtSkew is how far ahead of the verifier's clock iat may be (the
// service's clock may run ahead of the server's; iat is whole seconds):
// 5 seconds, besides Verifier.Leeway. exp gets no such allowance.
const IssuedAtSkew = 5

// BatchMethod is the method of a statement for a JSON-RPC batch (MCP
// 2025-03-26); its Batch names every element.
const BatchMethod = "batch"

// Statement is the signed decision: the JWS payload, one JSON object
// whose members are these (omitempty members are absent when empty).
type Statement struct {
	// Who: the access token's issuer and subject, and its client_id
	// (RFC 9068) or azp claim when it has one.
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	ClientID string `json:"client_id,omitempty"`
	// For which server: the RFC 8707 resource URI the token was accepted
	// for, and the MCP server id of the policy.
	Audience string `json:"aud"`
	Server   string `json:"server"`
	// What: the JSON-RPC method ("response" for a client's answer,
	// "batch" for a batch), the target (tool name, resource URI, prompt
	// name; "" when none), the sha256:<hex> RFC 8785 digest of
	// params.arguments ({} when absent) and the request digest
	// (docs/digests.md, "Digests"). For a batch, Batch holds each element's.
	Method        string    `json:"method"`
	Target        string    `json:"target"`
	ArgsDigest    string    `json:"args_digest,omitempty"`
	RequestDigest string    `json:"request_digest"`
	Batch         []Element `json:"batch,omitempty"`
	// Which decision: its id (single use), the policy version
	// (sha256:<hex> of the policy file), the deciding rule and the
	// approval's jti when an approval admitted the request.
	ID            string `json:"jti"`
	PolicyVersion string `json:"policy_version"`
	RuleID        string `json:"rule_id,omitempty"`
	ApprovalID    string `json:"approval_id,omitempty"`
	// When: seconds since the Unix epoch; ExpiresAt - IssuedAt is at most
	// MaxLifetime.
	IssuedAt  int64 `json:"iat"`
	ExpiresAt int64 `json:"exp"`
}

// Element is one message of an allowed batch.
type Element struct {
	Method        string `json:"method"`
	Target        string `json:"target"`
	ArgsDigest    string `json:"args_digest"`
	RequestDigest string `json:"request_digest"`
}

type ctxKey struct{}

// NewContext returns ctx carrying the verified statement s.
func NewContext(ctx context.Context, s *Statement) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// FromContext returns the verified statement a verifying middleware put in
// ctx, or nil when there is none (no middleware, or the call was not
// verified).
func FromContext(ctx context.Context) *Statement {
	s, _ := ctx.Value(ctxKey{}).(*Statement)
	return s
}
