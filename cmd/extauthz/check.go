package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// offlineVerifier stands in for the identity provider in `extauthz check`
// when no --jwks-file is given: any bearer token maps to one configured
// principal. It is never used by serve.
type offlineVerifier struct{ p extauthz.Principal }

func (v offlineVerifier) Verify(context.Context, string) (*extauthz.Principal, error) {
	p := v.p
	return &p, nil
}

// runCheck decides one captured HTTP request offline, exactly as serve would,
// and prints the decision. Exit 0 allow, 1 deny (or ask), 2 bad input.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz check [flags] REQUEST.json   (one captured request; - for stdin)")
		fs.PrintDefaults()
	}
	policyFile := fs.String("policy", "examples/policy.yaml", "policy YAML file")
	serverID := fs.String("server-id", "payments", "MCP server id, unless the request names one with --context-extension")
	issuer := fs.String("issuer", "https://idp.example.com", "issuer")
	var aud listFlag
	fs.Var(&aud, "audience", "accepted audience (repeatable; default https://mcp.example.com/mcp)")
	jwks := fs.String("jwks-file", "", "verify the request's bearer token against this JWKS; without it any token maps to --sub")
	sub := fs.String("sub", "offline-check", "principal sub when tokens are not verified")
	asJSON := fs.Bool("json", false, "print the decision as one JSON object")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2}
	}
	if len(aud) == 0 {
		aud = listFlag{"https://mcp.example.com/mcp"}
	}
	bad := func(err error) error { return &exitError{code: 2, err: err} }

	src, err := os.ReadFile(*policyFile)
	if err != nil {
		return bad(err)
	}
	lp, err := extauthz.CompilePolicy(*policyFile, src)
	if err != nil {
		var ce *policy.CompileError
		if errors.As(err, &ce) {
			return bad(fmt.Errorf("%s", strings.TrimSpace(ce.Error())))
		}
		return bad(err)
	}
	var in []byte
	if name := fs.Arg(0); name == "-" {
		in, err = io.ReadAll(os.Stdin)
	} else {
		in, err = os.ReadFile(name)
	}
	if err != nil {
		return bad(err)
	}
	capt, err := extauthz.ParseCapturedRequest([]byte(strings.TrimSpace(string(in))))
	if err != nil {
		return bad(err)
	}
	var verifier extauthz.TokenVerifier = offlineVerifier{extauthz.Principal{
		Issuer: *issuer, Subject: *sub, Audience: aud[0], Claims: map[string]any{"iss": *issuer, "sub": *sub},
	}}
	if *jwks != "" {
		ks, err := extauthz.LoadJWKS(*jwks)
		if err != nil {
			return bad(err)
		}
		if verifier, err = extauthz.NewOIDCVerifier(extauthz.OIDCConfig{Issuer: *issuer, Audiences: aud, KeySet: ks}); err != nil {
			return bad(err)
		}
	}
	store := &extauthz.PolicyStore{}
	store.Store(lp)
	d := (&extauthz.Decider{ServerID: *serverID, Verifier: verifier, Policies: store, Limits: mcpparse.DefaultLimits()}).
		Decide(ctx, capt.Request())
	if err := printDecision(stdout, d, *asJSON); err != nil {
		return err
	}
	if !d.Allowed() {
		return &exitError{code: 1}
	}
	return nil
}

func printDecision(w io.Writer, d *extauthz.Decision, asJSON bool) error {
	fields := [][2]string{
		{"decision", d.Decision.String()},
		{"reason", string(d.Reason)},
		{"rule_id", d.RuleID},
		{"server", d.Server},
		{"method", d.Method},
		{"target", d.Target},
		{"args_digest", d.ArgsDigest},
		{"request_digest", d.RequestDigest},
		{"policy_version", d.PolicyVersion},
	}
	if asJSON {
		m := make(map[string]string, len(fields))
		for _, f := range fields {
			m[f[0]] = f[1]
		}
		return json.NewEncoder(w).Encode(m)
	}
	for _, f := range fields {
		if _, err := fmt.Fprintf(w, "%-15s %s\n", f[0]+":", f[1]); err != nil {
			return err
		}
	}
	return nil
}
