package mcpparse

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
)

var jcsVectors = []string{"arrays", "french", "structures", "unicode", "values", "weird"}

func readVector(t *testing.T, name string) (in, out []byte) {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", "jcs", name+".input.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = os.ReadFile(filepath.Join("testdata", "jcs", name+".output.json"))
	if err != nil {
		t.Fatal(err)
	}
	return in, out
}

// TestCanonicalizeRFC8785Vectors runs the RFC 8785 examples through
// Canonicalize. Two are rejected by our stricter rules (see
// testdata/jcs/README.md); TestRFC8785VectorsLenient checks their bytes.
func TestCanonicalizeRFC8785Vectors(t *testing.T) {
	rejected := map[string]ErrorKind{
		"structures": ErrCaseVariantKey,     // "f"/"F", "e"/"E", "a"/"A"
		"values":     ErrNonCanonicalNumber, // 333333333.33333329
	}
	for _, name := range jcsVectors {
		t.Run(name, func(t *testing.T) {
			in, want := readVector(t, name)
			got, err := Canonicalize(in, Limits{})
			if k, ok := rejected[name]; ok {
				wantKind(t, err, k)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestRFC8785VectorsLenient checks the serializer itself on every vector,
// with the two checks beyond RFC 8785 switched off.
func TestRFC8785VectorsLenient(t *testing.T) {
	for _, name := range jcsVectors {
		t.Run(name, func(t *testing.T) {
			in, want := readVector(t, name)
			v, err := parseDocument(in, DefaultLimits(), false, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendCanonical(nil, in, &v); !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestValuesVectorWithoutTheInexactNumber(t *testing.T) {
	in, want := readVector(t, "values")
	in = bytes.Replace(in, []byte("333333333.33333329"), []byte("333333333.3333333"), 1)
	got, err := Canonicalize(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{` { "b" : 1 , "a" : [ true , false , null ] } `, `{"a":[true,false,null],"b":1}`},
		{`"\u0000\u001f\u007f\u2028\/\b\f\n\r\t"`, `"\u0000\u001f` + "\x7f\u2028" + `/\b\f\n\r\t"`},
		{`"\u00e9"`, `"é"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`{"\ue000":1,"\ud83d\ude00":2}`, `{"😀":2,"` + "\ue000" + `":1}`},    // UTF-16 order: D83D < E000
		{`{"\ud83d\ude01":1,"\ud83d\ude00":2}`, `{"😀":2,"😁":1}`},             // same high surrogate
		{`{"b":1,"a":{"d":1,"c":2},"":0}`, `{"":0,"a":{"c":2,"d":1},"b":1}`}, // nested and empty name
		{`{"aa":1,"a":2}`, `{"a":2,"aa":1}`},                                 // prefix sorts first
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`-0`, `0`},
		{`1E2`, `100`},
		{`"é"`, `"é"`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.give), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			// Cross-check with an independent RFC 8785 implementation.
			ref, err := jcsoracle.Transform([]byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, ref) {
				t.Errorf("the RFC 8785 oracle gives %s", ref)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct {
		give string
		want ErrorKind
	}{
		{`{"id":9007199254740993}`, ErrNonCanonicalNumber}, // no id exemption here
		{`{"a":1,"A":2}`, ErrCaseVariantKey},
		{`{"a":1,"\u0061":2}`, ErrDuplicateKey},
		{`"\udfff"`, ErrInvalidUTF8},
		{`1 2`, ErrTrailingData},
		{"\xEF\xBB\xBF1", ErrSyntax},
		{``, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := Canonicalize([]byte(tt.give), Limits{})
			pe := wantKind(t, err, tt.want)
			if pe.Index != -1 {
				t.Errorf("Index = %d, want -1", pe.Index)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{``, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{`{}`, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	}
	for _, tt := range tests {
		if got := Digest([]byte(tt.give)); got != tt.want {
			t.Errorf("Digest(%q) = %s, want %s", tt.give, got, tt.want)
		}
	}
}

// requestDigestGolden is testdata/golden/request_digest.json: envelopes
// and their digests, so that an upstream can check its own computation.
type requestDigestGolden struct {
	Name      string          `json:"name"`
	Audience  string          `json:"aud"`
	Server    string          `json:"server"`
	Method    string          `json:"method"`
	Target    string          `json:"target"`
	Arguments json.RawMessage `json:"args"`
	Issuer    string          `json:"iss"`
	Subject   string          `json:"sub"`
	// Canonical is the exact bytes hashed; Digest their digest.
	Canonical string `json:"canonical"`
	Digest    string `json:"digest"`
}

func TestRequestDigestGolden(t *testing.T) {
	envelopes := []requestDigestGolden{
		{Name: "tools/call", Audience: "https://mcp.example.com/mcp", Server: "billing", Method: "tools/call",
			Target: "issue_refund", Arguments: json.RawMessage(`{"amountMinor":1250,"currency":"CHF","orderId":"ord_Zürich_🚀_001"}`),
			Issuer: "https://idp.example.com", Subject: "user-42"},
		{Name: "no arguments", Audience: "https://mcp.example.com/mcp", Server: "files", Method: "resources/read",
			Target: "file:///reports/index.md", Issuer: "https://idp.example.com", Subject: "user-42"},
		{Name: "escapes", Audience: "aud", Server: "s", Method: "tools/call", Target: "a\"b\\c\n\u0001</>&",
			Arguments: json.RawMessage(`{}`), Issuer: "iss", Subject: "sub\u2028é"},
	}
	for i := range envelopes {
		g := &envelopes[i]
		e := RequestEnvelope{Audience: g.Audience, Server: g.Server, Method: g.Method, Target: g.Target,
			Arguments: g.Arguments, Issuer: g.Issuer, Subject: g.Subject}
		g.Digest = RequestDigest(e)
		// Recompute independently: encoding/json builds the object,
		// internal/jcsoracle (no code shared with mcpparse) canonicalizes it.
		args := g.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		obj, err := json.Marshal(map[string]any{"args": args, "aud": g.Audience, "iss": g.Issuer, "method": g.Method,
			"server": g.Server, "sub": g.Subject, "target": g.Target, "v": "mcp-extauthz/request/v1"})
		if err != nil {
			t.Fatal(err)
		}
		canon, err := jcsoracle.Transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		g.Canonical = string(canon)
		if want := Digest(canon); g.Digest != want {
			t.Errorf("%s: RequestDigest = %s, independent recomputation %s over %s", g.Name, g.Digest, want, canon)
		}
	}
	got, err := json.MarshalIndent(envelopes, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", "request_digest.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request digest golden changed: a digest format change breaks every upstream; bump the version.\ngot:\n%s", got)
	}
}

func TestRequestDigestFields(t *testing.T) {
	base := RequestEnvelope{Audience: "a", Server: "s", Method: "tools/call", Target: "t", Arguments: []byte(`{}`), Issuer: "i", Subject: "u"}
	d0 := RequestDigest(base)
	if d := RequestDigest(RequestEnvelope{Audience: "a", Server: "s", Method: "tools/call", Target: "t", Issuer: "i", Subject: "u"}); d != d0 {
		t.Errorf("nil Arguments digest %s differs from {} digest %s", d, d0)
	}
	change := []func(*RequestEnvelope){
		func(e *RequestEnvelope) { e.Audience = "b" },
		func(e *RequestEnvelope) { e.Server = "x" },
		func(e *RequestEnvelope) { e.Method = "prompts/get" },
		func(e *RequestEnvelope) { e.Target = "u" },
		func(e *RequestEnvelope) { e.Arguments = []byte(`{"a":1}`) },
		func(e *RequestEnvelope) { e.Issuer = "j" },
		func(e *RequestEnvelope) { e.Subject = "v" },
		func(e *RequestEnvelope) { e.Audience, e.Server = "", "a" }, // no field shifting
	}
	for i, f := range change {
		e := base
		f(&e)
		if RequestDigest(e) == d0 {
			t.Errorf("change %d does not change the digest", i)
		}
	}
	if !strings.HasPrefix(d0, "sha256:") || len(d0) != 71 {
		t.Errorf("digest %q is not sha256:<64 hex>", d0)
	}
}
