package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// runToken mints a signed JWT access token from a private JWK. It exists for
// the quick-start and tests, with the example key that is public knowledge;
// real tokens come from the identity provider.
func runToken(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("key", "examples/TEST-ONLY-signing-key.jwk.json", "private JWK to sign with (RS256/ES256)")
	iss := fs.String("issuer", "https://idp.example.com", "iss claim")
	aud := fs.String("audience", "https://mcp.example.com/mcp", "aud claim (comma-separated for several)")
	sub := fs.String("sub", "alice", "sub claim")
	ttl := fs.Duration("ttl", time.Hour, "lifetime; negative mints an expired token")
	var extra listFlag
	fs.Var(&extra, "claim", "extra claim NAME=VALUE (repeatable; VALUE parsed as JSON when it is valid JSON)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	b, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	var key jose.JSONWebKey
	if err := json.Unmarshal(b, &key); err != nil {
		return fmt.Errorf("%s: %w", *keyFile, err)
	}
	if key.IsPublic() {
		return fmt.Errorf("%s: a public key cannot sign", *keyFile)
	}
	now := time.Now()
	claims := map[string]any{
		"iss": *iss, "sub": *sub, "aud": strings.Split(*aud, ","),
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(*ttl).Unix(),
	}
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return errors.New("--claim wants NAME=VALUE")
		}
		var j any
		if json.Unmarshal([]byte(v), &j) == nil {
			claims[k] = j
		} else {
			claims[k] = v
		}
	}
	tok, err := SignJWT(&key, claims)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// SignJWT signs claims as a compact JWS with key's algorithm (RS256 when the
// key names none), kid and typ JWT.
func SignJWT(key *jose.JSONWebKey, claims map[string]any) (string, error) {
	return signTyped(key, "JWT", claims)
}
