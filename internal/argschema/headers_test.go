package argschema

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// hdrs is a request's headers as Envoy delivers them: names lower-cased.
type hdrs map[string][]string

func (h hdrs) Get(name string) (string, int) {
	v := h[name]
	if len(v) == 0 {
		return "", 0
	}
	return v[0], len(v)
}

// TestHeaderParams: which x-mcp-header annotations are read.
func TestHeaderParams(t *testing.T) {
	tests := []struct {
		name, give string
		want       []string // Header=path
	}{
		{"top level", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`, []string{"N=n", "Region=region"}},
		{"nested through properties", `{"type":"object","properties":{"o":{"type":"object","properties":{"r":{"type":"boolean","x-mcp-header":"R"}}}}}`, []string{"R=o/r"}},
		{"under items: not the spec's", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, nil},
		{"under allOf: not the spec's", `{"type":"object","allOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, nil},
		// Annotations the spec does not allow are enforced when a header
		// can carry them (as the Go SDK's server does): a sibling's fault
		// never turns the comparison off.
		{"not a token: the others enforced", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"},"b":{"type":"string","x-mcp-header":"B"}}}`, []string{"B=b"}},
		{"not a string: the others enforced", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7},"b":{"type":"string","x-mcp-header":"B"}}}`, []string{"B=b"}},
		{"twice in any case: both enforced", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Dup"},"b":{"type":"string","x-mcp-header":"DUP"}}}`, []string{"DUP=b", "Dup=a"}},
		{"an object: enforced", `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`, []string{"A=a"}},
		{"no type: enforced", `{"type":"object","properties":{"a":{"x-mcp-header":"A"}}}`, []string{"A=a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile([]byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range s.Headers {
				got = append(got, h.Header+"="+strings.Join(h.Path, "/"))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestCheckHeaders: Mcp-Param-{Name} against the body, names in any case
// on the declaring side, values plain or =?base64?…?=.
func TestCheckHeaders(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"Region":{"type":"string","x-mcp-header":"REGION"},"o":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"Count"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   string
		h      hdrs
		expect bool
		want   string
	}{
		{"agree", `{"Region":"eu-west","o":{"n":3}}`, hdrs{"mcp-param-region": {"eu-west"}, "mcp-param-count": {"3"}}, true, ""},
		{"base64", `{"Region":" eu "}`, hdrs{"mcp-param-region": {"=?base64?IGV1IA==?="}}, true, ""},
		{"base64 of another value", `{"Region":"eu"}`, hdrs{"mcp-param-region": {"=?base64?dXM=?="}}, false, "Mcp-Param-REGION"},
		{"literal lookalike", `{"Region":"=?base64?ZXU=?="}`, hdrs{"mcp-param-region": {"=?base64?ZXU=?="}}, false, "Mcp-Param-REGION"},
		{"nested number as decimal", `{"o":{"n":3}}`, hdrs{"mcp-param-count": {"3.0e0"}}, false, ""},
		{"nested disagrees", `{"o":{"n":3}}`, hdrs{"mcp-param-count": {"4"}}, false, "Mcp-Param-Count"},
		{"number with leading zero", `{"o":{"n":3}}`, hdrs{"mcp-param-count": {"03"}}, false, "Mcp-Param-Count"},
		{"huge exponent refused", `{"o":{"n":3}}`, hdrs{"mcp-param-count": {"3e1000000"}}, false, "Mcp-Param-Count"},
		{"missing, not expected", `{"Region":"eu"}`, hdrs{}, false, ""},
		{"missing, expected", `{"Region":"eu"}`, hdrs{}, true, "Mcp-Param-REGION"},
		{"absent value, header sent", `{}`, hdrs{"mcp-param-region": {"eu"}}, false, "Mcp-Param-REGION"},
		{"null value, header sent", `{"Region":null}`, hdrs{"mcp-param-region": {"eu"}}, false, "Mcp-Param-REGION"},
		{"null value, no header", `{"Region":null}`, hdrs{}, true, ""},
		{"object value", `{"o":{"n":{"x":1}}}`, hdrs{"mcp-param-count": {"1"}}, false, "Mcp-Param-Count"},
		{"repeated", `{"Region":"eu"}`, hdrs{"mcp-param-region": {"eu", "eu"}}, false, "Mcp-Param-REGION"},
		{"other headers ignored", `{"Region":"eu"}`, hdrs{"mcp-param-region": {"eu"}, "mcp-param-other": {"x"}}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.CheckHeaders(tt.h, mcpparse.DecodeExact([]byte(tt.args)), tt.expect); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestCheckHeadersInvalidAnnotations: one invalid annotation does not turn
// off the comparison of a valid sibling (the Go SDK's server refuses the
// disagreeing header; an intermediary may have routed by it), and a
// parameter whose annotation is not the spec's refuses a header.
func TestCheckHeadersInvalidAnnotations(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"bad":{"type":"string","x-mcp-header":"not a token"},"o":{"type":"object","x-mcp-header":"Obj"},"n":{"x-mcp-header":"N"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   string
		h      hdrs
		expect bool
		want   string
	}{
		{"valid sibling disagrees", `{"region":"eu","bad":"x"}`, hdrs{"mcp-param-region": {"us"}}, false, "Mcp-Param-Region"},
		{"valid sibling agrees", `{"region":"eu","bad":"x"}`, hdrs{"mcp-param-region": {"eu"}}, true, ""},
		{"object parameter with a header", `{"o":{}}`, hdrs{"mcp-param-obj": {"{}"}}, false, "Mcp-Param-Obj"},
		{"untyped parameter agrees", `{"n":5}`, hdrs{"mcp-param-n": {"5"}}, true, ""},
		{"untyped parameter disagrees", `{"n":5}`, hdrs{"mcp-param-n": {"6"}}, false, "Mcp-Param-N"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.CheckHeaders(tt.h, mcpparse.DecodeExact([]byte(tt.args)), tt.expect)
			if got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}
