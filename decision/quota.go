package decision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// QuotaBuckets keeps the token buckets of the policy's quotas
// (internal/state.Limiter: Memory for one replica, Redis shared by all).
// Take takes one token of key's bucket of burst tokens, one back every
// interval; allowed false means empty, with how long until a token is
// back. Errors mean the store cannot answer.
type QuotaBuckets interface {
	Take(ctx context.Context, key string, interval time.Duration, burst int) (allowed bool, retryAfter time.Duration, err error)
}

// Quota outcomes, the values QuotaObserver receives.
const (
	QuotaAdmitted      = "admitted"       // a token taken
	QuotaLimited       = "limited"        // the bucket was empty: rate_limited
	QuotaStoreRefused  = "store_refused"  // the store failed and the quota fails closed: state_store_unavailable
	QuotaStoreAdmitted = "store_admitted" // the store failed and the quota says on_store_error: allow
)

// QuotaOutcomes are every outcome, for metrics.
var QuotaOutcomes = []string{QuotaAdmitted, QuotaLimited, QuotaStoreRefused, QuotaStoreAdmitted}

// charge takes a token of every quota el is charged to (el.quotas, from
// the policy), in file order, and returns "" when each had one. An empty
// bucket is rate_limited, naming the quota in RuleID and the wait in
// RetryAfter; a store that cannot answer is state_store_unavailable,
// unless the quota says on_store_error: allow. Tokens taken from quotas
// before the one that refused stay taken.
func (d *Decider) charge(ctx context.Context, el *Decision) Reason {
	for _, q := range el.quotas {
		var allowed bool
		var retry time.Duration
		err := errNoBuckets
		if d.cfg.Quotas != nil {
			allowed, retry, err = d.cfg.Quotas.Take(ctx, quotaKey(q, el.Server, el.Principal), q.Interval(), q.Burst)
		}
		switch {
		case err != nil && q.FailOpen:
			d.observeQuota(q.ID, QuotaStoreAdmitted)
		case err != nil:
			d.observeQuota(q.ID, QuotaStoreRefused)
			el.RuleID, el.Detail = q.ID, "quota "+strconv.Quote(q.ID)+": "+err.Error()
			return ReasonStateStoreUnavailable
		case !allowed:
			d.observeQuota(q.ID, QuotaLimited)
			el.RuleID, el.RetryAfter = q.ID, retry
			el.Detail = "quota " + strconv.Quote(q.ID) + ": " + q.String() + " used up"
			return ReasonRateLimited
		default:
			d.observeQuota(q.ID, QuotaAdmitted)
		}
	}
	return ""
}

// errNoBuckets: quotas with no bucket store configured fail closed.
var errNoBuckets = errors.New("no quota bucket store")

func (d *Decider) observeQuota(id, outcome string) {
	if d.cfg.QuotaObserver != nil {
		d.cfg.QuotaObserver(id, outcome)
	}
}

// quotaKey is the store key of q's bucket for a request to server by p:
// "quota:" and 32 hex digits of SHA-256 over the quota id, the server and
// whose bucket it is (per principal: issuer and subject; per client:
// issuer and policy.ClientOf: a non-empty client_id, else azp, else none,
// the client CEL, the log and the request digest name; per everyone:
// nothing), each
// length-prefixed. Hashed, so no claim reaches the store or bounds the
// key's length. The limit and window are not in it: a reloaded policy
// with a new limit goes on from the bucket as it is.
func quotaKey(q *policy.Quota, server string, p *bearer.Principal) string {
	b := make([]byte, 0, 256) // on the stack unless the names are long
	put := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(append(b, ':'), s...)
	}
	put(q.ID)
	put(server)
	put(q.Per.String())
	if p != nil {
		switch q.Per {
		case policy.QuotaPerPrincipal:
			put(p.Issuer)
			put(p.Subject)
		case policy.QuotaPerClient:
			put(p.Issuer)
			put(policy.ClientOf(p.Claims))
		}
	}
	sum := sha256.Sum256(b)
	var out [6 + 32]byte
	copy(out[:], "quota:")
	hex.Encode(out[6:], sum[:16])
	return string(out[:])
}
