package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// runApprove prints an approval (a compact JWS of type mcp-approval+jwt) of
// one request digest for one principal, signed with a private JWK: for
// demos, tests and simple approver integrations. The digest comes from
// --digest, or from the input: an ask denial (error.data.request_digest),
// the output of `extauthz check --json` (request_digest), or a captured
// request whose digest is computed as serve would.
func runApprove(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz approve [flags] [DENIAL.json | CHECK.json | REQUEST.json | -]")
		fmt.Fprintln(stderr, "Prints an approval of the request digest for --sub, to send in x-mcp-approval.")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", configFlagUsage+" (--issuer: its approver-issuer, --audience: its first audience, --token-issuer: its issuer, --server-id: its server-id)")
	keyFile := fs.String("key", "examples/TEST-ONLY-approver-key.jwk.json", "private JWK of the approver")
	iss := fs.String("issuer", "", "iss of the approval: serve's --approver-issuer (default: the --config one)")
	aud := fs.String("audience", "", "aud: the MCP server's resource URI the request was sent to (default: the --config first audience)")
	sub := fs.String("sub", "", "the principal (token sub) the request is approved for (required)")
	digest := fs.String("digest", "", "the request digest (sha256:…); otherwise read from the input")
	approver := fs.String("approver", "", "who approves (the approver claim; default $USER)")
	ttl := fs.Duration("ttl", 10*time.Minute, "lifetime of the approval (serve refuses more than its --approval-max-lifetime)")
	tokenIssuer := fs.String("token-issuer", "", "for a captured request: the iss of the requester's token (default: the --config issuer)")
	serverID := fs.String("server-id", "", "for a captured request: the MCP server id (default: the --config server-id)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bad := func(err error) error { return &exitError{code: 2, err: err} }
	cfg, cfgFile, err := toolConfig(*configFile, os.Getenv)
	if err != nil {
		return bad(fmt.Errorf("approve: %w", err))
	}
	if set := setFlags(fs); cfg != nil {
		if !set["issuer"] {
			*iss = cfg.ApproverIssuer
		}
		if !set["audience"] {
			*aud = cfg.Audiences[0]
		}
		if !set["token-issuer"] {
			*tokenIssuer = cfg.Issuer
		}
		if !set["server-id"] {
			*serverID = cfg.ServerID
		}
	}
	switch {
	case *sub == "":
		return bad(errors.New("approve: --sub is required (the principal the request is approved for)"))
	case *iss == "" && cfg != nil:
		return bad(fmt.Errorf("approve: --config %s has no approver-issuer, so that service takes no approvals; give --issuer", cfgFile))
	case *iss == "":
		return bad(errors.New("approve: --issuer is required (serve's --approver-issuer), or --config FILE: serve's config"))
	case *aud == "":
		return bad(errors.New("approve: --audience is required (the MCP server's resource URI), or --config FILE: serve's config"))
	}
	if *approver == "" {
		*approver = os.Getenv("USER")
		if *approver == "" {
			*approver = "approver"
		}
	}
	if *digest == "" {
		if fs.NArg() != 1 {
			fs.Usage()
			return &exitError{code: 2, err: argCountError("approve", "one input (- for stdin) or --digest", fs.Args())}
		}
		var in []byte
		if name := fs.Arg(0); name == "-" {
			in, err = io.ReadAll(stdin)
		} else {
			in, err = os.ReadFile(name)
		}
		if err != nil {
			return bad(err)
		}
		if *digest, err = digestOf(ctx, bytes.TrimSpace(in), *tokenIssuer, *sub, *aud, *serverID); err != nil {
			return bad(err)
		}
	}
	if !strings.HasPrefix(*digest, "sha256:") || len(*digest) != len("sha256:")+64 {
		return bad(fmt.Errorf("approve: digest %q: want sha256:<64 hex digits>", *digest))
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
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	now := time.Now()
	claims := map[string]any{
		"iss": *iss, "aud": *aud, "sub": *sub, "digest": *digest, "approver": *approver,
		"iat": now.Unix(), "exp": now.Add(*ttl).Unix(), "jti": hex.EncodeToString(jti[:]),
	}
	tok, err := signTyped(&key, decision.ApprovalType, claims)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// digestOf finds the request digest in in: a JSON-RPC denial's
// error.data.request_digest, a top-level request_digest, or else in as a
// captured request decided offline for the principal (iss, sub, aud) on
// serverID.
func digestOf(ctx context.Context, in []byte, iss, sub, aud, serverID string) (string, error) {
	var v struct {
		RequestDigest string `json:"request_digest"`
		Error         struct {
			Data struct {
				RequestDigest string `json:"request_digest"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(in, &v); err != nil {
		return "", fmt.Errorf("approve: input is not JSON: %w", err)
	}
	switch {
	case v.Error.Data.RequestDigest != "":
		return v.Error.Data.RequestDigest, nil
	case v.RequestDigest != "":
		return v.RequestDigest, nil
	case iss == "" || serverID == "":
		return "", errors.New("approve: the input holds no request_digest, so it is decided as a captured request, which needs --token-issuer and --server-id (or --config FILE: serve's config)")
	}
	capt, err := capture.Parse(in)
	if err != nil {
		return "", fmt.Errorf("approve: input is neither a denial with request_digest nor a captured request: %w", err)
	}
	capt.Headers["authorization"] = "Bearer " + policytest.PlaceholderToken
	lp, err := decision.CompilePolicy("approve", []byte("default: deny"))
	if err != nil {
		return "", err
	}
	store := &decision.PolicyStore{}
	store.Store(lp)
	decider, err := decision.NewDecider(decision.Config{ServerID: serverID, Policies: store, Limits: mcpparse.DefaultLimits(),
		Verifier: policytest.Verifier{P: policytest.Principal{Issuer: iss, Subject: sub, Audience: aud}}})
	if err != nil {
		return "", err
	}
	d := decider.Decide(ctx, extauthz.RequestFromCheck(capt.CheckRequest(true)))
	if d.RequestDigest == "" || len(d.BatchDigests) > 0 {
		return "", fmt.Errorf("approve: the request has no single request digest (%s)", d.Reason)
	}
	return d.RequestDigest, nil
}

// signTyped signs claims as a compact JWS with key's algorithm (RS256 when
// the key names none), its kid and the JOSE header typ.
func signTyped(key *jose.JSONWebKey, typ string, claims map[string]any) (string, error) {
	alg := jose.SignatureAlgorithm(key.Algorithm)
	if alg == "" {
		alg = jose.RS256
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
