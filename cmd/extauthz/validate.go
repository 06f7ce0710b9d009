package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// runValidate compiles each policy file as serve loads it, without running
// any test. It prints one line per policy that compiles ("ok FILE
// policy_version sha256:…") and every file:line:col problem of one that
// does not. Exit 0 when all compile, 1 when one does not, 2 on bad usage or
// a file that cannot be read (1 wins over 2, as in extauthz test).
func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz validate [--config FILE] POLICY.yaml...   (compile policies as serve would, without running their tests)")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", "serve's config file: also build its decision service as serve assembles it (reading its cursor and decision key files), without starting it; its policy when no POLICY.yaml is given")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var cfg *Config
	if *configFile != "" {
		var err error
		if cfg, _, err = toolConfig(*configFile, func(string) string { return "" }); err != nil {
			fmt.Fprintln(stderr, "validate:", err)
			return &exitError{code: 1}
		}
		if fs.NArg() == 0 {
			fs.SetOutput(io.Discard)
			_ = fs.Parse([]string{cfg.PolicyFile})
		}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &exitError{code: 2, err: argCountError("validate", "a POLICY.yaml at least", nil)}
	}
	failed, broken := false, false
	for _, name := range fs.Args() {
		if err := validatePolicy(name, stdout); err != nil {
			var ce *policy.CompileError
			if errors.As(err, &ce) {
				fmt.Fprintf(stdout, "FAIL %s: the policy does not compile:\n%s\n", name, strings.TrimRight(ce.Error(), "\n"))
				failed = true
				continue
			}
			fmt.Fprintln(stderr, "validate:", err)
			broken = true
		}
	}
	if cfg != nil && !failed && !broken {
		if err := validateAssembly(cfg); err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %v\n", *configFile, err)
			failed = true
		} else {
			fmt.Fprintf(stdout, "ok %s\n", *configFile)
		}
	}
	switch {
	case failed:
		return &exitError{code: 1}
	case broken:
		return &exitError{code: 2}
	}
	return nil
}

// validateAssembly builds cfg's decision service offline, as check and
// serve assemble it: its policy, cursor key file and decision key file
// read and vetted (published test keys refused without --allow-test-keys).
func validateAssembly(cfg *Config) error {
	lp, err := compilePolicyFile(cfg.PolicyFile)
	if err != nil {
		return err
	}
	_, err = assembleOffline(cfg, lp, policytest.Verifier{}, false, false)
	return err
}

// validatePolicy compiles the policy in name and prints its ok line; a
// *policy.CompileError when it does not compile, another error when it
// cannot be read or is a test file.
func validatePolicy(name string, stdout io.Writer) error {
	if strings.HasSuffix(name, "_test.yaml") || strings.HasSuffix(name, "_test.yml") {
		return fmt.Errorf("%s is a policy test file: extauthz test %s runs it", name, name)
	}
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	lp, err := decision.CompilePolicy(name, src) // the schema files it names too
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ok %s policy_version %s\n", name, lp.Version)
	return nil
}
