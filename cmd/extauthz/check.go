package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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

// headerFlag is a repeatable NAME=VALUE flag; values may hold commas.
type headerFlag []string

func (h *headerFlag) String() string     { return strings.Join(*h, " ") }
func (h *headerFlag) Set(v string) error { *h = append(*h, v); return nil }

// runCheck decides one captured HTTP request, offline exactly as serve would,
// or by sending it as a CheckRequest to a running service (--addr), and
// prints the decision. Exit 0 allow, 1 deny (or ask), 2 bad input.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz check [flags] REQUEST.json   (one captured request; - for stdin)")
		fmt.Fprintln(stderr, "Offline by default (this policy, tokens not verified unless --jwks-file); with --addr the running service decides.")
		fs.PrintDefaults()
	}
	policyFile := fs.String("policy", "examples/policy.yaml", "policy YAML file")
	serverID := fs.String("server-id", "payments", "MCP server id (offline)")
	addr := fs.String("addr", "", "send the request to the ext_authz service at this gRPC address instead of deciding offline")
	token := fs.String("token", "", "bearer token to put in the request's Authorization header (e.g. from `extauthz token`)")
	issuer := fs.String("issuer", "https://idp.example.com", "issuer")
	var aud listFlag
	fs.Var(&aud, "audience", "accepted audience (repeatable; default https://mcp.example.com/mcp)")
	jwks := fs.String("jwks-file", "", "verify the request's bearer token against this JWKS; without it any token maps to --sub")
	sub := fs.String("sub", "offline-check", "principal sub when tokens are not verified")
	asJSON := fs.Bool("json", false, "print the decision as one JSON object")
	approval := fs.String("approval", "", "approval (from `extauthz approve`) to send in x-mcp-approval; needs --addr")
	var extraHeaders headerFlag
	fs.Var(&extraHeaders, "header", "extra request header NAME=VALUE, e.g. Idempotency-Key=k1 (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	if *token != "" {
		capt.Headers["authorization"] = "Bearer " + strings.TrimSpace(*token)
	}
	for _, kv := range extraHeaders {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return bad(errors.New("--header wants NAME=VALUE"))
		}
		capt.Headers[strings.ToLower(strings.TrimSpace(k))] = v
	}
	if *approval != "" {
		if *addr == "" {
			return bad(errors.New("--approval needs --addr: approvals are single use, so only the running service can judge them"))
		}
		capt.Headers[extauthz.HeaderApproval] = strings.TrimSpace(*approval)
	}
	if *addr != "" {
		return checkRemote(ctx, *addr, capt, stdout, *asJSON)
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
	d := (&extauthz.Decider{ServerID: *serverID, Verifier: verifier, Policies: store, Limits: mcpparse.DefaultLimits(),
		DPoP: extauthz.NewDPoPVerifier(extauthz.DPoPConfig{})}).Decide(ctx, capt.Request())
	if err := printDecision(stdout, d, *asJSON); err != nil {
		return err
	}
	if !d.Allowed() {
		return &exitError{code: 1}
	}
	return nil
}

// checkRemote sends capt to a running service as Envoy would (raw_body) and
// prints the decision it returns in dynamic metadata and, for a denial, the
// HTTP status and body Envoy answers the client with.
func checkRemote(ctx context.Context, addr string, capt *extauthz.CapturedRequest, stdout io.Writer, asJSON bool) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := authv3.NewAuthorizationClient(conn).Check(ctx, capt.CheckRequest(true))
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("check %s: %w", addr, err)}
	}
	md := resp.GetDynamicMetadata().GetFields()
	fields := make([][2]string, len(decisionFields))
	for i, k := range decisionFields {
		fields[i] = [2]string{k, md[k].GetStringValue()}
	}
	// A denial as the client receives it through Envoy: status and body.
	if dr := resp.GetDeniedResponse(); dr != nil {
		fields = append(fields, [2]string{"http_status", strconv.Itoa(int(dr.GetStatus().GetCode()))}, [2]string{"http_body", dr.GetBody()})
	}
	if err := printFields(stdout, fields, asJSON); err != nil {
		return err
	}
	if resp.GetOkResponse() == nil {
		return &exitError{code: 1}
	}
	return nil
}

// decisionFields are the facts check prints, in order.
var decisionFields = []string{"decision", "reason", "rule_id", "server", "method", "target", "args_digest", "request_digest", "policy_version"}

func printDecision(w io.Writer, d *extauthz.Decision, asJSON bool) error {
	v := map[string]string{
		"decision": d.Decision.String(), "reason": string(d.Reason), "rule_id": d.RuleID,
		"server": d.Server, "method": d.Method, "target": d.Target, "args_digest": d.ArgsDigest,
		"request_digest": d.RequestDigest, "policy_version": d.PolicyVersion,
	}
	fields := make([][2]string, len(decisionFields))
	for i, k := range decisionFields {
		fields[i] = [2]string{k, v[k]}
	}
	return printFields(w, fields, asJSON)
}

func printFields(w io.Writer, fields [][2]string, asJSON bool) error {
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
