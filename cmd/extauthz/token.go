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
// real tokens come from the identity provider. iss and aud are the flags',
// else those of --config (serve's config file: its issuer and first
// audience); with none of --config, $EXTAUTHZ_CONFIG, --issuer and
// --audience, those of the quick start's examples/config.yaml when it is
// there (said on stderr); otherwise an error.
func runToken(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz token [flags]")
		fmt.Fprintln(stderr, "Prints a signed test bearer token (quick start and tests only: the default key is published).")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", configFlagUsage+" (--issuer: its issuer, --audience: its first audience)")
	keyFile := fs.String("key", "examples/TEST-ONLY-signing-key.jwk.json", "private JWK to sign with (RS256/ES256; when absent, the file of that name beside --config's)")
	iss := fs.String("issuer", "", "iss claim (default: the --config issuer)")
	aud := fs.String("audience", "", "aud claim, comma-separated for several (default: the --config first audience)")
	sub := fs.String("sub", "alice", "sub claim")
	ttl := fs.Duration("ttl", time.Hour, "lifetime; negative mints an expired token")
	extra := claimFlag{}
	fs.Var(extra, "claim", `extra claim NAME=VALUE (repeatable; VALUE is JSON when it parses: groups=["a","b"], level=3, admin=true; else a string)`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bad := func(err error) error { return &exitError{code: 2, err: fmt.Errorf("token: %w", err)} }
	if fs.NArg() > 0 {
		return bad(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	set := setFlags(fs)
	if *configFile == "" && os.Getenv("EXTAUTHZ_CONFIG") == "" && !set["issuer"] && !set["audience"] {
		// The token signs with the published test key by default: with
		// nothing to go on, mint one for the quick start (as the e2e rig
		// and README's first commands do), and say so.
		if _, err := os.Stat(quickStartConfig); err == nil {
			*configFile = quickStartConfig
			fmt.Fprintf(stderr, "extauthz token: no --config, --issuer or --audience: using the quick start's %s\n", quickStartConfig)
		}
	}
	cfg, cfgFile, err := toolConfig(*configFile, os.Getenv)
	if err != nil {
		return bad(err)
	}
	if !set["key"] {
		*keyFile = defaultKey(*keyFile, cfgFile)
	}
	if cfg != nil && !set["issuer"] {
		*iss = cfg.Issuer
	}
	if cfg != nil && !set["audience"] {
		*aud = cfg.Audiences[0]
	}
	var auds []string
	for _, a := range strings.Split(*aud, ",") {
		if a = strings.TrimSpace(a); a != "" {
			auds = append(auds, a)
		}
	}
	switch {
	case *iss == "":
		return bad(errors.New("--issuer is required (or --config FILE: serve's config, whose issuer is used)"))
	case len(auds) == 0:
		return bad(errors.New("--audience is required (or --config FILE: serve's config, whose first audience is used)"))
	}
	b, err := os.ReadFile(*keyFile)
	if err != nil {
		return bad(err)
	}
	var key jose.JSONWebKey
	if err := json.Unmarshal(b, &key); err != nil {
		return bad(fmt.Errorf("%s: %w", *keyFile, err))
	}
	if key.IsPublic() {
		return bad(fmt.Errorf("%s: a public key cannot sign", *keyFile))
	}
	now := time.Now()
	claims := map[string]any{
		"iss": *iss, "sub": *sub, "aud": auds,
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(*ttl).Unix(),
	}
	for k, v := range extra {
		claims[k] = v
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
