package argschema

import (
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxEvaluations bounds how many subschemas Validate may apply to one
// value of the arguments, whatever the arguments: a compiled schema whose
// bound is over it is unusable. Without it a schema of a kilobyte (a chain
// of oneOf through $defs, each branch referring to the next link twice)
// makes the library apply 2^n subschemas to one value (seconds, then
// hours, of CPU per call, and the call's goroutine cannot be stopped).
// Schemas as tools write them apply tens.
const MaxEvaluations = 1024

// costDepth is how many levels below the arguments object the bound
// follows (recursive schemas): mcpparse refuses bodies deeper than its
// MaxDepth (64 by default), and the arguments are below params.
const costDepth = 128

// checkCost computes, over the compiled schema graph (references
// resolved), an upper bound of the number of subschemas Validate applies
// to any one value of an instance, and returns an error when it is over
// MaxEvaluations at some depth up to costDepth, or when computing it takes
// more than costWork steps. The subschemas applied to a value are the
// in-place closure (allOf, anyOf, oneOf, not, if, then, else, $ref,
// dependentSchemas, dependencies) of those applied to it by its parent,
// counted with multiplicity. A member or element is reached through
// properties, patternProperties (every pattern taken to match),
// additionalProperties, unevaluatedProperties, propertyNames, items,
// prefixItems, additionalItems, contains and unevaluatedItems. The bound
// g(n, d) of the values d levels below one validated by n is, for d = 0,
// the size of n's closure, else the worst member name or index (the same
// for the whole closure) of the sum of g(c, d-1) over the closure's
// subschemas c for that key: the worst key is taken node by node below, so
// the bound is an upper one. $dynamicRef and $recursiveRef, which resolve
// while validating, are refused.
func checkCost(root *jsonschema.Schema) error {
	idx := map[*jsonschema.Schema]int{}
	var nodes []*jsonschema.Schema
	stack := []*jsonschema.Schema{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == nil {
			continue
		}
		if _, ok := idx[s]; ok {
			continue
		}
		if s.DynamicRef != nil || s.RecursiveRef != nil {
			return fmt.Errorf("$dynamicRef and $recursiveRef are not supported (their target is known only while validating)")
		}
		idx[s] = len(nodes)
		nodes = append(nodes, s)
		stack = append(stack, inPlace(s)...)
		stack = append(stack, below(s)...)
	}
	order, err := inPlaceOrder(nodes, idx)
	if err != nil {
		return err
	}
	work := 0
	// cl[i]: the in-place closure of node i, node index → multiplicity;
	// children before parents (reverse of order).
	cl := make([]map[int]float64, len(nodes))
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		m := map[int]float64{i: 1}
		total := 1.0
		for _, c := range inPlace(nodes[i]) {
			for j, x := range cl[idx[c]] {
				m[j] += x
				total += x
				work++
			}
		}
		if total > MaxEvaluations {
			return fmt.Errorf("the schema may apply %.0f subschemas to one value, over %d", total, MaxEvaluations)
		}
		if work > costWork {
			return errTooComplex
		}
		cl[i] = m
	}
	// The closures as slices, and what each node's closure reaches
	// through a prefix (the indices to try).
	type entry struct {
		j int
		x float64
	}
	cls := make([][]entry, len(nodes))
	maxPrefix := make([]int, len(nodes))
	prefixLen := func(s *jsonschema.Schema) int {
		n := len(s.PrefixItems)
		if l, ok := s.Items.([]*jsonschema.Schema); ok {
			n = max(n, len(l))
		}
		return n
	}
	for i := range nodes {
		for j, x := range cl[i] {
			cls[i] = append(cls[i], entry{j, x})
			maxPrefix[i] = max(maxPrefix[i], prefixLen(nodes[j]))
		}
	}
	// g by depth: prev is g(·, d-1), cur g(·, d).
	prev := make([]float64, len(nodes))
	for i := range nodes {
		for _, e := range cls[i] {
			prev[i] += e.x
		}
	}
	g := func(c *jsonschema.Schema) float64 {
		if c == nil {
			return 0
		}
		return prev[idx[c]]
	}
	gAny := func(a any) float64 {
		c, _ := a.(*jsonschema.Schema)
		return g(c)
	}
	elemAt := func(s *jsonschema.Schema, index int) float64 {
		sum := 0.0
		for _, c := range childrenFor(s, false, "", index) {
			sum += g(c)
		}
		return sum
	}
	cur := make([]float64, len(nodes))
	other := make([]float64, len(nodes)) // a member named in no properties
	addl := make([]float64, len(nodes))
	elem := make([]float64, len(nodes)) // an element past every prefix
	delta := map[string]float64{}
	for depth := 1; depth <= costDepth; depth++ {
		// A member: a subschema applies its patternProperties (all taken
		// to match), unevaluatedProperties and propertyNames, and
		// properties[name] when it has the name, else
		// additionalProperties.
		for j, s := range nodes {
			addl[j] = gAny(s.AdditionalProperties)
			other[j] = addl[j] + g(s.UnevaluatedProperties) + g(s.PropertyNames)
			for _, c := range s.PatternProperties {
				other[j] += g(c)
			}
			elem[j] = elemAt(s, prefixLen(s))
			work += 1 + len(s.PatternProperties)
		}
		nonzero, same := false, true
		for i := range nodes {
			worstOther, worstElem := 0.0, 0.0
			clear(delta)
			for _, e := range cls[i] {
				worstOther += e.x * other[e.j]
				worstElem += e.x * elem[e.j]
				for k, c := range nodes[e.j].Properties {
					delta[k] += e.x * (g(c) - addl[e.j])
				}
				work += 1 + len(nodes[e.j].Properties)
			}
			worst := max(worstOther, worstElem)
			for _, d := range delta {
				worst = max(worst, worstOther+d)
			}
			for index := 0; index < maxPrefix[i]; index++ { // an element in a prefix
				sum := 0.0
				for _, e := range cls[i] {
					sum += e.x * elemAt(nodes[e.j], index)
				}
				work += len(cls[i])
				worst = max(worst, sum)
			}
			if work > costWork {
				return errTooComplex
			}
			cur[i] = worst
			nonzero = nonzero || worst > 0
			same = same && worst == prev[i]
		}
		if g := cur[idx[root]]; g > MaxEvaluations {
			return fmt.Errorf("the schema may apply %.0f subschemas to one value %d levels down, over %d", g, depth, MaxEvaluations)
		}
		if !nonzero || same {
			return nil // nothing deeper, or every bound as it was: so it stays
		}
		prev, cur = cur, prev
	}
	return nil
}

// costWork bounds checkCost's own steps (a subschema of a closure, a
// property: about 20 ns each, 0.1 s at most): a schema of 18 KiB (500 allOf
// branches, each naming its own property and referring back to the root)
// would otherwise cost minutes. Schemas as tools write them take
// thousands.
const costWork = 5_000_000

var errTooComplex = fmt.Errorf("the schema is too complex to bound its validation's work")

// inPlace are the subschemas s applies to its own instance.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	one := func(c *jsonschema.Schema) {
		if c != nil {
			out = append(out, c)
		}
	}
	one(s.Ref)
	one(s.RecursiveRef)
	if s.DynamicRef != nil {
		one(s.DynamicRef.Ref)
	}
	one(s.Not)
	one(s.If)
	one(s.Then)
	one(s.Else)
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, c := range s.DependentSchemas {
		one(c)
	}
	for _, d := range s.Dependencies {
		if c, ok := d.(*jsonschema.Schema); ok {
			one(c)
		}
	}
	return out
}

// below are every subschema s applies to a member, a member name or an
// element (each that childrenFor may return).
func below(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	one := func(c *jsonschema.Schema) {
		if c != nil {
			out = append(out, c)
		}
	}
	anyOne := func(a any) {
		if c, ok := a.(*jsonschema.Schema); ok {
			one(c)
		}
	}
	for _, c := range s.Properties {
		one(c)
	}
	for _, c := range s.PatternProperties {
		one(c)
	}
	anyOne(s.AdditionalProperties)
	one(s.UnevaluatedProperties)
	one(s.PropertyNames)
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		one(it)
	case []*jsonschema.Schema:
		for _, c := range it {
			one(c)
		}
	}
	anyOne(s.AdditionalItems)
	for _, c := range s.PrefixItems {
		one(c)
	}
	one(s.Items2020)
	one(s.Contains)
	one(s.UnevaluatedItems)
	return out
}

// childrenFor are the subschemas s applies to the member named name
// (member) or the element at index: an upper bound (every pattern taken to
// match, unevaluated* always applied).
func childrenFor(s *jsonschema.Schema, member bool, name string, index int) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	one := func(c *jsonschema.Schema) {
		if c != nil {
			out = append(out, c)
		}
	}
	anyOne := func(a any) {
		if c, ok := a.(*jsonschema.Schema); ok {
			one(c)
		}
	}
	if member {
		p, inProps := s.Properties[name]
		one(p)
		for _, c := range s.PatternProperties {
			one(c)
		}
		if !inProps {
			anyOne(s.AdditionalProperties)
		}
		one(s.UnevaluatedProperties)
		one(s.PropertyNames)
		return out
	}
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		one(it)
	case []*jsonschema.Schema:
		if index < len(it) {
			one(it[index])
		} else {
			anyOne(s.AdditionalItems)
		}
	}
	if index < len(s.PrefixItems) {
		one(s.PrefixItems[index])
	} else {
		one(s.Items2020)
	}
	one(s.Contains)
	one(s.UnevaluatedItems)
	return out
}

// inPlaceOrder orders nodes so that each comes before the subschemas it
// applies in place; an error names a cycle of in-place references.
func inPlaceOrder(nodes []*jsonschema.Schema, idx map[*jsonschema.Schema]int) ([]int, error) {
	state := make([]byte, len(nodes)) // 0 new, 1 on the path, 2 done
	post := make([]int, 0, len(nodes))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("subschema %s applies itself in place (a $ref cycle)", strconv.Quote(nodes[i].Location))
		case 2:
			return nil
		}
		state[i] = 1
		for _, c := range inPlace(nodes[i]) {
			if err := visit(idx[c]); err != nil {
				return err
			}
		}
		state[i] = 2
		post = append(post, i)
		return nil
	}
	for i := range nodes {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	// Reverse postorder: parents first.
	for l, r := 0, len(post)-1; l < r; l, r = l+1, r-1 {
		post[l], post[r] = post[r], post[l]
	}
	return post, nil
}
