package policy

import (
	"strings"
	"testing"
)

// TestNormalizeURISchemes: spellings a server resolves to one resource have
// one normal form (D05), per scheme.
func TestNormalizeURISchemes(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		// file: empty segments, local host spellings.
		{"file:///etc//passwd", "file:///etc/passwd"},
		{"file:/etc/passwd", "file:///etc/passwd"},
		{"file://localhost/etc/passwd", "file:///etc/passwd"},
		{"file://LOCALHOST/etc/passwd", "file:///etc/passwd"},
		{"file://localhost./etc", "file:///etc"},
		{"file://", "file:///"},
		{"file://server/share/x", "file://server/share/x"},
		// http(s): default ports, empty path, empty segments, case.
		{"http://169.254.169.254:80/latest", "http://169.254.169.254/latest"},
		{"http://169.254.169.254:0080/latest", "http://169.254.169.254/latest"},
		{"http://169.254.169.254:/latest", "http://169.254.169.254/latest"},
		{"https://Example.COM:443", "https://example.com/"},
		{"https://example.com:8443/", "https://example.com:8443/"},
		{"http://example.com:443/", "http://example.com:443/"},
		{"https://example.com//a///b/", "https://example.com/a/b/"},
		{"wss://example.com:443/s", "wss://example.com/s"},
		{"ws://example.com:80/s", "ws://example.com/s"},
		// Trailing-dot hosts.
		{"https://example.com./x", "https://example.com/x"},
		{"http://169.254.169.254./x", "http://169.254.169.254/x"},
		// IPv4 in decimal, octal, hex and short forms (WHATWG URL, inet_aton).
		{"http://2852039166/latest", "http://169.254.169.254/latest"},
		{"http://0xA9FEA9FE/latest", "http://169.254.169.254/latest"},
		{"http://0xa9.0xfe.0xa9.0xfe/", "http://169.254.169.254/"},
		{"http://0251.0376.0251.0376/", "http://169.254.169.254/"},
		{"http://169.254.43518/", "http://169.254.169.254/"},
		{"http://169.16689662/", "http://169.254.169.254/"},
		{"http://127.1/", "http://127.0.0.1/"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"http://0/", "http://0.0.0.0/"},
		{"http://0x/", "http://0.0.0.0/"},
		{"http://00000000000000000000000000177.0.0.1/", "http://127.0.0.1/"},
		// IPv6 forms.
		{"http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"},
		{"http://[::FFFF:A9FE:A9FE]/", "http://169.254.169.254/"},
		{"http://[::ffff:169.254.169.254]:80/", "http://169.254.169.254/"},
		{"http://[2001:DB8::0:1]:8080/x", "http://[2001:db8::1]:8080/x"},
		// Percent-encoding of unreserved characters, hex case.
		{"https://ex%61mple.com/%7Euser/%41", "https://example.com/~user/A"},
		{"file:///a%3fb", "file:///a%3Fb"},
		// Generic schemes: host and scheme case only.
		{"S3://Bucket/Key", "s3://bucket/Key"},
		{"urn:ISBN:0451450523", "urn:ISBN:0451450523"},
		{"custom://host:0099/x", "custom://host:99/x"},
		{"mailto:a@example.com", "mailto:a@example.com"},
	}
	for _, tt := range tests {
		got, ok := NormalizeURI(tt.give)
		if !ok || got != tt.want {
			t.Errorf("NormalizeURI(%q) = %q, %v; want %q", tt.give, got, ok, tt.want)
			continue
		}
		if again, ok := NormalizeURI(got); !ok || again != got {
			t.Errorf("NormalizeURI(%q) = %q, %v; not idempotent", got, again, ok)
		}
	}
}

// TestNormalizeURIRefuses: what cannot be normalized safely is refused
// (CauseUnsafeURI), including what NFKC would turn into a delimiter (D07).
func TestNormalizeURIRefuses(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"fullwidth solidus hiding ..", "file:///reports/a\uff0f..\uff0fetc"},
		{"fullwidth solidus alone", "file:///reports/a\uff0fb"},
		{"fullwidth solidus encoded", "file:///reports/a%EF%BC%8F..%EF%BC%8Fetc"},
		{"fullwidth reverse solidus", "file:///reports/a\uff3c..\uff3cetc"},
		{"fullwidth full stop segment", "file:///reports/\uff0e\uff0e/etc"},
		{"one dot leader", "file:///reports/\u2024\u2024/etc"},
		{"two dot leader", "file:///reports/\u2025/etc"},
		{"fullwidth percent", "file:///reports/\uff052e\uff052e/etc"},
		{"small percent", "file:///reports/\ufe6a2e\ufe6a2e/etc"},
		{"fullwidth question mark", "https://evil.test\uff1f.example.com/x"},
		{"fullwidth number sign", "https://evil.test\uff03.example.com/x"},
		{"small full stop", "file:///reports/\ufe52\ufe52/etc"},
		{"encoded percent (double encoding)", "file:///reports/%252e%252e/etc"},
		{"encoded C1 control", "file:///a%C2%85"},
		{"userinfo", "http://user@169.254.169.254/"},
		{"userinfo with password", "https://a:b@example.com/"},
		{"empty userinfo", "https://@example.com/"},
		{"no scheme", "etc/passwd"},
		{"scheme-relative", "//example.com/x"},
		{"rootless file", "file:etc/passwd"},
		{"file with port", "file://localhost:22/etc"},
		{"http without host", "http:///x"},
		{"http without authority", "http:/x"},
		{"empty label", "https://a..example.com/"},
		{"two trailing dots", "https://example.com../"},
		{"leading dot", "https://.example.com/"},
		{"non-ASCII host", "https://ex\u00e4mple.com/"},
		{"fullwidth host", "https://\uff45xample.com/"},
		{"encoded host octet", "https://ex%C3%A4mple.com/"},
		{"space in host", "https://exa%20mple.com/"},
		{"IPv4 out of range", "http://256.0.0.1/"},
		{"IPv4 too many parts", "http://1.2.3.4.5/"},
		{"IPv4 short form overflow", "http://1.16777216/"},
		{"IPv4 bad octal", "http://09.1.1.1/"},
		{"name ending in a number", "http://example.123/"},
		{"IPv6 zone", "http://[fe80::1%25eth0]/"},
		{"IPvFuture", "http://[v1.x]/"},
		{"IPv4 in brackets", "http://[1.2.3.4]/"},
		{"unclosed bracket", "http://[::1/"},
		{"port not a number", "http://example.com:8o/"},
		{"port out of range", "http://example.com:65536/"},
		{"empty segment, generic", "s3://bucket//key"},
		{"too long", "file:///" + strings.Repeat("a", MaxURILen)},
	}
	for _, tt := range tests {
		if got, ok := NormalizeURI(tt.give); ok {
			t.Errorf("%s: NormalizeURI(%q) = %q, want refused", tt.name, tt.give, got)
		}
	}
}

// TestResourcePatternComponents: patterns match parsed components; '*'
// never crosses its component's separator, query and fragment never match
// a path pattern (D06).
func TestResourcePatternComponents(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"deny:",
		"  - id: no-etc",
		"    match: \"resource:s/file:///etc/**\"",
		"  - id: no-metadata",
		"    match: \"resource:s/http://169.254.169.254/**\"",
		"  - id: no-admin-anywhere",
		"    match: \"resource:s/*://**/admin/**\"",
		"allow:",
		"  - id: any-file",
		"    match: \"resource:s/file:///**\"",
		"  - id: any-http",
		"    match: \"resource:s/http://**\"",
		"  - id: sub",
		"    match: \"resource:s/https://*.example.com/**\"",
		"  - id: deep-sub",
		"    match: \"resource:s/https://**.example.org/x\"",
		"  - id: api-any-port",
		"    match: \"resource:s/https://api.test:*/v1/*\"",
		"  - id: search-query",
		"    match: \"resource:s/https://search.test/q?term=*\"",
		"  - id: doc-frag",
		"    match: \"resource:s/https://doc.test/page#*\"",
		"  - id: isbn",
		"    match: \"resource:s/urn:isbn:*\"",
	))
	tests := []struct {
		give string
		want outcome
	}{
		// D05: spellings of /etc and of the metadata address.
		{"file:////etc/passwd", unsafeURI}, // UNC on Windows (E04)
		{"file://localhost/etc/passwd", byRule(Deny, "no-etc")},
		{"file:/etc//passwd", byRule(Deny, "no-etc")},
		{"file:///ETC/passwd", byRule(Deny, "no-etc")}, // deny folds case
		{"file:///srv/x", byRule(Allow, "any-file")},
		{"http://169.254.169.254:80/latest/meta-data", byRule(Deny, "no-metadata")},
		{"http://2852039166/latest", byRule(Deny, "no-metadata")},
		{"http://0xa9.0xfe.0xa9.0xfe/latest", byRule(Deny, "no-metadata")},
		{"http://169.254.169.254./latest", byRule(Deny, "no-metadata")},
		{"http://[::ffff:169.254.169.254]/latest", byRule(Deny, "no-metadata")},
		{"http://169.254.169.254//latest", byRule(Deny, "no-metadata")},
		{"http://user@169.254.169.254/latest", unsafeURI},
		{"http://example.net/x", byRule(Allow, "any-http")},
		{"http://example.net/x?q#f", byRule(Allow, "any-http")}, // a pattern ending in '**' takes any query
		{"http://example.net:8080/x", byDefault},                // but only the default port
		{"file:///srv/x?q", byRule(Allow, "any-file")},
		// D06: '*' in a host stays in one label, never reaches '?' or '#'.
		{"https://evil.test?.example.com/x", byDefault},
		{"https://evil.test#.example.com/x", byDefault},
		{"https://evil.test/.example.com/x", byDefault},
		{"https://a.example.com/x", byRule(Allow, "sub")},
		{"https://a.example.com/x/y?z", byRule(Allow, "sub")}, // the pattern ends in '**'
		{"https://a.example.com/x/y#f", byRule(Allow, "sub")},
		{"https://a.b.example.com/x", byDefault}, // '*' is one label
		{"https://example.com/x", byDefault},
		{"https://a.b.example.org/x", byRule(Allow, "deep-sub")},
		{"https://a.example.org/x", byRule(Allow, "deep-sub")},
		{"https://example.org.evil.test/x", byDefault},
		// Ports: absent is the default; '*' any.
		{"https://a.example.com:443/x", byRule(Allow, "sub")},
		{"https://a.example.com:8443/x", byDefault},
		{"https://api.test:8443/v1/x", byRule(Allow, "api-any-port")},
		{"https://api.test/v1/x", byRule(Allow, "api-any-port")},
		{"https://api.test/v1/x?y=/", byDefault},
		// Query and fragment patterns.
		{"https://search.test/q?term=abc", byRule(Allow, "search-query")},
		{"https://search.test/q?term=abc&admin=1", byDefault}, // '*' stops at '&'
		{"https://search.test/q", byDefault},
		{"https://doc.test/page#intro", byRule(Allow, "doc-frag")},
		{"https://doc.test/page", byDefault},
		// A scheme wildcard and '**' host in a deny rule; a query never
		// hides the path from it.
		{"https://a.example.com/admin/x", byRule(Deny, "no-admin-anywhere")},
		{"https://a.example.com/admin/x?q=1#f", byRule(Deny, "no-admin-anywhere")},
		{"file:///admin/x", byRule(Deny, "no-admin-anywhere")}, // '**' matches file's empty host
		{"file:///srv/admin/x", byRule(Allow, "any-file")},     // the path pattern starts at the root
		// Generic URIs without authority.
		{"urn:isbn:0451450523", byRule(Allow, "isbn")},
		{"urn:isbn:a/b", byDefault},
		{"urn:issn:1", byDefault},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(resRead("s", tt.give))); got != tt.want {
			t.Errorf("%q = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// TestResourcePatternErrors: patterns are normalized like URIs at compile
// time; what has no normal form is an error.
func TestResourcePatternErrors(t *testing.T) {
	for _, give := range []string{
		"resource:s/https://user@example.com/*",
		"resource:s/file:///a/../b",
		"resource:s/relative/path",
		"resource:s/https://a**b.example.com/",
		"resource:s/https://example.com:8*/",
		"resource:s/http*://example.com/",
		"resource:s/https://ex\u00e4mple.com/",
		"resource:s/file:///a\uff0fb",
	} {
		if _, err := Compile("p.yaml", []byte("allow: [\""+give+"\"]\n")); err == nil {
			t.Errorf("%q compiled", give)
		}
	}
}

// TestSubscriptionsListen: every resourceSubscriptions URI is decided as
// resources/subscribe; all must be allowed (D08).
func TestSubscriptionsListen(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"deny:",
		"  - id: no-secret",
		"    match: \"resource:s/file:///secret/**\"",
		"ask:",
		"  - id: ask-hr",
		"    match: \"resource:s/file:///hr/*\"",
		"allow:",
		"  - id: reports",
		"    match: \"resource:s/file:///reports/*\"",
		"  - id: hr",
		"    match: \"resource:s/file:///hr/*\"",
		"methods:",
		"  allow: [{id: listen, method: subscriptions/listen}]",
	))
	listen := func(uris ...string) *Input {
		return &Input{Op: OpRequest, Method: "subscriptions/listen", Server: "s", URIs: uris}
	}
	tests := []struct {
		name string
		give *Input
		want outcome
	}{
		{"no URIs: the method rule", listen(), byRule(Allow, "listen")},
		{"allowed URI", listen("file:///reports/a"), byRule(Allow, "listen")},
		{"denied URI", listen("file:///secret/payroll.csv"), byRule(Deny, "no-secret")},
		{"unmatched URI", listen("file:///other"), byDefault},
		{"asked URI", listen("file:///hr/x"), byRule(Ask, "ask-hr")},
		{"denied after asked", listen("file:///hr/x", "file:///secret/a"), byRule(Deny, "no-secret")},
		{"allowed then unmatched", listen("file:///reports/a", "file:///x"), byDefault},
		{"unsafe URI", listen("file:///reports/a", "file:///reports/../secret"), unsafeURI},
		{"URI of another server", &Input{Op: OpRequest, Method: "subscriptions/listen", Server: "t", URIs: []string{"file:///reports/a"}}, byDefault},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestResourceGlobstar: in deny and ask rules a '**' segment matches zero
// or more segments (labels in a host, pairs in a query), so "dir/**"
// covers dir itself; in allow rules it stands for one or more (E03).
func TestResourceGlobstar(t *testing.T) {
	p := mustCompile(t, lines(
		"default: deny",
		"deny:",
		"  - id: no-keys-anywhere",
		"    match: \"resource:s/file:///data/**/keys/**\"",
		"  - id: no-secret-file",
		"    match: \"resource:s/file:///data/secret.txt\"",
		"  - id: no-evil",
		"    match: \"resource:s/https://**.evil.test/**\"",
		"  - id: no-debug",
		"    match: \"resource:s/https://api.test/v1?**&debug=1&**\"",
		"ask:",
		"  - id: ask-hr",
		"    match: \"resource:s/file:///data/hr/**\"",
		"allow:",
		"  - id: any-data",
		"    match: \"resource:s/file:///data/**\"",
		"  - id: public-anywhere",
		"    match: \"resource:s/file:///pub/**/public/*\"",
		"  - id: web",
		"    match: \"resource:s/https://**\"",
	))
	tests := []struct {
		give string
		want outcome
	}{
		{"file:///data/keys/id_rsa", byRule(Deny, "no-keys-anywhere")}, // E03
		{"file:///data/keys", byRule(Deny, "no-keys-anywhere")},
		{"file:///data/keys/", byRule(Deny, "no-keys-anywhere")},
		{"file:///data/a/keys/id_rsa", byRule(Deny, "no-keys-anywhere")},
		{"file:///data/a/b/keys", byRule(Deny, "no-keys-anywhere")},
		{"file:///data/KEYS/id_rsa", byRule(Deny, "no-keys-anywhere")},
		{"file:///data//keys//id_rsa", byRule(Deny, "no-keys-anywhere")},
		{"file:///data/monkeys/x", byRule(Allow, "any-data")},
		{"file:///data/keysafe", byRule(Allow, "any-data")},
		{"file:///data/secret.txt", byRule(Deny, "no-secret-file")},
		{"file:///data/hr", byRule(Ask, "ask-hr")}, // "dir/**" covers dir
		{"file:///data/hr/", byRule(Ask, "ask-hr")},
		{"file:///data/hr/x/y", byRule(Ask, "ask-hr")},
		{"file:///data/hrx", byRule(Allow, "any-data")},
		{"https://evil.test/x", byRule(Deny, "no-evil")}, // zero labels
		{"https://a.b.evil.test/x", byRule(Deny, "no-evil")},
		{"https://evil.test", byRule(Deny, "no-evil")},
		{"https://notevil.test/x", byRule(Allow, "web")},
		{"https://api.test/v1?debug=1", byRule(Deny, "no-debug")}, // zero pairs either side
		{"https://api.test/v1?a=1&debug=1&b=2", byRule(Deny, "no-debug")},
		{"https://api.test/v1?xdebug=1", byRule(Allow, "web")},
		// allow: one or more segments, never none.
		{"file:///data", byDefault},
		{"file:///data/", byRule(Allow, "any-data")},
		{"file:///data/x", byRule(Allow, "any-data")},
		{"file:///pub/a/public/x", byRule(Allow, "public-anywhere")},
		{"file:///pub/public/x", byDefault},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(resRead("s", tt.give))); got != tt.want {
			t.Errorf("%q = %v, want %v", tt.give, got, tt.want)
		}
	}
}
