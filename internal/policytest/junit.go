package policytest

import (
	"encoding/xml"
	"io"
	"strings"
)

// JUnit XML, the subset CI systems read (GitLab, Jenkins, GitHub test
// reporters): one testsuite per test file, one testcase per test, a failure
// element per failing test.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
	Error    *junitFault `xml:"error,omitempty"`
}

type junitCase struct {
	Name      string      `xml:"name,attr"`
	Classname string      `xml:"classname,attr"`
	File      string      `xml:"file,attr"`
	Line      int         `xml:"line,attr"`
	Failure   *junitFault `xml:"failure,omitempty"`
}

type junitFault struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// Suite is the outcome of one test file: its results, or the error that
// kept it from running (a policy that does not compile).
type Suite struct {
	File    string
	Results []Result
	Err     error
}

// WriteJUnit writes suites as a JUnit XML report.
func WriteJUnit(w io.Writer, suites []Suite) error {
	var out junitSuites
	for _, s := range suites {
		js := junitSuite{Name: s.File}
		if s.Err != nil {
			js.Errors = 1
			js.Error = &junitFault{Message: "the test file did not run", Text: s.Err.Error()}
			out.Failures++
		}
		for _, r := range s.Results {
			jc := junitCase{Name: r.Test.Name, Classname: s.File, File: s.File, Line: r.Test.Line}
			if !r.Passed() {
				msg := strings.Join(r.Failures, "; ")
				jc.Failure = &junitFault{Message: msg, Text: r.Pos() + ": " + msg}
				js.Failures++
			}
			js.Tests++
			js.Cases = append(js.Cases, jc)
		}
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
