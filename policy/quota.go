package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// QuotaPer is whose requests one bucket of a quota counts.
type QuotaPer int

const (
	// QuotaPerPrincipal: one bucket per token issuer and subject (iss, sub).
	QuotaPerPrincipal QuotaPer = iota + 1
	// QuotaPerClient: one bucket per issuer and OAuth client (the token's
	// client_id claim, RFC 9068 section 2.2, else azp); tokens naming
	// neither share one bucket.
	QuotaPerClient
	// QuotaPerEveryone: one bucket for every caller.
	QuotaPerEveryone
)

// String returns "principal", "client" or "everyone".
func (q QuotaPer) String() string {
	switch q {
	case QuotaPerPrincipal:
		return "principal"
	case QuotaPerClient:
		return "client"
	case QuotaPerEveryone:
		return "everyone"
	}
	return "QuotaPer(" + strconv.Itoa(int(q)) + ")"
}

// Quota is one compiled `quotas` rule: at most Limit requests per Window,
// with bursts of up to Burst, counted per Per and per MCP server (a token
// bucket, GCRA: one token every Interval, a bucket of Burst tokens). The
// policy only says which quotas a request is charged to
// (Result.Quotas); the caller keeps the buckets.
type Quota struct {
	ID     string
	Per    QuotaPer
	Limit  int           // requests per Window, 1..MaxQuotaLimit
	Window time.Duration // 1s..MaxQuotaWindow
	Burst  int           // bucket size, 1..MaxQuotaLimit; Limit when not written
	// FailOpen: `on_store_error: allow`, the request is not limited by this
	// quota when the bucket store cannot answer. The default refuses it
	// (fail closed).
	FailOpen bool

	rule *rule
	one  []*Quota // {this quota}: Result.Quotas of a request only it matches, without allocating
}

// Interval is the time one token takes to come back: Window / Limit, at
// least a microsecond (Limit <= MaxQuotaLimit, Window >= 1s).
func (q *Quota) Interval() time.Duration { return q.Window / time.Duration(q.Limit) }

// Bounds of a quota rule.
const (
	MaxQuotaLimit  = 1_000_000
	MaxQuotaWindow = 31 * 24 * time.Hour
)

// Quotas returns the policy's quota rules in file order. The caller must
// not modify them.
func (p *Policy) Quotas() []*Quota { return p.quotas }

// quotaKeys are the keys of a rule in `quotas`.
var quotaKeys = []string{"id", "match", "method", "when", "per", "limit", "window", "burst", "on_store_error"}

// compileQuotas compiles the top-level `quotas` list.
func (c *compiler) compileQuotas(n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.addf(n, "", "quotas must be a list of quota rules")
		return
	}
	for i, item := range n.Content {
		c.compileQuota(item, "quotas["+strconv.Itoa(i)+"]")
	}
}

// compileQuota compiles one quota rule, a mapping; pos is its place.
func (c *compiler) compileQuota(item *yaml.Node, pos string) {
	id := ruleName(item, pos)
	if item.Kind != yaml.MappingNode {
		c.addf(item, id, "a quota must be a mapping with match or method, limit and window")
		return
	}
	f := map[string]*yaml.Node{}
	for _, kv := range c.fields(item, id, quotaKeys) {
		f[kv.key] = kv.val
	}
	ok := c.ruleID(f["id"], item, id)
	// Quotas match loosely, as deny rules do: a spelling variant of a
	// limited tool is counted too. A failing `when` counts as matching.
	ru := &rule{id: id, decision: Deny, loose: true, line: item.Line, col: item.Column}
	q := &Quota{ID: id, Per: QuotaPerPrincipal, rule: ru}
	match, method := f["match"], f["method"]
	switch {
	case match != nil && method != nil:
		c.addf(method, id, "a quota has match (tools, resources, prompts) or method, not both")
		ok = false
	case match == nil && method == nil:
		c.addf(item, id, "missing match or method")
		ok = false
	default:
		pat, key := match, "match"
		if method != nil {
			pat, key = method, "method"
		}
		if s, sok := c.str(pat, id, key); !sok {
			ok = false
		} else {
			ru.pattern = s
			msg := ""
			if method != nil {
				msg = compileMethod(ru, s)
			} else {
				msg = compileMatch(ru, s)
			}
			if msg != "" {
				c.addf(pat, id, "%s", msg)
				ok = false
			}
		}
	}
	if n := f["when"]; n != nil {
		prg, wok := c.compileWhen(n, id)
		ru.when, ru.whenSrc = prg, n.Value
		ok = ok && wok
	}
	if n := f["per"]; n != nil {
		switch s, _ := c.str(n, id, "per"); s {
		case "principal":
			q.Per = QuotaPerPrincipal
		case "client":
			q.Per = QuotaPerClient
		case "everyone":
			q.Per = QuotaPerEveryone
		default:
			c.addf(n, id, "per must be principal, client or everyone")
			ok = false
		}
	}
	if n := f["limit"]; n == nil {
		c.addf(item, id, "missing limit (requests per window)")
		ok = false
	} else if q.Limit = c.quotaCount(n, id, "limit"); q.Limit <= 0 {
		ok = false
	}
	q.Burst = q.Limit
	if n := f["burst"]; n != nil {
		if q.Burst = c.quotaCount(n, id, "burst"); q.Burst <= 0 {
			ok = false
		}
	}
	if n := f["window"]; n == nil {
		c.addf(item, id, "missing window (a duration: 1s, 1m, 1h, 24h)")
		ok = false
	} else if s, sok := c.str(n, id, "window"); !sok {
		ok = false
	} else if w, err := time.ParseDuration(s); err != nil || w < time.Second || w > MaxQuotaWindow || strings.HasPrefix(s, "+") {
		c.addf(n, id, "window must be a duration from 1s to %s (such as 1m, 1h, 24h), not %q", MaxQuotaWindow, s)
		ok = false
	} else {
		q.Window = w
	}
	if n := f["on_store_error"]; n != nil {
		switch s, _ := c.str(n, id, "on_store_error"); s {
		case "deny":
		case "allow":
			q.FailOpen = true
		default:
			c.addf(n, id, "on_store_error must be deny (the default: fail closed) or allow")
			ok = false
		}
	}
	if !ok {
		return
	}
	if float64(q.Burst)*float64(q.Interval()) > float64(MaxQuotaWindow) {
		c.addf(orNode(f["burst"], item), id, "burst %d takes longer than %s to refill at %d per %s", q.Burst, MaxQuotaWindow, q.Limit, q.Window)
		return
	}
	q.one = []*Quota{q}
	c.p.quotas = append(c.p.quotas, q)
}

// quotaCount reads a positive integer of at most MaxQuotaLimit; 0 after a
// problem.
func (c *compiler) quotaCount(n *yaml.Node, id, what string) int {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		c.addf(n, id, "%s must be a whole number from 1 to %d", what, MaxQuotaLimit)
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || v < 1 || v > MaxQuotaLimit {
		c.addf(n, id, "%s must be a whole number from 1 to %d, not %s", what, MaxQuotaLimit, n.Value)
		return 0
	}
	return int(v)
}

// matchQuotas returns the quotas r is charged to, in file order: nil when
// none, a quota's own one-element slice when only it matches.
func (p *Policy) matchQuotas(r *request) []*Quota {
	var out []*Quota
	for _, q := range p.quotas {
		if !q.rule.matches(r) {
			continue
		}
		switch len(out) {
		case 0:
			out = q.one
		case 1:
			out = append([]*Quota{out[0]}, q)
		default:
			out = append(out, q)
		}
	}
	return out
}

// String describes q for logs: "10 per 1m0s per principal (burst 10)".
func (q *Quota) String() string {
	return fmt.Sprintf("%d per %s per %s (burst %d)", q.Limit, q.Window, q.Per, q.Burst)
}
