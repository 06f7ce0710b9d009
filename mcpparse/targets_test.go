package mcpparse

import (
	"reflect"
	"strings"
	"testing"
)

func listen(notifications string) string {
	return `{"jsonrpc":"2.0","id":17,"method":"subscriptions/listen","params":{"notifications":` + notifications + `}}`
}

// TestSubscriptionsListenTargets: every resourceSubscriptions URI of
// subscriptions/listen (MCP 2026-07-28) is a target (D08).
func TestSubscriptionsListenTargets(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []string
	}{
		{"one URI", listen(`{"resourcesListChanged":true,"resourceSubscriptions":["file:///secret/payroll.csv"]}`), []string{"file:///secret/payroll.csv"}},
		{"several URIs in order", listen(`{"resourceSubscriptions":["file:///a","https://x.test/b"]}`), []string{"file:///a", "https://x.test/b"}},
		{"escaped URI decoded", listen(`{"resourceSubscriptions":["file:\/\/\/a"]}`), []string{"file:///a"}},
		{"empty list", listen(`{"resourceSubscriptions":[]}`), []string{}},
		{"no subscriptions", listen(`{"toolsListChanged":true}`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Parse([]byte(tt.give), ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Messages[0].URIs; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("URIs = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestSubscriptionsListenRejects(t *testing.T) {
	tests := []struct {
		name string
		give string
		want ErrorKind
	}{
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}`, ErrInvalidParams},
		{"no notifications", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`, ErrInvalidParams},
		{"notifications not an object", listen(`[]`), ErrInvalidParams},
		{"subscriptions not an array", listen(`{"resourceSubscriptions":"file:///a"}`), ErrInvalidParams},
		{"a number", listen(`{"resourceSubscriptions":["file:///a",1]}`), ErrInvalidParams},
		{"an empty URI", listen(`{"resourceSubscriptions":[""]}`), ErrInvalidParams},
		{"a nested list", listen(`{"resourceSubscriptions":[["file:///a"]]}`), ErrInvalidParams},
		{"case variant", listen(`{"ResourceSubscriptions":["file:///secret"]}`), ErrCaseVariantKey},
		{"lower-case variant beside", listen(`{"resourceSubscriptions":[],"resourcesubscriptions":["file:///secret"]}`), ErrCaseVariantKey},
		{"Notifications variant", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"Notifications":{}}}`, ErrCaseVariantKey},
		{"too many", listen(`{"resourceSubscriptions":[` + strings.TrimSuffix(strings.Repeat(`"file:///a",`, MaxSubscriptions+1), ",") + `]}`), ErrTooManyElements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			wantKind(t, err, tt.want)
		})
	}
}

// TestNameLengthBound: names the policy folds are bounded before folding.
func TestNameLengthBound(t *testing.T) {
	tool := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `"}}`
	}
	prompt := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"` + name + `"}}`
	}
	ref := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"` + name + `"},"argument":{"name":"a","value":"b"}}}`
	}
	tests := []struct {
		name string
		give string
		ok   bool
	}{
		{"tool 128 ASCII", tool(strings.Repeat("a", 128)), true},
		{"tool 128 non-ASCII", tool(strings.Repeat("\ufdfa", 128)), true},
		{"tool 129", tool(strings.Repeat("a", 129)), false},
		{"tool of 80k U+FDFA (240 KB)", tool(strings.Repeat("\ufdfa", 80_000)), false},
		{"prompt 1024", prompt(strings.Repeat("p", 1024)), true},
		{"prompt 1025", prompt(strings.Repeat("p", 1025)), false},
		{"completion ref 1025", ref(strings.Repeat("p", 1025)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.give), ParseOptions{})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantKind(t, err, ErrInvalidParams)
		})
	}
}

// TestNamedCallAllocations: a tools/call or prompts/get with arguments
// costs Parse two allocations (the Body with its Messages, and one string
// holding both the name and ArgsDigest), and the two strings are right.
func TestNamedCallAllocations(t *testing.T) {
	for _, tt := range []struct {
		give     string
		wantName string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{"orderId":"ord-1","amountMinor":1250}}}`, "issue_refund"},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summar\u00ebze","arguments":{"b":1,"a":2}}}`, "summarëze"},
	} {
		body := []byte(tt.give)
		b, err := Parse(body, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := &b.Messages[0]
		if name := m.Tool + m.Prompt; name != tt.wantName {
			t.Errorf("%s: name %q, want %q", tt.give, name, tt.wantName)
		}
		if want := Digest(m.Arguments()); m.ArgsDigest != want {
			t.Errorf("%s: ArgsDigest %s, want %s", tt.give, m.ArgsDigest, want)
		}
		if raceEnabled {
			continue
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = Parse(body, ParseOptions{}) }); n > 2 {
			t.Errorf("%s: %v allocations per Parse, want 2", tt.give, n)
		}
	}
}
