package policy

import "sort"

// RuleRef names one rule of a compiled policy: its id (from the file, or
// the one Compile gave it), the decision it gives, and whether it is a
// shadow rule (reported, never deciding).
type RuleRef struct {
	ID       string
	Decision Decision
	Shadow   bool
}

// Rules returns every rule of p, shadow rules included, in file order: a
// fresh slice, for what is bounded by the rules loaded (the rule_id label
// of the metrics). It says nothing of quotas or pins.
func (p *Policy) Rules() []RuleRef {
	var rs []*rule
	for d := range p.rules {
		for k := range p.rules[d] {
			rs = append(rs, p.rules[d][k]...)
		}
	}
	rs = append(rs, p.shadow...)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].line != rs[j].line {
			return rs[i].line < rs[j].line
		}
		return rs[i].col < rs[j].col
	})
	out := make([]RuleRef, len(rs))
	for i, r := range rs {
		out[i] = RuleRef{ID: r.id, Decision: r.decision, Shadow: r.shadow}
	}
	return out
}
