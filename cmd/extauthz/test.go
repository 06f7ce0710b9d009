package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/policytest"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// runTest runs policy unit tests (*_test.yaml next to the policy; format in
// package policytest) offline. Exit 0 when every test passes, 1 when one
// fails or a policy does not compile, 2 on bad usage or a test file that
// cannot be read or parsed.
func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extauthz test [flags] [DIR|FILE...]   (default .; runs every *_test.yaml below a DIR; POLICY.yaml runs POLICY_test.yaml beside it)")
		fs.PrintDefaults()
	}
	verbose := fs.Bool("v", false, "print every test, and the policy trace of a failing one")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file")
	run := fs.String("run", "", "run only the tests whose name matches this regular expression")
	configFile := fs.String("config", "", configFlagUsage+": every test decides with its settings as serve assembles them (limits, body limit, case-sensitive keys, cursor keys, …; its issuer and first audience are the default principal's); each test file still names its policy; what a file cannot tell is named on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, _, err := toolConfig(*configFile, os.Getenv)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("test: %w", err)}
	}
	newDecider := testDecider(cfg, stderr)
	var filter *regexp.Regexp
	if *run != "" {
		if filter, err = regexp.Compile(*run); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("test: -run: %w", err)}
		}
	}
	paths, forPolicy, err := testFilesOfPolicies(fs.Args())
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("test: %w", err)}
	}
	files, err := policytest.Find(paths)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("test: %w", err)}
	}
	if len(files) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("test: no *_test.yaml files in %v", fs.Args())}
	}
	var suites []policytest.Suite
	total, failed, notRun, broken := 0, 0, 0, false
	for _, name := range files {
		f, err := policytest.LoadFile(name)
		if err != nil {
			fmt.Fprintln(stderr, err)
			broken = true
			continue
		}
		if p, ok := forPolicy[name]; ok && filepath.Clean(f.PolicyPath) != filepath.Clean(p) {
			fmt.Fprintf(stderr, "test: %s, found for the policy %s, tests %s (its policy: key)\n", name, p, f.PolicyPath)
			broken = true
			continue
		}
		if filter != nil {
			kept := f.Tests[:0]
			for _, t := range f.Tests {
				if filter.MatchString(t.Name) {
					kept = append(kept, t)
				}
			}
			f.Tests = kept
		}
		lp, results, err := policytest.RunWith(ctx, f, newDecider)
		if err != nil {
			var ce *policy.CompileError
			if errors.As(err, &ce) {
				fmt.Fprintf(stdout, "FAIL %s: the policy does not compile:\n%s\n", name, ce)
			} else {
				fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
			}
			suites = append(suites, policytest.Suite{File: name, Err: err})
			notRun++
			continue
		}
		suites = append(suites, policytest.Suite{File: name, Results: results})
		for i := range results {
			r := &results[i]
			total++
			if r.Passed() {
				if *verbose {
					fmt.Fprintf(stdout, "PASS %s: %s\n", r.Pos(), r.Test.Name)
				}
				continue
			}
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %s: %s\n", r.Pos(), r.Test.Name, strings.Join(r.Failures, "; "))
			if *verbose {
				policytest.WriteTrace(stdout, r.Decision, lp.File)
			}
		}
	}
	if *junit != "" {
		if err := writeJUnitFile(*junit, suites); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("test: --junit: %w", err)}
		}
	}
	switch {
	case failed > 0 || notRun > 0:
		fmt.Fprintf(stdout, "FAIL: %d of %s failed", failed, plural(total, "test"))
		if notRun > 0 {
			fmt.Fprintf(stdout, "; %s did not run (policy errors above)", plural(notRun, "test file"))
		}
		fmt.Fprintln(stdout)
		return &exitError{code: 1}
	case broken:
		return &exitError{code: 2}
	}
	fmt.Fprintf(stdout, "PASS: %s in %s\n", plural(total, "test"), plural(len(files), "file"))
	return nil
}

// testDecider builds each test's Decider from serve's Config cfg, as
// check --config does (assembleOffline): the test's server id and
// principal (cfg's issuer and first audience when the test names none)
// over cfg. It writes each offline note once to stderr. Nil cfg: nil,
// the defaults of policytest.Decide.
func testDecider(cfg *Config, stderr io.Writer) policytest.NewDecider {
	if cfg == nil {
		return nil
	}
	noted := map[string]bool{}
	return func(lp *decision.LoadedPolicy, server string, p policytest.Principal) (*decision.Decider, error) {
		c := *cfg
		c.PolicyFile, c.ServerID = lp.File, server
		if p.Issuer == "" {
			p.Issuer = cfg.Issuer
		}
		if p.Audience == "" {
			p.Audience = cfg.Audiences[0]
		}
		asm, err := assembleOffline(&c, lp, policytest.Verifier{P: p}, false, true)
		if err != nil {
			return nil, err
		}
		for _, n := range asm.Offline {
			if !noted[n] {
				noted[n] = true
				fmt.Fprintln(stderr, n)
			}
		}
		return asm.Decider, nil
	}
}

func writeJUnitFile(path string, suites []policytest.Suite) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := policytest.WriteJUnit(f, suites); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// testFilesOfPolicies returns args with each policy file (a regular file
// not named *_test.yaml or *_test.yml) replaced by the test file beside
// it, POLICY_test.yaml (or .yml), and which policy each such test file was
// found for. A policy without a test file beside it is an error.
func testFilesOfPolicies(args []string) ([]string, map[string]string, error) {
	out := make([]string, 0, len(args))
	forPolicy := map[string]string{}
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || st.IsDir() || strings.HasSuffix(a, "_test.yaml") || strings.HasSuffix(a, "_test.yml") {
			out = append(out, a) // Find reports what is missing
			continue
		}
		ext := filepath.Ext(a)
		base := strings.TrimSuffix(a, ext)
		found := ""
		for _, cand := range []string{base + "_test" + ext, base + "_test.yaml", base + "_test.yml"} {
			if st, err := os.Stat(cand); err == nil && !st.IsDir() {
				found = cand
				break
			}
		}
		if found == "" {
			return nil, nil, fmt.Errorf("%s is not a test file (*_test.yaml), and there is no %s_test.yaml beside it; extauthz validate %s only compiles the policy", a, base, a)
		}
		out = append(out, found)
		forPolicy[found] = a
	}
	return out, forPolicy, nil
}
