package resourcemeta

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// TestProtectedResourceMetadata serves RFC 9728 metadata on a real HTTP
// server on 127.0.0.1 and fetches it in both path forms, per audience.
func TestProtectedResourceMetadata(t *testing.T) {
	p, err := policy.Compile("p.yaml", []byte("default: deny\nscopes: [mcp:tools, files.read]\n"))
	if err != nil {
		t.Fatal(err)
	}
	single := httptest.NewServer(&Handler{
		Audiences: []string{"https://mcp.example.com/mcp"}, Issuer: "https://idp.example.com",
		ResourceDocumentation: "https://docs.example.com/mcp", Scopes: p.Scopes,
	})
	defer single.Close()
	gateway := httptest.NewServer(&Handler{
		Audiences: []string{"https://mcp.example.com/payments/mcp", "https://mcp.example.com/github/mcp",
			"https://a.example.com/mcp", "https://b.example.com/mcp"},
		Issuer: "https://idp.example.com",
	})
	defer gateway.Close()

	tests := []struct {
		name       string
		srv        *httptest.Server
		method     string
		path, host string
		wantStatus int
		want       *prmDocument
	}{
		{name: "path form", srv: single, path: "/.well-known/oauth-protected-resource/mcp", wantStatus: 200,
			want: &prmDocument{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"},
				ScopesSupported: []string{"mcp:tools", "files.read"}, BearerMethodsSupported: []string{"header"},
				ResourceDocumentation: "https://docs.example.com/mcp"}},
		{name: "root form, one audience", srv: single, path: "/.well-known/oauth-protected-resource", wantStatus: 200,
			want: &prmDocument{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"},
				ScopesSupported: []string{"mcp:tools", "files.read"}, BearerMethodsSupported: []string{"header"},
				ResourceDocumentation: "https://docs.example.com/mcp"}},
		{name: "HEAD", srv: single, method: http.MethodHead, path: "/.well-known/oauth-protected-resource/mcp", wantStatus: 200},
		{name: "POST", srv: single, method: http.MethodPost, path: "/.well-known/oauth-protected-resource/mcp", wantStatus: 405},
		{name: "other path", srv: single, path: "/.well-known/oauth-protected-resource/other", wantStatus: 404},
		{name: "path prefix only", srv: single, path: "/.well-known/oauth-protected-resource/mc", wantStatus: 404},
		{name: "gateway payments", srv: gateway, path: "/.well-known/oauth-protected-resource/payments/mcp", wantStatus: 200,
			want: &prmDocument{Resource: "https://mcp.example.com/payments/mcp", AuthorizationServers: []string{"https://idp.example.com"},
				BearerMethodsSupported: []string{"header"}}},
		{name: "gateway github", srv: gateway, path: "/.well-known/oauth-protected-resource/github/mcp", wantStatus: 200,
			want: &prmDocument{Resource: "https://mcp.example.com/github/mcp", AuthorizationServers: []string{"https://idp.example.com"},
				BearerMethodsSupported: []string{"header"}}},
		{name: "same path, host chooses", srv: gateway, path: "/.well-known/oauth-protected-resource/mcp", host: "b.example.com:8443", wantStatus: 200,
			want: &prmDocument{Resource: "https://b.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"},
				BearerMethodsSupported: []string{"header"}}},
		{name: "same path, unknown host", srv: gateway, path: "/.well-known/oauth-protected-resource/mcp", host: "c.example.com", wantStatus: 404},
		{name: "gateway root form is ambiguous", srv: gateway, path: "/.well-known/oauth-protected-resource", wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, tt.srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.want == nil {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var got prmDocument
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if !reflect.DeepEqual(&got, tt.want) {
				t.Errorf("got %+v, want %+v", got, *tt.want)
			}
		})
	}
}

// TestMetadataURLMatchesEndpoint: the resource_metadata URL every 401
// names is a path the endpoint answers for that audience.
func TestMetadataURLMatchesEndpoint(t *testing.T) {
	for _, aud := range []string{"https://mcp.example.com/mcp", "https://mcp.example.com/payments/mcp", "https://mcp.example.com/", "https://mcp.example.com"} {
		m := &Handler{Audiences: []string{aud, "https://other.example.com/x/y"}, Issuer: "https://idp.example.com"}
		u := URL(aud)
		req := httptest.NewRequest(http.MethodGet, u, nil)
		got, ok := m.audienceFor(req)
		if !ok || got != aud {
			t.Errorf("%s: metadata URL %s answers %q, %v", aud, u, got, ok)
		}
	}
}
