package k8s

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// thumbprint computes the RFC 7638 SHA-256 thumbprint of a JWK (section
// 3.2: the required public members in lexicographic order, no whitespace),
// here apart from go-jose and from the chart's template, as their oracle.
func thumbprint(t *testing.T, jwk map[string]string) []byte {
	t.Helper()
	var members []string
	switch jwk["kty"] {
	case "RSA":
		members = []string{"e", "kty", "n"}
	case "EC":
		members = []string{"crv", "kty", "x", "y"}
	case "OKP":
		members = []string{"crv", "kty", "x"}
	case "oct":
		members = []string{"k", "kty"}
	default:
		t.Fatalf("kty %q", jwk["kty"])
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		v, _ := json.Marshal(jwk[m])
		b.WriteString(`"` + m + `":` + string(v))
	}
	b.WriteByte('}')
	sum := sha256.Sum256([]byte(b.String()))
	return sum[:]
}

// publishedKeys returns, by file, the thumbprints of the keys of
// examples/TEST-ONLY-*.jwk.json.
func publishedKeys(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../examples/TEST-ONLY-*.jwk.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/TEST-ONLY-*.jwk.json: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		var jwk map[string]string
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &jwk); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimPrefix(filepath.ToSlash(f), "../")] = thumbprint(t, jwk)
	}
	return out
}

// TestChartKnowsThePublishedTestKeys: the chart's list of published test
// keys and the service's (internal/testkeys/published.txt) both name every
// examples/TEST-ONLY-*.jwk.json by its thumbprint, and nothing else; the
// service's also names the cursor key examples/TEST-ONLY-cursor-key (by the
// thumbprint of its oct JWK), which the chart never inlines (a Secret).
func TestChartKnowsThePublishedTestKeys(t *testing.T) {
	want := map[string]string{}
	for f, tp := range publishedKeys(t) {
		want[f] = hex.EncodeToString(tp)
	}
	helpers, err := os.ReadFile(filepath.Join(chartDir, "templates", "_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)define "mcp-extauthz.publishedTestKeys" -}}\n(.*?)\n\{\{- end`).FindSubmatch(helpers)
	if m == nil {
		t.Fatal(`_helpers.tpl defines no "mcp-extauthz.publishedTestKeys"`)
	}
	chart := map[string]string{}
	for _, l := range strings.Split(string(m[1]), "\n") {
		tp, file, _ := strings.Cut(l, " ")
		chart[file] = tp
	}
	if !mapsEqual(chart, want) {
		t.Errorf("chart lists %v, want %v", chart, want)
	}
	txt, err := os.ReadFile("../internal/testkeys/published.txt")
	if err != nil {
		t.Fatal(err)
	}
	service := map[string]string{}
	for _, l := range strings.Split(string(txt), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		tp, file, _ := strings.Cut(l, " ")
		raw, err := base64.RawURLEncoding.DecodeString(tp)
		if err != nil {
			t.Fatalf("published.txt: %q: %v", tp, err)
		}
		service[file] = hex.EncodeToString(raw)
	}
	cursorKey, err := os.ReadFile("../examples/TEST-ONLY-cursor-key")
	if err != nil {
		t.Fatal(err)
	}
	wantService := map[string]string{}
	for f, tp := range want {
		wantService[f] = tp
	}
	for _, l := range strings.Split(string(cursorKey), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(raw) != 32 {
			t.Fatalf("examples/TEST-ONLY-cursor-key: not base64 of 32 bytes: %v", err)
		}
		wantService["examples/TEST-ONLY-cursor-key"] = hex.EncodeToString(thumbprint(t, map[string]string{"kty": "oct", "k": base64.RawURLEncoding.EncodeToString(raw)}))
	}
	want = wantService
	if !mapsEqual(service, want) {
		t.Errorf("internal/testkeys/published.txt lists %v, want %v", service, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestChartRefusesPublishedTestKeys: an inline JWKS holding a published
// test key, however it is written (another kid, members reordered, no alg),
// fails the render with a message naming the key and the setting, unless
// testOnly.allowPublishedTestKeys, which also reaches the service as
// EXTAUTHZ_ALLOW_TEST_KEYS and warns in NOTES.txt. Fresh keys render.
func TestChartRefusesPublishedTestKeys(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var signing map[string]string
	if err := json.Unmarshal([]byte(read("../examples/TEST-ONLY-signing-key.jwk.json")), &signing); err != nil {
		t.Fatal(err)
	}
	disguised := `{"keys": [ {"n": "` + signing["n"] + `", "kid": "prod-2026", "e": "AQAB", "kty": "RSA"} ]}`
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edKey, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	pt, err := ecKey.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "example-test-key-1", "n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "example-approver-key-1", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])},
		{"kty": "OKP", "crv": "Ed25519", "x": b64(edKey)},
	}})
	withFresh := func(k string) string {
		var set map[string][]any
		_ = json.Unmarshal(fresh, &set)
		var one map[string][]any
		if err := json.Unmarshal([]byte(k), &one); err != nil {
			t.Fatal(err)
		}
		set["keys"] = append(set["keys"], one["keys"]...)
		b, _ := json.Marshal(set)
		return string(b)
	}

	refused := []struct {
		name, give, want string
	}{
		{"examples/jwks.json", read("../examples/jwks.json"), `auth.jwks.inline holds the published test key "example-test-key-1" (RFC 7638 thumbprint 846e7334b02cd9470b9c460074edba977ab91c24c0ce79d31f0d4bed708582fe; its private half is examples/TEST-ONLY-signing-key.jwk.json`},
		{"examples/approver-jwks.json", read("../examples/approver-jwks.json"), "examples/TEST-ONLY-approver-key.jwk.json"},
		{"the signing key under another kid, reordered, among fresh keys", withFresh(disguised), `"prod-2026"`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := render(loadChart(t), map[string]any{"auth": map[string]any{"jwks": map[string]any{"inline": tt.give}}})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "testOnly.allowPublishedTestKeys=true") {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}

	accepted := []struct {
		name, give string
		allow      bool
	}{
		{"fresh RSA, EC and Ed25519 keys under the test keys' kids", string(fresh), false},
		{"the published keys with testOnly.allowPublishedTestKeys", withFresh(read("../examples/jwks.json")), true},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			vals := map[string]any{"auth": map[string]any{"jwks": map[string]any{"inline": tt.give}}, "testOnly": map[string]any{"allowPublishedTestKeys": tt.allow},
				"replicaCount": float64(1)} // one Pod: its memory state store needs no acknowledgement (a float64, as values files decode)
			out, v, err := render(loadChart(t), vals)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decodeObjects([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			checkRelease(t, o, v)
			got, set := env(container(o.Deployments[0], "extauthz"), "EXTAUTHZ_ALLOW_TEST_KEYS")
			if set != tt.allow || (set && got != "true") {
				t.Errorf("EXTAUTHZ_ALLOW_TEST_KEYS = %q (set %v), want set %v", got, set, tt.allow)
			}
			if warned := strings.Contains(notes(t, vals), "WARNING: testOnly.allowPublishedTestKeys=true"); warned != tt.allow {
				t.Errorf("NOTES.txt warns %v, want %v", warned, tt.allow)
			}
		})
	}
}

// TestChartCIValuesSayTheyTrustTestKeys: every ci/ file that inlines a
// published test key turns testOnly.allowPublishedTestKeys on with a
// comment that says TEST ONLY, so no one copies it unawares.
func TestChartCIValuesSayTheyTrustTestKeys(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Auth struct {
				JWKS struct{ Inline string } `json:"jwks"`
			}
			TestOnly struct {
				AllowPublishedTestKeys bool `json:"allowPublishedTestKeys"`
			} `json:"testOnly"`
		}
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v.Auth.JWKS.Inline, "example-test-key-1") {
			continue
		}
		if !v.TestOnly.AllowPublishedTestKeys || !strings.Contains(string(raw), "# TEST ONLY") {
			t.Errorf("%s trusts the published test key without testOnly.allowPublishedTestKeys and a TEST ONLY comment", f)
		}
	}
}
