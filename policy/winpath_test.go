package policy

import (
	"strings"
	"testing"
)

// winPolicy is the E04 policy, for file and web URIs, with allow rules
// that aliasing must not widen.
var winPolicy = lines(
	"default: deny",
	"deny:",
	"  - id: no-secret-file",
	"    match: \"resource:s/file:///data/secret.txt\"",
	"  - id: no-private",
	"    match: \"resource:s/file:///data/private/**\"",
	"  - id: no-keys-dir",
	"    match: \"resource:s/file:///data/keys\"",
	"  - id: no-web-secret",
	"    match: \"resource:s/https://files.test/data/secret.txt\"",
	"  - id: no-web-private",
	"    match: \"resource:s/https://files.test/data/private/**\"",
	"  - id: no-web-stream",
	"    match: \"resource:s/https://files.test/data/report.md:notes\"",
	"  - id: no-s3-secret",
	"    match: \"resource:s/s3://bucket/secret.txt\"",
	"ask:",
	"  - id: ask-hr",
	"    match: \"resource:s/file:///data/hr.csv\"",
	"allow:",
	"  - id: any-data",
	"    match: \"resource:s/file:///data/**\"",
	"  - id: pub-txt",
	"    match: \"resource:s/file:///pub/*.txt\"",
	"  - id: drive-data",
	"    match: \"resource:s/file:///C:/data/**\"",
	"  - id: any-web",
	"    match: \"resource:s/https://files.test/**\"",
	"  - id: any-s3",
	"    match: \"resource:s/s3://bucket/**\"",
)

// TestWindowsAliases: every spelling a Windows server opens as a denied
// file is caught by the deny rule (as the name Windows resolves) or
// refused as unsafe_uri, percent-encoded and in any case; allow rules
// match as written and are not widened (E04).
func TestWindowsAliases(t *testing.T) {
	p := mustCompile(t, winPolicy)
	deny := func(id string) outcome { return byRule(Deny, id) }
	tests := []struct {
		name string
		give string
		want outcome
	}{
		// file: trailing dots and spaces, raw, encoded, mixed; the deny
		// rule sees the name Windows resolves.
		{"E04 trailing dot", "file:///data/secret.txt.", deny("no-secret-file")},
		{"two trailing dots", "file:///data/secret.txt..", deny("no-secret-file")},
		{"encoded trailing space", "file:///data/secret.txt%20", deny("no-secret-file")},
		{"raw trailing space", "file:///data/secret.txt ", deny("no-secret-file")},
		{"dot space dot", "file:///data/secret.txt. .", deny("no-secret-file")},
		{"dot, encoded space, dot", "file:///data/secret.txt.%20.", deny("no-secret-file")},
		{"encoded space, dot", "file:///data/secret.txt%20.", deny("no-secret-file")},
		{"two encoded spaces", "file:///data/secret.txt%20%20", deny("no-secret-file")},
		{"upper case and a dot", "file:///data/SECRET.TXT.", deny("no-secret-file")},
		{"no-break space (NFKC: space)", "file:///data/secret.txt%C2%A0", deny("no-secret-file")},
		{"ideographic space (NFKC: space)", "file:///data/secret.txt\u3000", deny("no-secret-file")},
		{"zero-width space after the dot", "file:///data/secret.txt.\u200b", deny("no-secret-file")},
		{"trailing slash", "file:///data/secret.txt/", deny("no-secret-file")},
		{"directory with a trailing dot", "file:///data/private./x", deny("no-private")},
		{"directory with an encoded space", "file:///data/private%20/x", deny("no-private")},
		{"directory, dot space dot", "file:///data/private. ./x", deny("no-private")},
		{"directory, upper case", "file:///data/PRIVATE./X", deny("no-private")},
		{"directory itself, a dot", "file:///data/private.", deny("no-private")},
		{"exact directory, trailing slash", "file:///data/keys/", deny("no-keys-dir")},
		{"exact directory, dot and slash", "file:///data/keys./", deny("no-keys-dir")},
		{"ask rule, trailing dot", "file:///data/hr.csv.", byRule(Ask, "ask-hr")},
		{"ask rule, encoded space", "file:///data/HR.CSV%20", byRule(Ask, "ask-hr")},
		// file: ':' and '|' are streams or drives: refused.
		{"stream ::$DATA", "file:///data/secret.txt::$DATA", unsafeURI},
		{"stream ::$data", "file:///data/secret.txt::$data", unsafeURI},
		{"stream ::$DaTa", "file:///data/secret.txt::$DaTa", unsafeURI},
		{"stream, encoded colons", "file:///data/secret.txt%3A%3A$DATA", unsafeURI},
		{"stream, lower-case escapes", "file:///data/secret.txt%3a%3a%24data", unsafeURI},
		{"named stream with type", "file:///data/secret.txt:stream:$DATA", unsafeURI},
		{"named stream", "file:///data/secret.txt:stream", unsafeURI},
		{"stream after a dot", "file:///data/secret.txt.::$DATA", unsafeURI},
		{"fullwidth colons (NFKC: ':')", "file:///data/secret.txt\uff1a\uff1a$DATA", unsafeURI},
		{"directory index stream", "file:///data/private::$INDEX_ALLOCATION/x", unsafeURI},
		{"directory $I30 stream", "file:///data/private:$I30:$INDEX_ALLOCATION/x", unsafeURI},
		{"drive inside the path (url2pathname: C:\\Windows)", "file:///data/C:/Windows/win.ini", unsafeURI},
		{"bar drive inside the path", "file:///data/C|/Windows/win.ini", unsafeURI},
		{"bar drive first", "file:///C|/data/x", unsafeURI},
		{"encoded bar", "file:///data/a%7Cb", unsafeURI},
		{"fullwidth bar", "file:///data/a\uff5cb", unsafeURI},
		{"drive-relative", "file:///C:data/x", unsafeURI},
		// file: segments Windows resolves to nothing.
		{"three dots", "file:///data/.../secret.txt", unsafeURI},
		{"space segment", "file:///data/%20/secret.txt", unsafeURI},
		{"dot space segment", "file:///data/. ./x", unsafeURI},
		{"dot dot space", "file:///data/private/.. /secret.txt", unsafeURI},
		{"trailing space segment", "file:///data/keys/%20", unsafeURI},
		// file: 8.3 short names.
		{"short name", "file:///data/SECRET~1.TXT", unsafeURI},
		{"short name, lower case", "file:///data/secret~1.txt", unsafeURI},
		{"short name, trailing dot", "file:///data/SECRET~1.TXT.", unsafeURI},
		{"short directory name", "file:///data/PRIVAT~1/x", unsafeURI},
		{"hashed short name", "file:///data/SE12AB~1.TXT", unsafeURI},
		{"tilde without digits", "file:///data/a~b.txt", byRule(Allow, "any-data")},
		{"tilde and a long extension", "file:///data/longname~1.html", byRule(Allow, "any-data")},
		{"tilde first", "file:///data/~1", byRule(Allow, "any-data")},
		// file: device names.
		{"CON", "file:///data/CON", unsafeURI},
		{"nul.txt", "file:///data/nul.txt", unsafeURI},
		{"com1", "file:///data/com1", unsafeURI},
		{"LPT9.log", "file:///data/LPT9.log", unsafeURI},
		{"con .txt", "file:///data/con%20.txt", unsafeURI},
		{"COM superscript one", "file:///data/COM\u00b9", unsafeURI},
		{"CONIN$", "file:///data/conin$", unsafeURI},
		{"AUX as a directory", "file:///data/AUX/x", unsafeURI},
		{"console", "file:///data/console", byRule(Allow, "any-data")},
		{"com10", "file:///data/com10", byRule(Allow, "any-data")},
		{"nullable.txt", "file:///data/nullable.txt", byRule(Allow, "any-data")},
		// file: UNC and drive hosts.
		{"UNC, four slashes", "file:////server/share/x", unsafeURI},
		{"UNC after localhost", "file://localhost//server/share/x", unsafeURI},
		{"drive as host", "file://C:/data/secret.txt", unsafeURI},
		{"bar drive as host", "file://C|/data/secret.txt", unsafeURI},
		// file: a drive is fine; allow rules match as written.
		{"drive", "file:///C:/data/x", byRule(Allow, "drive-data")},
		{"drive, encoded colon (a drive to Node, a name to Python)", "file:///C%3A/data/x", unsafeURI},
		{"drive, lower case: allow is exact", "file:///c:/data/x", byDefault},
		{"allow *.txt", "file:///pub/a.txt", byRule(Allow, "pub-txt")},
		{"allow *.txt, a trailing dot", "file:///pub/a.txt.", byDefault},
		{"allow *.txt, a stream named .txt", "file:///pub/x.exe:.txt", unsafeURI},
		{"allow **, a trailing dot", "file:///data/public.md.", byRule(Allow, "any-data")},
		// web: the same rules, but ':' is legitimate in web paths, so
		// streams are caught by deny rules rather than refused.
		{"web trailing dot", "https://files.test/data/secret.txt.", deny("no-web-secret")},
		{"web encoded space", "https://files.test/data/secret.txt%20", deny("no-web-secret")},
		{"web dot space dot", "https://files.test/data/SECRET.TXT. .", deny("no-web-secret")},
		{"web ::$DATA", "https://files.test/data/secret.txt::$DATA", deny("no-web-secret")},
		{"web ::$data", "https://files.test/data/secret.txt::$data", deny("no-web-secret")},
		{"web encoded stream", "https://files.test/data/secret.txt%3A%3A%24DATA", deny("no-web-secret")},
		{"web named stream with type", "https://files.test/data/secret.txt:stream:$DATA", deny("no-web-secret")},
		{"web named stream", "https://files.test/data/secret.txt:stream", deny("no-web-secret")},
		{"web stream after a dot", "https://files.test/data/secret.txt.::$DATA", deny("no-web-secret")},
		{"web fullwidth colons", "https://files.test/data/secret.txt\uff1a\uff1a$DATA", deny("no-web-secret")},
		{"web trailing slash", "https://files.test/data/secret.txt/", deny("no-web-secret")},
		{"web directory dot", "https://files.test/data/private./x", deny("no-web-private")},
		{"web directory stream", "https://files.test/data/private::$INDEX_ALLOCATION/x", deny("no-web-private")},
		{"web directory $I30", "https://files.test/data/private:$I30:$INDEX_ALLOCATION/x", deny("no-web-private")},
		{"web denied stream", "https://files.test/data/report.md:notes", deny("no-web-stream")},
		{"web denied stream, typed", "https://files.test/data/report.md:notes:$DATA", deny("no-web-stream")},
		{"web denied stream, upper case", "https://files.test/data/REPORT.MD:NOTES.", deny("no-web-stream")},
		{"web report itself", "https://files.test/data/report.md", byRule(Allow, "any-web")},
		{"web colon name", "https://files.test/data/Talk:Main", byRule(Allow, "any-web")},
		{"web IPv6 in a path", "https://files.test/data/hosts/fe80::1", byRule(Allow, "any-web")},
		{"web short name", "https://files.test/data/SECRET~1.TXT", unsafeURI},
		{"web short name, stream", "https://files.test/data/SECRET~1.TXT:s", unsafeURI},
		{"web only a stream type", "https://files.test/data/::$DATA", unsafeURI},
		{"web three dots", "https://files.test/data/.../x", unsafeURI},
		{"web device name: the remote server's concern", "https://files.test/data/con", byRule(Allow, "any-web")},
		// Other schemes name no Windows file this service can know of.
		{"s3 as written", "s3://bucket/secret.txt", deny("no-s3-secret")},
		{"s3 trailing dot is another key", "s3://bucket/secret.txt.", byRule(Allow, "any-s3")},
	}
	for _, tt := range tests {
		if got := outcomeOf(p.Evaluate(resRead("s", tt.give))); got != tt.want {
			t.Errorf("%s: %q = %v, want %v", tt.name, tt.give, got, tt.want)
		}
	}
}

// TestWindowsAliasPatterns: a pattern is written as Windows resolves it;
// one that is not, or that names what requests may not (streams in file
// paths, device names, short names, UNC), is a compile error saying why.
func TestWindowsAliasPatterns(t *testing.T) {
	tests := []struct {
		give string
		want string // in the message; "" compiles
	}{
		{"file:///data/secret.txt.", `Windows resolves the path segment "secret.txt." as "secret.txt"`},
		{"file:///data/secret.txt%20", `"secret.txt " as "secret.txt"`},
		{"file:///data/private./**", `"private." as "private"`},
		{"file:///data/*.", `"*." as "*"`},
		{"https://files.test/secret.txt::$DATA", `"secret.txt::$DATA" as "secret.txt"`},
		{"*://**/admin./**", `"admin." as "admin"`},
		{"file:///data/a:b", "names an NTFS stream or a drive"},
		{"file:///data/*:*", "names an NTFS stream or a drive"},
		{"file:///data/C|/**", "names an NTFS stream or a drive"},
		{"file:///data/CON", "opens the device"},
		{"file:///data/nul.*", "opens the device"},
		{"file:///data/SECRET~1.TXT", "8.3 short name"},
		{"file:////server/share/**", "UNC path"},
		{"file:///data/.../x", "only dots, spaces"},
		{"file:///C:/data/**", ""},
		{"file:///c:/**", ""},
		{"https://files.test/wiki/Talk:*", ""},
		{"https://files.test/data/report.md:notes", ""},
		{"file:///data/secret.*", ""},
		{"file:///data/*~*", ""},
	}
	for _, tt := range tests {
		for _, list := range []string{"deny", "allow"} {
			_, err := Compile("p.yaml", []byte(list+": [\"resource:s/"+tt.give+"\"]\n"))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s %q: %v", list, tt.give, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%s %q: error %v, want one with %q", list, tt.give, err, tt.want)
			}
		}
	}
}
