package policy

import (
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/checker"
	"go.yaml.in/yaml/v3"
)

// compileWhen compiles a `when` expression, reporting problems at their
// place in the file.
func (c *compiler) compileWhen(n *yaml.Node, id string) (cel.Program, bool) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!str" || isNull(n)) && strings.TrimSpace(n.Value) == "" {
		c.addf(n, id, "when must be a non-empty CEL expression")
		return nil, false
	}
	if _, ok := c.str(n, id, "when"); !ok {
		return nil, false
	}
	env, err := celEnv()
	if err != nil { // a bug in this package, not in the policy
		c.addf(n, id, "CEL environment: %v", err)
		return nil, false
	}
	ast, iss := env.Compile(n.Value)
	if iss != nil && iss.Err() != nil {
		for _, e := range iss.Errors() {
			line, col := c.celPos(n, e.Location.Line(), e.Location.Column())
			msg := strings.TrimSuffix(e.Message, " (in container '')")
			c.addAt(line, col, id, msg)
		}
		return nil, false
	}
	if line, col, uses := annotationsUse(ast); uses {
		line, col = c.celPos(n, line, col)
		c.pinUses = append(c.pinUses, pinUse{line: line, col: col, id: id, msg: errAnnotationsOff})
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		c.addf(n, id, "when has type %s, want bool", t)
		return nil, false
	}
	// A cost tracker per evaluation costs about half the allocations of a
	// small Check. An expression whose worst case cel-go's static estimate
	// bounds below maxEvalCost (no size of args, claims or a string enters
	// it: such sizes are unknown, so unbounded) cannot exceed the limit and
	// runs without one; every other expression keeps the limit.
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if needsCostLimit(env, ast) {
		opts = append(opts, cel.CostLimit(maxEvalCost))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		c.addf(n, id, "when: %v", err)
		return nil, false
	}
	return prg, true
}

// annotationsUse reports whether the checked expression ast reads the
// variable `annotations`, and where first (CEL line, column).
func annotationsUse(ast *cel.Ast) (line, col int, uses bool) {
	native := ast.NativeRep()
	first := int64(-1)
	for id, ref := range native.ReferenceMap() {
		if ref.Name == "annotations" && (first < 0 || id < first) {
			first = id
		}
	}
	if first < 0 {
		return 0, 0, false
	}
	loc := native.SourceInfo().GetStartLocation(first)
	return loc.Line(), loc.Column(), true
}

// celPos maps a position in the expression held by scalar n (CEL: line
// 1-based, column 0-based, in code points) to the file. It handles
// single-line plain and quoted scalars and literal block scalars ("|"),
// checking the file text; anything else (folded or multi-line flow
// scalars, escapes before the column) maps to the start of n.
func (c *compiler) celPos(n *yaml.Node, line, col int) (int, int) {
	exprLines := strings.Split(n.Value, "\n")
	if line < 1 || line > len(exprLines) || col < 0 {
		return n.Line, n.Column
	}
	want := exprLines[line-1]
	if col > utf8.RuneCountInString(want) {
		return n.Line, n.Column
	}
	wantPrefix := want[:runeOffset(want, col)]
	switch n.Style {
	case 0, yaml.TaggedStyle, yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		if line != 1 {
			break
		}
		startCol := n.Column
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			startCol++
		}
		src := c.line(n.Line)
		start := runeOffset(src, startCol-1)
		if start >= 0 && strings.HasPrefix(src[start:], wantPrefix) {
			return n.Line, startCol + col
		}
	case yaml.LiteralStyle:
		fileLine := n.Line + line
		src := c.line(fileLine)
		if strings.HasSuffix(src, want) {
			indent := utf8.RuneCountInString(src[:len(src)-len(want)])
			return fileLine, indent + col + 1
		}
	}
	return n.Line, n.Column
}

// line returns line n (1-based) of the source, or "".
func (c *compiler) line(n int) string {
	if c.lines == nil {
		c.lines = strings.Split(string(c.src), "\n")
		for i, l := range c.lines {
			c.lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	if n < 1 || n > len(c.lines) {
		return ""
	}
	return c.lines[n-1]
}

// runeOffset returns the byte offset of the n-th code point of s, len(s)
// if s is shorter, or -1 if n < 0.
func runeOffset(s string, n int) int {
	if n < 0 {
		return -1
	}
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// needsCostLimit reports whether ast's worst-case cost is not statically
// bounded below maxEvalCost.
func needsCostLimit(env *cel.Env, ast *cel.Ast) bool {
	est, err := env.EstimateCost(ast, unknownSizes{})
	return err != nil || est.Max > maxEvalCost
}

// unknownSizes is the cost estimator of compileWhen: it knows no size and
// no call cost, so cel-go's defaults apply (unknown sizes unbounded).
type unknownSizes struct{}

func (unknownSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate { return nil }

func (unknownSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
