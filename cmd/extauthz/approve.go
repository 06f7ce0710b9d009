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
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// runApprove prints an approval (a compact JWS of type mcp-approval+jwt) of
// one request digest for one principal, signed with a private JWK: for
// demos, tests and simple approver integrations. The digest comes from
// --digest, or from the input: an ask denial (error.data.request_digest),
// the output of `extauthz check --json` (request_digest), or a captured
// request whose digest is computed as serve would. A definition_changed
// ask names the tool's observed definition (error.data.tool_fingerprint,
// in check --addr --json's http_body too), which the approval must name
// in its tooldef claim (decision.Binding): approve takes it from there, or
// from --tooldef; the two must agree. Not done: an offline check decides
// no definition_changed (policytest.Listed), so a captured request gives
// no fingerprint.
func runApprove(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz approve [flags] [DENIAL.json | CHECK.json | REQUEST.json | -]")
		fmt.Fprintln(stderr, "Prints an approval of the request digest for --sub, to send in x-mcp-approval.")
		fmt.Fprintln(stderr, "A definition_changed denial's data.tool_fingerprint (or --tooldef) becomes its tooldef claim: it approves that definition only.")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", configFlagUsage+" (--issuer: its approver-issuer, --audience: its first audience, --token-issuer: its issuer, --server-id: its server-id)")
	keyFile := fs.String("key", "examples/TEST-ONLY-approver-key.jwk.json", "private JWK of the approver (when absent, the file of that name beside --config's)")
	iss := fs.String("issuer", "", "iss of the approval: serve's --approver-issuer (default: the --config one)")
	aud := fs.String("audience", "", "aud: the MCP server's resource URI the request was sent to (default: the --config first audience)")
	sub := fs.String("sub", "", "the principal (token sub) the request is approved for (required)")
	digest := fs.String("digest", "", "the request digest (sha256:…); otherwise read from the input")
	tooldef := fs.String("tooldef", "", "for a definition_changed ask: the fingerprint of the tool's observed definition (tooldef-v2:sha256:…, the denial's data.tool_fingerprint), put in the tooldef claim; otherwise read from the input")
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
	if !setFlags(fs)["key"] {
		*keyFile = defaultKey(*keyFile, cfgFile)
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
		var fp string
		if *digest, fp, err = digestOf(ctx, cfg, bytes.TrimSpace(in), *tokenIssuer, *sub, *aud, *serverID); err != nil {
			return bad(err)
		}
		switch {
		case fp != "" && *tooldef != "" && fp != *tooldef:
			return bad(fmt.Errorf("approve: --tooldef %s is not the definition the denial names (%s): an approval covers the observed one only", *tooldef, fp))
		case fp != "":
			*tooldef = fp
		}
	}
	if *tooldef != "" && !toolpin.Valid(*tooldef) {
		return bad(fmt.Errorf("approve: tooldef %q: want %s:sha256:<64 lowercase hex digits> (a definition_changed denial's data.tool_fingerprint)", *tooldef, toolpin.Version))
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
	if *tooldef != "" {
		claims["tooldef"] = *tooldef
	}
	tok, err := signTyped(&key, decision.ApprovalType, claims)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// denialFields are what approve reads of a JSON-RPC denial body.
type denialFields struct {
	Error struct {
		Data struct {
			RequestDigest   string `json:"request_digest"`
			ToolFingerprint string `json:"tool_fingerprint"`
		} `json:"data"`
	} `json:"error"`
}

// digestOf finds the request digest in in, and the tool fingerprint a
// definition_changed denial names ("" when none): a JSON-RPC denial's
// error.data.request_digest and error.data.tool_fingerprint, or a
// top-level request_digest (check --json) with the denial in http_body
// (check --addr --json), or else in as a captured request decided offline
// for the principal (iss, sub, aud) on serverID, parsed as serve with cfg
// would (its limits and case-sensitive keys: assembleOffline; serve's
// defaults when cfg is nil).
func digestOf(ctx context.Context, cfg *Config, in []byte, iss, sub, aud, serverID string) (digest, tooldef string, err error) {
	var v struct {
		denialFields
		RequestDigest string `json:"request_digest"`
		HTTPBody      string `json:"http_body"`
	}
	if err := json.Unmarshal(in, &v); err != nil {
		return "", "", fmt.Errorf("approve: input is not JSON: %w", err)
	}
	tooldef = v.Error.Data.ToolFingerprint
	if v.HTTPBody != "" && v.Error.Data.RequestDigest == "" {
		var body denialFields
		if json.Unmarshal([]byte(v.HTTPBody), &body) == nil { // a body that is not JSON (a concealed denial) names none
			if d := body.Error.Data.RequestDigest; d != "" && v.RequestDigest != "" && d != v.RequestDigest {
				return "", "", fmt.Errorf("approve: request_digest %s and http_body's %s differ: not one check's output", v.RequestDigest, d)
			}
			tooldef = body.Error.Data.ToolFingerprint
		}
	}
	switch {
	case v.Error.Data.RequestDigest != "":
		return v.Error.Data.RequestDigest, tooldef, nil
	case v.RequestDigest != "":
		return v.RequestDigest, tooldef, nil
	case iss == "" || serverID == "":
		return "", "", errors.New("approve: the input holds no request_digest, so it is decided as a captured request, which needs --token-issuer and --server-id (or --config FILE: serve's config)")
	}
	capt, err := capture.Parse(in)
	if err != nil {
		return "", "", fmt.Errorf("approve: input is neither a denial with request_digest nor a captured request: %w", err)
	}
	capt.Headers["authorization"] = "Bearer " + policytest.PlaceholderToken
	if cfg == nil {
		if cfg, err = offlineConfig("-", policytest.DefaultIssuer, []string{policytest.DefaultAudience}); err != nil {
			return "", "", err
		}
	}
	c := *cfg
	c.Issuer, c.Audiences, c.ServerID = iss, []string{aud}, serverID
	// The digest is the policy's input, whatever the policy decides.
	lp, err := decision.CompilePolicy("approve", []byte("default: deny"))
	if err != nil {
		return "", "", err
	}
	asm, err := assembleOffline(&c, lp, policytest.Verifier{P: policytest.Principal{Issuer: iss, Subject: sub, Audience: aud}}, false, false)
	if err != nil {
		return "", "", fmt.Errorf("approve: %w", err)
	}
	decider := asm.Decider
	d := decider.Decide(ctx, extauthz.RequestFromCheck(capt.CheckRequest(true)))
	if d.RequestDigest == "" || len(d.BatchDigests) > 0 {
		return "", "", fmt.Errorf("approve: the request has no single request digest (%s)", d.Reason)
	}
	return d.RequestDigest, "", nil
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
