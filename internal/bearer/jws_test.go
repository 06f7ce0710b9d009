package bearer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// testSigner is a private key with the algorithms it signs under.
type testSigner struct {
	kid  string
	priv any
	pub  any
	algs []jose.SignatureAlgorithm
}

var (
	signersOnce sync.Once
	signers     []testSigner
)

// testSigners returns one key of each kind SigningAlgorithms covers: RSA
// (RS*, PS*), P-256, P-384, P-521 and Ed25519, generated once.
func testSigners(t testing.TB) []testSigner {
	t.Helper()
	signersOnce.Do(func() {
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		signers = append(signers, testSigner{"rsa", rk, &rk.PublicKey,
			[]jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}})
		for _, c := range []struct {
			kid   string
			curve elliptic.Curve
			alg   jose.SignatureAlgorithm
		}{{"p256", elliptic.P256(), jose.ES256}, {"p384", elliptic.P384(), jose.ES384}, {"p521", elliptic.P521(), jose.ES512}} {
			ek, err := ecdsa.GenerateKey(c.curve, rand.Reader)
			if err != nil {
				panic(err)
			}
			signers = append(signers, testSigner{c.kid, ek, &ek.PublicKey, []jose.SignatureAlgorithm{c.alg}})
		}
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		signers = append(signers, testSigner{"ed", priv, pub, []jose.SignatureAlgorithm{jose.EdDSA}})
	})
	return signers
}

// testKeySet is a static set of the public keys of ss, without alg, so
// every algorithm of a key's kind is tried.
func testKeySet(ss []testSigner) *KeySet {
	var keys []jose.JSONWebKey
	for _, s := range ss {
		keys = append(keys, jose.JSONWebKey{Key: s.pub, KeyID: s.kid, Use: "sig"})
	}
	return NewStaticKeySet(keys)
}

// signCompact signs payload with go-jose: the oracle's own serialization.
func signCompact(t testing.TB, s testSigner, alg jose.SignatureAlgorithm, extra map[jose.HeaderKey]any, payload []byte) string {
	t.Helper()
	opts := &jose.SignerOptions{ExtraHeaders: extra}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: s.priv, KeyID: s.kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVerifySignatureAlgorithms: a token go-jose signs under every allowed
// algorithm verifies, with the payload go-jose reads; a key of another
// kind, a curve other than the algorithm's, an alg the key's JWK does not
// name, and every disallowed algorithm do not.
func TestVerifySignatureAlgorithms(t *testing.T) {
	ss := testSigners(t)
	ks := testKeySet(ss)
	payload := []byte(`{"iss":"https://idp","n":1}`)
	for _, s := range ss {
		for _, alg := range s.algs {
			t.Run(s.kid+"/"+string(alg), func(t *testing.T) {
				tok := signCompact(t, s, alg, nil, payload)
				got, err := ks.VerifySignature(t.Context(), tok)
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("VerifySignature: %q, %v", got, err)
				}
				// The oracle agrees.
				j, err := jose.ParseSigned(tok, allowedJOSEAlgs)
				if err != nil {
					t.Fatal(err)
				}
				if p, err := j.Verify(s.pub); err != nil || !bytes.Equal(p, payload) {
					t.Fatalf("go-jose: %v", err)
				}
				// Any change to what the signature covers, or to the
				// signature, is refused.
				dot := strings.LastIndexByte(tok, '.')
				for _, i := range []int{0, dot - 1, dot + 1, len(tok) - 2} {
					b := []byte(tok)
					b[i] ^= 'A' ^ 'B'
					if b[i] == '.' || !isBase64URL(b[i]) {
						b[i] = 'C'
					}
					if _, err := ks.VerifySignature(t.Context(), string(b)); err == nil && string(b) != tok {
						t.Errorf("verified with byte %d changed", i)
					}
				}
				// Only under its own key: the other keys of the set refuse it.
				for _, o := range ss {
					if o.kid == s.kid {
						continue
					}
					j, _ := parseCompact(tok)
					if err := verifyWith([]jose.JSONWebKey{{Key: o.pub, KeyID: s.kid}}, j); err == nil {
						t.Errorf("verified by the %s key", o.kid)
					}
				}
				// A JWK naming another algorithm is not tried.
				j2, _ := parseCompact(tok)
				other := "RS256"
				if alg == jose.RS256 {
					other = "PS256"
				}
				if err := verifyWith([]jose.JSONWebKey{{Key: s.pub, KeyID: s.kid, Algorithm: other}}, j2); err == nil {
					t.Errorf("verified by a key whose JWK says alg %s", other)
				}
				if err := verifyWith([]jose.JSONWebKey{{Key: s.pub, KeyID: s.kid, Algorithm: string(alg)}}, j2); err != nil {
					t.Errorf("key whose JWK says alg %s: %v", alg, err)
				}
			})
		}
	}
	t.Run("disallowed algorithms", func(t *testing.T) {
		for _, alg := range []string{"none", "HS256", "HS384", "HS512", "rs256", "ES256K", "Ed25519", ""} {
			h := `{"alg":"` + alg + `"}`
			if alg == "" {
				h = `{}`
			}
			tok := b64.EncodeToString([]byte(h)) + "." + b64.EncodeToString(payload) + "." + b64.EncodeToString([]byte("sig"))
			if _, err := ks.VerifySignature(t.Context(), tok); err == nil {
				t.Errorf("alg %q verified", alg)
			}
		}
	})
}

// TestParseCompact: the shapes refused before any signature check, each
// with a token that differs from an accepted one only by that shape.
func TestParseCompact(t *testing.T) {
	enc := func(s string) string { return b64.EncodeToString([]byte(s)) }
	p := enc(`{"sub":"a"}`)
	sig := enc("sig")
	tests := []struct {
		name string
		give string
		want string // "" accepted, else a word of the error
	}{
		{"plain", enc(`{"alg":"RS256","typ":"JWT","kid":"k"}`) + "." + p + "." + sig, ""},
		{"empty header object", enc(`{}`) + "." + p + "." + sig, ""},
		{"unknown members are ignored", enc(`{"alg":"RS256","x5t":"abc","cty":"x","foo":[1,{"typ":2}]}`) + "." + p + "." + sig, ""},
		{"escaped member name", enc(`{"alg":"RS256","\u0074yp":"at+jwt"}`) + "." + p + "." + sig, ""},
		{"two dots short", enc(`{}`) + "." + p, "three"},
		{"four parts", enc(`{}`) + "." + p + "." + sig + "." + sig, "three"},
		{"only dots", strings.Repeat(".", 60_000), "bytes"},
		{"padding", enc(`{}`) + "." + p + "=." + sig, "base64url"},
		{"line break", enc(`{}`) + "." + p[:4] + "\n" + p[4:] + "." + sig, "base64url"},
		{"standard base64 alphabet", enc(`{}`) + "." + p + "." + sig + "+/", "base64url"},
		{"space", enc(`{}`) + " ." + p + "." + sig, "base64url"},
		{"non-canonical trailing bits", enc(`{}`) + "." + p[:len(p)-1] + string(p[len(p)-1]+1) + "." + sig, "payload"},
		{"a base64 length of 4n+1", enc(`{}`) + ".AAAAA." + sig, "payload"},
		{"too long", enc(`{}`) + "." + strings.Repeat("A", MaxTokenBytes) + "." + sig, "bytes"},
		{"header not JSON", enc(`alg`) + "." + p + "." + sig, "header"},
		{"header an array", enc(`["alg"]`) + "." + p + "." + sig, "object"},
		{"header null", enc(`null`) + "." + p + "." + sig, "object"},
		{"header trailing data", enc(`{"alg":"RS256"}{}`) + "." + p + "." + sig, "not JSON"},
		{"header nested 33 deep", enc(`{"alg":"RS256","x":`+strings.Repeat("[", 32)+strings.Repeat("]", 32)+`}`) + "." + p + "." + sig, "nested"},
		{"header nested 32 deep", enc(`{"alg":"RS256","x":`+strings.Repeat("[", 31)+strings.Repeat("]", 31)+`}`) + "." + p + "." + sig, ""},
		{"brackets in header strings do not nest", enc(`{"alg":"RS256","x":"`+strings.Repeat("[", 40)+`"}`) + "." + p + "." + sig, ""},
		{"64 header members", enc(`{"alg":"RS256"`+manyMembers(63)+`}`) + "." + p + "." + sig, ""},
		{"65 header members", enc(`{"alg":"RS256"`+manyMembers(64)+`}`) + "." + p + "." + sig, "more than 64"},
		{"header trailing garbage", enc(`{"alg":"RS256"}x`) + "." + p + "." + sig, "header"},
		{"header invalid UTF-8", enc("{\"alg\":\"RS256\",\"x\":\"\xff\"}") + "." + p + "." + sig, "UTF-8"},
		{"typ twice", enc(`{"alg":"RS256","typ":"JWT","typ":"mcp-approval+jwt"}`) + "." + p + "." + sig, "twice"},
		{"typ twice by escape", enc(`{"alg":"RS256","typ":"JWT","\u0074yp":"dpop+jwt"}`) + "." + p + "." + sig, "twice"},
		{"alg twice", enc(`{"alg":"RS256","alg":"none"}`) + "." + p + "." + sig, "twice"},
		{"TYP", enc(`{"alg":"RS256","TYP":"mcp-approval+jwt"}`) + "." + p + "." + sig, "case variant"},
		{"Typ beside typ", enc(`{"alg":"RS256","typ":"JWT","Typ":"dpop+jwt"}`) + "." + p + "." + sig, "case variant"},
		{"Alg", enc(`{"Alg":"RS256"}`) + "." + p + "." + sig, "case variant"},
		{"KID", enc(`{"alg":"RS256","KID":"k"}`) + "." + p + "." + sig, "case variant"},
		{"typ a number", enc(`{"alg":"RS256","typ":1}`) + "." + p + "." + sig, "string"},
		{"typ null", enc(`{"alg":"RS256","typ":null}`) + "." + p + "." + sig, "string"},
		{"typ an array", enc(`{"alg":"RS256","typ":["JWT"]}`) + "." + p + "." + sig, "string"},
		{"alg a number", enc(`{"alg":256}`) + "." + p + "." + sig, "string"},
		{"kid an object", enc(`{"alg":"RS256","kid":{}}`) + "." + p + "." + sig, "string"},
		{"crit", enc(`{"alg":"RS256","crit":["exp"],"exp":1}`) + "." + p + "." + sig, "crit"},
		{"crit empty", enc(`{"alg":"RS256","crit":[]}`) + "." + p + "." + sig, "crit"},
		{"b64 false", enc(`{"alg":"RS256","b64":false}`) + "." + p + "." + sig, "b64"},
		{"empty", "", "three"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseCompact(tt.give)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestParseHeaderAgreesWithGoJOSE: on the headers go-jose accepts with
// typ, alg and kid, ParseHeader reads the same three values or refuses; it
// never reads a typ go-jose does not see.
func TestParseHeaderAgreesWithGoJOSE(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, h := range []string{
		`{"alg":"ES256","typ":"JWT"}`,
		`{"alg":"ES256","typ":"at+jwt","kid":"a"}`,
		`{"alg":"ES256","\u0074yp":"at+jwt"}`,
		`{"alg":"ES256","TYP":"mcp-approval+jwt"}`,
		`{"alg":"ES256","typ":"JWT","typ":"dpop+jwt"}`,
		`{"alg":"ES256","typ":"a\u0000b"}`,
		`{"alg":"ES256"}`,
	} {
		tok := testkit.SignES256Raw(t, k, h, `{}`)
		got, err := ParseHeader(tok)
		j, jerr := jose.ParseSigned(tok, allowedJOSEAlgs)
		if err != nil {
			continue // stricter than go-jose is allowed
		}
		if jerr != nil {
			t.Errorf("%s: ParseHeader accepts what go-jose refuses (%v)", h, jerr)
			continue
		}
		jh := j.Signatures[0].Protected
		jtyp, jhas := jh.ExtraHeaders[jose.HeaderType].(string)
		if got.Alg != jh.Algorithm || got.Kid != jh.KeyID || got.HasTyp != jhas || got.Typ != jtyp {
			t.Errorf("%s: ParseHeader %+v, go-jose alg %q kid %q typ %q %v", h, got, jh.Algorithm, jh.KeyID, jtyp, jhas)
		}
	}
}

// TestMediaType: typ values compare as media types (RFC 7515 section
// 4.1.9): the "application/" prefix is optional and case does not count;
// nothing else is folded.
func TestMediaType(t *testing.T) {
	same := [][2]string{
		{"JWT", "jwt"}, {"JWT", "application/jwt"}, {"at+jwt", "AT+JWT"}, {"at+jwt", "application/at+jwt"},
		{"at+jwt", "Application/At+JWT"}, {"mcp-approval+jwt", "application/MCP-APPROVAL+JWT"},
	}
	for _, p := range same {
		if !SameMediaType(p[0], p[1]) {
			t.Errorf("%q and %q differ", p[0], p[1])
		}
	}
	differ := [][2]string{
		{"at+jwt", "at+jwt "}, {"at+jwt", " at+jwt"}, {"at+jwt", "at+jwt;charset=utf-8"}, {"at+jwt", "text/at+jwt"},
		{"at+jwt", "application//at+jwt"}, {"jwt", "application/jw\u212a"}, {"kb+jwt", "\u212ab+jwt"}, {"JWT", ""},
		{"at+jwt", "at%2Bjwt"}, {"at+jwt", "application/at+jwt/"},
	}
	for _, p := range differ {
		if SameMediaType(p[0], p[1]) {
			t.Errorf("%q and %q are the same", p[0], p[1])
		}
	}
}

// TestTokenTypes: on the access-token path, the typ of another kind of
// JWT is refused in every spelling of its media type, as is any typ not
// accepted, before the signature is checked; absent, JWT and at+jwt pass,
// and so do the types an operator lists.
func TestTokenTypes(t *testing.T) {
	ss := testSigners(t)
	ks := testKeySet(ss)
	now := time.Unix(1_800_000_000, 0)
	payload, _ := json.Marshal(map[string]any{"iss": "https://idp", "aud": "https://mcp", "sub": "alice", "exp": now.Add(time.Hour).Unix()})
	spellings := func(typ string) []string {
		return []string{typ, strings.ToUpper(typ), "application/" + typ, "APPLICATION/" + strings.ToUpper(typ), "Application/" + typ}
	}
	var others []string
	for _, o := range OtherJWTTypes {
		others = append(others, spellings(o)...)
	}
	unknown := []string{"", "JWS", "jwt+jwt", "id_token+jwt", "at+jwt; q=1", "at+jwt ", "text/jwt", "application/json", "bearer",
		"JOSE", "JOSE+JSON", "secevent", "at+jwt,dpop+jwt", "\u212aT+JWT"}
	accepted := append(append(spellings("JWT"), spellings("at+jwt")...), "absent")
	tests := []struct {
		name   string
		types  []string // OIDCConfig.Types
		accept []string // typ values that verify ("absent": no typ member)
		refuse []string
	}{
		{"default", nil, accepted, append(others, unknown...)},
		{"operator adds application/okta-at+jwt", append(append([]string{}, AccessTokenTypes...), "application/okta-at+jwt"),
			append(accepted, spellings("okta-at+jwt")...), append(others, unknown...)},
		{"typ required", []string{"at+jwt"}, spellings("at+jwt"), append(append([]string{"absent", "JWT"}, others...), unknown...)},
		{"approvals", []string{"mcp-approval+jwt"}, spellings("mcp-approval+jwt"), append([]string{"absent", "JWT", "at+jwt", "dpop+jwt", "logout+jwt"}, unknown...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewOIDCVerifier(OIDCConfig{Issuer: "https://idp", Audiences: []string{"https://mcp"}, Types: tt.types, KeySet: ks, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			sign := func(typ string) string {
				extra := map[jose.HeaderKey]any{jose.HeaderType: typ}
				if typ == "absent" {
					extra = nil
				}
				return signCompact(t, ss[1], jose.ES256, extra, payload)
			}
			for _, typ := range tt.accept {
				if _, err := v.Verify(t.Context(), sign(typ)); err != nil {
					t.Errorf("typ %q refused: %v", typ, err)
				}
			}
			for _, typ := range tt.refuse {
				var te *TokenError
				if _, err := v.Verify(t.Context(), sign(typ)); !errors.As(err, &te) || te.Kind != KindInvalid || !strings.Contains(err.Error(), "typ") {
					t.Errorf("typ %q: %v, want token_invalid naming typ", typ, err)
				}
			}
		})
	}
	t.Run("bad Types", func(t *testing.T) {
		for _, typ := range []string{"at jwt", "at+jwt;x=1", "/at+jwt", "application/", "a/b/c", "é+jwt", strings.Repeat("a", 200)} {
			if _, err := NewOIDCVerifier(OIDCConfig{Issuer: "https://idp", Audiences: []string{"https://mcp"}, Types: []string{typ}}); err == nil {
				t.Errorf("Types %q accepted", typ)
			}
		}
	})
}

// TestClaimTypes: NumericDates are JSON numbers, and a case-variant
// duplicate of iss or sub is refused, on tokens that are otherwise valid
// and correctly signed.
func TestClaimTypes(t *testing.T) {
	ss := testSigners(t)
	ks := testKeySet(ss)
	now := time.Unix(1_800_000_000, 0)
	v, err := NewOIDCVerifier(OIDCConfig{Issuer: "https://idp", Audiences: []string{"https://mcp"}, KeySet: ks, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	const base = `"iss":"https://idp","aud":"https://mcp","sub":"alice"`
	tests := []struct {
		name string
		give string // payload
		want Kind   // 0: verifies
	}{
		{"valid", `{` + base + `,"exp":1800003600}`, 0},
		{"fractional exp", `{` + base + `,"exp":1800003600.5,"iat":1799999999.25}`, 0},
		{"exponent exp", `{` + base + `,"exp":1.8000036e9}`, 0},
		{"exp far future", `{` + base + `,"exp":1e300}`, 0},
		{"exp a string", `{` + base + `,"exp":"1800003600"}`, KindMalformed},
		{"exp null", `{` + base + `,"exp":null}`, KindMalformed},
		{"exp true", `{` + base + `,"exp":true}`, KindMalformed},
		{"exp now", `{` + base + `,"exp":1800000000}`, KindExpired},
		{"exp far past", `{` + base + `,"exp":-1e300}`, KindExpired},
		{"nbf a string", `{` + base + `,"exp":1800003600,"nbf":"1"}`, KindMalformed},
		{"nbf far future", `{` + base + `,"exp":1800003600,"nbf":1e300}`, KindInvalid},
		{"nbf within leeway", `{` + base + `,"exp":1800003600,"nbf":1800000299}`, 0},
		{"iat a string", `{` + base + `,"exp":1800003600,"iat":"1800000000"}`, KindMalformed},
		{"aud number", `{"iss":"https://idp","aud":1,"sub":"alice","exp":1800003600}`, KindMalformed},
		{"aud mixed array", `{"iss":"https://idp","aud":["https://mcp",1],"sub":"alice","exp":1800003600}`, KindMalformed},
		{"sub a number", `{"iss":"https://idp","aud":"https://mcp","sub":7,"exp":1800003600}`, KindMalformed},
		{"sub empty", `{"iss":"https://idp","aud":"https://mcp","sub":"","exp":1800003600}`, KindInvalid},
		{"iss null", `{"iss":null,"aud":"https://mcp","sub":"alice","exp":1800003600}`, KindMalformed},
		{"no iss", `{"aud":"https://mcp","sub":"alice","exp":1800003600}`, KindWrongIssuer},
		{"SUB beside sub is another claim", `{` + base + `,"SUB":"mallory","exp":1800003600}`, 0},
		{"sub twice", `{` + base + `,"sub":"mallory","exp":1800003600}`, KindMalformed},
		{"sub twice by escape", `{` + base + `,"s\u0075b":"mallory","exp":1800003600}`, KindMalformed},
		{"exp twice", `{` + base + `,"exp":1800003600,"exp":1}`, KindMalformed},
		{"claims spelled with escapes", `{"\u0069ss":"https:\/\/idp","a\u0075d":["x","https:\/\/mcp"],"sub":"\u0061lice","exp":1800003600}`, 0},
		{"registered names inside other claims do not count", `{` + base + `,"exp":1800003600,"act":{"sub":"mallory","iss":"x","exp":1}}`, 0},
		{"nested 32 deep", `{` + base + `,"exp":1800003600,"x":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`, 0},
		{"nested 33 deep", `{` + base + `,"exp":1800003600,"x":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, KindMalformed},
		{"trailing data", `{` + base + `,"exp":1800003600}{}`, KindMalformed},
		{"not JSON", `{` + base + `,"exp":1800003600,}`, KindMalformed},
		{"payload an array", `[1]`, KindMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signCompact(t, ss[1], jose.ES256, nil, []byte(tt.give))
			_, err := v.Verify(t.Context(), tok)
			var te *TokenError
			switch {
			case tt.want == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != 0 && (!errors.As(err, &te) || te.Kind != tt.want):
				t.Fatalf("%v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzVerifySignature is differential against go-jose: whatever the bytes,
// a token KeySet.VerifySignature accepts is one go-jose parses and verifies
// with one of the keys, to the same payload. The seeds are valid tokens of
// every algorithm; mutations that keep them valid must still verify on
// both sides (checked by TestVerifySignatureAlgorithms).
func FuzzVerifySignature(f *testing.F) {
	ss := testSigners(f)
	ks := testKeySet(ss)
	for _, s := range ss {
		for _, alg := range s.algs {
			f.Add(signCompact(f, s, alg, map[jose.HeaderKey]any{jose.HeaderType: "at+jwt"}, []byte(`{"sub":"a"}`)))
		}
	}
	f.Add("e30.e30.")
	f.Fuzz(func(t *testing.T, tok string) {
		payload, err := ks.VerifySignature(context.Background(), tok)
		if err != nil {
			return
		}
		j, jerr := jose.ParseSigned(tok, allowedJOSEAlgs)
		if jerr != nil {
			t.Fatalf("accepted %q, which go-jose cannot parse: %v", tok, jerr)
		}
		for _, s := range ss {
			if p, err := j.Verify(s.pub); err == nil {
				if !bytes.Equal(p, payload) {
					t.Fatalf("payload %q, go-jose %q", payload, p)
				}
				return
			}
		}
		t.Fatalf("accepted %q, which no key verifies for go-jose", tok)
	})
}

// manyMembers is n header members ,"m0":0,"m1":0...
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"m%d":0`, i)
	}
	return b.String()
}

// TestAudience: the first configured audience the token holds, in
// configured order, whatever the token's order or spelling.
func TestAudience(t *testing.T) {
	want := []string{"https://a", "https://b"}
	tests := []struct {
		give   string
		want   string
		wantOK bool
	}{
		{``, "", true},
		{`"https://b"`, "https://b", true},
		{`"https:\/\/b"`, "https://b", true},
		{`["x","https://b","https://a"]`, "https://a", true},
		{`[ "https://b" , "x" ]`, "https://b", true},
		{`["x"]`, "", true},
		{`[]`, "", true},
		{`"https://c"`, "", true},
		{`["https://a",1]`, "", false},
		{`[1,"https://a"]`, "", false},
		{`[["https://a"]]`, "", false},
		{`{"https://a":1}`, "", false},
		{`1`, "", false},
		{`null`, "", false},
	}
	for _, tt := range tests {
		var raw []byte
		if tt.give != "" {
			raw = []byte(tt.give)
		}
		got, ok := audience(raw, want)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("audience(%s) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
	}
}

// FuzzReadClaims is differential against encoding/json: for any payload,
// readClaims either refuses it or reads iss, sub, aud and the NumericDates
// exactly as a map decode of the same bytes holds them.
func FuzzReadClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://idp","sub":"a","aud":["x","y"],"exp":1800000000,"nbf":1.5,"iat":-3}`,
		`{"\u0069ss":"i","s\u0075b":"\u00e9","aud":"x","x":{"iss":"no"},"y":["sub"]}`,
		`{"iss":"a","iss":"b"}`, `{"iss":"x\"}"}`, `[]`, `{"exp":"1"}`, ` { "sub" : "a" , "aud" : [ ] } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := readClaims(payload)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatalf("readClaims accepts what encoding/json refuses: %v", err)
		}
		for name, raw := range map[string][]byte{"iss": c.iss, "sub": c.sub, "aud": c.aud} {
			v, ok := m[name]
			if ok != (raw != nil) {
				t.Fatalf("%s present %v, in the map %v", name, raw != nil, ok)
			}
			if !ok {
				continue
			}
			var want any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("%s raw %q: %v", name, raw, err)
			}
			if fmt.Sprint(want) != fmt.Sprint(v) {
				t.Fatalf("%s read %v, the map holds %v", name, want, v)
			}
		}
		for name, d := range map[string]numericDate{"exp": c.exp, "nbf": c.nbf, "iat": c.iat} {
			v, ok := m[name]
			if ok != d.set {
				t.Fatalf("%s set %v, in the map %v", name, d.set, ok)
			}
			if !ok {
				continue
			}
			f, isNum := v.(float64)
			if !isNum {
				t.Fatalf("%s read as a NumericDate, the map holds %T", name, v)
			}
			// Within the clamp the instant is the number's, to float precision.
			got := float64(d.t.Unix()) + float64(d.t.Nanosecond())/1e9
			if math.Abs(f) < numericDateBound && math.Abs(got-f) > 1e-6*math.Max(1, math.Abs(f)) {
				t.Fatalf("%s read %v, the map holds %v", name, got, f)
			}
			if math.Abs(f) >= numericDateBound && got*f <= 0 {
				t.Fatalf("%s %v clamped to %v, the other side of the epoch", name, f, got)
			}
		}
	})
}
