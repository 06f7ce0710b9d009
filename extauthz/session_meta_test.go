package extauthz

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// TestCheckHandsTheSessionHash: under the reference policy (pin_mode tofu,
// pin_scope session) an allowed Check's dynamic metadata carries the
// session as toolpin.SessionHash (the response seam's pin scope on routes
// that do not send it the request headers), never the Mcp-Session-Id.
func TestCheckHandsTheSessionHash(t *testing.T) {
	key := testkit.NewKey(t, "k1")
	ov, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: "https://idp.example.com", Audiences: []string{testAudience},
		KeySet: bearer.NewStaticKeySet([]jose.JSONWebKey{key.Public()})})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := key.Sign(t, map[string]any{"iss": "https://idp.example.com", "sub": testSubject, "aud": testAudience, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()})
	srv := newTestServer(referencePolicy(t), ov, nil)
	const sid = "sess-0123456789-secret"
	c := postReq(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	c.Headers["authorization"] = "Bearer " + tok
	c.Headers["mcp-session-id"] = sid
	resp, err := srv.Check(context.Background(), c.CheckRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	f := resp.GetDynamicMetadata().GetFields()
	if got, want := f["session"].GetStringValue(), toolpin.SessionHash(sid); got != want || got == "" {
		t.Errorf("session %q, want %q", got, want)
	}
	for k, v := range f {
		if strings.Contains(v.GetStringValue(), sid) {
			t.Errorf("metadata %s carries the session id", k)
		}
	}
}
