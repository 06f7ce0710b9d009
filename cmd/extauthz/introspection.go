package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
)

// Token modes (--token-mode).
const (
	tokenModeJWT           = "jwt"           // JWT access tokens, verified by signature
	tokenModeIntrospection = "introspection" // opaque tokens, by RFC 7662 introspection
	tokenModeBoth          = "both"          // a token of JWT shape as a JWT, any other by introspection
)

// introspectionConfig is the --token-mode and --introspection-* flags.
type introspectionConfig struct {
	Mode             string
	Endpoint         string
	ClientID         string
	ClientSecretFile string
	ClientKeyFile    string
	CacheTTL         time.Duration
	Timeout          time.Duration
}

func init() {
	pathFlags["introspection-client-secret-file"] = true
	pathFlags["introspection-client-key-file"] = true
}

func (c *introspectionConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Mode, "token-mode", tokenModeJWT, "access tokens: jwt (JWTs, verified by signature), introspection (opaque tokens, asked of the issuer's RFC 7662 introspection endpoint) or both (a token of JWT shape as a JWT, any other by introspection)")
	fs.StringVar(&c.Endpoint, "introspection-endpoint", "", "RFC 7662 introspection endpoint; empty: introspection_endpoint of the issuer's RFC 8414 metadata (else its OpenID configuration)")
	fs.StringVar(&c.ClientID, "introspection-client-id", "", "client id this service authenticates to the introspection endpoint with")
	fs.StringVar(&c.ClientSecretFile, "introspection-client-secret-file", "", "file with the client secret (client_secret_basic), read at every call (a rotated Secret applies without a restart)")
	fs.StringVar(&c.ClientKeyFile, "introspection-client-key-file", "", "private JWK of the client (private_key_jwt, RFC 7523), read at start")
	fs.DurationVar(&c.CacheTTL, "introspection-cache-ttl", bearer.DefaultIntrospectionCacheTTL, "longest an introspection answer is reused (an active token's at most until its exp); negative: never")
	fs.DurationVar(&c.Timeout, "introspection-timeout", bearer.DefaultIntrospectionTimeout, "longest wait for the introspection endpoint; slower is idp_unavailable")
}

// check validates the flags (reading no file): every problem
// (joinProblems: nil, one, or a configErrors). With an unknown
// --token-mode, the --introspection-* flags given are checked too, as
// for introspection (the modes they belong to need the same).
func (c *introspectionConfig) check() error {
	var errs []error
	var given []string
	for _, f := range []struct{ name, v string }{{"endpoint", c.Endpoint}, {"client-id", c.ClientID},
		{"client-secret-file", c.ClientSecretFile}, {"client-key-file", c.ClientKeyFile}} {
		if f.v != "" {
			given = append(given, "--introspection-"+f.name)
		}
	}
	who := "--token-mode " + c.Mode
	switch c.Mode {
	case tokenModeJWT:
		if len(given) > 0 {
			return fmt.Errorf("%s need --token-mode introspection or both", strings.Join(given, ", "))
		}
		return nil
	case tokenModeIntrospection, tokenModeBoth:
	default:
		errs = append(errs, fmt.Errorf("--token-mode %q: want jwt, introspection or both", c.Mode))
		if len(given) == 0 {
			return joinProblems(errs...)
		}
		who = "introspection"
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New(who+" needs --introspection-client-id (RFC 7662: the endpoint authenticates its callers)"))
	}
	if (c.ClientSecretFile == "") == (c.ClientKeyFile == "") {
		errs = append(errs, errors.New(who+" needs --introspection-client-secret-file or --introspection-client-key-file, one of them"))
	}
	if c.Endpoint != "" {
		if err := bearer.CheckIntrospectionEndpoint(c.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("--introspection-endpoint: %w", err))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("--introspection-timeout must be positive"))
	}
	return joinProblems(errs...)
}

// introspectionVerifier builds the introspection verifier of cfg; nil
// in jwt mode.
func introspectionVerifier(cfg *Config, m *metrics.Metrics) (*bearer.IntrospectionVerifier, error) {
	c := cfg.Introspection
	if c.Mode == tokenModeJWT || c.Mode == "" {
		return nil, nil
	}
	ic := bearer.IntrospectionConfig{Issuer: cfg.Issuer, Audiences: cfg.Audiences, Endpoint: c.Endpoint, ClientID: c.ClientID,
		Timeout: c.Timeout, CacheTTL: c.CacheTTL, OnResult: m.IntrospectionResult}
	if c.ClientSecretFile != "" {
		ic.ClientSecretFile = c.ClientSecretFile // read at every call: rotation without a restart
	} else {
		var err error
		if ic.ClientKey, err = bearer.ReadClientKeyFile(c.ClientKeyFile); err != nil {
			return nil, fmt.Errorf("--introspection-client-key-file: %w", err)
		}
	}
	v, err := bearer.NewIntrospectionVerifier(ic)
	if err != nil {
		return nil, fmt.Errorf("--token-mode %s: %w", c.Mode, err)
	}
	return v, nil
}
