package extauthz

import (
	"encoding/base64"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// maxUnauthAlloc is what one Check may allocate for a request without a
// valid token, whatever its body (issue 7: a request nobody vouched for).
const maxUnauthAlloc = 64 << 10

// unauthBodies are hostile bodies up to the 1 MiB default limit.
func unauthBodies() map[string]string {
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"a":`
	return map[string]string{
		"small":              `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"100k-empty-objects": head + `[` + strings.Repeat(`{},`, 100_000) + `{}]}}}`,
		"deep-nesting":       head + strings.Repeat(`[`, 200_000) + strings.Repeat(`]`, 200_000) + `}}}`,
		"50k-keys":           `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{` + manyArgKeys(50_000) + `}}}`,
		"256KiB-string":      head + `"` + strings.Repeat("x", 256<<10) + `"}}}`,
		"long-tool-name":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("\ufdfa", 87_000) + `"}}`,
		"id-last":            `{"method":"tools/call","params":{"name":"search","arguments":{"a":[` + strings.Repeat(`{},`, 100_000) + `{}]}},"jsonrpc":"2.0","id":99}`,
	}
}

func manyArgKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(itoa(i))
		b.WriteString(`":0`)
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

// unauthRig is a server that verifies tokens against a loopback identity
// provider, and Authorization values it refuses (unauthHeaders).
func unauthRig(t testing.TB) (*Server, map[string]string) {
	k1 := testkit.NewKey(t, "k1")
	idp := testkit.NewIdP(t, k1)
	srv := newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), nil)
	return srv, unauthHeaders(t, idp, k1)
}

// unauthHeaders are Authorization values without a valid token, of every
// shape that could make the refusal costly (issue 15, E07): none,
// malformed, signed by another key; separators by the tens of thousands
// (dots, spaces, commas, '='); segments past MaxTokenBytes; and tokens just
// under it that pass every check but the signature, or fail one only after
// their JSON is read (deep nesting, many members or audiences, escapes,
// a long iss, another typ).
func unauthHeaders(t testing.TB, idp *testkit.IdP, k1 *testkit.Key) map[string]string {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	other := testkit.NewKey(t, "other")
	foreign := other.Sign(t, idp.Claims())
	exp := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	good := `"iss":"` + idp.Issuer() + `","sub":"alice","exp":` + exp
	claims := good + `,"aud":"` + testAudience + `"`
	hdr := enc(`{"alg":"RS256","kid":"k1","typ":"JWT"}`)
	sig := enc(strings.Repeat("s", 256))
	// room for the payload of a token just under the limit
	fill := func(prefix, unit, suffix string) string {
		n := (bearer.MaxTokenBytes-len(hdr)-len(sig)-2)*3/4 - len(prefix) - len(suffix) - 8
		return prefix + strings.Repeat(unit, n/len(unit)) + suffix
	}
	padded := func(typ string) map[string]any {
		c := idp.Claims()
		c["pad"] = strings.Repeat("x", (bearer.MaxTokenBytes-1200)*3/4)
		return c
	}
	maxTyped := func(typ string) string {
		return testkit.SignJWS(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k1.Priv, KeyID: "k1"}},
			(&jose.SignerOptions{}).WithType(jose.ContentType(typ)), padded(typ))
	}
	h := map[string]string{
		"missing":   "",
		"malformed": "Bearer not-a-jwt",
		"foreign":   "Bearer " + foreign,

		"60k-dots":             "Bearer " + strings.Repeat(".", 60_000),
		"30k-parts":            "Bearer " + strings.Repeat("a.", 30_000) + "a",
		"60k-spaces-before":    "Bearer" + strings.Repeat(" ", 60_000) + foreign,
		"60k-spaces-after":     "Bearer " + foreign + strings.Repeat(" ", 60_000),
		"30k-commas":           "Bearer " + strings.Repeat("a,", 30_000),
		"4k-credentials":       strings.Repeat("Bearer x.y.z, ", 4_000),
		"60k-equals":           "Bearer " + strings.Repeat("=", 60_000),
		"60k-tabs":             "Bearer\t" + strings.Repeat("\t", 60_000) + foreign,
		"non-ascii":            "Bearer " + strings.Repeat("\u00e9", 30_000),
		"dpop-scheme":          "DPoP " + strings.Repeat(".", 60_000),
		"huge-header-segment":  "Bearer " + enc(`{"alg":"RS256","x":"`+strings.Repeat("x", 45_000)+`"}`) + "." + enc(`{`+claims+`}`) + "." + sig,
		"huge-payload-segment": "Bearer " + hdr + "." + enc(`{`+claims+`,"x":"`+strings.Repeat("x", 45_000)+`"}`) + "." + sig,
		"huge-signature":       "Bearer " + hdr + "." + enc(`{`+claims+`}`) + "." + strings.Repeat("A", 60_000),

		"max-tampered":        "Bearer " + tamper(k1.Sign(t, padded(""))),
		"max-foreign":         "Bearer " + other.Sign(t, padded("")),
		"max-approval-typ":    "Bearer " + maxTyped("mcp-approval+jwt"),
		"max-dpop-typ":        "Bearer " + maxTyped("application/DPoP+JWT"),
		"max-arrays":          "Bearer " + hdr + "." + enc(fill(`{`+claims+`,"x":[`, "[],", `[]]}`)) + "." + sig,
		"max-nested-payload":  "Bearer " + hdr + "." + enc(fill(`{`+claims+`,"x":`+strings.Repeat("[", 31), "0,", "0"+strings.Repeat("]", 31)+`}`)) + "." + sig,
		"max-too-deep":        "Bearer " + hdr + "." + enc(`{`+claims+`,"x":`+strings.Repeat("[", 5_900)+strings.Repeat("]", 5_900)+`}`) + "." + sig,
		"max-deep-header":     "Bearer " + enc(`{"alg":"RS256","x":`+strings.Repeat("[", 5_900)+strings.Repeat("]", 5_900)+`}`) + "." + enc(`{`+claims+`}`) + "." + sig,
		"max-header-members":  "Bearer " + enc(`{"alg":"RS256"`+strings.Repeat(`,"a":1`, 1_950)+`}`) + "." + enc(`{`+claims+`}`) + "." + sig,
		"max-audiences":       "Bearer " + hdr + "." + enc(fill(`{`+good+`,"aud":[`, `"",`, `""]}`)) + "." + sig,
		"max-escaped-aud":     "Bearer " + hdr + "." + enc(fill(`{`+good+`,"aud":[`, `"\/",`, `""]}`)) + "." + sig,
		"max-members":         "Bearer " + hdr + "." + enc(fill(`{`+claims, `,"a":1`, `}`)) + "." + sig,
		"max-escaped-members": "Bearer " + hdr + "." + enc(fill(`{`+claims, `,"\/":1`, `}`)) + "." + sig,
		"max-iss":             "Bearer " + hdr + "." + enc(fill(`{"iss":"`, "x", `"}`)) + "." + sig,
		"max-escaped-iss":     "Bearer " + hdr + "." + enc(fill(`{"iss":"`, `\u0078`, `"}`)) + "." + sig,
	}
	for name, v := range h {
		_, tok, _ := strings.Cut(v, " ")
		if strings.HasPrefix(name, "max-") && (len(tok) > bearer.MaxTokenBytes || len(tok) < bearer.MaxTokenBytes*7/8) {
			t.Fatalf("%s: a token of %d bytes, want just under %d", name, len(tok), bearer.MaxTokenBytes)
		}
	}
	return h
}

func unauthRequest(body, authz string) *authv3.CheckRequest {
	c := postReq(body)
	if authz == "" {
		delete(c.Headers, "authorization")
	} else {
		c.Headers["authorization"] = authz
	}
	return c.CheckRequest(true)
}

// TestUnauthenticatedCost: a request without a valid token is denied with
// its id (or null) while allocating at most 64 KiB, whatever its body and
// whatever its Authorization header holds: no strict parse, canonical form
// or digest is paid for it, and a token is counted before it is split and
// bounded before it is decoded.
func TestUnauthenticatedCost(t *testing.T) {
	srv, tokens := unauthRig(t)
	for name, body := range unauthBodies() {
		for tname, authz := range tokens {
			t.Run(name+"/"+tname, func(t *testing.T) {
				req := unauthRequest(body, authz)
				resp, _ := srv.Check(t.Context(), req) // warm: key set fetched, pools filled
				d, status := parseDenial(t, resp)
				if status != 401 {
					t.Fatalf("status %d %s", status, d.Error.Data.Reason)
				}
				if want := map[string]string{"id-last": "99", "long-tool-name": "1"}[name]; want == "" && string(d.ID) != "1" || want != "" && string(d.ID) != want {
					t.Errorf("id %s", d.ID)
				}
				const runs = 20
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range runs {
					_, _ = srv.Check(t.Context(), req)
				}
				runtime.ReadMemStats(&after)
				per := (after.TotalAlloc - before.TotalAlloc) / runs
				if per > maxUnauthAlloc {
					t.Errorf("%d-byte body, %d-byte Authorization: %d bytes allocated per Check, want <= %d", len(body), len(authz), per, maxUnauthAlloc)
				}
				t.Logf("%d bytes per Check (%s)", per, d.Error.Data.Reason)
			})
		}
	}
}

// BenchmarkCheckUnauthenticated measures a Check refused for its token
// (signed by an unknown key) per body shape; B/op must stay <= 64 KiB.
func BenchmarkCheckUnauthenticated(b *testing.B) {
	srv, tokens := unauthRig(b)
	bodies := unauthBodies()
	for _, name := range []string{"small", "100k-empty-objects", "deep-nesting", "50k-keys", "256KiB-string"} {
		b.Run(name, func(b *testing.B) {
			req := unauthRequest(bodies[name], tokens["foreign"])
			b.SetBytes(int64(len(bodies[name])))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = srv.Check(b.Context(), req)
			}
		})
	}
}
