package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz"
	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// defaultWaitTimeout is --state-store-wait-timeout's default: replicas in
// one region acknowledge within a millisecond; this leaves room for a
// slow one inside Envoy's usual 1s ext_authz timeout.
const defaultWaitTimeout = 250 * time.Millisecond

// Config is the validated configuration of `extauthz serve`.
type Config struct {
	GRPCAddr   string
	HTTPAddr   string
	PolicyFile string
	Issuer     string
	JWKSFile   string
	Audiences  []string
	// TokenTypes are the JOSE typ values an access token may carry besides
	// none, JWT and at+jwt (--token-typ).
	TokenTypes          []string
	ServerID            string
	ResourceMetadataURL string
	// ResourceDocumentation is the RFC 9728 resource_documentation URL
	// served in the protected resource metadata; empty omits it.
	ResourceDocumentation string
	// DenialStatus is the HTTP status policy of policy denials.
	DenialStatus    extauthz.DenialStatus
	LogLevel        string
	MaxBodyBytes    int
	DrainPeriod     time.Duration
	ShutdownTimeout time.Duration
	DryRun          bool
	TokenCacheSize  int
	JWKSRefresh     time.Duration
	MaxJSONDepth    int
	MaxJSONKeys     int
	MaxJSONElements int
	MaxStringBytes  int

	// Approvals, idempotency keys, concealment (issue 10).
	StateStore string
	// StateStoreRedis are the Redis settings of --state-store-* (the
	// passwords from EXTAUTHZ_STATE_STORE_PASSWORD and
	// EXTAUTHZ_STATE_STORE_SENTINEL_PASSWORD, never from a flag).
	StateStoreRedis state.RedisOptions
	// StateStoreMemoryPerReplicaOK acknowledges that with the memory
	// store approvals and idempotency keys hold per replica only.
	StateStoreMemoryPerReplicaOK bool
	ApproverIssuer               string
	ApproverJWKSFile             string
	ApprovalURL                  string
	ApprovalMaxLifetime          time.Duration
	IdempotencyHeader            string
	IdempotencyMeta              string
	IdempotencyTTL               time.Duration
	IdempotencyResultMaxBytes    int
	ConcealAs                    string
	ConcealJSONResponse          bool
	// The response seam (extproc, issue 17).
	ResponseSeam  bool
	CursorKeyFile string
	ListCacheTTL  time.Duration

	// SeamDeadline is how long a decision Check marked for the response
	// seam may wait for the processor before it counts as unmet
	// (internal/seamcover).
	SeamDeadline time.Duration

	TLS tlsFiles // all empty: plaintext gRPC
	// ServersByPrincipal maps destination principals (SPIFFE ids) to MCP
	// server ids (--server-id-by-principal).
	ServersByPrincipal map[string]string
	// CaseSensitiveKeys are the MCP server ids whose SDK matches argument
	// names case-sensitively (--case-sensitive-keys).
	CaseSensitiveKeys []string
	// Telemetry is the observability flags (telemetry.go).
	Telemetry telemetryConfig
	// Introspection is --token-mode and the --introspection-* flags
	// (introspection.go): opaque tokens by RFC 7662.
	Introspection introspectionConfig
	// AllowTestKeys lets --jwks-file, --approver-jwks-file and
	// --cursor-key-file hold the published test keys
	// (examples/TEST-ONLY-*.jwk.json, examples/TEST-ONLY-cursor-key): demos
	// and tests.
	AllowTestKeys bool
	// DecisionKeyFile is the private JWK (or JWK Set, the signing key
	// first) that signs every allowed decision (x-mcp-decision, issue 28);
	// empty signs none. DecisionJWKSOut is the file the public key set is
	// written to, at start and on every rotation; empty writes none.
	DecisionKeyFile string
	DecisionJWKSOut string
}

// listFlag is a repeatable string flag; the environment form is comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// principalFlag is the repeatable --server-id-by-principal PRINCIPAL=ID;
// the environment form is comma-separated.
type principalFlag map[string]string

func (p principalFlag) String() string {
	var out []string
	for k, v := range p {
		out = append(out, k+"="+v)
	}
	return strings.Join(out, ",")
}

func (p principalFlag) Set(v string) error {
	for _, kv := range strings.Split(v, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, id, ok := strings.Cut(kv, "=")
		if !ok || k == "" || id == "" || !strings.HasPrefix(k, "spiffe://") {
			return fmt.Errorf("%q: want spiffe://TRUST-DOMAIN/ns/NS/sa/SA=SERVER-ID", kv)
		}
		if prev, dup := p[k]; dup && prev != id {
			return fmt.Errorf("%s maps to both %q and %q", k, prev, id)
		}
		p[k] = id
	}
	return nil
}

// pathFlags are the flags that name files.
var pathFlags = map[string]bool{"policy": true, "jwks-file": true, "approver-jwks-file": true, "tls-cert-file": true, "tls-key-file": true, "client-ca-file": true,
	"state-store-password-file": true, "state-store-sentinel-password-file": true,
	"state-store-tls-ca-file": true, "state-store-tls-cert-file": true, "state-store-tls-key-file": true,
	"cursor-key-file": true, "decision-key-file": true, "decision-jwks-out": true}

// Environment variables that are no flag's: secrets, which a command
// line would show to every user of the host (ps, /proc).
const (
	envStateStorePassword         = "EXTAUTHZ_STATE_STORE_PASSWORD"
	envStateStoreSentinelPassword = "EXTAUTHZ_STATE_STORE_SENTINEL_PASSWORD"
)

// envOnly are the EXTAUTHZ_* variables read without a flag.
var envOnly = map[string]bool{envStateStorePassword: true, envStateStoreSentinelPassword: true}

// checkIssuer requires an absolute https URL (http only on a loopback host,
// for tests): go-oidc would otherwise retry discovery forever at run time.
func checkIssuer(iss string) error { return checkIssuerFlag("issuer", iss) }

// checkIssuerFlag is checkIssuer for the flag named flag.
func checkIssuerFlag(flag, iss string) error {
	if iss == "" {
		return nil // reported as missing below
	}
	u, err := url.Parse(iss)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--%s %q: want an absolute https URL without query or fragment (OpenID Connect Discovery 1.0 section 2)", flag, iss)
	}
	loopback := u.Hostname() == "localhost" || net.ParseIP(u.Hostname()).IsLoopback()
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback) {
		return fmt.Errorf("--%s %q: want https (http only on a loopback host)", flag, iss)
	}
	return nil
}

// checkTokenTypes validates --token-typ: media type names (RFC 7515
// section 4.1.9), none of them the type of another kind of JWT.
func checkTokenTypes(types []string) error {
	for _, typ := range types {
		if err := bearer.CheckMediaType(typ); err != nil {
			return fmt.Errorf("--token-typ: %w", err)
		}
		if bearer.IsOtherJWTType(typ) {
			return fmt.Errorf("--token-typ %q: the type of another kind of JWT (approval, DPoP proof, logout or security event token…), never an access token (RFC 8725 section 3.11)", typ)
		}
	}
	return nil
}

// sameIssuer reports whether two issuer URLs name one OpenID provider:
// equal but for a trailing slash, which discovery drops (OpenID Connect
// Discovery 1.0 section 4).
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// errSharedIssuer explains why an approver issuer that is the token issuer
// needs two disjoint static key sets.
const errSharedIssuer = "--approver-issuer is --issuer: then only the JOSE typ tells an approval from an access token, and a key that signs access tokens would also sign approvals, so the identity provider (or whoever can get a token minted) could approve requests. Use an approver issuer of its own, or give --jwks-file and --approver-jwks-file with no key in common"

// checkBinding validates the approval, idempotency and concealment flags,
// returning every problem (joinProblems).
func checkBinding(c *Config) error {
	var errs []error
	errs = append(errs, checkIssuerFlag("approver-issuer", c.ApproverIssuer))
	if c.ApproverIssuer != "" && sameIssuer(c.ApproverIssuer, c.Issuer) && (c.JWKSFile == "" || c.ApproverJWKSFile == "") {
		errs = append(errs, errors.New(errSharedIssuer+" (keys from discovery are one set, and can change after start-up)"))
	}
	if c.ApproverJWKSFile != "" && c.ApproverIssuer == "" {
		errs = append(errs, errors.New("--approver-jwks-file needs --approver-issuer (the iss of approvals)"))
	}
	if c.IdempotencyResultMaxBytes < 0 {
		errs = append(errs, errors.New("--idempotency-result-max-bytes must not be negative"))
	}
	if c.ApprovalMaxLifetime <= 0 || c.IdempotencyTTL <= 0 {
		errs = append(errs, errors.New("--approval-max-lifetime and --idempotency-ttl must be positive"))
	}
	errs = append(errs, checkStateStore(c))
	if c.ApprovalURL != "" {
		u, err := url.Parse(strings.ReplaceAll(c.ApprovalURL, "{digest}", "d"))
		if err != nil || !u.IsAbs() || u.Host == "" {
			errs = append(errs, fmt.Errorf("--approval-url %q: want an absolute URL ({digest} is replaced by the request digest)", c.ApprovalURL))
		}
	}
	if c.IdempotencyHeader != "" && strings.ContainsAny(c.IdempotencyHeader, " :\t\r\n") {
		errs = append(errs, fmt.Errorf("--idempotency-header %q: not a header name", c.IdempotencyHeader))
	}
	if _, err := extauthz.ParseConcealStyle(c.ConcealAs); err != nil {
		errs = append(errs, fmt.Errorf("--conceal-as: %w", err))
	}
	return joinProblems(errs...)
}

// checkStateStore validates --state-store and its settings, reading the
// files they name, without network I/O.
func checkStateStore(c *Config) error {
	o := c.StateStoreRedis
	if o.WaitReplicas == 0 {
		o.WaitTimeout = 0 // the default timeout alone is no Redis setting
	}
	memory := state.IsMemory(c.StateStore)
	if memory && (o.Password != "" || o.SentinelPassword != "") {
		return errors.New(envStateStorePassword + " or " + envStateStoreSentinelPassword + " is set but --state-store is memory")
	}
	st, err := state.OpenWithOptions(c.StateStore, o)
	if err != nil {
		return fmt.Errorf("--state-store: %w", err)
	}
	st.Close()
	c.StateStoreRedis = o
	if !memory && c.StateStoreMemoryPerReplicaOK {
		return errors.New("--state-store-memory-per-replica-ok is for --state-store memory; a Redis store is shared")
	}
	return nil
}

// checkMemoryStore refuses approvals or idempotency keys on the memory
// store unless acknowledged: serve cannot count its replicas, and behind
// several each would keep its own claims.
func checkMemoryStore(c *Config) error {
	var uses []string
	if c.ApproverIssuer != "" {
		uses = append(uses, "approvals (--approver-issuer)")
	}
	if c.IdempotencyHeader != "" {
		uses = append(uses, "idempotency keys (--idempotency-header "+c.IdempotencyHeader+")")
	}
	if c.IdempotencyMeta != "" {
		uses = append(uses, "idempotency keys (--idempotency-meta)")
	}
	if state.IsMemory(c.StateStore) && len(uses) > 0 && !c.StateStoreMemoryPerReplicaOK {
		return fmt.Errorf("--state-store memory keeps %s in this process only: behind several replicas an approval would be single use per replica and a key bound to one request per replica, and a restart forgets them. "+
			"Set --state-store to a Redis every replica shares; if this process is the only one that answers, say so with --state-store-memory-per-replica-ok; "+
			"or turn them off (--idempotency-header '' and no --idempotency-meta or --approver-issuer)", strings.Join(uses, " and "))
	}
	return nil
}

// warnUnknownEnv names EXTAUTHZ_* variables that match no flag, since a typo
// (EXTAUTHZ_SERVERID) would otherwise be silently ignored, with the
// nearest variables that do (did you mean EXTAUTHZ_SERVER_ID?).
func warnUnknownEnv(fs *flag.FlagSet, environ []string, stderr io.Writer) {
	log, _ := newLogger("info", stderr)
	var known []string // without the EXTAUTHZ_ prefix
	for k := range envOnly {
		known = append(known, strings.TrimPrefix(k, "EXTAUTHZ_"))
	}
	fs.VisitAll(func(f *flag.Flag) { known = append(known, strings.TrimPrefix(envName(f.Name), "EXTAUTHZ_")) })
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "EXTAUTHZ_") {
			continue
		}
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, "EXTAUTHZ_"), "_", "-"))
		if fs.Lookup(name) == nil && !envOnly[k] {
			hint := didYouMean("EXTAUTHZ_", nearestNames(strings.TrimPrefix(k, "EXTAUTHZ_"), known))
			log.Warn("environment variable " + k + " matches no flag; ignored" + hint)
		}
	}
}

// parseServeConfig reads flags, then EXTAUTHZ_* environment variables for
// flags not given, then the --config YAML file for what is still unset.
// It reports every problem at once (configErrors, one line): bad flags
// (exit 2, an unknown one with the nearest flags), unknown config keys
// (with the nearest keys), bad values, missing and conflicting settings.
// A config file it cannot read or parse stops it there: what is missing
// is then unknown.
func parseServeConfig(args []string, getenv func(string) string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configFile string
	var aud, tokenTypes listFlag
	denialStatus := "auto"
	fs.StringVar(&configFile, "config", "", "YAML file whose keys are these flag names")
	fs.StringVar(&c.GRPCAddr, "grpc-addr", "127.0.0.1:9191", "gRPC listen address (ext_authz and grpc.health.v1)")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:9192", "HTTP listen address for /metrics, /healthz, /readyz; empty disables")
	fs.StringVar(&c.PolicyFile, "policy", "", "policy YAML file (required)")
	fs.StringVar(&c.Issuer, "issuer", "", "OIDC issuer URL every token must carry as iss (required)")
	fs.StringVar(&c.JWKSFile, "jwks-file", "", "static JSON Web Key Set; without it keys come from OIDC discovery")
	fs.Var(&aud, "audience", "accepted audience: the MCP server's RFC 8707 resource URI (repeatable, required)")
	fs.Var(&tokenTypes, "token-typ", "a JOSE typ the issuer's access tokens carry besides none, JWT and at+jwt, e.g. application/okta-internal-at+jwt (repeatable); any other typ is refused")
	fs.StringVar(&c.ServerID, "server-id", "", "MCP server id in policy targets, unless the route sets context extension mcp_server")
	fs.StringVar(&c.ResourceMetadataURL, "resource-metadata-url", "", "RFC 9728 metadata URL for WWW-Authenticate (default: derived from the first audience)")
	fs.StringVar(&c.ResourceDocumentation, "resource-documentation", "", "RFC 9728 resource_documentation URL in the protected resource metadata")
	fs.StringVar(&denialStatus, "denial-status", denialStatus, "HTTP status of policy denials: auto (200 with the JSON-RPC error for Streamable HTTP requests, else 403) or http-error (always 403)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&c.MaxBodyBytes, "max-body-bytes", 1<<20, "largest request body decided; keep >= Envoy's max_request_bytes")
	lim := mcpparse.DefaultLimits()
	fs.IntVar(&c.MaxJSONDepth, "max-json-depth", lim.MaxDepth, "deepest nesting of arrays and objects in a body")
	fs.IntVar(&c.MaxJSONKeys, "max-json-keys", lim.MaxKeys, "most object members in a body")
	fs.IntVar(&c.MaxJSONElements, "max-json-elements", lim.MaxElements, "most values in a body")
	fs.IntVar(&c.MaxStringBytes, "max-string-bytes", lim.MaxStringLen, "longest decoded JSON string in a body")
	fs.BoolVar(&c.DryRun, "dry-run", false, "admit every request; log, count and pass upstream (x-mcp-dry-run-decision) the decision that would have been enforced")
	fs.IntVar(&c.TokenCacheSize, "token-cache-size", 10000, "verified tokens kept (LRU, until exp at the latest); 0 disables the cache")
	fs.DurationVar(&c.JWKSRefresh, "jwks-refresh-interval", 5*time.Minute, "how often a discovered key set is fetched again; 0 only on unknown kid")
	fs.DurationVar(&c.DrainPeriod, "drain-period", 5*time.Second, "on SIGTERM, how long to report NOT_SERVING before stopping")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight Checks may take to finish after the drain")
	fs.StringVar(&c.StateStore, "state-store", "memory", "where used approval ids and idempotency keys live: memory (this process) or a Redis every replica shares: redis[s]://[USER[:PASSWORD]@]HOST:PORT[/DB], unix:///PATH, redis[s]-sentinel://HOST:PORT[,HOST:PORT]/MASTER[/DB], redis[s]-cluster://HOST:PORT[,HOST:PORT]")
	fs.BoolVar(&c.StateStoreMemoryPerReplicaOK, "state-store-memory-per-replica-ok", false, "acknowledge that with --state-store memory approvals and idempotency keys hold per process only (right when this is the only replica)")
	fs.StringVar(&c.StateStoreRedis.PasswordFile, "state-store-password-file", "", "file with the Redis password (of the URL's ACL user), read at every new connection; or set "+envStateStorePassword)
	fs.StringVar(&c.StateStoreRedis.SentinelPasswordFile, "state-store-sentinel-password-file", "", "file with the Sentinels' password (redis-sentinel://); or set "+envStateStoreSentinelPassword)
	fs.StringVar(&c.StateStoreRedis.TLSCAFile, "state-store-tls-ca-file", "", "PEM CA bundle the Redis servers' certificates must chain to (rediss schemes; default: the system's)")
	fs.StringVar(&c.StateStoreRedis.TLSCertFile, "state-store-tls-cert-file", "", "PEM client certificate chain for Redis (tls-auth-clients), read at every new connection")
	fs.StringVar(&c.StateStoreRedis.TLSKeyFile, "state-store-tls-key-file", "", "PEM private key of --state-store-tls-cert-file")
	fs.StringVar(&c.StateStoreRedis.TLSServerName, "state-store-tls-server-name", "", "name the Redis certificates must carry (default: the URL's host; for Sentinel and Cluster the address of each node)")
	fs.IntVar(&c.StateStoreRedis.WaitReplicas, "state-store-wait-replicas", 0, "after every claim, WAIT until this many replicas of its Redis primary acknowledged it, else deny (state_store_unavailable); 0 does not wait")
	fs.DurationVar(&c.StateStoreRedis.WaitTimeout, "state-store-wait-timeout", defaultWaitTimeout, "how long a claim waits for --state-store-wait-replicas")
	fs.StringVar(&c.ApproverIssuer, "approver-issuer", "", "iss of approvals; enables approvals; keys from OIDC discovery at it unless --approver-jwks-file")
	fs.StringVar(&c.ApproverJWKSFile, "approver-jwks-file", "", "static JSON Web Key Set of the approver keys")
	fs.StringVar(&c.ApprovalURL, "approval-url", "", "where to get an approval, named in ask denials (error.data.approval_url); {digest} is replaced by the request digest")
	fs.DurationVar(&c.ApprovalMaxLifetime, "approval-max-lifetime", decision.DefaultApprovalMaxLifetime, "longest exp - iat accepted in an approval")
	fs.StringVar(&c.IdempotencyHeader, "idempotency-header", "Idempotency-Key", "header with the request's idempotency key; empty ignores headers")
	fs.StringVar(&c.IdempotencyMeta, "idempotency-meta", "", "params._meta member with the request's idempotency key (e.g. io.mcp-extauthz/idempotency-key); empty ignores _meta")
	fs.DurationVar(&c.IdempotencyTTL, "idempotency-ttl", decision.DefaultIdempotencyTTL, "how long an idempotency key stays bound to its request digest")
	fs.IntVar(&c.IdempotencyResultMaxBytes, "idempotency-result-max-bytes", state.DefaultMaxResultBytes, "largest tools/call result kept for the retry of a call whose rule says recover_results (bytes; larger results are not kept, the retry runs again)")
	fs.StringVar(&c.ConcealAs, "conceal-as", string(extauthz.ConcealGoSDK), "SDK of the MCP server whose unknown-tool answer refusal: conceal reproduces: go-sdk, typescript-sdk (1.x) or typescript-sdk-v2")
	fs.BoolVar(&c.ConcealJSONResponse, "conceal-json-response", false, "the MCP server answers POSTs with application/json, not an SSE stream (go-sdk JSONResponse, TypeScript enableJsonResponse): so does a concealed refusal")
	fs.BoolVar(&c.ResponseSeam, "response-seam", false, "Envoy runs the ext_proc response seam (served on --grpc-addr next to Check): Check refuses tasks/get, tasks/result, tasks/cancel and tasks/update naming a task the seam did not bind to the caller (task_not_owned)")
	fs.StringVar(&c.CursorKeyFile, "cursor-key-file", "", "file of base64 AES-256 keys, one a line, the sealing key first: the seam seals list nextCursors to the caller, server, method and policy version, and Check refuses a params.cursor not sealed so (invalid_params); every replica mounts the same file")
	fs.DurationVar(&c.ListCacheTTL, "list-cache-ttl", 0, "ttlMs the seam gives filtered lists on MCP 2026-07-28 (the smaller of it and the server's), with cacheScope private")
	c.ServersByPrincipal = map[string]string{}
	fs.Var(principalFlag(c.ServersByPrincipal), "server-id-by-principal", "PRINCIPAL=ID: the MCP server id for requests to the workload with this destination principal (Istio SPIFFE id), when the route names none (repeatable)")
	fs.Var((*listFlag)(&c.CaseSensitiveKeys), "case-sensitive-keys", "SERVER-ID: an MCP server whose SDK matches argument names case-sensitively (TypeScript, Python), so arguments that differ only by case are two members, not a case_variant_key refusal (repeatable; default: refused for every server)")
	fs.BoolVar(&c.AllowTestKeys, "allow-test-keys", false, "TEST ONLY: let --jwks-file, --approver-jwks-file and --cursor-key-file hold the keys this repository publishes (examples/TEST-ONLY-*.jwk.json, whose private halves anyone can sign with; examples/TEST-ONLY-cursor-key, with which anyone can forge cursors)")
	fs.StringVar(&c.TLS.cert, "tls-cert-file", "", "gRPC port: server certificate chain (PEM); with --tls-key-file and --client-ca-file, mTLS, reloaded on change")
	fs.StringVar(&c.TLS.key, "tls-key-file", "", "gRPC port: private key (PEM) of --tls-cert-file")
	fs.StringVar(&c.TLS.clientCA, "client-ca-file", "", "gRPC port: CA bundle (PEM) that callers' client certificates must chain to")
	fs.StringVar(&c.DecisionKeyFile, "decision-key-file", "", "private JWK (Ed25519 or P-256), or a JWK Set whose first key signs and whose others stay published while they rotate out: every allowed request gets a signed decision in x-mcp-decision for the MCP server's verifier; reloaded on change; empty signs none")
	fs.StringVar(&c.DecisionJWKSOut, "decision-jwks-out", "", "file to write the public key set of --decision-key-file to, at start and on every rotation, for MCP servers that read a file (it is also served at /decision-jwks.json on --http-addr)")
	c.Telemetry.register(fs)
	c.Introspection.register(fs)
	fs.DurationVar(&c.SeamDeadline, "seam-deadline", time.Minute, "with --response-seam: how long an admitted request may wait for its answer to reach the ext_proc processor (the MCP server's time to start answering: side streams open at the response headers) before mcp_extauthz_seam_unmet_total counts it")
	fs.Usage = func() { printServeUsage(fs.Output(), fs) }
	var flagErr error // bad flags: exit 2, with every other problem
	var errs []error
	// done returns the problems found, nil for none.
	done := func() error {
		err := joinProblems(append([]error{flagErr}, errs...)...)
		if flagErr != nil {
			return &exitError{code: 2, err: err}
		}
		return err
	}
	if err := parseFlags(fs, args); err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err == nil { // -h, or only the flags wanted
			return nil, err
		}
		flagErr = ee.err
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	warnUnknownEnv(fs, os.Environ(), stderr)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["config"] {
		configFile = getenv("EXTAUTHZ_CONFIG")
	}
	var file map[string]any
	if configFile != "" {
		b, err := os.ReadFile(configFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
			return nil, done()
		}
		if err := yaml.Unmarshal(b, &file); err != nil {
			errs = append(errs, fmt.Errorf("config %s: %w", configFile, err))
			return nil, done()
		}
	}
	var keys []string // the config file's keys: the flags but config
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			keys = append(keys, f.Name)
		}
	})
	var unknown []string
	for name := range file {
		if fs.Lookup(name) == nil || name == "config" {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown) // a map's order is random; the message is not
	for _, name := range unknown {
		near := nearestNames(name, keys)
		for i, k := range near {
			near[i] = strconv.Quote(k) // as the key is: did you mean "audience"?
		}
		errs = append(errs, fmt.Errorf("config %s: unknown key %q%s", configFile, name, didYouMean("", near)))
		delete(file, name)
	}
	for name, v := range file {
		// Files named in a config file are relative to it, as in
		// kubeconfig: the config works from any working directory.
		if p, ok := v.(string); ok && pathFlags[name] && p != "" && !filepath.IsAbs(p) {
			file[name] = filepath.Join(filepath.Dir(configFile), p)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		env := "EXTAUTHZ_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
			return
		}
		v, ok := file[f.Name]
		if !ok {
			return
		}
		var vals []string
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				vals = append(vals, fmt.Sprint(e))
			}
		default:
			vals = []string{fmt.Sprint(v)}
		}
		for _, s := range vals {
			if err := f.Value.Set(s); err != nil {
				errs = append(errs, fmt.Errorf("config %s: %s: %w", configFile, f.Name, err))
			}
		}
	})
	c.Audiences, c.TokenTypes = aud, tokenTypes
	errs = append(errs, checkTokenTypes(c.TokenTypes))
	c.StateStoreRedis.Password = getenv(envStateStorePassword)
	c.StateStoreRedis.SentinelPassword = getenv(envStateStoreSentinelPassword)
	ds, err := extauthz.ParseDenialStatus(denialStatus)
	if err != nil {
		errs = append(errs, fmt.Errorf("--denial-status: %w", err))
	}
	c.DenialStatus = ds
	if _, err := zapcore.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	errs = append(errs, checkIssuer(c.Issuer), checkTLSFlags(c.TLS), checkBinding(c), c.Telemetry.check(), c.Introspection.check())
	if c.PolicyFile == "" {
		errs = append(errs, errors.New("--policy is required"))
	}
	if c.Issuer == "" {
		errs = append(errs, errors.New("--issuer is required"))
	}
	if len(c.Audiences) == 0 {
		errs = append(errs, errors.New("--audience is required (the MCP server's resource URI)"))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("--max-body-bytes must be positive"))
	}
	if c.MaxJSONDepth <= 0 || c.MaxJSONKeys <= 0 || c.MaxJSONElements <= 0 || c.MaxStringBytes <= 0 {
		errs = append(errs, errors.New("--max-json-* and --max-string-bytes must be positive"))
	}
	if c.TokenCacheSize < 0 || c.JWKSRefresh < 0 {
		errs = append(errs, errors.New("--token-cache-size and --jwks-refresh-interval must not be negative"))
	}
	if c.DrainPeriod < 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("--drain-period and --shutdown-timeout must not be negative"))
	}
	if c.SeamDeadline <= 0 {
		errs = append(errs, errors.New("--seam-deadline must be positive"))
	}
	errs = append(errs, checkMemoryStore(c))
	if c.DecisionJWKSOut != "" && c.DecisionKeyFile == "" {
		errs = append(errs, errors.New("--decision-jwks-out needs --decision-key-file (the keys whose public halves it writes)"))
	}
	errs = append(errs, checkAudiences(c.Audiences))
	if err := done(); err != nil {
		return nil, err
	}
	return c, nil
}
