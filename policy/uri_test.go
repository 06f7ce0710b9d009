package policy

import "testing"

func TestNormalizeURI(t *testing.T) {
	tests := []struct {
		give   string
		want   string
		wantOK bool
	}{
		{give: ""},
		{give: "file:///srv/docs/a.md", want: "file:///srv/docs/a.md", wantOK: true},
		{give: "FILE:///srv/docs/A.md", want: "file:///srv/docs/A.md", wantOK: true}, // path keeps case
		{give: "HTTPS://Example.COM:8443/Path?Q=1#F", want: "https://example.com:8443/Path?Q=1#F", wantOK: true},
		{give: "https://ex%41mple.com/", want: "https://example.com/", wantOK: true},
		{give: "file:///%c3%bc", want: "file:///%C3%BC", wantOK: true},
		{give: "file:///%C3%BC", want: "file:///%C3%BC", wantOK: true},
		{give: "file:///a%7eb%41%2d%5f", want: "file:///a~bA-_", wantOK: true},
		{give: "file:///a%20b%3f", want: "file:///a%20b%3F", wantOK: true},
		{give: "file:///ü", want: "file:///ü", wantOK: true}, // IRI text is kept
		{give: "urn:isbn:0451450523", want: "urn:isbn:0451450523", wantOK: true},
		{give: "1abc:/x"},                        // not a scheme: a relative reference
		{give: "%41:", want: "a:", wantOK: true}, // decoding completes a scheme (found by fuzzing)
		{give: "h%54tp://%48ost/%48", want: "http://host/H", wantOK: true},
		{give: "file:///a/b.c/..d/d..", want: "file:///a/b.c/..d/d..", wantOK: true},
		{give: "file:///%FF", wantOK: false},                        // encoded octets that are not UTF-8: refused
		{give: "file:///reports/%EF%BC%8E%EF%BC%8E", wantOK: false}, // "．．" encoded: NFKC "..", a dot segment
		{give: "file:///reports/%E2%80%A5/x", wantOK: false},        // "‥" (U+2025), NFKC ".."
		{give: "file:///reports/%C0%AE%C0%AE/x", wantOK: false},     // overlong '.', not UTF-8
		{give: "file:///reports/%EF%BC%8E%EF%BC%8E%EF%BC%8Ex"},      // NFKC turns U+FF0E into '.'
		{give: "file:///reports/report.pdf", want: "file:///reports/report.pdf", wantOK: true},

		// Refused: dot segments, raw or encoded.
		{give: "file:///srv/docs/../../etc/passwd"},
		{give: "file:///srv/./x"},
		{give: "file:///srv/.."},
		{give: "file:///srv/."},
		{give: "../x"},
		{give: "file:///srv/%2e%2E/x"},
		{give: "file:///srv/.%2e/x"},
		{give: "file:///srv/a%2Eb"}, // an encoded '.' anywhere
		{give: "file:///x?..#"},
		{give: "file:///x/..?q"},
		{give: "file:///x/．．/y"}, // NFKC '..'
		// Encoded '/', backslashes.
		{give: "file:///srv/a%2Fb"},
		{give: "file:///srv/a%2fb"},
		{give: `file:///srv\..\etc`},
		{give: "file:///srv/a%5Cb"},
		{give: "file:///srv/a%5cb"},
		// NUL and control characters.
		{give: "file:///a%00"},
		{give: "file:///a\x00"},
		{give: "file:///a\n"},
		{give: "file:///a%0A"},
		{give: "file:///a%7F"},
		{give: "file:///a\u0085"},
		// Invalid percent-encoding, invalid UTF-8.
		{give: "file:///a%"},
		{give: "file:///a%4"},
		{give: "file:///a%zz"},
		{give: "file:///a\xff"},
	}
	for _, tt := range tests {
		got, ok := NormalizeURI(tt.give)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("NormalizeURI(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
		if ok {
			again, ok2 := NormalizeURI(got)
			if again != got || !ok2 {
				t.Errorf("NormalizeURI(%q) = %q, %v; not idempotent", got, again, ok2)
			}
		}
	}
}

func TestResources(t *testing.T) {
	p := mustCompile(t, lines(
		"deny:",
		"  - id: no-secrets",
		"    match: \"resource:*/file:///srv/Secret/**\"",
		"  - id: no-geheim",
		"    match: \"resource:*/file:///reports/geheimé*\"",
		"ask:",
		"  - id: ask-%41",
		"    match: \"resource:s/https://Example.com/%41sk/*\"",
		"allow:",
		"  - id: docs",
		"    match: \"resource:s/file:///srv/docs/*\"",
		"  - id: tree",
		"    match: \"resource:s/file:///srv/tree/**\"",
		"  - id: md",
		"    match: \"resource:s/file:///srv/md/**/*.md\"",
		"  - id: umlaut",
		"    match: \"resource:s/file:///srv/%c3%bc/x\"",
		"  - id: host",
		"    match: \"resource:s/HTTPS://API.Example.com/v1/*\"",
	))
	tests := []struct {
		give *Input
		want outcome
	}{
		// C12.
		{give: resRead("s", "file:///srv/docs/../../etc/passwd"), want: unsafeURI},
		{give: resRead("s", "file:///srv/docs/a.md"), want: byRule(Allow, "docs")},
		{give: resRead("s", "file:///srv/docs/sub/a.md"), want: byDefault},
		{give: resRead("s", "file:///srv/docs/"), want: byRule(Allow, "docs")},
		{give: resRead("other", "file:///srv/docs/a.md"), want: byDefault},
		// '**' crosses '/'.
		{give: resRead("s", "file:///srv/tree/a/b/c"), want: byRule(Allow, "tree")},
		{give: resRead("s", "file:///srv/md/a/b/c.md"), want: byRule(Allow, "md")},
		{give: resRead("s", "file:///srv/md/a/b/c.txt"), want: byDefault},
		// Unsafe before any rule.
		{give: resRead("s", "file:///srv/docs/a%2Fb"), want: unsafeURI},
		{give: resRead("s", "file:///srv/docs/%2e%2e"), want: unsafeURI},
		{give: resRead("s", "file:///srv/docs/a%2Emd"), want: unsafeURI},
		{give: resRead("s", `file:///srv/docs/..\x`), want: unsafeURI},
		{give: resRead("s", "file:///srv/docs/a%5Cb"), want: unsafeURI},
		{give: resRead("s", "file:///srv/docs/a%00"), want: unsafeURI},
		{give: resRead("s", "file:///srv/Secret/../docs/a"), want: unsafeURI},
		// Normal forms: hex case, unreserved, scheme and host case.
		{give: resRead("s", "file:///srv/%C3%BC/x"), want: byRule(Allow, "umlaut")},
		{give: resRead("s", "file:///srv/%c3%bc/x"), want: byRule(Allow, "umlaut")},
		{give: resRead("s", "file:///srv/ü/x"), want: byDefault}, // raw is not the encoding
		{give: resRead("s", "FILE:///srv/docs/%61.md"), want: byRule(Allow, "docs")},
		{give: resRead("s", "https://api.example.COM/v1/x"), want: byRule(Allow, "host")},
		{give: resRead("s", "https://api.example.com/V1/x"), want: byDefault}, // path is case-sensitive in allow
		// deny and ask fold case.
		{give: resRead("s", "file:///srv/secret/a/b"), want: byRule(Deny, "no-secrets")},
		{give: resRead("s", "file:///SRV/SECRET/x"), want: byRule(Deny, "no-secrets")},
		{give: resRead("s", "https://example.com/ask/x"), want: byRule(Ask, "ask-%41")},
		{give: resRead("s", "https://example.com/ASK/x"), want: byRule(Ask, "ask-%41")},
		// deny and ask see through percent-encoding of non-ASCII text.
		{give: resRead("s", "file:///reports/geheimé.pdf"), want: byRule(Deny, "no-geheim")},
		{give: resRead("s", "file:///reports/geheim%C3%A9.pdf"), want: byRule(Deny, "no-geheim")},
		{give: resRead("s", "file:///reports/GEHEIM%C3%89.pdf"), want: byRule(Deny, "no-geheim")},
		{give: resRead("s", "file:///srv/%EF%BC%B3ecret/x"), want: byRule(Deny, "no-secrets")}, // fullwidth S, encoded
		{give: resRead("s", "file:///srv/docs/%EF%BC%8E%EF%BC%8E"), want: unsafeURI},
		{give: &Input{Op: OpRequest, Method: "resources/subscribe", Server: "s", URI: "file:///srv/docs/a"}, want: byRule(Allow, "docs")},
		{give: &Input{Op: OpRequest, Method: "resources/unsubscribe", Server: "s", URI: "file:///srv/docs/a"}, want: byRule(Allow, "docs")},
		{give: &Input{Op: OpRequest, Method: "resources/unsubscribe", Server: "s", URI: "file:///srv/.."}, want: unsafeURI},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(tt.give)); got != tt.want {
			t.Errorf("%s %q = %v, want %v", tt.give.Method, tt.give.URI, got, tt.want)
		}
	}
}
