package extauthz

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

func unsignedToken(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	p, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

// hmacWithPublicKey signs with HS256 using the RSA public key's PEM as the
// secret: the classic algorithm-confusion attack.
func hmacWithPublicKey(t *testing.T, k *testkit.Key, claims map[string]any) string {
	der, err := x509.MarshalPKIXPublicKey(&k.Priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(claims)
	jws, err := signer.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := jws.CompactSerialize()
	return s
}

func TestTokenRejections(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	other := testkit.NewKey(t, "k-unknown")
	idp := testkit.NewIdP(t, key)
	client := startGRPC(t, newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), nil))
	with := func(mut func(c map[string]any)) map[string]any {
		c := idp.Claims()
		mut(c)
		return c
	}
	now := time.Now()
	tests := []struct {
		name       string
		give       string // Authorization header value; "" means absent
		wantReason decision.Reason
	}{
		{"none", "", decision.ReasonTokenMissing},
		{"basic scheme", "Basic YWxpY2U6cHc=", decision.ReasonTokenMalformed},
		{"not a jwt", "Bearer abc", decision.ReasonTokenMalformed},
		{"expired", "Bearer " + key.Sign(t, with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })), decision.ReasonTokenExpired},
		{"not yet valid", "Bearer " + key.Sign(t, with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })), decision.ReasonTokenInvalid},
		{"wrong issuer", "Bearer " + key.Sign(t, with(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), decision.ReasonTokenWrongIssuer},
		{"wrong audience", "Bearer " + key.Sign(t, with(func(c map[string]any) { c["aud"] = []string{"some-other-client"} })), decision.ReasonTokenWrongAudience},
		{"no audience", "Bearer " + key.Sign(t, with(func(c map[string]any) { delete(c, "aud") })), decision.ReasonTokenWrongAudience},
		{"alg none", "Bearer " + unsignedToken(idp.Claims()), decision.ReasonTokenInvalid},
		{"hmac with public key", "Bearer " + hmacWithPublicKey(t, key, idp.Claims()), decision.ReasonTokenInvalid},
		{"unknown key", "Bearer " + other.Sign(t, idp.Claims()), decision.ReasonTokenInvalid},
		{"tampered payload", "Bearer " + tamper(key.Sign(t, idp.Claims())), decision.ReasonTokenInvalid},
		{"two tokens", "Bearer " + key.Sign(t, idp.Claims()) + ", Bearer x.y.z", decision.ReasonTokenMalformed},
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			capt := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body),
				Headers: map[string]string{"content-type": "application/json"}}
			if tt.give != "" {
				capt.Headers["authorization"] = tt.give
			}
			resp := check(t, client, capt.CheckRequest(true))
			d, status := parseDenial(t, resp)
			if status != http.StatusUnauthorized || decision.Reason(d.Error.Data.Reason) != tt.wantReason {
				t.Fatalf("got %d %s, want 401 %s", status, d.Error.Data.Reason, tt.wantReason)
			}
			if d.Error.Code != CodeUnauthenticated {
				t.Errorf("error.code = %d", d.Error.Code)
			}
			www := responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate")
			if !strings.HasPrefix(www, "Bearer") || !strings.Contains(www, `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`) {
				t.Errorf("WWW-Authenticate = %q", www)
			}
			if gave := tt.give != ""; gave != strings.Contains(www, `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate = %q: error=invalid_token must appear exactly when a token was given", www)
			}
		})
	}
	// The same valid token is allowed, so the rejections above are the
	// token's doing.
	capt := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body),
		Headers: map[string]string{"content-type": "application/json", "authorization": "Bearer " + key.Sign(t, idp.Claims())}}
	okHeaders(t, check(t, client, capt.CheckRequest(true)))
}

// tamper flips the payload's subject without re-signing.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	p, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	_ = json.Unmarshal(p, &c)
	c["sub"] = "mallory"
	p, _ = json.Marshal(c)
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

// TestIdPUnavailable: with the provider down, Checks are denied with
// idp_unavailable (503), never allowed; once it answers, the same token is
// allowed.
func TestIdPUnavailable(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	idp.Down.Store(true)
	discovered := make(chan error, 4)
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience}, DiscoveryRetry: time.Nanosecond,
		OnDiscovery: func(err error) { discovered <- err }})
	if err != nil {
		t.Fatal(err)
	}
	client := startGRPC(t, newTestServer(referencePolicy(t), v, nil))
	capt := &capture.Request{Method: "POST", Path: "/mcp",
		Body:    []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		Headers: map[string]string{"content-type": "application/json", "authorization": "Bearer " + key.Sign(t, idp.Claims())}}
	wantUnavailable := func(when string) {
		t.Helper()
		d, status := parseDenial(t, check(t, client, capt.CheckRequest(true)))
		if status != http.StatusServiceUnavailable || decision.Reason(d.Error.Data.Reason) != decision.ReasonIdPUnavailable {
			t.Fatalf("%s: got %d %s, want 503 idp_unavailable", when, status, d.Error.Data.Reason)
		}
	}
	waitDiscovery := func(wantOK bool) {
		t.Helper()
		select {
		case err := <-discovered:
			if (err == nil) != wantOK {
				t.Fatalf("discovery: %v, want success %v", err, wantOK)
			}
		case <-time.After(testkit.WaitTimeout):
			t.Fatal("no discovery attempt")
		}
	}
	// The first Check starts discovery in the background and is denied at
	// once; so is every Check while the provider is down.
	wantUnavailable("provider down")
	waitDiscovery(false)
	wantUnavailable("provider still down")
	waitDiscovery(false)
	// Back up: the next Check still answers at once (and starts discovery);
	// once that discovery succeeds, the same token is allowed.
	idp.Down.Store(false)
	wantUnavailable("first Check after the provider came back")
	waitDiscovery(true)
	okHeaders(t, check(t, client, capt.CheckRequest(true)))
	if !v.Ready() {
		t.Error("verifier not ready after an allowed Check")
	}
}

// TestRouteAudience: in a gateway, each route names its MCP server's
// resource URI (context extension mcp_audience); a token issued for one
// server is refused on another's route, though both are configured.
func TestRouteAudience(t *testing.T) {
	const payments, github = "https://gw.example.com/payments/mcp", "https://gw.example.com/github/mcp"
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	ov, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{payments, github}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ov.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	cv, err := bearer.NewCachingVerifier(ov, 16, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := startGRPC(t, newTestServer(referencePolicy(t), cv, nil))
	tokenFor := func(aud ...string) string {
		c := idp.Claims()
		c["aud"] = aud
		return key.Sign(t, c)
	}
	tests := []struct {
		name       string
		token      string
		route      map[string]string
		wantReason decision.Reason
	}{
		{"payments token on payments route", tokenFor(payments), map[string]string{"mcp_server": "payments", "mcp_audience": payments}, decision.ReasonAllowed},
		{"payments token on github route", tokenFor(payments), map[string]string{"mcp_server": "github", "mcp_audience": github}, decision.ReasonTokenWrongAudience},
		{"token for both on github route", tokenFor(payments, github), map[string]string{"mcp_server": "github", "mcp_audience": github}, decision.ReasonAllowed},
		{"route audience not configured", tokenFor("https://other.example.com/mcp", payments), map[string]string{"mcp_server": "payments", "mcp_audience": "https://other.example.com/mcp"}, decision.ReasonTokenWrongAudience},
		{"no route audience: any configured one", tokenFor(github), map[string]string{"mcp_server": "payments"}, decision.ReasonAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`)
			c.Headers["authorization"] = "Bearer " + tt.token
			req := c.CheckRequest(true)
			req.Attributes.ContextExtensions = tt.route
			resp := check(t, client, req)
			got := decision.Reason(resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue())
			if got != tt.wantReason {
				t.Fatalf("reason %s, want %s", got, tt.wantReason)
			}
			if got == decision.ReasonAllowed && tt.route["mcp_audience"] != "" {
				h := okHeaders(t, resp)
				want := independentRequestDigest(t, tt.route["mcp_audience"], idp.Issuer(), tt.route["mcp_server"], "tools/call", "search", []byte(`{}`))
				if h[HeaderRequestDigest] != want {
					t.Errorf("request digest does not bind the route's audience")
				}
			}
		})
	}
}

// Token failures say why in the decision log at the default level: which
// check failed and, for issuer and audience, what the token carried; never
// the token.
func TestTokenFailureLogSaysWhy(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	core, logs := observer.New(zapcore.InfoLevel)
	client := startGRPC(t, newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), zap.New(core)))
	with := func(mut func(c map[string]any)) string {
		c := idp.Claims()
		mut(c)
		return key.Sign(t, c)
	}
	tests := []struct {
		name string
		give string // Authorization header value; "" means absent
		want []string
	}{
		{name: "missing", want: []string{"no Authorization header"}},
		{name: "basic", give: "Basic YWxpY2U6cHc=", want: []string{"not Bearer"}},
		{name: "wrong issuer", give: "Bearer " + with(func(c map[string]any) { c["iss"] = "https://evil.example.com" }),
			want: []string{`token iss "https://evil.example.com"`, idp.Issuer()}},
		{name: "wrong audience", give: "Bearer " + with(func(c map[string]any) { c["aud"] = []string{"https://other.example.com/mcp"} }),
			want: []string{`token aud ["https://other.example.com/mcp"]`, "https://mcp.example.com/mcp"}},
		{name: "expired", give: "Bearer " + with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
			want: []string{"token exp", "is past"}},
		{name: "bad signature", give: "Bearer " + tamper(key.Sign(t, idp.Claims())), want: []string{"signature"}},
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.TakeAll()
			capt := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body),
				Headers: map[string]string{"content-type": "application/json"}}
			if tt.give != "" {
				capt.Headers["authorization"] = tt.give
			}
			check(t, client, capt.CheckRequest(true))
			entries := logs.All()
			if len(entries) != 1 {
				t.Fatalf("%d decision lines, want 1", len(entries))
			}
			detail, _ := entries[0].ContextMap()["detail"].(string)
			for _, w := range tt.want {
				if !strings.Contains(detail, w) {
					t.Errorf("detail %q lacks %q", detail, w)
				}
			}
			if _, tok, ok := strings.Cut(tt.give, " "); ok {
				b, _ := json.Marshal(entries[0].ContextMap())
				for _, part := range strings.Split(tok, ".") {
					if len(part) > 8 && strings.Contains(string(b), part) {
						t.Errorf("the log line holds part of the token: %s", b)
					}
				}
			}
		})
	}
}

// TestTokenType is case E05 and its class: a JWT of another kind (an
// approval, a DPoP proof, a logout token, a security event token…) signed
// by the identity provider with this server's audience is refused as a
// Bearer token, in every spelling of its media type (RFC 7515 section
// 4.1.9), with 401 invalid_token; so is any typ not accepted. No typ, JWT
// and at+jwt (RFC 9068) pass, and so do the types an operator adds.
func TestTokenType(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, key)
	core, logs := observer.New(zapcore.InfoLevel)
	client := startGRPC(t, newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), zap.New(core)))
	extra, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: idp.Issuer(), Audiences: []string{testAudience},
		Types: append(append([]string{}, bearer.AccessTokenTypes...), "application/okta-internal-at+jwt")})
	if err != nil {
		t.Fatal(err)
	}
	if err := extra.Warm(t.Context()); err != nil {
		t.Fatal(err)
	}
	clientExtra := startGRPC(t, newTestServer(referencePolicy(t), extra, nil))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`
	send := func(c authv3.AuthorizationClient, tok string) *authv3.CheckResponse {
		capt := &capture.Request{Method: "POST", Path: "/mcp", Body: []byte(body),
			Headers: map[string]string{"content-type": "application/json", "mcp-protocol-version": "2025-06-18", "authorization": "Bearer " + tok}}
		return check(t, c, capt.CheckRequest(true))
	}
	var refused []string
	for _, typ := range bearer.OtherJWTTypes {
		refused = append(refused, typ, strings.ToUpper(typ), "application/"+typ, "Application/"+strings.ToUpper(typ))
	}
	refused = append(refused, "", "JOSE", "JWS", "id_token", "at+jwt;v=1", " at+jwt", "application/json", "okta-internal-at+jwt")
	for _, typ := range refused {
		t.Run("refused "+typ, func(t *testing.T) {
			logs.TakeAll()
			resp := send(client, key.SignTyped(t, typ, idp.Claims()))
			d, status := parseDenial(t, resp)
			if status != http.StatusUnauthorized || decision.Reason(d.Error.Data.Reason) != decision.ReasonTokenInvalid {
				t.Fatalf("typ %q: %d %s, want 401 token_invalid", typ, status, d.Error.Data.Reason)
			}
			if www := responseHeader(resp.GetDeniedResponse().GetHeaders(), "www-authenticate"); !strings.Contains(www, `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q", www)
			}
			if detail, _ := logs.All()[0].ContextMap()["detail"].(string); !strings.Contains(detail, "typ") {
				t.Errorf("detail %q does not name the typ", detail)
			}
		})
	}
	for _, typ := range []string{"-", "JWT", "jwt", "application/jwt", "at+jwt", "AT+JWT", "application/at+jwt", "Application/At+Jwt"} {
		t.Run("accepted "+typ, func(t *testing.T) {
			okHeaders(t, send(client, key.SignTyped(t, typ, idp.Claims())))
			okHeaders(t, send(clientExtra, key.SignTyped(t, typ, idp.Claims())))
		})
	}
	t.Run("listed by the operator", func(t *testing.T) {
		for _, typ := range []string{"application/okta-internal-at+jwt", "okta-internal-at+jwt", "OKTA-INTERNAL-AT+JWT"} {
			okHeaders(t, send(clientExtra, key.SignTyped(t, typ, idp.Claims())))
		}
		for _, typ := range []string{"mcp-approval+jwt", "dpop+jwt", "okta-at+jwt"} {
			if d, status := parseDenial(t, send(clientExtra, key.SignTyped(t, typ, idp.Claims()))); status != 401 || decision.Reason(d.Error.Data.Reason) != decision.ReasonTokenInvalid {
				t.Errorf("typ %q with an operator list: %d %s", typ, status, d.Error.Data.Reason)
			}
		}
	})
	t.Run("an approval is never a token", func(t *testing.T) {
		c := idp.Claims()
		c["digest"], c["jti"], c["approver"] = "sha256:"+strings.Repeat("0", 64), "j1", "bob"
		for _, typ := range []string{decision.ApprovalType, "application/" + decision.ApprovalType} {
			if d, status := parseDenial(t, send(client, key.SignTyped(t, typ, c))); status != 401 || decision.Reason(d.Error.Data.Reason) != decision.ReasonTokenInvalid {
				t.Errorf("approval typ %q as Bearer: %d %s", typ, status, d.Error.Data.Reason)
			}
		}
	})
}
