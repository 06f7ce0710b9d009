package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
)

// checkAudiences requires every --audience to be what RFC 8707 section 2
// calls a resource: an absolute URI with a host and no fragment. Every 401's
// WWW-Authenticate resource_metadata is derived from it (RFC 9728 section
// 3.1), so a bare name ("payments") would silently drop that parameter and
// the MCP client's sign-in discovery with it. Every bad one is named.
func checkAudiences(auds []string) error {
	var errs []error
	for _, a := range auds {
		u, err := url.Parse(a)
		if err != nil || !u.IsAbs() || u.Host == "" || strings.ContainsRune(a, '#') || resourcemeta.URL(a) == "" {
			errs = append(errs, fmt.Errorf("--audience %q: want the MCP server's resource URI, absolute with a host and no fragment (RFC 8707 section 2), e.g. https://mcp.example.com/mcp: the resource_metadata of every 401 is derived from it", a))
		}
	}
	return joinProblems(errs...) // every bad one
}
