package policy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CompileError is the error Compile returns. It holds every problem found,
// sorted by position.
type CompileError struct {
	Problems []Problem
}

// Error returns all problems, one per line.
func (e *CompileError) Error() string {
	var sb strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.String())
	}
	return sb.String()
}

// Problem is one compile problem. Line and Column are 1-based (Column
// counts Unicode code points) and 0 when unknown; RuleID is "" for a
// problem outside any rule.
type Problem struct {
	File         string
	Line, Column int
	RuleID       string
	Msg          string
}

// String formats p as `file:line:col: rule "id": message`, leaving out the
// column, line or rule part when unknown.
func (p Problem) String() string {
	var sb strings.Builder
	sb.WriteString(p.File)
	if p.Line > 0 {
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(p.Line))
		if p.Column > 0 {
			sb.WriteByte(':')
			sb.WriteString(strconv.Itoa(p.Column))
		}
	}
	sb.WriteString(": ")
	if p.RuleID != "" {
		sb.WriteString("rule ")
		sb.WriteString(strconv.Quote(p.RuleID))
		sb.WriteString(": ")
	}
	sb.WriteString(p.Msg)
	return sb.String()
}

func (c *compiler) addf(n *yaml.Node, ruleID, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	c.addAt(line, col, ruleID, fmt.Sprintf(format, args...))
}

func (c *compiler) addAt(line, col int, ruleID, msg string) {
	c.problems = append(c.problems, Problem{File: c.file, Line: line, Column: col, RuleID: ruleID, Msg: msg})
}

// yamlQuoteHint follows every YAML syntax error: most come from a `when`
// expression or a pattern written as a plain scalar.
const yamlQuoteHint = " (quote a value that starts with [ { ! & * ' \" | > % @ or holds \": \" or \" #\"; or write when: | and the expression on the next line)"

var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// addYAMLError records a yaml.v3 parse error, with its line when it has one.
func (c *compiler) addYAMLError(err error) {
	msg := err.Error()
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		c.addAt(line, 0, "", "invalid YAML: "+m[2]+yamlQuoteHint)
		return
	}
	c.addAt(0, 0, "", "invalid YAML: "+strings.TrimPrefix(msg, "yaml: ")+yamlQuoteHint)
}
