package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/seamcover"
	"github.com/mcp-extauthz/mcp-extauthz/internal/tracing"
)

// policyStatus is what /statusz says of the policy loads.
type policyStatus struct {
	mu          sync.Mutex
	loadedAt    time.Time
	lastErr     string
	lastErrAt   time.Time
	errStanding bool // the last load was refused
}

func (p *policyStatus) published() {
	p.mu.Lock()
	p.loadedAt, p.errStanding = time.Now(), false
	p.mu.Unlock()
}

func (p *policyStatus) unchanged() {
	p.mu.Lock()
	p.errStanding = false
	p.mu.Unlock()
}

func (p *policyStatus) refused(err error) {
	p.mu.Lock()
	p.lastErr, p.lastErrAt, p.errStanding = err.Error(), time.Now(), true
	p.mu.Unlock()
}

// Status is the /statusz document: what this replica runs and how its
// dependencies are, for an operator. No secret: no key material, no
// credentials of the state store, no token.
type Status struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Ready     bool   `json:"ready"`
	NotReady  string `json:"not_ready,omitempty"` // why not
	DryRun    bool   `json:"dry_run"`

	Policy struct {
		File            string    `json:"file"`
		Version         string    `json:"version,omitempty"`
		LoadedAt        time.Time `json:"loaded_at,omitzero"`
		LastReloadError string    `json:"last_reload_error,omitempty"`
		LastErrorAt     time.Time `json:"last_reload_error_at,omitzero"`
		ErrorStanding   bool      `json:"reload_failing"` // the file on disk is refused; the version above stays live
	} `json:"policy"`

	IdentityProvider bearer.VerifierStatus  `json:"identity_provider"`
	Approvals        *bearer.VerifierStatus `json:"approver_identity_provider,omitempty"`

	StateStore struct {
		Kind      string `json:"kind"`              // memory, redis, rediss
		Address   string `json:"address,omitempty"` // host:port, never the credentials
		Reachable bool   `json:"reachable"`
		Error     string `json:"error,omitempty"`
	} `json:"state_store"`

	Audiences          []string          `json:"audiences"`
	ServerID           string            `json:"server_id,omitempty"`
	ServersByPrincipal map[string]string `json:"servers_by_principal,omitempty"`
	MetricServers      []string          `json:"metric_servers"` // values of the server label, besides other and none

	Tracing struct {
		Enabled  bool   `json:"enabled"`
		Protocol string `json:"protocol,omitempty"`
		Sampler  string `json:"sampler,omitempty"`
	} `json:"tracing"`
	DecisionLog struct {
		Sinks         []string `json:"sinks"`
		Overflow      string   `json:"overflow"`
		SampleAllowed float64  `json:"sample_allowed"`
	} `json:"decision_log"`

	// ResponseSeam is the seam's coverage (--response-seam; absent
	// without): decisions Check marked, those a processor of this replica
	// saw, and those none saw within their deadline, by class.
	ResponseSeam *SeamStatus `json:"response_seam,omitempty"`

	// Introspection is the opaque-token verifier (--token-mode
	// introspection or both); absent in jwt mode.
	Introspection *IntrospectionStatus `json:"introspection,omitempty"`
}

// SeamStatus is /statusz's response_seam: counts since start by class
// (list, get, task, call, other), the ids held now, and the deadlines.
type SeamStatus struct {
	Expected  map[string]uint64 `json:"expected"`
	Met       map[string]uint64 `json:"met"`
	Unmet     map[string]uint64 `json:"unmet"`
	Untracked map[string]uint64 `json:"untracked"`
	// UnmetTotal is the sum of Unmet: non-zero means answers reached
	// clients without the processor (or, with several replicas, that side
	// streams went to another replica: compare Expected and Met summed
	// over all of them).
	UnmetTotal uint64 `json:"unmet_total"`
	Held       int    `json:"held"`
	Deadline   string `json:"deadline"`
}

// seamStatus is t's SeamStatus; nil for a nil t.
func seamStatus(t *seamcover.Table) *SeamStatus {
	if t == nil {
		return nil
	}
	s := t.Stats()
	st := &SeamStatus{Expected: map[string]uint64{}, Met: map[string]uint64{}, Unmet: map[string]uint64{}, Untracked: map[string]uint64{},
		Held: s.Held, Deadline: t.Deadline().String()}
	for i, c := range seamcover.Classes {
		st.Expected[c], st.Met[c], st.Unmet[c], st.Untracked[c] = s.Expected[i], s.Met[i], s.Unmet[i], s.Untracked[i]
		st.UnmetTotal += s.Unmet[i]
	}
	return st
}

// IntrospectionStatus is /statusz's view of RFC 7662 introspection.
type IntrospectionStatus struct {
	Mode     string `json:"token_mode"`
	Endpoint string `json:"endpoint,omitempty"` // "" until discovered
	Breaker  string `json:"circuit_breaker"`    // closed, half-open, open
}

// statusHandler serves /statusz: Status as JSON, the state store pinged
// with a one-second deadline.
func statusHandler(cfg *Config, svc *service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := status(r.Context(), cfg, svc)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
}

func status(ctx context.Context, cfg *Config, svc *service) *Status {
	st := &Status{GoVersion: runtime.Version(), DryRun: cfg.DryRun}
	st.Version, st.Commit = versionParts()
	ok, why := svc.readiness.Ready()
	st.Ready, st.NotReady = ok, why

	st.Policy.File = cfg.PolicyFile
	if lp := svc.policies.Load(); lp != nil {
		st.Policy.Version = lp.Version
	}
	if p := svc.reload; p != nil {
		p.status.mu.Lock()
		st.Policy.LoadedAt, st.Policy.LastReloadError, st.Policy.LastErrorAt, st.Policy.ErrorStanding =
			p.status.loadedAt, p.status.lastErr, p.status.lastErrAt, p.status.errStanding
		p.status.mu.Unlock()
	}

	st.IdentityProvider = svc.oidc.Status()
	if svc.approvals != nil {
		a := svc.approvals.Status()
		st.Approvals = &a
	}

	st.StateStore.Kind, st.StateStore.Address = "memory", ""
	if u, err := url.Parse(cfg.StateStore); err == nil && u.Scheme != "" {
		st.StateStore.Kind, st.StateStore.Address = u.Scheme, u.Host
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := svc.store.Ping(pctx); err != nil {
		st.StateStore.Error = err.Error()
	} else {
		st.StateStore.Reachable = true
	}

	st.Audiences, st.ServerID = cfg.Audiences, cfg.ServerID
	if len(cfg.ServersByPrincipal) > 0 {
		st.ServersByPrincipal = cfg.ServersByPrincipal
	}
	st.MetricServers = []string{}
	for id := range serverLabels(cfg) {
		st.MetricServers = append(st.MetricServers, id)
	}
	sort.Strings(st.MetricServers)

	tc := &cfg.Telemetry
	if on, _ := tc.Tracing.TracesEnabled(); on {
		st.Tracing.Enabled = true
		if e, _, err := tc.Tracing.Resolve(tracing.Traces); err == nil {
			st.Tracing.Protocol = string(e.Protocol)
		}
		st.Tracing.Sampler = "OTEL_TRACES_SAMPLER"
		if s := tc.Tracing.Sampler(); s != nil {
			st.Tracing.Sampler = s.Description()
		}
	}
	st.DecisionLog.Sinks = tc.DecisionLog.v
	st.DecisionLog.Overflow = tc.DecisionLogOverflow
	st.DecisionLog.SampleAllowed = tc.SampleAllowed
	if iv := svc.intro; iv != nil {
		st.Introspection = &IntrospectionStatus{Mode: cfg.Introspection.Mode, Endpoint: iv.Endpoint(), Breaker: iv.BreakerState()}
	}
	st.ResponseSeam = seamStatus(svc.seam)
	return st
}
