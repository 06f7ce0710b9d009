package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/resourcemeta"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// assembly is what one Config decides and answers with: the Decider's
// configuration, the Decider, the Responder, dry run, and the response
// seam's list decision inputs. serve builds it over its live parts (token
// verifiers, the state store, the seam's observations); check, test,
// approve and validate over offline ones (assembleOffline). Every setting
// that changes a decision goes through assemble, so the two cannot drift
// (TestOfflineAgreesWithServe walks every serve flag).
type assembly struct {
	Decision  decision.Config
	Decider   *decision.Decider
	Responder *extauthz.Responder
	// DryRun admits every request, answering with the decision it would
	// have enforced (--dry-run).
	DryRun bool
	// Cursors seals the seam's list nextCursors and opens Check's
	// params.cursor (--cursor-key-file); nil without.
	Cursors *decision.CursorSealer
	// ListCacheTTL is the ttlMs the seam gives filtered lists (--list-cache-ttl).
	ListCacheTTL time.Duration
	// DecisionKeys signs allowed decisions (--decision-key-file); nil
	// without. Offline it is read but never published (no --decision-jwks-out).
	DecisionKeys *decisionKeys
	// Offline names, one line each, the settings of the Config this
	// offline assembly does not consult (offlineNotes); empty for serve's.
	Offline []string
}

// assembleParts are what the caller brings to assemble: the parts that
// live outside the Config's values (a policy store and its loader, token
// verification, the state store, the seam's observations).
type assembleParts struct {
	Policies *decision.PolicyStore
	Verifier bearer.TokenVerifier
	// Binding holds the state store and the approval verifier (nil
	// without --approver-issuer); assemble sets its other fields from the
	// Config. Nil: no approvals and idempotency keys.
	Binding *decision.Binding
	// The seam's observations (toolpin.Observations) and quota buckets.
	Definitions decision.ToolDefinitions
	Schemas     decision.InputSchemas
	Prompts     decision.PromptSchemas
	Quotas      decision.QuotaBuckets
	// QuotaObserver counts quotas charged (serve's metrics); nil offline.
	QuotaObserver func(quotaID, outcome string)
	// Tasks are the seam's task bindings, consulted with --response-seam.
	Tasks decision.TaskOwners
	// Explain fills Decision.Trace (check --explain, test); never in serve.
	Explain bool
	// Offline: the decision keys are read but not published.
	Offline bool
	Log     *zap.Logger
}

// limitsOf are the strict parse's limits of cfg (--max-body-bytes,
// --max-json-*, --max-string-bytes).
func limitsOf(cfg *Config) mcpparse.Limits {
	return mcpparse.Limits{
		MaxBytes: cfg.MaxBodyBytes, MaxDepth: cfg.MaxJSONDepth, MaxKeys: cfg.MaxJSONKeys,
		MaxElements: cfg.MaxJSONElements, MaxStringLen: cfg.MaxStringBytes,
	}
}

// assemble builds the Decider, the Responder and the seam's list inputs
// of cfg over parts. It reads the files cfg names for them
// (--cursor-key-file, --decision-key-file), refusing published test keys
// unless --allow-test-keys.
func assemble(cfg *Config, parts assembleParts) (*assembly, error) {
	log := parts.Log
	if log == nil {
		log = zap.NewNop()
	}
	if b := parts.Binding; b != nil {
		b.IdempotencyHeader = strings.ToLower(cfg.IdempotencyHeader)
		b.IdempotencyMeta = cfg.IdempotencyMeta
		b.IdempotencyTTL = cfg.IdempotencyTTL
		b.ApprovalMaxLifetime = cfg.ApprovalMaxLifetime
		b.ApprovalURL = cfg.ApprovalURL
	}
	a := &assembly{DryRun: cfg.DryRun, ListCacheTTL: cfg.ListCacheTTL}
	dc := decision.Config{
		ServerID: cfg.ServerID, ServersByPrincipal: cfg.ServersByPrincipal,
		Verifier: parts.Verifier, Policies: parts.Policies, Limits: limitsOf(cfg), Binding: parts.Binding,
		Definitions: parts.Definitions, Schemas: parts.Schemas, Prompts: parts.Prompts,
		DPoP:              bearer.NewDPoPVerifier(bearer.DPoPConfig{}),
		CaseSensitiveKeys: setOf(cfg.CaseSensitiveKeys),
		Quotas:            parts.Quotas, QuotaObserver: parts.QuotaObserver,
		Explain: parts.Explain,
	}
	if cfg.ResponseSeam {
		if parts.Tasks == nil {
			return nil, errors.New("--response-seam: the state store cannot read task bindings")
		}
		dc.Tasks = parts.Tasks
	}
	if cfg.CursorKeyFile != "" {
		sealer, err := cursorSealer(cfg, log)
		if err != nil {
			return nil, err
		}
		a.Cursors, dc.Cursors = sealer, sealer
	}
	decider, err := decision.NewDecider(dc)
	if err != nil {
		return nil, err
	}
	a.Decision, a.Decider = dc, decider
	var signer *mcpdecision.Signer
	if parts.Offline {
		signer, err = offlineSigner(cfg, log)
	} else {
		a.DecisionKeys, err = newDecisionKeys(cfg, log)
		if a.DecisionKeys != nil {
			signer = a.DecisionKeys.signer
		}
	}
	if err != nil {
		return nil, err
	}
	rm := cfg.ResourceMetadataURL
	if rm == "" && len(cfg.Audiences) > 0 {
		rm = resourcemeta.URL(cfg.Audiences[0])
	}
	var decided []string
	if cfg.IdempotencyHeader != "" {
		decided = []string{strings.ToLower(cfg.IdempotencyHeader)}
	}
	a.Responder = &extauthz.Responder{ResourceMetadataURL: rm, DenialStatus: cfg.DenialStatus, ConcealAs: extauthz.ConcealStyle(cfg.ConcealAs),
		ConcealJSONResponse: cfg.ConcealJSONResponse, DecidedHeaders: decided, Decisions: signer, MarkSeam: cfg.ResponseSeam}
	return a, nil
}

// cursorSealer reads --cursor-key-file.
func cursorSealer(cfg *Config, log *zap.Logger) (*decision.CursorSealer, error) {
	b, err := os.ReadFile(cfg.CursorKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--cursor-key-file: %w", err)
	}
	keys, err := decision.ReadCursorKeys(b)
	if err != nil {
		return nil, fmt.Errorf("--cursor-key-file %s: %w", cfg.CursorKeyFile, err)
	}
	if err := publishedCursorKeysRefusal(keys, cfg.AllowTestKeys, log); err != nil {
		return nil, fmt.Errorf("--cursor-key-file %s: %w", cfg.CursorKeyFile, err)
	}
	sealer, err := decision.NewCursorSealer(keys...)
	if err != nil {
		return nil, fmt.Errorf("--cursor-key-file %s: %w", cfg.CursorKeyFile, err)
	}
	return sealer, nil
}

// offlineSigner reads --decision-key-file as serve does, without writing
// --decision-jwks-out; nil without a key file.
func offlineSigner(cfg *Config, log *zap.Logger) (*mcpdecision.Signer, error) {
	if cfg.DecisionKeyFile == "" {
		return nil, nil
	}
	dk := &decisionKeys{file: cfg.DecisionKeyFile, accept: publishedKeysRefusal("decision-key-file", cfg.AllowTestKeys, log)}
	keys, err := dk.read()
	if err != nil {
		return nil, err
	}
	s, err := mcpdecision.NewSigner(keys)
	if err != nil {
		return nil, fmt.Errorf("--decision-key-file %s: %w", cfg.DecisionKeyFile, err)
	}
	return s, nil
}

// offlineConfig is serve's Config for a tool given no --config: every
// setting at serve's default, with policy, issuer and audience; the
// memory store acknowledged, since an offline store is this process's
// anyway.
func offlineConfig(policyFile, issuer string, audiences []string) (*Config, error) {
	args := []string{"--policy", policyFile, "--issuer", issuer, "--state-store-memory-per-replica-ok"}
	for _, a := range audiences {
		args = append(args, "--audience", a)
	}
	return parseServeConfig(args, func(string) string { return "" }, io.Discard)
}

// offlineVerifier is the token verifier of an offline decision: with
// jwksFile the request's token verified against it as serve would (its
// issuer, audiences and --token-typ), else none needed and the principal
// is p.
func offlineVerifier(cfg *Config, jwksFile string, p policytest.Principal) (bearer.TokenVerifier, error) {
	if jwksFile == "" {
		return policytest.Verifier{P: p}, nil
	}
	ks, err := bearer.LoadJWKS(jwksFile)
	if err != nil {
		return nil, err
	}
	if err := checkTokenTypes(cfg.TokenTypes); err != nil {
		return nil, err
	}
	return bearer.NewOIDCVerifier(bearer.OIDCConfig{Issuer: cfg.Issuer, Audiences: cfg.Audiences, KeySet: ks, Types: tokenTypes(cfg.TokenTypes)})
}

// assembleOffline is assemble over offline parts: the compiled policy lp,
// verifier, a fresh memory store of this process (approvals are not
// judged: no approver; idempotency keys, task bindings and quota buckets
// start empty), and every tool counting as listed with its pinned
// definition (policytest.Listed). Its Offline lines name what it leaves
// out.
// verified says verifier checks tokens (check --jwks-file).
func assembleOffline(cfg *Config, lp *decision.LoadedPolicy, verifier bearer.TokenVerifier, verified, explain bool) (*assembly, error) {
	store := &decision.PolicyStore{}
	store.Store(lp)
	mem := state.NewMemory(0, nil)
	parts := assembleParts{
		Policies: store, Verifier: verifier, Binding: &decision.Binding{Store: mem},
		Definitions: policytest.Listed{}, Quotas: mem, Tasks: &state.Tasks{Store: mem},
		Explain: explain, Offline: true,
	}
	a, err := assemble(cfg, parts)
	if err != nil {
		return nil, err
	}
	a.Offline = offlineNotes(cfg, lp.Policy, verified)
	return a, nil
}

// respond is the CheckResponse serve's Check sends for d, decided on r.
func (a *assembly) respond(d *decision.Decision, r *decision.Request) *authv3.CheckResponse {
	if a.DryRun {
		return a.Responder.DryRunResponse(d, r.Headers)
	}
	return a.Responder.ResponseFor(d, r)
}

// compilePolicyFile reads and compiles the policy in file as serve loads
// it (the schema files it names too); a compile error is its
// file:line:col problems.
func compilePolicyFile(file string) (*decision.LoadedPolicy, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lp, err := decision.CompilePolicy(file, src)
	if err != nil {
		var ce *policy.CompileError
		if errors.As(err, &ce) {
			return nil, errors.New(strings.TrimSpace(ce.Error()))
		}
		return nil, err
	}
	return lp, nil
}

// offlineNotes are the lines naming each setting of cfg (and of policy p)
// in effect that an offline decision does not consult: what a running
// service knows and a file does not.
func offlineNotes(cfg *Config, p *policy.Policy, verified bool) []string {
	var out []string
	note := func(format string, args ...any) { out = append(out, "offline: "+fmt.Sprintf(format, args...)) }
	var uses []string
	if cfg.ApproverIssuer != "" {
		uses = append(uses, "used approvals")
	}
	if cfg.IdempotencyHeader != "" || cfg.IdempotencyMeta != "" {
		uses = append(uses, "idempotency keys bound to other requests")
	}
	if cfg.ResponseSeam {
		uses = append(uses, "task bindings")
	}
	if p != nil && len(p.Quotas()) > 0 {
		uses = append(uses, "quota buckets")
	}
	if len(uses) > 0 {
		note("--state-store %s is not consulted: an empty store of this process, so %s are not seen (each request is the first)", redactStore(cfg.StateStore), strings.Join(uses, ", "))
	}
	if cfg.ApproverIssuer != "" {
		note("--approver-issuer %s is not consulted: approvals are not judged offline (send them with check --addr)", cfg.ApproverIssuer)
	}
	if cfg.Introspection.Mode != tokenModeJWT {
		note("--token-mode %s: opaque tokens are not introspected offline (%s)", cfg.Introspection.Mode, orDiscovered(cfg.Introspection.Endpoint))
	}
	if !verified {
		keys := "its --jwks-file " + cfg.JWKSFile
		if cfg.JWKSFile == "" {
			keys = "the key set discovered at " + cfg.Issuer
		}
		note("tokens are not verified (%s is not consulted): the principal is the one given (check --sub and --claim, a test's principal); check --jwks-file FILE verifies the request's token", keys)
	}
	if p != nil && p.PinMode() != policy.PinOff {
		note("pin_mode %s: the tool definitions the response seam observed are not consulted; every tool counts as listed with its first pinned definition, and `arguments` validates only against the policy's schema_file schemas (served, also against each observed inputSchema)", p.PinMode())
	}
	if cfg.ResponseSeam && cfg.IdempotencyResultMaxBytes > 0 && (cfg.IdempotencyHeader != "" || cfg.IdempotencyMeta != "") {
		note("--idempotency-result-max-bytes: no result is recorded offline, so a retry is never answered from one")
	}
	return out
}

// orDiscovered names the introspection endpoint, or says it is discovered.
func orDiscovered(endpoint string) string {
	if endpoint == "" {
		return "the issuer's endpoint is discovered at start"
	}
	return "--introspection-endpoint " + endpoint
}

// redactStore is a --state-store URL without its password.
func redactStore(spec string) string {
	if i := strings.Index(spec, "://"); i >= 0 {
		rest := spec[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if user, _, ok := strings.Cut(rest[:at], ":"); ok {
				return spec[:i+3] + user + ":***@" + rest[at+1:]
			}
		}
	}
	return spec
}
