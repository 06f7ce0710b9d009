package bearer

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzIntrospectionAnswer: reading an introspection answer never panics,
// and an answer it admits is one an independent reading (encoding/json's
// token stream, every top-level member once) admits too: valid JSON, one
// object, active the boolean true, iss the issuer, aud the audience or an
// array holding it, exp a number ahead, sub a non-empty string, no
// refresh_token type.
func FuzzIntrospectionAnswer(f *testing.F) {
	const iss, aud = "https://idp.example.com", "https://mcp.example.com/mcp"
	now := time.Unix(1_800_000_000, 0)
	for _, s := range []string{
		`{"active":true,"iss":"https://idp.example.com","aud":"https://mcp.example.com/mcp","sub":"a","exp":1800003600}`,
		`{"active":true,"iss":"https://idp.example.com","aud":["x","https://mcp.example.com/mcp"],"sub":"a","exp":1800003600,"cnf":{"jkt":"k"}}`,
		`{"active":false}`, `{"active":true,"active":true}`, `{"active":"true"}`, `[]`, `{"act\u0069ve":true}`,
		`{"active":true,"iss":"https://idp.example.com","aud":"https://mcp.example.com/mcp","sub":"a","exp":1800003600,"token_type":"Refresh_Token"}`,
		`{"active":true,"iss":"https://idp.example.com","aud":"https://mcp.example.com/mcp","sub":"a","exp":1.8e9,"nbf":1800000000}`,
	} {
		f.Add([]byte(s))
	}
	v, err := NewIntrospectionVerifier(IntrospectionConfig{Issuer: iss, Audiences: []string{aud}, ClientID: "c", ClientSecret: "s",
		Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := v.check(body)
		if err != nil || e.p == nil {
			return
		}
		m, ok := oracleObject(body)
		if !ok {
			t.Fatalf("admitted an answer the oracle cannot read as one object with unique members: %q", body)
		}
		audOK := false
		switch a := m["aud"].(type) {
		case string:
			audOK = a == aud
		case []any:
			audOK = slices.Contains(a, any(aud))
		}
		exp, _ := m["exp"].(float64)
		sub, _ := m["sub"].(string)
		tt, _ := m["token_type"].(string)
		switch {
		case m["active"] != true:
			t.Fatalf("admitted without active true: %q", body)
		case m["iss"] != iss:
			t.Fatalf("admitted iss %v: %q", m["iss"], body)
		case !audOK:
			t.Fatalf("admitted aud %v: %q", m["aud"], body)
		case math.IsNaN(exp) || exp <= float64(now.Unix()):
			t.Fatalf("admitted exp %v: %q", m["exp"], body)
		case sub == "" || sub != e.p.Subject:
			t.Fatalf("admitted sub %q as %q: %q", sub, e.p.Subject, body)
		case strings.EqualFold(tt, "refresh_token"):
			t.Fatalf("admitted a refresh token: %q", body)
		}
	})
}

// oracleObject decodes b as one JSON object with encoding/json's token
// stream, refusing a top-level member twice and anything after the
// object.
func oracleObject(b []byte) (map[string]any, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	m := map[string]any{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, false
		}
		name := k.(string)
		if _, dup := m[name]; dup {
			return nil, false
		}
		var val any
		if err := d.Decode(&val); err != nil {
			return nil, false
		}
		m[name] = val
	}
	return m, true
}
