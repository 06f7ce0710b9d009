package extauthz

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// case2Line is one line of ../shared/cases/cases-2.jsonl or cases-3.jsonl
// (the same members).
type case2Line struct {
	ID         string          `json:"id"`
	Request    json.RawMessage `json:"request"`
	PolicyYAML *string         `json:"policy_yaml"`
	Setup      struct {
		JWKSExtraKeys []json.RawMessage `json:"jwks_extra_keys"`
	} `json:"setup"`
	Want *case2Want `json:"want"`
}

// case2Want is a line's machine-checkable expectation.
type case2Want struct {
	Allow                *bool           `json:"allow"`
	Status               int             `json:"status"`
	Reason               decision.Reason `json:"reason"`
	UpstreamMustNotCarry []string        `json:"upstream_must_not_carry"`
}

func loadCases2(t *testing.T) []case2Line { return loadCaseLines(t, "cases-2.jsonl") }

// loadCaseLines reads ../shared/cases/FILE, one case2Line a line.
func loadCaseLines(t *testing.T, file string) []case2Line {
	t.Helper()
	var out []case2Line
	for _, l := range testkit.JSONLines(t, filepath.Join(sharedDir, "cases", file)) {
		var c case2Line
		l.Decode(t, &c)
		out = append(out, c)
	}
	return out
}

// TestCases2 replays every line of ../shared/cases/cases-2.jsonl against a
// real gRPC server, under the line's policy_yaml (or the reference policy,
// server payments), with tokens from a loopback identity provider that
// also publishes the line's extra keys. A line without a machine-checkable
// want fails.
func TestCases2(t *testing.T) {
	k := testkit.NewKey(t, "k1")
	for _, c := range loadCases2(t) {
		t.Run(c.ID, func(t *testing.T) {
			if failed := runCase2(t, k, c); failed != "" {
				t.Error(failed)
			}
		})
	}
}

// TestCases3 replays ../shared/cases/cases-3.jsonl as TestCases2 does
// cases-2, with its token placeholders {{TOKEN_OK_TYP:T}} and
// {{TOKEN_OK_WITH:{...}}}.
func TestCases3(t *testing.T) {
	k := testkit.NewKey(t, "k1")
	for _, c := range loadCaseLines(t, "cases-3.jsonl") {
		t.Run(c.ID, func(t *testing.T) {
			if failed := runCase2(t, k, c); failed != "" {
				t.Error(failed)
			}
		})
	}
}

// expandTokens replaces the token placeholders of cases-2 and cases-3 in
// val with tokens k signs for issuer: TOKEN_OK, TOKEN_OK_WITH_CNF_JKT,
// TOKEN_OK_TYP:T (JOSE header typ T) and TOKEN_OK_WITH:{...} (claims added
// or replaced). An unknown placeholder fails t.
func expandTokens(t *testing.T, k *testkit.Key, issuer, val string) string {
	t.Helper()
	var out strings.Builder
	for {
		i := strings.Index(val, "{{")
		if i < 0 {
			out.WriteString(val)
			return out.String()
		}
		out.WriteString(val[:i])
		val = val[i+2:]
		claims := testkit.ClaimsFor(issuer)
		typ := "JWT"
		switch {
		case strings.HasPrefix(val, "TOKEN_OK_WITH_CNF_JKT}}"):
			claims["cnf"] = map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
			val = val[len("TOKEN_OK_WITH_CNF_JKT}}"):]
		case strings.HasPrefix(val, "TOKEN_OK}}"):
			val = val[len("TOKEN_OK}}"):]
		case strings.HasPrefix(val, "TOKEN_OK_TYP:"):
			end := strings.Index(val, "}}")
			if end < 0 {
				t.Fatalf("unterminated placeholder in %q", val)
			}
			typ, val = val[len("TOKEN_OK_TYP:"):end], val[end+2:]
		case strings.HasPrefix(val, "TOKEN_OK_WITH:"):
			dec := json.NewDecoder(strings.NewReader(val[len("TOKEN_OK_WITH:"):]))
			var with map[string]any
			if err := dec.Decode(&with); err != nil {
				t.Fatalf("TOKEN_OK_WITH: %v", err)
			}
			rest := val[len("TOKEN_OK_WITH:")+int(dec.InputOffset()):]
			if !strings.HasPrefix(rest, "}}") {
				t.Fatalf("unterminated placeholder in %q", val)
			}
			for name, v := range with {
				claims[name] = v
			}
			val = rest[2:]
		default:
			t.Fatalf("unknown placeholder {{%.40s", val)
		}
		out.WriteString(testkit.SignJWS(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.Priv, KeyID: k.Kid}},
			(&jose.SignerOptions{}).WithType(jose.ContentType(typ)), claims))
	}
}

// runCase2 runs one line and returns what went wrong, or "".
func runCase2(t *testing.T, k *testkit.Key, c case2Line) string {
	t.Helper()
	w := c.Want
	if w == nil || w.Allow == nil {
		t.Fatalf("%s has no machine-checkable want.allow", c.ID)
	}
	if !*w.Allow && w.Status == 0 {
		t.Fatalf("%s: a denial must give want.status", c.ID)
	}
	if w.Reason != "" {
		if _, ok := outcomes[w.Reason]; !ok {
			t.Fatalf("%s: want.reason %q is not in the closed set", c.ID, w.Reason)
		}
	}

	store := referencePolicy(t)
	if c.PolicyYAML != nil {
		lp, err := decision.CompilePolicy(c.ID+".yaml", []byte(*c.PolicyYAML))
		if err != nil {
			return "policy_yaml: " + err.Error()
		}
		store = &decision.PolicyStore{}
		store.Store(lp)
	}
	// The provider publishes the test key and, verbatim, the extra key-set
	// entries the case sets up (which need not be keys go-jose can
	// represent, such as X25519).
	idp := testkit.NewIdP(t, k)
	idp.SetExtraKeys(c.Setup.JWKSExtraKeys...)
	issuer := idp.Issuer()
	v, err := bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: issuer, Audiences: []string{testAudience}})
	if err != nil {
		return "verifier: " + err.Error()
	}
	if err := v.Warm(t.Context()); err != nil {
		t.Logf("warm: %v", err) // the Check below decides
	}
	// want.status is the HTTP error of each line: it runs under
	// --denial-status http-error; TestDenialStatusTable covers auto.
	srv := newTestServer(store, v, nil)
	srv.Responder.DenialStatus = DenialStatusHTTPError
	client := startGRPC(t, srv)

	capt, err := capture.Parse(c.Request)
	if err != nil {
		t.Fatal(err)
	}
	for name, val := range capt.Headers {
		capt.Headers[name] = expandTokens(t, k, issuer, val)
	}
	resp := check(t, client, capt.CheckRequest(true))

	if ok := resp.GetOkResponse(); ok != nil {
		if !*w.Allow {
			return "allowed; want " + string(w.Reason) + " denial"
		}
		for _, name := range w.UpstreamMustNotCarry {
			removed := false
			for _, r := range ok.GetHeadersToRemove() {
				removed = removed || strings.EqualFold(r, name)
			}
			for _, h := range ok.GetHeaders() {
				if strings.EqualFold(h.GetHeader().GetKey(), name) {
					removed = false
				}
			}
			if !removed {
				return "upstream would carry client header " + name
			}
		}
		return ""
	}
	d, status := parseDenial(t, resp)
	if *w.Allow {
		return "denied " + d.Error.Data.Reason + "; want allowed"
	}
	if status != w.Status || (w.Reason != "" && decision.Reason(d.Error.Data.Reason) != w.Reason) {
		return fmt.Sprintf("got %s %d; want %s %d", d.Error.Data.Reason, status, w.Reason, w.Status)
	}
	return ""
}
