// Command extauthz is the MCP authorization service for Envoy's ext_authz
// filter, and its tools.
//
//	extauthz [serve] [flags]   run the gRPC Authorization service
//	extauthz check [flags] REQUEST.json
//	                           decide one request offline, or by a running service
//	extauthz test [flags] [DIR|FILE...]
//	                           run policy unit tests
//	extauthz validate POLICY.yaml...
//	                           compile policies without running tests
//	extauthz token [flags]     mint a test bearer token (quick-start only)
//	extauthz approve [flags] DENIAL.json
//	                           sign an approval of one request digest
//	extauthz healthcheck       gRPC health probe for exec probes
//	extauthz envoy-drain       preStop: drain the Envoy sidecar gracefully
//	extauthz completion bash|zsh|fish
//	                           print a shell completion script
//	extauthz version           print the build's version
//
// Every serve flag can also be set as EXTAUTHZ_<FLAG> (upper snake case) or
// in a --config YAML file; a flag beats the environment, which beats the file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap/zapgrpc"
	"google.golang.org/grpc/grpclog"
)

// exitError carries a process exit code out of a subcommand.
type exitError struct {
	code   int
	err    error
	logged bool // err is in the log already: main prints nothing
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// Unwrap is the error that made the exit (nil for -h).
func (e *exitError) Unwrap() error { return e.err }

func main() {
	setGRPCLogger(os.Args[1:], os.Stderr)
	ctx, stop := shutdownContext()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil && (ee == nil || !ee.logged) {
		fmt.Fprintln(os.Stderr, "extauthz:", err)
	}
	os.Exit(code)
}

// shutdownContext returns a context cancelled by the first SIGINT or
// SIGTERM, which starts the graceful shutdown (drain, GracefulStop). A
// second one ends the process at once, by the signal's default action, so
// an operator is never stuck behind a long drain. Both are caught from the
// start, so no second signal is lost between the two.
func shutdownContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		sig := <-sigs
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		if s, ok := sig.(syscall.Signal); ok {
			_ = syscall.Kill(os.Getpid(), s)
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

// setGRPCLogger routes gRPC's own log (grpclog) for the command in args:
// serve's warnings and errors become JSON lines (zap) like everything else
// it writes; the other commands print nothing of it, since their own error
// line says what failed and a "[core] … connection refused" warning before
// it only hides it. grpclog is process-wide and must be set before any
// gRPC use, hence here, once, from main.
func setGRPCLogger(args []string, stderr io.Writer) {
	if cmd, _ := command(args); cmd != "serve" {
		grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
		return
	}
	if l, err := newLogger("warn", stderr); err == nil {
		grpclog.SetLoggerV2(zapgrpc.NewLogger(l))
	}
}

// command splits args into the subcommand and its arguments; serve is the
// default.
func command(args []string) (string, []string) {
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		return "help", nil
	case len(args) > 0 && (args[0] == "-version" || args[0] == "--version"):
		return "version", nil
	case len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-':
		return args[0], args[1:]
	}
	return "serve", args
}

// run dispatches to a subcommand; serve is the default.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd, args := command(args)
	switch cmd {
	case "serve":
		return runServe(ctx, args, stderr)
	case "check":
		return runCheck(ctx, args, stdout, stderr)
	case "test":
		return runTest(ctx, args, stdout, stderr)
	case "validate":
		return runValidate(args, stdout, stderr)
	case "pin":
		return runPin(args, stdout, stderr)
	case "token":
		return runToken(args, stdout, stderr)
	case "approve":
		return runApprove(ctx, args, os.Stdin, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, args, stdout, stderr)
	case "envoy-drain":
		return runEnvoyDrain(ctx, args, stdout, stderr)
	case "completion":
		return runCompletion(args, stdout)
	case "version":
		fmt.Fprintln(stdout, "extauthz", version())
		return nil
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown command %q (want serve, check, test, validate, pin, token, approve, healthcheck, envoy-drain, completion or version)", cmd)}
}

const usage = `usage: extauthz <command> [flags]

commands:
  serve        run the ext_authz gRPC service (the default)
  check        decide one request (a JSON-RPC body or a captured HTTP request): offline, or by a running service (--addr)
  test         run policy unit tests (*_test.yaml next to the policy; a policy file finds its own)
  validate     compile policies as serve would, without running tests
  pin          print the fingerprints of captured tools/list responses, or of a decision log's lists, as a policy pins: block
  token        mint a test bearer token with the quick-start key
  approve      sign an approval of one request digest (from an ask denial) for a principal
  healthcheck  probe a running service's gRPC health (exit 0 when SERVING)
  envoy-drain  preStop hook: fail Envoy's readiness, drain its listeners, wait
  completion   print a shell completion script: extauthz completion bash|zsh|fish
  version      print the build's version

Run "extauthz <command> -h" for its flags.
`

// Set at build time with -ldflags "-X main.buildVersion=... -X
// main.buildCommit=..." (Dockerfile, README); empty in a plain go build.
var buildVersion, buildCommit string

// version returns "VERSION (commit COMMIT)": the -ldflags values, else what
// the Go toolchain recorded (the module version for go install
// module@version, the VCS revision for a build in a git checkout), else
// "devel" and "unknown".
func version() string {
	v, c, dirty := buildVersion, buildCommit, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.modified" && buildCommit == "":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	} else if dirty {
		c += "-dirty"
	}
	return v + " (commit " + c + ")"
}

// parseFlags parses args into fs: -h exits 0 after the usage, a bad flag 2.
// Bad flags are one line naming each of them ("; " between), an unknown
// one with the nearest flags (did you mean --policy?); -h prints the
// flags. After a bad flag fs holds the flags that parsed, so a caller
// may go on to report its other problems too (serve does). Flags may come
// before or after the positional arguments (check FILE --explain), which
// fs.Args() then holds in order; after "--" everything is positional. A
// lone "-" (stdin) is positional.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if fc, ok := fs.Output().(*flagCollector); ok { // completion, the flag table check: the flags, not a run
		fc.fs = fs
		return &exitError{code: 0}
	}
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard) // the flag package would print the whole usage on any error
	fs.Usage = func() {}
	err := parseInterspersed(fs, args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "usage of extauthz %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return &exitError{code: 0}
	}
	return &exitError{code: 2, err: fmt.Errorf("%s: %w (extauthz %s -h lists the flags)", fs.Name(), err, fs.Name())}
}

// unknownFlag is the name of the flag an error of fs.Parse says is not
// defined, else "". The flag package has no typed error for it; its
// message has read so since Go 1.
func unknownFlag(err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	return name
}

// parseProblem is err of fs.Parse, for a flag not defined with the nearest
// flags of fs; and whether the argument after it (next) is that flag's
// value, to skip: when it is no flag, the unknown flag had no "=VALUE"
// (failed), and the nearest flag, if any, is no boolean one.
func parseProblem(fs *flag.FlagSet, err error, failed string, next []string) (error, bool) {
	name := unknownFlag(err)
	if name == "" {
		return err, false
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	near := nearestNames(name, names)
	if hint := didYouMean("--", near); hint != "" {
		err = fmt.Errorf("%w%s", err, hint)
	}
	if strings.Contains(failed, "=") || len(next) == 0 || (len(next[0]) > 1 && next[0][0] == '-') {
		return err, false
	}
	if len(near) > 0 {
		if b, ok := fs.Lookup(near[0]).Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return err, false
		}
	}
	return err, true
}

// parseInterspersed is fs.Parse(args) that goes on past each positional
// argument (the flag package stops at the first), leaving the positional
// ones in fs.Args(). Parsing stops for good at "--": the flag package
// consumes it, so a flag-like argument right after the stop, or a "--" just
// before it, marks it.
//
// A bad flag does not stop it: it goes on past it (and past the value an
// unknown flag seems to have, see parseProblem), and returns every
// problem (joinProblems); -h returns flag.ErrHelp alone.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var positional []string
	var problems []error
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			rest := fs.Args()
			if len(rest) == len(args) { // bad flag syntax: not consumed
				rest = rest[1:]
			}
			problem, skip := parseProblem(fs, err, args[len(args)-len(rest)-1], rest)
			problems = append(problems, problem)
			if skip {
				rest = rest[1:]
			}
			args = rest
			continue
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		consumed := len(args) - len(rest)
		if (len(rest[0]) > 1 && rest[0][0] == '-') || (consumed > 0 && args[consumed-1] == "--") {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return err
	}
	return joinProblems(problems...)
}

// plural returns "n noun", with an s after noun unless n is 1
// ("1 file", "2 files").
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// argCountError says that cmd wants other positional arguments than got
// (printed under the usage, so a wrong count is never a bare usage text).
func argCountError(cmd, want string, got []string) error {
	if len(got) == 0 {
		return fmt.Errorf("%s: want %s, got none", cmd, want)
	}
	return fmt.Errorf("%s: want %s, got %s: %s", cmd, want, plural(len(got), "argument"), strings.Join(got, " "))
}
