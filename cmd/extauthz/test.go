package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/extauthz/policytest"
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
		fmt.Fprintln(stderr, "usage: extauthz test [flags] [DIR|FILE...]   (default .; runs every *_test.yaml below a DIR)")
		fs.PrintDefaults()
	}
	verbose := fs.Bool("v", false, "print every test, and the policy trace of a failing one")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file")
	run := fs.String("run", "", "run only the tests whose name matches this regular expression")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var filter *regexp.Regexp
	if *run != "" {
		var err error
		if filter, err = regexp.Compile(*run); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("test: -run: %w", err)}
		}
	}
	files, err := policytest.Find(fs.Args())
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
		if filter != nil {
			kept := f.Tests[:0]
			for _, t := range f.Tests {
				if filter.MatchString(t.Name) {
					kept = append(kept, t)
				}
			}
			f.Tests = kept
		}
		lp, results, err := policytest.Run(ctx, f)
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
		fmt.Fprintf(stdout, "FAIL: %d of %d tests failed", failed, total)
		if notRun > 0 {
			fmt.Fprintf(stdout, "; %d test files did not run (policy errors above)", notRun)
		}
		fmt.Fprintln(stdout)
		return &exitError{code: 1}
	case broken:
		return &exitError{code: 2}
	}
	fmt.Fprintf(stdout, "PASS: %d tests in %d files\n", total, len(files))
	return nil
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
