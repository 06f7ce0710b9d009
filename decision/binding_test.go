package decision

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestMetaString: params._meta members are read as the MCP server's JSON
// decoder reads them, escaped spellings of "_meta" and of the member
// included, so an idempotency key or approval cannot hide from the service.
func TestMetaString(t *testing.T) {
	const name = "io.mcp-extauthz/idempotency-key"
	tests := []struct {
		give   string
		want   string
		wantOK bool
		err    bool
	}{
		{give: `{"name":"t"}`},
		{give: ``},
		{give: `{"_meta":null}`},
		{give: `{"_meta":{"other":"x"}}`},
		{give: `{"_meta":{"io.mcp-extauthz/idempotency-key":"k1"}}`, want: "k1", wantOK: true},
		{give: `{"\u005fmeta":{"io.mcp-extauthz/idempotency-key":"k2"}}`, want: "k2", wantOK: true},
		{give: `{"\u005f\u006d\u0065\u0074\u0061":{"io.mcp-extauthz/idempotency-key":"k3"}}`, want: "k3", wantOK: true},
		{give: `{"_meta":{"io.mcp-extauthz\/idempotency-key":"k4"}}`, want: "k4", wantOK: true},
		{give: `{"arguments":{"q":"\u0041"},"_meta":{"io.mcp-extauthz/idempotency-key":"k5"}}`, want: "k5", wantOK: true},
		{give: `{"arguments":{"q":"\"_meta\""}}`},
		{give: `{"_meta":{"io.mcp-extauthz/idempotency-key":5}}`, err: true},
		{give: `{"_meta":[1]}`, err: true},
	}
	for _, tt := range tests {
		got, ok, err := metaString([]byte(tt.give), name)
		if got != tt.want || ok != tt.wantOK || (err != nil) != tt.err {
			t.Errorf("metaString(%s) = %q, %v, %v; want %q, %v, error %v", tt.give, got, ok, err, tt.want, tt.wantOK, tt.err)
		}
	}
}

// TestIdempotencyKeyHeader: the Idempotency-Key header is an RFC 8941
// String, read as the upstream reads it: "a\\x" and a\x name one key; an
// sf-string that does not parse is invalid_request.
func TestIdempotencyKeyHeader(t *testing.T) {
	b := &Binding{IdempotencyHeader: "idempotency-key", IdempotencyMeta: "k"}
	tests := []struct {
		give    string // header value
		meta    string // params._meta.k, "" for none
		want    string
		wantBad bool
	}{
		{give: `abc`, want: `abc`},
		{give: `"abc"`, want: `abc`},
		{give: `"a\\x"`, want: `a\x`},
		{give: `a\x`, want: `a\x`},
		{give: `"a\"b"`, want: `a"b`},
		{give: `a"b`, want: `a"b`},
		{give: `"\\\\"`, want: `\\`},
		{give: ` "abc" `, want: `abc`},
		{give: "\t abc", want: `abc`},
		{give: `"a\\x"`, meta: `a\x`, want: `a\x`},
		{give: `"a\\x"`, meta: `a\\x`, wantBad: true},
		{give: `"a\x"`, wantBad: true},
		{give: `"a\n"`, wantBad: true},
		{give: `"a\u0041"`, wantBad: true},
		{give: `"abc`, wantBad: true},
		{give: `"abc\"`, wantBad: true},
		{give: `"abc";p=1`, wantBad: true},
		{give: `"abc", "def"`, wantBad: true},
		{give: `"abc"x`, wantBad: true},
		{give: "\"a\tb\"", wantBad: true},
		{give: "\"a\u00e9\"", wantBad: true},
		{give: `"a b"`, wantBad: true}, // a valid sf-string, but a key is visible ASCII
		{give: `""`, wantBad: true},
		{give: `"` + strings.Repeat("k", 256) + `"`, wantBad: true},
		{give: `"` + strings.Repeat("k", 255) + `"`, want: strings.Repeat("k", 255)},
	}
	for _, tt := range tests {
		t.Run(tt.give+"|"+tt.meta, func(t *testing.T) {
			dec := &Decision{}
			if tt.meta != "" {
				m, _ := json.Marshal(map[string]any{"_meta": map[string]string{"k": tt.meta}})
				dec.params = m
			}
			got, reason := b.idempotencyKey(&Request{Headers: Headers{"idempotency-key": {tt.give}}}, dec)
			switch {
			case tt.wantBad && reason != ReasonInvalidRequest:
				t.Fatalf("key %q, reason %q; want invalid_request", got, reason)
			case !tt.wantBad && (reason != "" || got != tt.want):
				t.Fatalf("key %q, reason %q; want %q", got, reason, tt.want)
			}
		})
	}
}

// FuzzParseSFString: parseSFString agrees with an independent reading of
// RFC 8941's sf-string grammar (a regular expression and a replacer).
func FuzzParseSFString(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\\x"`, `"a\"b"`, `"a\x"`, `"abc`, `"";x`, `""`, "\"\x7f\""} {
		f.Add(s)
	}
	grammar := regexp.MustCompile(`^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$`)
	unescape := strings.NewReplacer(`\"`, `"`, `\\`, `\`)
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := parseSFString(v)
		m := grammar.FindStringSubmatch(v)
		if ok != (m != nil) {
			t.Fatalf("parseSFString(%q) ok %v; the grammar says %v", v, ok, m != nil)
		}
		if ok && got != unescape.Replace(m[1]) {
			t.Fatalf("parseSFString(%q) = %q, want %q", v, got, unescape.Replace(m[1]))
		}
	})
}
