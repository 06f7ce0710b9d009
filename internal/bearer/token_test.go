package bearer

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// TestOIDCVerifierClose: Close cancels a discovery that the identity
// provider never answers, waits for it, and a closed verifier starts no
// new one.
func TestOIDCVerifierClose(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // never answers
		close(cancelled)
	}))
	defer idp.Close()
	now := time.Now()
	v, err := NewOIDCVerifier(OIDCConfig{Issuer: idp.URL, Audiences: []string{"https://mcp.example.com"},
		Now: func() time.Time { return now }, DiscoveryRetry: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + idp.URL + `","aud":"https://mcp.example.com","sub":"alice","exp":` + strconv.FormatInt(now.Add(time.Hour).Unix(), 10) + `}`))
	tok := "e30." + payload + ".c2ln"
	var te *TokenError
	if _, err := v.Verify(t.Context(), tok); !errors.As(err, &te) || te.Kind != KindUnavailable {
		t.Fatalf("Verify during discovery: %v, want idp_unavailable", err)
	}
	<-started
	v.Close()
	v.mu.Lock()
	running := v.discovering
	v.mu.Unlock()
	if running {
		t.Fatal("Close returned while discovery still runs")
	}
	select { // the provider sees the request cancelled, not timed out (10s)
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the discovery request was not cancelled")
	}
	now = now.Add(time.Second)
	if _, err := v.Verify(t.Context(), tok); !errors.As(err, &te) || te.Kind != KindUnavailable || !errors.Is(err, errClosed) {
		t.Fatalf("Verify after Close: %v, want idp_unavailable (closed)", err)
	}
}

// countingKeySet refuses every signature and counts the attempts.
type countingKeySet struct{ n int }

func (k *countingKeySet) VerifySignature(context.Context, string) ([]byte, error) {
	k.n++
	return nil, errors.New("bad signature")
}

// TestCheapChecksBeforeSignature: a token for another issuer or audience,
// an expired one, or one that is not a JWS is refused without a signature
// check; the rest reach the key set.
func TestCheapChecksBeforeSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok := func(claims string) string {
		return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".c2ln"
	}
	tests := []struct {
		name     string
		give     string
		want     Kind
		wantSigs int
	}{
		{"not a JWS", "a.b", KindMalformed, 0},
		{"payload not JSON", "e30.bm90LWpzb24.c2ln", KindMalformed, 0},
		{"wrong issuer", tok(`{"iss":"https://other","aud":"https://mcp.example.com","exp":1800000060}`), KindWrongIssuer, 0},
		{"wrong audience", tok(`{"iss":"https://idp","aud":"https://other","exp":1800000060}`), KindWrongAudience, 0},
		{"wrong audiences", tok(`{"iss":"https://idp","aud":["a","b"],"exp":1800000060}`), KindWrongAudience, 0},
		{"expired", tok(`{"iss":"https://idp","aud":["x","https://mcp.example.com"],"exp":1799999999}`), KindExpired, 0},
		{"exp not a number", tok(`{"iss":"https://idp","aud":"https://mcp.example.com","exp":{}}`), KindMalformed, 0},
		{"exp a string", tok(`{"iss":"https://idp","aud":"https://mcp.example.com","exp":"1800000060","sub":"a"}`), KindMalformed, 0},
		{"no exp", tok(`{"iss":"https://idp","aud":"https://mcp.example.com","sub":"a"}`), KindInvalid, 0},
		{"no sub", tok(`{"iss":"https://idp","aud":"https://mcp.example.com","exp":1800000060}`), KindInvalid, 0},
		{"nbf ahead", tok(`{"iss":"https://idp","aud":"https://mcp.example.com","exp":1800000060,"nbf":1800000301,"sub":"a"}`), KindInvalid, 0},
		{"typ of an approval", "eyJhbGciOiJSUzI1NiIsInR5cCI6Im1jcC1hcHByb3ZhbCtqd3QifQ." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://idp","aud":"https://mcp.example.com","exp":1800000060,"sub":"a"}`)) + ".c2ln", KindInvalid, 0},
		{"no aud", tok(`{"iss":"https://idp","exp":1800000060,"sub":"a"}`), KindWrongAudience, 0},
		{"valid claims, bad signature", tok(`{"iss":"https://idp","aud":"https://mcp.example.com","exp":1800000060,"nbf":1800000299,"sub":"a"}`), KindInvalid, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := &countingKeySet{}
			v, err := NewOIDCVerifier(OIDCConfig{Issuer: "https://idp", Audiences: []string{"https://mcp.example.com"}, KeySet: ks, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(t.Context(), tt.give)
			var te *TokenError
			if !errors.As(err, &te) || te.Kind != tt.want || ks.n != tt.wantSigs {
				t.Errorf("Verify: %v after %d signature checks; want %v after %d", err, ks.n, tt.want, tt.wantSigs)
			}
		})
	}
}
