package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testdataPT = "cmd/extauthz/testdata/policytest/"

func TestTestCommand(t *testing.T) {
	tests := []struct {
		name     string
		give     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  []string // substrings of stderr
	}{
		{name: "the reference policy passes its tests", give: []string{"examples/"}, wantCode: 0,
			wantOut: []string{"PASS: 25 tests in 1 file\n"}},
		{name: "-v names every test with file:line", give: []string{"-v", "examples/policy_test.yaml"}, wantCode: 0,
			wantOut: []string{"PASS examples/policy_test.yaml:12: search is allowed"}},
		{name: "a broken policy fails with file:line", give: []string{testdataPT + "broken"}, wantCode: 1,
			wantOut: []string{
				"FAIL " + testdataPT + "broken/policy_test.yaml:39: a big refund asks, even where an allow rule matches too: decision allow, want ask; reason allowed, want authorization_required; rule \"small-eur-refunds\", want \"big-refunds\"",
				"FAIL: 1 of 25 tests failed",
			}},
		{name: "-v adds the policy trace of a failure", give: []string{"-v", "-run", "big refund", testdataPT + "broken"}, wantCode: 1,
			wantOut: []string{"[allow] small-eur-refunds (" + testdataPT + "broken/policy.yaml:", "no deny or ask rule matched; allow rule \"small-eur-refunds\" matched: allow"}},
		{name: "a policy that does not compile fails with file:line:col", give: []string{testdataPT + "uncompilable"}, wantCode: 1,
			wantOut: []string{testdataPT + "uncompilable/policy.yaml:5:13: rule \"search\": shadow must be true or false, not the string \"yes\"", "; 1 test file did not run"}},
		{name: "a malformed test file is exit 2 with file:line:col", give: []string{testdataPT + "badtests"}, wantCode: 2,
			wantErr: []string{testdataPT + "badtests/policy_test.yaml:6:5: unknown key \"wnat\"", "policy_test.yaml:9:22: want.decision must be allow, deny or ask"}},
		{name: "no test files", give: []string{"k8s/"}, wantCode: 2, wantErr: []string{"no *_test.yaml files"}},
		{name: "a missing path", give: []string{"no/such/dir"}, wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(t.Context(), append([]string{"test"}, tt.give...), &out, &errb)
			if got := exitCode(err); got != tt.wantCode {
				t.Fatalf("exit %d, want %d (err %v)\nstdout:\n%s\nstderr:\n%s", got, tt.wantCode, err, out.String(), errb.String())
			}
			if err != nil && exitCode(err) != 0 {
				errb.WriteString(err.Error())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

// --junit writes a report CI systems read: one testcase per test, a failure
// element per failing test, a file that did not run as an error.
func TestTestJUnit(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.xml")
	err := run(t.Context(), []string{"test", "--junit", report, "examples/", testdataPT + "broken", testdataPT + "uncompilable"}, &bytes.Buffer{}, &bytes.Buffer{})
	if exitCode(err) != 1 {
		t.Fatalf("exit %d, want 1", exitCode(err))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name   string `xml:"name,attr"`
			Errors int    `xml:"errors,attr"`
			Cases  []struct {
				Name    string `xml:"name,attr"`
				Line    int    `xml:"line,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Tests != 50 || got.Failures != 2 || len(got.Suites) != 3 {
		t.Fatalf("tests=%d failures=%d suites=%d, want 50, 2 (1 test and 1 file), 3\n%s", got.Tests, got.Failures, len(got.Suites), b)
	}
	var failed []string
	for _, c := range got.Suites[1].Cases {
		if c.Failure != nil {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) != 1 || got.Suites[1].Cases[8].Line != 39 || got.Suites[2].Errors != 1 {
		t.Errorf("failed %q, case 8 line %d, suite 2 errors %d\n%s", failed, got.Suites[1].Cases[8].Line, got.Suites[2].Errors, b)
	}
}
