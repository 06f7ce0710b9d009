package policy

import (
	"strings"
	"testing"
)

// mustCompile compiles src (a policy; leading tabs are not allowed in YAML,
// so tests write it with spaces) or fails the test.
func mustCompile(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Compile("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Compile:\n%v\nsource:\n%s", err, src)
	}
	return p
}

func toolCall(server, name string, args map[string]any) *Input {
	return &Input{Op: OpRequest, Method: "tools/call", Server: server, Tool: name, Args: args}
}

func resRead(server, uri string) *Input {
	return &Input{Op: OpRequest, Method: "resources/read", Server: server, URI: uri}
}

func promptGet(server, name string) *Input {
	return &Input{Op: OpRequest, Method: "prompts/get", Server: server, Prompt: name}
}

func method(m string) *Input { return &Input{Op: OpRequest, Method: m, Server: "payments"} }

// outcome is a Result without Shadow, in a form that prints well.
type outcome struct {
	Decision Decision
	Cause    Cause
	RuleID   string
}

func (o outcome) String() string {
	return o.Decision.String() + " " + o.Cause.String() + " " + o.RuleID
}

func outcomeOf(r Result) outcome { return outcome{r.Decision, r.Cause, r.RuleID} }

func byRule(d Decision, id string) outcome { return outcome{d, CauseRule, id} }

var (
	byDefault = outcome{Deny, CauseDefault, ""}
	unsafeURI = outcome{Deny, CauseUnsafeURI, ""}
	invalid   = outcome{Deny, CauseInvalidInput, ""}
)

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }
