package main

import (
	"errors"
	"flag"
	"fmt"
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

// check validates the flags (reading no file).
func (c *introspectionConfig) check() error {
	switch c.Mode {
	case tokenModeJWT:
		if c.Endpoint != "" || c.ClientID != "" || c.ClientSecretFile != "" || c.ClientKeyFile != "" {
			return errors.New("--introspection-* need --token-mode introspection or both")
		}
		return nil
	case tokenModeIntrospection, tokenModeBoth:
	default:
		return fmt.Errorf("--token-mode %q: want jwt, introspection or both", c.Mode)
	}
	switch {
	case c.ClientID == "":
		return errors.New("--token-mode " + c.Mode + " needs --introspection-client-id (RFC 7662: the endpoint authenticates its callers)")
	case (c.ClientSecretFile == "") == (c.ClientKeyFile == ""):
		return errors.New("--token-mode " + c.Mode + " needs --introspection-client-secret-file or --introspection-client-key-file, one of them")
	case c.Timeout <= 0:
		return errors.New("--introspection-timeout must be positive")
	}
	return nil
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
