package extproc

import (
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
	"github.com/mcp-extauthz/mcp-extauthz/internal/sse"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// AuthzNamespace is the dynamic-metadata namespace ext_authz writes Check's
// metadata under (Envoy ext_authz.cc Filter::onComplete).
const AuthzNamespace = decision.MetadataNamespace

// DefaultMaxBody bounds a buffered JSON answer the processor filters (4 MiB).
const DefaultMaxBody = 4 << 20

// Revision2026 is the first MCP revision whose list results carry
// cacheScope and ttlMs (CacheableResult).
const Revision2026 = mcpmethod.Revision20260728

// Reasons the processor refuses with, in data.reason of its JSON-RPC
// errors and in its decision-log lines: a closed set.
const (
	ReasonNoMetadata    = "no_authorization_metadata" // a processed answer without Check's decision_id
	ReasonCompressed    = "response_compressed"       // content-encoding other than identity
	ReasonUnfilterable  = "response_unfilterable"     // a list answer that cannot be parsed or decided
	ReasonTooLarge      = "response_too_large"        // a JSON answer or SSE event over its cap
	ReasonInvalidCursor = "invalid_cursor"            // a params.cursor not sealed for this caller
	ReasonResultOnError = "result_on_error_status"    // a non-2xx answer carrying a JSON-RPC result
	ReasonContentType   = "content_type_ambiguous"    // the modelled clients read the Content-Type differently
	ReasonCharset       = "charset_unsupported"       // a charset other than UTF-8 on an answer a client reads
	ReasonUnexpected    = "unexpected_response"       // a JSON-RPC response to a request this stream does not carry
	ReasonRedirect      = "response_redirect"         // a 301, 302, 303, 307 or 308 the clients would follow
)

// Config is what a Server shares with Check.
type Config struct {
	// Policy returns the live policy and its version; a nil policy refuses
	// every list.
	Policy func() (*decision.Policy, string)
	// Tasks binds task ids; nil: CreateTaskResult ids are not bound and
	// tasks/list answers are refused.
	Tasks *state.Tasks
	// Cursors seals nextCursor; nil: cursors pass unchanged.
	Cursors *cursor.Sealer
	// RequestLimits are Check's parse limits (--max-body-bytes, the
	// --max-json-* flags): a request body the processor reads to swap a
	// sealed cursor is read with them, so whatever Check admitted, it
	// reads. Zero: mcpparse's defaults.
	RequestLimits mcpparse.Limits
	// Log is the decision logger: one line per filtered list. Nil: none.
	Log *zap.Logger
	// Metrics counts side streams and filtered lists. Nil: none.
	Metrics *metrics.Metrics
	// MaxBody bounds a buffered answer (default DefaultMaxBody); MaxEvent
	// one SSE event (default sse.DefaultMaxEvent).
	MaxBody, MaxEvent int
	// CacheTTLms is the ttlMs given to filtered lists on MCP 2026-07-28
	// (the smaller of it and the upstream's); default 0.
	CacheTTLms int64
	// Definitions records the tool definitions every tools/list shows when
	// the live policy pins them (pin_mode tofu or strict), for Check's pin
	// step; nil with pinning on refuses the list (fail closed). A tools
	// array this process observed whole lately, byte for byte in the same
	// scope, is not observed again tool by tool (toolpin ListSeen).
	Definitions *toolpin.Observations
	// Fingerprints caches fingerprints by the raw bytes of a definition.
	Fingerprints *toolpin.Cache
	// Results records the result of a call Check marked recover_key (its
	// rule says recover_results and it has an idempotency key), success or
	// tool_error, for ResultTTL (the idempotency key's lifetime), so Check
	// answers its retry from it. Nil: nothing is recorded.
	Results   *state.Results
	ResultTTL time.Duration
	// Seam is told of every side stream whose Check metadata carries
	// seam_class (Check marked the decision: internal/seamcover), once, at
	// its first message; nil: nothing is told.
	Seam *seamcover.Table
}

// Server is the ExternalProcessor.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer
	cfg Config
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxEvent <= 0 {
		cfg.MaxEvent = sse.DefaultMaxEvent
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &Server{cfg: cfg}
}

// Seam is the coverage table the Server tells (Config.Seam).
func (s *Server) Seam() *seamcover.Table { return s.cfg.Seam }
