package bearer

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDPoPReplayCache: the jti cache forgets a jti when its proof can no
// longer be accepted, and when full of live entries it refuses (fails
// closed) rather than forgetting one.
func TestDPoPReplayCache(t *testing.T) {
	now := time.Now()
	v := NewDPoPVerifier(DPoPConfig{Now: func() time.Time { return now }, ReplaySize: 2})
	exp := now.Add(DefaultDPoPMaxAge)
	tests := []struct {
		give string
		want Kind // 0 for accepted
	}{
		{"a", 0}, {"b", 0}, {"a", KindProofReplayed}, {"c", KindInternal},
	}
	for _, tt := range tests {
		err := v.remember("jkt", tt.give, exp, now)
		if got := kindOfDPoP(err); got != tt.want {
			t.Fatalf("jti %s: %v, want %v", tt.give, err, tt.want)
		}
	}
	// Past the window the entries are gone: room again, and the same jti
	// (which the iat check would refuse anyway) is not remembered.
	later := exp.Add(time.Second)
	if err := v.remember("jkt", "c", later.Add(DefaultDPoPMaxAge), later); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if err := v.remember("other-jkt", "c", later.Add(DefaultDPoPMaxAge), later); err != nil {
		t.Fatalf("the same jti under another key: %v", err)
	}
	if n := len(v.seen); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
}

func kindOfDPoP(err error) Kind {
	if err == nil {
		return 0
	}
	if de, ok := err.(*DPoPError); ok {
		return de.Kind
	}
	return -1
}

// TestProofHTU: normalization of htu and of the request URI (RFC 3986
// sections 6.2.2, 6.2.3).
func TestProofHTU(t *testing.T) {
	tests := []struct {
		give, want string // want "" means refused
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"HTTPS://MCP.EXAMPLE.COM/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"http://mcp.example.com:80/mcp", "http://mcp.example.com/mcp"},
		{"http://mcp.example.com:443/mcp", "http://mcp.example.com:443/mcp"},
		{"https://mcp.example.com", "https://mcp.example.com/"},
		{"https://mcp.example.com/m%63p?x#y", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/a%2fb", "https://mcp.example.com/a%2Fb"},
		{"https://[::1]:8443/mcp", "https://[::1]:8443/mcp"},
		{"https://mcp.example.com/MCP", "https://mcp.example.com/MCP"},
		{"/mcp", ""},
		{"mcp.example.com/mcp", ""},
		{"ftp://mcp.example.com/mcp", ""},
		{"https://user:pw@mcp.example.com/mcp", ""},
		{"https:opaque", ""},
		{"https://mcp.example.com/%zz", ""},
		{"HTTP://:80", ""}, // a port and no host (fuzz)
		{"https://mcp.example.com:/mcp", "https://mcp.example.com/mcp"},
		// Dot segments (RFC 3986 section 5.2.4), after percent-decoding
		// the unreserved '.' (section 6.2.2's order).
		{"https://mcp.example.com/a/../mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/./mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/%2E%2E/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/a/%2e/mcp", "https://mcp.example.com/a/mcp"},
		{"https://mcp.example.com/a/.%2E/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/../../mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/a/b/..", "https://mcp.example.com/a/"},
		{"https://mcp.example.com/a/..", "https://mcp.example.com/"},
		{"https://mcp.example.com/..", "https://mcp.example.com/"},
		{"https://mcp.example.com/.", "https://mcp.example.com/"},
		{"https://mcp.example.com/a//../b", "https://mcp.example.com/a/b"},
		{"https://mcp.example.com/a/.b/..c/...", "https://mcp.example.com/a/.b/..c/..."},
		{"https://mcp.example.com/a/..%2Fb", "https://mcp.example.com/a/..%2Fb"},
		{"https://mcp.example.com/a/%2E%2E%2Fb", "https://mcp.example.com/a/..%2Fb"},
	}
	for _, tt := range tests {
		got, ok := proofHTU(tt.give)
		if tt.want == "" && ok || tt.want != "" && got != tt.want {
			t.Errorf("proofHTU(%q) = %q, %v; want %q", tt.give, got, ok, tt.want)
		}
	}
}

// TestParseAuthorization: RFC 6750's "Bearer" 1*SP b64token, and the same
// grammar for DPoP.
func TestParseAuthorization(t *testing.T) {
	tests := []struct {
		give       string
		wantScheme string // "" means refused
		wantToken  string
	}{
		{"Bearer a.b.c", "bearer", "a.b.c"},
		{"Bearer  a.b.c", "bearer", "a.b.c"},
		{"Bearer     a.b.c", "bearer", "a.b.c"},
		{"bearer a.b.c", "bearer", "a.b.c"},
		{"BEARER a.b.c", "bearer", "a.b.c"},
		{"Bearer a.b.c ", "bearer", "a.b.c"},
		{"Bearer a-b_c~d+e/f==", "bearer", "a-b_c~d+e/f=="},
		{"DPoP a.b.c", "dpop", "a.b.c"},
		{"DPoP  a.b.c", "dpop", "a.b.c"},
		{"Bearer", "", ""},
		{"Bearer ", "", ""},
		{"Bearer    ", "", ""},
		{"Bearer\ta.b.c", "", ""},
		{"Bearer \ta.b.c", "", ""},
		{" Bearer a.b.c", "", ""},
		{"Bearer a.b.c d.e.f", "", ""},
		{"Bearer a.b c", "", ""},
		{"Bearer a.b.c, Bearer d.e.f", "", ""},
		{"Bearer a.b.c,d.e.f", "", ""},
		{"Bearer ===", "", ""},
		{"Bearer a=b", "", ""},
		{"Bearer a\"b", "", ""},
		{"Basic YWxpY2U6cHc=", "", ""},
		{"Bearerx a.b.c", "", ""},
		{"MAC a.b.c", "", ""},
	}
	for _, tt := range tests {
		scheme, tok, ok := ParseAuthorization(tt.give)
		if ok != (tt.wantScheme != "") || scheme != tt.wantScheme || tok != tt.wantToken {
			t.Errorf("ParseAuthorization(%q) = %q, %q, %v; want %q, %q", tt.give, scheme, tok, ok, tt.wantScheme, tt.wantToken)
		}
	}
}

// FuzzParseAuthorization: no panic; an accepted header is a known scheme
// and exactly one b64token, found again in the header.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer a.b.c", "DPoP  a.b.c ", "Bearer a b", "bearer\ta", "Bearer ==", "Basic x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		scheme, tok, ok := ParseAuthorization(h)
		if !ok {
			return
		}
		if scheme != "bearer" && scheme != "dpop" || !isB64Token(tok) || strings.ContainsAny(tok, " \t,") || !strings.Contains(h, " "+tok) {
			t.Fatalf("ParseAuthorization(%q) = %q, %q", h, scheme, tok)
		}
	})
}

// TestIsB64Token: the eight-at-a-time loop agrees with RFC 6750's grammar
// read one character at a time, for every byte at every position of bodies
// of 1 to 17 characters, with and without trailing '='s.
func TestIsB64Token(t *testing.T) {
	ref := func(s string) bool {
		body := strings.TrimRight(s, "=")
		for i := 0; i < len(body); i++ {
			c := body[i]
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
				return false
			}
		}
		return body != ""
	}
	for n := 1; n <= 17; n++ {
		for at := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				for _, give := range []string{string(b), string(b) + "=", string(b) + "=="} {
					if got, want := isB64Token(give), ref(give); got != want {
						t.Fatalf("isB64Token(%q) = %v, want %v", give, got, want)
					}
				}
			}
		}
	}
}

// TestRemoveDotSegments: RFC 3986 section 5.2.4's examples and section
// 5.4's abnormal ones, as paths.
func TestRemoveDotSegments(t *testing.T) {
	for give, want := range map[string]string{
		"/a/b/c/./../../g": "/a/g", "mid/content=5/../6": "mid/6",
		"/b/c/../../../g": "/g", "/./g": "/g", "/../g": "/g", "/b/c/g.": "/b/c/g.", "/b/c/.g": "/b/c/.g",
		"/b/c/g..": "/b/c/g..", "/b/c/..g": "/b/c/..g", "/b/c/./../g": "/b/g", "/b/c/./g/.": "/b/c/g/",
		"/b/c/g/./h": "/b/c/g/h", "/b/c/g/../h": "/b/c/h", "": "", "/": "/", ".": "", "..": "", "../a": "a", "./a": "a",
		"//": "//", "/a//b/../c": "/a//c", "/..//": "//", "/a/..//b": "//b",
	} {
		if got := removeDotSegments(give); got != want {
			t.Errorf("removeDotSegments(%q) = %q, want %q", give, got, want)
		}
	}
}

// FuzzProofHTU: no panic; a normalized htu is stable under normalization.
func FuzzProofHTU(f *testing.F) {
	for _, s := range []string{"https://mcp.example.com/mcp", "HTTP://a:80/%7e", "https://[::1]/a%2f", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := proofHTU(s)
		if !ok {
			return
		}
		if n2, ok2 := proofHTU(n); !ok2 || n2 != n {
			t.Fatalf("proofHTU(%q) = %q, again %q %v", s, n, n2, ok2)
		}
		// No dot segment survives, in any spelling.
		u, _ := url.Parse(n)
		for _, seg := range strings.Split(u.EscapedPath(), "/") {
			if d, _ := url.PathUnescape(seg); d == "." || d == ".." {
				t.Fatalf("proofHTU(%q) = %q keeps segment %q", s, n, seg)
			}
		}
	})
}

// FuzzRemoveDotSegments is differential against net/url, whose
// ResolveReference applies RFC 3986 section 5.2 (and so 5.2.4) to an
// absolute path; it also must be idempotent.
func FuzzRemoveDotSegments(f *testing.F) {
	for _, s := range []string{"/a/b/c/./../../g", "/../g", "/a//../b", "/.", "/a/..", "/b/c/./g/."} {
		f.Add(s)
	}
	base, _ := url.Parse("https://h/")
	f.Fuzz(func(t *testing.T, p string) {
		got := removeDotSegments(p)
		if again := removeDotSegments(got); again != got {
			t.Fatalf("removeDotSegments(%q) = %q, again %q", p, got, again)
		}
		// net/url drops some empty segments that section 5.2.4 keeps
		// ("/..//" is "//" step by step, "/" for net/url): no "//" here.
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "%?#") || strings.Contains(p, "//") {
			return
		}
		if want := base.ResolveReference(&url.URL{Path: p}).Path; got != want {
			t.Fatalf("removeDotSegments(%q) = %q, net/url %q", p, got, want)
		}
	})
}
