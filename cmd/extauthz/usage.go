package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagCollector is an io.Writer that, given as a command's output, makes
// parseFlags record the command's flag set and stop (exit 0) instead of
// parsing: how completion and the flag table check (docs/configuration.md) read the flags
// from their one definition.
type flagCollector struct{ fs *flag.FlagSet }

func (*flagCollector) Write(p []byte) (int, error) { return len(p), nil }

// commands are the subcommands, in the order help lists them, with a line
// of what each does.
var commands = []struct{ name, what string }{
	{"serve", "run the ext_authz gRPC service"},
	{"check", "decide one request, offline or by a running service"},
	{"test", "run policy unit tests"},
	{"validate", "compile policies without running tests"},
	{"pin", "fingerprint captured tools/list responses or a decision log's lists"},
	{"token", "mint a test bearer token"},
	{"approve", "sign an approval of one request digest"},
	{"healthcheck", "probe a running service's gRPC health"},
	{"envoy-drain", "preStop hook: drain the Envoy sidecar"},
	{"completion", "print a shell completion script"},
	{"version", "print the build's version"},
	{"help", "list the commands"},
}

// commandFlags returns the flag set of subcommand cmd, or nil for one
// without flags (completion, version, help).
func commandFlags(cmd string) *flag.FlagSet {
	fc := &flagCollector{}
	if cmd == "serve" {
		_, _ = parseServeConfig([]string{"-h"}, func(string) string { return "" }, fc)
		return fc.fs
	}
	switch cmd {
	case "completion", "version", "help":
		return nil
	}
	_ = run(context.Background(), []string{cmd, "-h"}, fc, fc)
	return fc.fs
}

// The groups of serve -h, in order.
var serveGroups = []string{"listen", "tokens", "policy", "approvals", "state", "observability"}

// serveFlagGroup names the group of a serve flag: by name, else by a
// prefix of its family (so a flag added later lands in its family's
// group); "" when neither knows it (TestServeFlagsGrouped fails then).
func serveFlagGroup(name string) string {
	switch name {
	case "config", "grpc-addr", "http-addr", "client-ca-file", "drain-period", "shutdown-timeout", "max-body-bytes", "max-string-bytes":
		return "listen"
	case "issuer", "audience", "resource-metadata-url", "resource-documentation", "allow-test-keys":
		return "tokens"
	case "policy", "server-id", "server-id-by-principal", "denial-status", "dry-run", "conceal-as", "conceal-json-response", "case-sensitive-keys",
		"response-seam", "cursor-key-file", "list-cache-ttl", "seam-deadline", "decision-key-file", "decision-jwks-out":
		return "policy"
	case "approval-url":
		return "approvals"
	case "log-level", "metrics-server":
		return "observability"
	}
	for _, p := range []struct{ prefix, group string }{
		{"tls-", "listen"}, {"max-json-", "listen"}, {"grpc-", "listen"}, {"http-", "listen"},
		{"token-", "tokens"}, {"introspection-", "tokens"}, {"jwks-", "tokens"}, {"dpop-", "tokens"}, {"oidc-", "tokens"}, {"issuer-", "tokens"}, {"audience-", "tokens"},
		{"policy-", "policy"},
		{"approver-", "approvals"}, {"approval-", "approvals"}, {"idempotency-", "approvals"},
		{"state-", "state"}, {"redis-", "state"},
		{"otlp-", "observability"}, {"trace-", "observability"}, {"decision-log", "observability"}, {"log-", "observability"}, {"metrics-", "observability"},
	} {
		if strings.HasPrefix(name, p.prefix) {
			return p.group
		}
	}
	return ""
}

// envName is the environment variable of a serve flag.
func envName(flag string) string {
	return "EXTAUTHZ_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// printServeUsage writes serve -h: the flags by group, each with its
// EXTAUTHZ_* variable and default, then examples.
func printServeUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: extauthz serve [flags]

Every flag is also an environment variable (shown) and a key of the
--config YAML file; a flag beats the environment, which beats the file.
Lists are repeatable flags, comma-separated in the environment.
`)
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byGroup[serveFlagGroup(f.Name)] = append(byGroup[serveFlagGroup(f.Name)], f) })
	for _, g := range append(append([]string(nil), serveGroups...), "") {
		if len(byGroup[g]) == 0 {
			continue
		}
		title := g
		if g == "" {
			title = "other"
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range byGroup[g] {
			typ, usage := flag.UnquoteUsage(f)
			typ = placeholder(f.Name, typ)
			head := "  --" + f.Name
			if typ != "" {
				head += " " + typ
			}
			meta := envName(f.Name)
			if d := f.DefValue; d != "" && d != "[]" && d != "0" {
				meta += ", default " + d
			}
			fmt.Fprintf(w, "%s  (%s)\n      %s\n", head, meta, usage)
		}
	}
	fmt.Fprint(w, `
examples:
  # The quick start: a static key set, one MCP server.
  extauthz serve --policy examples/policy.yaml --issuer https://idp.example.com \
    --audience https://mcp.example.com/mcp --server-id payments --jwks-file examples/jwks.json
  # The same from a file, with traces to a collector (1 in 100 new traces).
  EXTAUTHZ_OTLP_ENDPOINT=grpc://otel-collector:4317 extauthz serve --config examples/config.yaml
  # Decisions to stdout and to the collector as OTLP logs, allowed ones sampled 1 in 10.
  extauthz serve --config examples/config.yaml --otlp-endpoint https://otel-collector:4318 \
    --decision-log stdout,otlp --decision-log-sample-allowed 0.1
`)
}

// placeholder names a flag's value in serve -h: FILE, ADDR, URL, DURATION,
// N, RATIO, a list's element, or the flag package's type name.
func placeholder(name, typ string) string {
	switch name {
	case "audience":
		return "AUD"
	case "server-id-by-principal":
		return "PRINCIPAL=ID"
	case "decision-log":
		return "SINK[,SINK]"
	case "metrics-server", "server-id":
		return "ID"
	case "state-store":
		return "memory|URL"
	case "log-level":
		return "LEVEL"
	case "denial-status":
		return "auto|http-error"
	case "decision-log-overflow":
		return "drop|block"
	case "conceal-as":
		return "SDK"
	}
	switch {
	case typ == "":
		return ""
	case strings.HasSuffix(name, "-file") || name == "config" || name == "policy":
		return "FILE"
	case strings.HasSuffix(name, "-addr"):
		return "ADDR"
	case strings.HasSuffix(name, "-url") || strings.HasSuffix(name, "issuer") || strings.HasSuffix(name, "endpoint") || name == "resource-documentation":
		return "URL"
	case typ == "duration":
		return "DURATION"
	case typ == "int":
		return "N"
	case typ == "float" || strings.HasSuffix(name, "-ratio"):
		return "RATIO"
	case typ == "string":
		return "VALUE"
	}
	return strings.ToUpper(typ)
}
