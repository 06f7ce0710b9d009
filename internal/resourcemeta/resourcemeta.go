// Package resourcemeta serves OAuth 2.0 Protected Resource Metadata (RFC
// 9728) for the MCP server behind the proxy (MCP authorization, 2025-06-18
// and later), and derives the resource_metadata URL every 401's
// WWW-Authenticate names. It knows neither the policy nor the service: the
// supported scopes come from a function.
package resourcemeta

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// WellKnownPath is the RFC 9728 section 3 well-known path prefix of
// protected resource metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// URL derives the RFC 9728 section 3.1 well-known URL of the protected
// resource metadata from a resource URI: the path of the resource is
// appended to WellKnownPath. It returns "" when resource is not an absolute
// URI with a host.
func URL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + WellKnownPath + strings.TrimSuffix(u.EscapedPath(), "/")
}

// Handler serves RFC 9728 protected resource metadata for
// each configured audience, so that an MCP client that got a 401 finds the
// authorization server (MCP authorization, 2025-06-18 and later) although
// the MCP server behind the proxy knows nothing of OAuth.
//
// An audience https://HOST/PATH is answered at
// /.well-known/oauth-protected-resource/PATH (section 3.1: the resource's
// path after the well-known prefix, without a terminating slash), and at
// /.well-known/oauth-protected-resource itself when it is the only audience
// with that path form or the only audience at all (clients fall back to the
// root form). When several audiences share a path, the request's host
// (X-Forwarded-Host, else Host; without port) chooses; an ambiguous or
// unknown path is 404. GET and HEAD only.
type Handler struct {
	// Audiences are the resource URIs (RFC 8707) tokens are accepted for.
	Audiences []string
	// Issuer is the one authorization server (authorization_servers).
	Issuer string
	// ResourceDocumentation is the optional resource_documentation URL.
	ResourceDocumentation string
	// Scopes, if set, returns scopes_supported (the live policy's scopes
	// list); nil or an empty list omits the member.
	Scopes func() []string
}

// prmDocument is the metadata document (RFC 9728 section 2).
type prmDocument struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// metadataPath returns the well-known path of resource's metadata ("" when
// resource is not an absolute URI with a host).
func metadataPath(resource string) string {
	u, err := url.Parse(URL(resource))
	if err != nil || u.Host == "" {
		return ""
	}
	return u.EscapedPath()
}

// audienceFor picks the audience whose metadata the request asks for; ok is
// false when none (or more than one) fits.
func (m *Handler) audienceFor(r *http.Request) (string, bool) {
	path := r.URL.EscapedPath()
	var byPath []string
	for _, a := range m.Audiences {
		if metadataPath(a) == path {
			byPath = append(byPath, a)
		}
	}
	if len(byPath) == 0 && path == WellKnownPath {
		byPath = m.Audiences
	}
	if len(byPath) == 1 {
		return byPath[0], true
	}
	host := r.Header.Get("X-Forwarded-Host")
	if host == "" {
		host = r.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	var found []string
	for _, a := range byPath {
		if u, err := url.Parse(a); err == nil && strings.EqualFold(u.Hostname(), strings.Trim(host, "[]")) {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// ServeHTTP answers GET and HEAD with the metadata document
// (application/json), 404 for a path that names no audience, 405 otherwise.
func (m *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	aud, ok := m.audienceFor(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	doc := prmDocument{
		Resource:               aud,
		AuthorizationServers:   []string{m.Issuer},
		BearerMethodsSupported: []string{"header"},
		ResourceDocumentation:  m.ResourceDocumentation,
	}
	if m.Scopes != nil {
		doc.ScopesSupported = m.Scopes()
	}
	b, _ := json.Marshal(doc) // strings only: cannot fail
	w.Header().Set("Content-Type", "application/json")
	// Short: scopes follow policy reloads.
	w.Header().Set("Cache-Control", "public, max-age=60")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
