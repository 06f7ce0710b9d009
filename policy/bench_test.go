package policy

import (
	"fmt"
	"strings"
	"testing"
)

// benchPolicy has n rules: mostly tool rules with and without conditions,
// some resource and method rules; the benchmark inputs match late rules.
func benchPolicy(b *testing.B, n int) *Policy {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("default: deny\ndeny:\n  - \"*/delete_*\"\nask:\n")
	sb.WriteString("  - {match: payments/issue_refund, when: args.amountMinor > 2500}\nallow:\n")
	for i := 0; i < n-3; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "  - s%d/tool_%d\n", i, i)
		case 1:
			fmt.Fprintf(&sb, "  - {match: \"*/t%d_*\", when: 'args.x == %d'}\n", i, i)
		case 2:
			fmt.Fprintf(&sb, "  - \"resource:s/file:///d%d/**\"\n", i)
		case 3:
			fmt.Fprintf(&sb, "  - \"prompt:s/p%d\"\n", i)
		}
	}
	sb.WriteString("  - {match: payments/issue_refund, when: 'args.currency == \"EUR\" && args.amountMinor <= 5000'}\n")
	return mustCompile(b, sb.String())
}

func BenchmarkEvaluate(b *testing.B) {
	inputs := map[string]*Input{
		"allow": toolCall("payments", "issue_refund", map[string]any{"currency": "EUR", "amountMinor": int64(2000)}),
		"ask":   toolCall("payments", "issue_refund", map[string]any{"currency": "EUR", "amountMinor": int64(3000)}),
		"deny":  toolCall("payments", "Delete_Repo", nil),
	}
	for _, n := range []int{10, 100, 1000} {
		p := benchPolicy(b, n)
		for name, in := range inputs {
			if got := p.Evaluate(in).Decision.String(); got != name {
				b.Fatalf("rules=%d: %s input decided %s", n, name, got)
			}
		}
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			names := []string{"allow", "ask", "deny"}
			for b.Loop() {
				p.Evaluate(inputs[names[i%3]])
				i++
			}
		})
	}
}

func BenchmarkEvaluateResource(b *testing.B) {
	p := benchPolicy(b, 100)
	in := resRead("s", "FILE:///d98/a/b%7e.md")
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(in)
	}
}

// BenchmarkEvaluateResourceLoose: a resource request that deny and ask
// rules compare loosely, as written and, for a trailing dot, as Windows
// resolves it.
func BenchmarkEvaluateResourceLoose(b *testing.B) {
	p := mustCompile(b, lines(
		"default: deny",
		"deny: [\"resource:s/file:///data/**/keys/**\", \"resource:s/file:///data/secret.txt\"]",
		"ask: [\"resource:s/https://files.test/private/**\"]",
		"allow: [\"resource:s/file:///data/**\"]",
	))
	for _, uri := range []string{"file:///data/reports/q3.pdf", "file:///data/reports/q3.pdf."} {
		b.Run(uri[len("file:///data/reports/"):], func(b *testing.B) {
			in := resRead("s", uri)
			b.ReportAllocs()
			for b.Loop() {
				p.Evaluate(in)
			}
		})
	}
}

// BenchmarkParseURI: the normalization every resource request pays.
func BenchmarkParseURI(b *testing.B) {
	for _, uri := range []string{"file:///data/reports/2025/q3.pdf", "https://files.test/data/reports/q3.pdf?v=2"} {
		b.Run(uri[:strings.IndexByte(uri, ':')], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ParseURI(uri)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchPolicy(b, n)
			}
		})
	}
}
