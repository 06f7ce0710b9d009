package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
)

// headerFlag is a repeatable -H "Name: value" flag.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }
func (h headerFlag) Set(v string) error {
	name, val, ok := strings.Cut(v, ":")
	name = strings.ToLower(strings.TrimSpace(name))
	if !ok || name == "" {
		return errors.New(`want "Name: value"`)
	}
	h[name] = strings.TrimSpace(val)
	return nil
}

// claimFlag is a repeatable --claim NAME=VALUE flag; VALUE is JSON when it
// parses as JSON (["a","b"], 3, true, {"k":1}), else a string.
type claimFlag map[string]any

func (c claimFlag) String() string { return "" }
func (c claimFlag) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return errors.New("want NAME=VALUE")
	}
	c[k] = claimValue(v)
	return nil
}

// claimValue decodes v as one JSON value (numbers as float64, as a JWT
// carries them), or returns it as a string when it is not JSON.
func claimValue(v string) any {
	dec := json.NewDecoder(strings.NewReader(v))
	var j any
	if err := dec.Decode(&j); err == nil && !dec.More() {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			return j
		}
	}
	return v
}

// isCaptured reports whether in is a captured HTTP request (a JSON object
// with "http" or "request", or a bare {"method", "headers", ...} object
// without a "jsonrpc" string) rather than a JSON-RPC body.
func isCaptured(in []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(in, &obj) != nil {
		return false // a body, perhaps malformed: check decides it
	}
	if obj["http"] != nil || obj["request"] != nil {
		return true
	}
	var rpc string
	if json.Unmarshal(obj["jsonrpc"], &rpc) == nil {
		return false
	}
	return obj["method"] != nil && obj["headers"] != nil
}

// runCheck decides one request, offline exactly as serve would, or by
// sending it as a CheckRequest to a running service (--addr), and prints the
// decision. The input is a plain JSON-RPC body, or a captured HTTP request
// (docs/policy.md, "Checking one request (`extauthz check`)"). Exit 0
// allow, 1 deny or ask (also when a dry-run service admitted it), 2 input
// that cannot be read.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz check [flags] FILE   (a JSON-RPC body or a captured request; - for stdin)")
		fmt.Fprintln(stderr, "Offline by default: the --config policy (or --policy), no token needed (the principal is --sub and --claim) unless --jwks-file; with --addr the running service decides.")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", configFlagUsage+" (offline: every setting serve decides by, as serve assembles it; what a file cannot tell, such as the state store's contents, is named on stderr; not its jwks-file)")
	policyFile := fs.String("policy", "", "policy YAML file (offline; default: the --config policy)")
	serverID := fs.String("server-id", "", "MCP server id (offline; default: the --config server-id)")
	addr := fs.String("addr", "", "send the request to the ext_authz service at this gRPC address instead of deciding offline")
	token := fs.String("token", "", "bearer token to put in the request's Authorization header (e.g. from `extauthz token`)")
	httpMethod := fs.String("X", "POST", "HTTP method of a plain body (GET and DELETE take an empty FILE, e.g. /dev/null)")
	headers := headerFlag{}
	fs.Var(headers, "H", `request header "Name: value" (repeatable), over the captured request's`)
	issuer := fs.String("issuer", "", "issuer (default: the --config issuer, else "+policytest.DefaultIssuer+", as in policy tests)")
	var aud listFlag
	fs.Var(&aud, "audience", "accepted audience (repeatable; default: the --config audiences, else "+policytest.DefaultAudience+", as in policy tests)")
	var tokenTyps listFlag
	fs.Var(&tokenTyps, "token-typ", "with --jwks-file: a JOSE typ access tokens may carry besides none, JWT and at+jwt (repeatable), as serve's")
	jwks := fs.String("jwks-file", "", "verify the request's bearer token against this JWKS; without it no token is needed and the principal is --sub with --claim")
	sub := fs.String("sub", "offline-check", "principal sub when tokens are not verified")
	claims := claimFlag{}
	fs.Var(claims, "claim", `principal claim NAME=VALUE when tokens are not verified (repeatable; VALUE is JSON when it parses: groups=["a","b"], n=3, admin=true)`)
	explain := fs.Bool("explain", false, "also print the decision's detail (which limit, which member), the response as Envoy sends it and, offline, every rule considered, each when's value and the precedence step")
	asJSON := fs.Bool("json", false, "print the decision as one JSON object")
	approval := fs.String("approval", "", "approval (from `extauthz approve`) to send in x-mcp-approval; needs --addr")
	listResponse := fs.Bool("list-response", false, "FILE is a captured list answer (tools/list, prompts/list, resources/list, resources/templates/list; JSON or SSE): print what --sub with --claim would see through the response seam and why each item is removed (offline; --explain: why each is kept too)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2, err: argCountError("check", "one FILE (- for stdin)", fs.Args())}
	}
	bad := func(err error) error { return &exitError{code: 2, err: fmt.Errorf("check: %w", err)} }
	cfg, _, err := toolConfig(*configFile, os.Getenv)
	if err != nil {
		return bad(err)
	}
	set := setFlags(fs)
	if cfg != nil {
		if !set["policy"] {
			*policyFile = cfg.PolicyFile
		}
		if !set["server-id"] {
			*serverID = cfg.ServerID
		}
		if !set["issuer"] {
			*issuer = cfg.Issuer
		}
		if !set["audience"] {
			aud = cfg.Audiences
		}
		if !set["token-typ"] {
			tokenTyps = cfg.TokenTypes
		}
	}
	if *issuer == "" {
		*issuer = policytest.DefaultIssuer
	}
	if len(aud) == 0 {
		aud = listFlag{policytest.DefaultAudience}
	}
	// An empty --token or --approval is a failed $(extauthz token) or
	// $(extauthz approve), not a request without one.
	for _, name := range []string{"token", "approval"} {
		if set[name] && strings.TrimSpace(fs.Lookup(name).Value.String()) == "" {
			return bad(fmt.Errorf("--%s is empty (did the command that made it fail?); leave the flag out to send none", name))
		}
	}
	if *addr == "" {
		switch {
		case *policyFile == "":
			return bad(errors.New("no policy to decide by: give --policy FILE and --server-id ID, or --config FILE (serve's config), or --addr of a running service"))
		case *serverID == "" && cfg != nil:
			return bad(errors.New("no MCP server id: the config names none (its routes set mcp_server), so give --server-id"))
		case *serverID == "":
			return bad(errors.New("no MCP server id: give --server-id ID, or --config FILE (serve's config)"))
		}
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
	if *listResponse {
		if *addr != "" {
			return bad(errors.New("--list-response is offline: leave out --addr"))
		}
		return runCheckList(*policyFile, *serverID, *sub, claims, *explain, in, stdout)
	}
	var capt *capture.Request
	if isCaptured(in) {
		if capt, err = capture.Parse(bytes.TrimSpace(in)); err != nil {
			return bad(err)
		}
		if _, ok := capt.Headers["authorization"]; !ok && *jwks == "" && *addr == "" {
			capt.Headers["authorization"] = "Bearer " + policytest.PlaceholderToken // offline checks need no token
		}
	} else {
		r := policytest.Request{HTTPMethod: strings.ToUpper(*httpMethod), Body: in, Headers: map[string]string{}}
		if r.HTTPMethod != "POST" && len(bytes.TrimSpace(in)) == 0 {
			r.Body = nil
		}
		if *jwks != "" || *addr != "" {
			r.Headers["authorization"] = "" // a token must come from -H or --token
		}
		capt = r.Captured()
		if capt.Headers["authorization"] == "" {
			delete(capt.Headers, "authorization")
		}
	}
	for k, v := range headers {
		capt.Headers[k] = v
	}
	if *token != "" {
		capt.Headers["authorization"] = "Bearer " + strings.TrimSpace(*token)
	}
	if *approval != "" {
		if *addr == "" {
			return bad(errors.New("--approval needs --addr: approvals are single use, so only the running service can judge them"))
		}
		capt.Headers[decision.HeaderApproval] = strings.TrimSpace(*approval)
	}
	if *addr != "" {
		return checkRemote(ctx, *addr, capt, stdout, *asJSON, *explain)
	}

	// serve's Config (the --config file's, else serve's defaults), with
	// check's flags over it: one assembly decides, as serve's does.
	fromConfig := cfg != nil
	if cfg == nil {
		if cfg, err = offlineConfig(*policyFile, policytest.DefaultIssuer, []string{policytest.DefaultAudience}); err != nil {
			return bad(err)
		}
	}
	c := *cfg
	c.PolicyFile, c.ServerID, c.Issuer, c.Audiences, c.TokenTypes = *policyFile, *serverID, *issuer, aud, tokenTyps
	principalClaims, err := policytest.JSONClaims(claims)
	if err != nil {
		return bad(err)
	}
	off, err := decideOffline(ctx, &c, *jwks, policytest.Principal{Issuer: c.Issuer, Subject: *sub, Audience: aud[0], Claims: principalClaims}, capt.CheckRequest(true), *explain)
	if err != nil {
		return bad(err)
	}
	if fromConfig { // without one there is no service to differ from
		for _, n := range off.asm.Offline {
			fmt.Fprintln(stderr, n)
		}
	}
	asm, lp, d, resp := off.asm, off.lp, off.d, off.resp
	names := policytest.Fields
	if *explain {
		names = append([]string{"decision_id"}, names...)
	}
	fields := policytest.FieldsOf(d)
	fields["decision_id"] = d.ID
	if asm.DryRun {
		names, fields["dry_run"] = append(names, "dry_run"), "true"
	}
	if dt := extauthz.DecisionDetail(d); dt != "" && *explain {
		names, fields["detail"] = append(names, "detail"), dt
	}
	if err := policytest.WriteFields(stdout, names, fields, *asJSON); err != nil {
		return err
	}
	if *explain && !*asJSON {
		fmt.Fprintln(stdout, "\n# response, as Envoy would send it")
		policytest.WriteResponse(stdout, resp)
		fmt.Fprintln(stdout, "\n# policy")
		policytest.WriteTrace(stdout, d, lp.File)
	}
	if !d.Allowed() {
		return &exitError{code: 1}
	}
	return nil
}

// offlineDecision is one request decided offline: the assembly, policy,
// decision and the CheckResponse serve would send.
type offlineDecision struct {
	asm  *assembly
	lp   *decision.LoadedPolicy
	d    *decision.Decision
	resp *authv3.CheckResponse
}

// decideOffline decides capt as serve with c would (assembleOffline): the
// policy c.PolicyFile, cr as Envoy sends it, the token verified against jwksFile when set, else
// principal p without a token.
func decideOffline(ctx context.Context, c *Config, jwksFile string, p policytest.Principal, cr *authv3.CheckRequest, explain bool) (*offlineDecision, error) {
	lp, err := compilePolicyFile(c.PolicyFile)
	if err != nil {
		return nil, err
	}
	verifier, err := offlineVerifier(c, jwksFile, p)
	if err != nil {
		return nil, err
	}
	asm, err := assembleOffline(c, lp, verifier, jwksFile != "", explain)
	if err != nil {
		return nil, err
	}
	req := extauthz.RequestFromCheck(cr)
	d := asm.Decider.Decide(ctx, req)
	return &offlineDecision{asm: asm, lp: lp, d: d, resp: asm.respond(d, req)}, nil
}

// checkRemote sends capt to a running service as Envoy would (raw_body) and
// prints the decision it returns in dynamic metadata (decision_id first) and,
// for a denial, the
// HTTP status and body Envoy answers the client with. The exit code follows
// the decision, not the response: a dry-run service admits a request it
// would deny, and check still exits 1.
func checkRemote(ctx context.Context, addr string, capt *capture.Request, stdout io.Writer, asJSON, explain bool) error {
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
	// The decision id first, as the service logged it: the key to its
	// decision log line and to an approval request.
	names := slices.Concat([]string{"decision_id"}, policytest.Fields)
	fields := map[string]string{}
	for _, k := range names {
		fields[k] = md[k].GetStringValue()
	}
	// dry_run when the service admitted a would-be decision; detail (which
	// limit, which member) with --explain.
	for _, k := range []string{"dry_run", "detail"} {
		if v := md[k].GetStringValue(); v != "" && (k != "detail" || explain) {
			names, fields[k] = append(names, k), v
		}
	}
	// A denial as the client receives it through Envoy: status and body.
	if dr := resp.GetDeniedResponse(); dr != nil {
		names = append(names, "http_status", "http_body")
		fields["http_status"], fields["http_body"] = strconv.Itoa(int(dr.GetStatus().GetCode())), dr.GetBody()
	}
	if err := policytest.WriteFields(stdout, names, fields, asJSON); err != nil {
		return err
	}
	if explain && !asJSON {
		fmt.Fprintln(stdout, "\n# response, as Envoy sends it")
		policytest.WriteResponse(stdout, resp)
	}
	if fields["decision"] != "allow" || fields["reason"] != string(decision.ReasonAllowed) {
		return &exitError{code: 1}
	}
	return nil
}
