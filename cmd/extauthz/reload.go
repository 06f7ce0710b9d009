package main

import (
	"errors"

	"github.com/mcp-extauthz/mcp-extauthz/decision"

	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/internal/metrics"
	"github.com/mcp-extauthz/mcp-extauthz/internal/reload"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// policyReload reports the policy loads of a reload.Loader publishing into
// store: every published policy and every refused one is counted in m
// (policy_reloads_total, policy_info, policy_reload_errors_total) and, once
// log is set, logged. A refused policy is logged with its file:line:col
// problems and the version kept live.
type policyReload struct {
	store *decision.PolicyStore
	m     *metrics.Metrics
	log   *zap.Logger // nil: counted, not logged (serve's first load fails the start instead)

	status policyStatus // for /statusz (statusz.go)
}

// newPolicyLoader returns the loader of file into store, reporting through
// p; watch errors are logged once p.log is set.
func newPolicyLoader(file string, p *policyReload) *reload.Loader {
	return &reload.Loader{
		File:    file,
		Publish: p.store.Publish,
		Loaded:  func(changed bool, err error) { p.loaded(file, changed, err) },
		OnWatchError: func(err error) {
			if p.log != nil {
				p.log.Warn("policy watch error; reloading to be safe", zap.Error(err))
			}
		},
	}
}

func (p *policyReload) loaded(file string, changed bool, err error) {
	if err == nil {
		if !changed { // the live policy's file again: a refusal before no longer stands
			p.m.PolicyUnchanged()
			p.status.unchanged()
			return
		}
		lp := p.store.Load()
		p.m.PolicyPublished(lp.Version)
		p.m.PolicyRules(metricRules(lp.Policy))
		p.status.published()
		if p.log != nil {
			p.log.Info("policy loaded", zap.String("file", file), zap.String("policy_version", lp.Version))
		}
		return
	}
	p.m.PolicyRefused()
	p.status.refused(err)
	if p.log == nil {
		return
	}
	fields := []zap.Field{zap.String("file", file), zap.Error(err)}
	var ce *policy.CompileError
	if errors.As(err, &ce) {
		probs := make([]string, len(ce.Problems))
		for i, pr := range ce.Problems {
			probs[i] = pr.String()
		}
		fields = append(fields, zap.Strings("problems", probs))
	}
	if cur := p.store.Load(); cur != nil {
		fields = append(fields, zap.String("kept_policy_version", cur.Version))
	}
	p.log.Error("policy reload refused; keeping the last good policy", fields...)
}

// metricRules are the rules of pol as internal/metrics' rule_id label sees
// them (nil for a nil policy), so their series exist from the load on.
func metricRules(pol *policy.Policy) []metrics.Rule {
	if pol == nil {
		return nil
	}
	rs := pol.Rules()
	out := make([]metrics.Rule, len(rs))
	for i, r := range rs {
		out[i] = metrics.Rule{ID: r.ID, Decision: r.Decision.String()}
	}
	return out
}
