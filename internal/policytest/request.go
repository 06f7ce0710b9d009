// Package policytest decides requests offline, as `extauthz serve` would,
// for `extauthz test` (policy unit tests in YAML next to the policy) and
// `extauthz check`: a request is a plain JSON-RPC 2.0 body with optional
// HTTP method, headers, MCP server id, principal and claims, and no token is
// needed. It also prints a decision with its policy trace (check --explain)
// and writes JUnit XML reports.
package policytest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Defaults of an offline principal: the issuer and audience of the
// quick-start configuration.
const (
	DefaultIssuer   = "https://idp.example.com"
	DefaultAudience = "https://mcp.example.com/mcp"
	DefaultSubject  = "policy-test"
	// PlaceholderToken is the bearer token of an offline request without
	// one; Verifier never reads it.
	PlaceholderToken = "offline"
)

// Request is one request to decide offline.
type Request struct {
	HTTPMethod string            // POST when empty
	Headers    map[string]string // lower-case names; content-type application/json is added to a POST without one
	Body       []byte            // exact bytes
	Server     string            // MCP server id (as serve's --server-id)
}

// Principal is who an offline request speaks for.
type Principal struct {
	Issuer, Subject, Audience string
	// Claims are the token claims beyond iss, sub and aud, as a JWT
	// carries them (JSON: numbers are float64).
	Claims map[string]any
}

// Verifier is an bearer.TokenVerifier that ignores the token and returns
// its principal: offline decisions need no token.
type Verifier struct{ P Principal }

// Audiences returns the principal's audience (DefaultAudience when unset).
func (v Verifier) Audiences() []string {
	if v.P.Audience == "" {
		return []string{DefaultAudience}
	}
	return []string{v.P.Audience}
}

// Verify returns v's principal, with iss, sub and aud among its claims.
func (v Verifier) Verify(context.Context, string) (*bearer.Principal, error) {
	p := v.P
	if p.Issuer == "" {
		p.Issuer = DefaultIssuer
	}
	if p.Subject == "" {
		p.Subject = DefaultSubject
	}
	if p.Audience == "" {
		p.Audience = DefaultAudience
	}
	claims := maps.Clone(p.Claims)
	if claims == nil {
		claims = map[string]any{}
	}
	claims["iss"], claims["sub"], claims["aud"] = p.Issuer, p.Subject, p.Audience
	return &bearer.Principal{Issuer: p.Issuer, Subject: p.Subject, Audience: p.Audience,
		Audiences: []string{p.Audience}, Claims: claims}, nil
}

// Captured converts r to the captured-request form: POST /mcp with
// content-type and content-length, and a placeholder bearer token unless
// r has an Authorization header.
func (r *Request) Captured() *capture.Request {
	c := &capture.Request{Method: r.HTTPMethod, Path: "/mcp", Headers: map[string]string{}, Body: r.Body}
	if c.Method == "" {
		c.Method = "POST"
	}
	maps.Copy(c.Headers, r.Headers)
	if _, ok := c.Headers["authorization"]; !ok {
		c.Headers["authorization"] = "Bearer " + PlaceholderToken
	}
	if _, ok := c.Headers["host"]; !ok {
		c.Headers["host"] = "mcp.example.com"
	}
	if c.Method == "POST" {
		if _, ok := c.Headers["content-type"]; !ok {
			c.Headers["content-type"] = "application/json"
		}
		if _, ok := c.Headers["content-length"]; !ok {
			c.Headers["content-length"] = strconv.Itoa(len(r.Body))
		}
	}
	return c
}

// Decide decides c offline with the compiled policy lp for MCP server
// server and principal p, as serve would with the same policy, --server-id
// and a token for p. The Decision carries the policy trace.
func Decide(ctx context.Context, lp *decision.LoadedPolicy, server string, p Principal, c *capture.Request) *decision.Decision {
	store := &decision.PolicyStore{}
	store.Store(lp)
	d, err := decision.NewDecider(decision.Config{ServerID: server, Verifier: Verifier{P: p}, Policies: store, Limits: mcpparse.DefaultLimits(), Explain: true,
		Definitions: Listed{}, Quotas: state.NewMemory(0, nil)}) // each case is its quotas' first request
	if err != nil {
		return decision.Internal(err.Error())
	}
	return d.Decide(ctx, requestOf(c))
}

// requestOf is c as a decision.Request, as extauthz.RequestFromCheck reads
// c.CheckRequest(true): the captured method, path and query, host, headers
// (one value each, as captured, with Envoy's :method, :path and :authority)
// and body bytes.
func requestOf(c *capture.Request) *decision.Request {
	path := c.Path
	if c.Query != "" {
		path += "?" + c.Query
	}
	r := &decision.Request{ID: "capture", Method: c.Method, Scheme: "http", Host: c.Headers["host"], Path: path, Body: c.Body,
		Headers: decision.Headers{":method": {c.Method}, ":path": {path}, ":authority": {c.Headers["host"]}}}
	for k, v := range c.Headers {
		r.Headers[strings.ToLower(k)] = []string{v}
	}
	return r
}

// JSONClaims converts YAML- or flag-decoded claims to what a JWT carries:
// a JSON round trip, so numbers become float64. Values that are not JSON
// are an error.
func JSONClaims(in map[string]any) (map[string]any, error) {
	if len(in) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	return out, nil
}

// Listed is the offline answer to "what did the response seam see of this
// tool?" for a pinning policy: every tool listed with its first pinned
// definition (or, without pins, one the baseline holds), no annotations
// declared. Offline decisions thus test the rules as they apply to an
// unchanged tool; definition_changed and tool_not_listed need a live seam.
type Listed struct{}

// Lookup implements decision.ToolDefinitions.
func (Listed) Lookup(_ context.Context, p *policy.Policy, server, _, tool string) (*policy.ToolDefinition, error) {
	if p.PinMode() == policy.PinOff {
		return nil, nil
	}
	d := &policy.ToolDefinition{Listed: true}
	if pins := p.Pins(server, tool); len(pins) > 0 {
		d.Fingerprint = pins[0]
	}
	return d, nil
}
