package policy

import (
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		opts    globOptions
		give    string
		want    bool
	}{
		{pattern: "abc", give: "abc", want: true},
		{pattern: "abc", give: "abcd"},
		{pattern: "a.c", give: "abc"}, // not a regexp
		{pattern: "a?c", give: "abc"},
		{pattern: "a[b]c", give: "abc"},
		{pattern: "*", give: "", want: true},
		{pattern: "*", give: "anything", want: true},
		{pattern: "*", give: "a/b"},
		{pattern: "*", opts: globOptions{starCrossesSlash: true}, give: "a/b", want: true},
		{pattern: "a*c", give: "ac", want: true},
		{pattern: "a*c", give: "abbbc", want: true},
		{pattern: "a*c", give: "ab/c"},
		{pattern: "a*b*c", give: "aXbYc", want: true},
		{pattern: "a*b*c", give: "aXbYbZc", want: true},
		{pattern: "a*b*c", give: "acb"},
		{pattern: "*/x", give: "a/x", want: true},
		{pattern: "*/x", give: "a/b/x"},
		{pattern: "**/x", opts: globOptions{doubleStar: true}, give: "a/b/x", want: true},
		{pattern: "**", opts: globOptions{doubleStar: true}, give: "", want: true},
		{pattern: "a/**/b", opts: globOptions{doubleStar: true}, give: "a//b", want: true},
		{pattern: "a/**/b", opts: globOptions{doubleStar: true}, give: "a/x/y/b", want: true},
		{pattern: "a/**/b", opts: globOptions{doubleStar: true}, give: "a/b"},
		{pattern: "x/*/**", opts: globOptions{doubleStar: true}, give: "x/a/b/c", want: true},
		{pattern: "***", opts: globOptions{doubleStar: true}, give: "a/b", want: true},
		{pattern: "**", give: "a/b"}, // without doubleStar, two single stars
		{pattern: "*.md", give: "é.md", want: true},
		{pattern: "a*", give: strings.Repeat("a", 1000), want: true}, // past the stack buffer
		{pattern: "*b", give: strings.Repeat("a", 1000)},
		{pattern: "Delete_*", opts: globOptions{fold: loose}, give: "delete_x", want: true},
		{pattern: "Delete_*", opts: globOptions{fold: loose}, give: "Delete_x"}, // subjects are folded by the caller
	}
	for _, tt := range tests {
		g := parseGlob(tt.pattern, tt.opts)
		if got := g.match(tt.give); got != tt.want {
			t.Errorf("glob %q %+v match %q = %v, want %v", tt.pattern, tt.opts, tt.give, got, tt.want)
		}
	}
}

// TestGlobstarZeroSegments: under zeroSegments (deny and ask) a globstar
// segment stands for zero or more whole segments, as bash globstar,
// gitignore, minimatch and doublestar read it (E03).
func TestGlobstarZeroSegments(t *testing.T) {
	path := globOptions{doubleStar: true, zeroSegments: true}
	host := globOptions{doubleStar: true, zeroSegments: true, sep: '.'}
	tests := []struct {
		pattern string
		opts    globOptions
		give    string
		want    bool
	}{
		{pattern: "/data/**/keys/**", opts: path, give: "/data/keys/id_rsa", want: true},
		{pattern: "/data/**/keys/**", opts: path, give: "/data/keys", want: true},
		{pattern: "/data/**/keys/**", opts: path, give: "/data/keys/", want: true},
		{pattern: "/data/**/keys/**", opts: path, give: "/data/a/keys/id_rsa", want: true},
		{pattern: "/data/**/keys/**", opts: path, give: "/data/a/b/keys/x/y", want: true},
		{pattern: "/data/**/keys/**", opts: path, give: "/data/monkeys/x"}, // segments stay whole
		{pattern: "/data/**/keys/**", opts: path, give: "/data/keysx"},
		{pattern: "/data/**/keys/**", opts: path, give: "/datakeys"},
		{pattern: "a/**/b", opts: path, give: "a/b", want: true},
		{pattern: "a/**/b", opts: path, give: "a/x/y/b", want: true},
		{pattern: "a/**/b", opts: path, give: "a/xb"},
		{pattern: "a/**/b", opts: path, give: "ab"},
		{pattern: "dir/**", opts: path, give: "dir", want: true},
		{pattern: "dir/**", opts: path, give: "dir/", want: true},
		{pattern: "dir/**", opts: path, give: "dir/x/y", want: true},
		{pattern: "dir/**", opts: path, give: "dirx"},
		{pattern: "dir/**", opts: path, give: "di"},
		{pattern: "**/b", opts: path, give: "b", want: true},
		{pattern: "**/b", opts: path, give: "x/y/b", want: true},
		{pattern: "**/b", opts: path, give: "xb"},
		{pattern: "/**", opts: path, give: "/", want: true},
		{pattern: "/**", opts: path, give: "", want: true},
		{pattern: "/**", opts: path, give: "/a/b", want: true},
		{pattern: "/**", opts: path, give: "a"},
		{pattern: "**", opts: path, give: "", want: true},
		{pattern: "**", opts: path, give: "a/b", want: true},
		{pattern: "a/**/**/b", opts: path, give: "a/b", want: true}, // consecutive globstars are one
		{pattern: "a/**/**", opts: path, give: "a", want: true},
		{pattern: "a/***/b", opts: path, give: "a/b", want: true}, // three stars are a globstar too
		{pattern: "a/**/*", opts: path, give: "a/x", want: true},
		{pattern: "a/**/*", opts: path, give: "a/x/y", want: true},
		{pattern: "a/**/*.md", opts: path, give: "a/x.md", want: true},
		{pattern: "a/**/*.md", opts: path, give: "a/x/y.md", want: true},
		{pattern: "a/**/*.md", opts: path, give: "a/x.md/y"},
		{pattern: "/**/", opts: path, give: "/", want: true},
		{pattern: "/**/", opts: path, give: "/a/", want: true},
		{pattern: "/**/", opts: path, give: "/a"},
		{pattern: "a**/b", opts: path, give: "a/b", want: true}, // inside a segment: any run, empty too
		{pattern: "a**/b", opts: path, give: "ax/y/b", want: true},
		{pattern: "a/**b", opts: path, give: "a/x/b", want: true},
		{pattern: "a/**b", opts: path, give: "ab"}, // "a/" is literal
		{pattern: "a/**/b", opts: globOptions{doubleStar: true, zeroSegments: true, fold: loose}, give: "a/b", want: true},
		{pattern: "**.example.com", opts: host, give: "example.com", want: true},
		{pattern: "**.example.com", opts: host, give: "a.b.example.com", want: true},
		{pattern: "**.example.com", opts: host, give: "badexample.com"},
		{pattern: "a=1&**&b=2", opts: globOptions{doubleStar: true, zeroSegments: true, sep: '&'}, give: "a=1&b=2", want: true},
		{pattern: "a=1&**&b=2", opts: globOptions{doubleStar: true, zeroSegments: true, sep: '&'}, give: "a=1&x=y&b=2", want: true},
		{pattern: "a=1&**&b=2", opts: globOptions{doubleStar: true, zeroSegments: true, sep: '&'}, give: "a=1&xb=2"},
	}
	for _, tt := range tests {
		g := parseGlob(tt.pattern, tt.opts)
		if got := g.match(tt.give); got != tt.want {
			t.Errorf("glob %q %+v match %q = %v, want %v", tt.pattern, tt.opts, tt.give, got, tt.want)
		}
	}
}

// TestGlobstarOneOrMore: without zeroSegments (allow rules) a globstar
// segment is one or more segments: never none.
func TestGlobstarOneOrMore(t *testing.T) {
	path := globOptions{doubleStar: true}
	tests := []struct {
		pattern string
		give    string
		want    bool
	}{
		{pattern: "/data/**/keys/**", give: "/data/keys/id_rsa"},
		{pattern: "/data/**/keys/**", give: "/data/a/keys/id_rsa", want: true},
		{pattern: "a/**/b", give: "a/b"},
		{pattern: "a/**/b", give: "a/x/b", want: true},
		{pattern: "dir/**", give: "dir"},
		{pattern: "dir/**", give: "dir/", want: true},
		{pattern: "dir/**", give: "dir/x/y", want: true},
		{pattern: "**/b", give: "b"},
		{pattern: "**/b", give: "x/b", want: true},
	}
	for _, tt := range tests {
		g := parseGlob(tt.pattern, path)
		if got := g.match(tt.give); got != tt.want {
			t.Errorf("glob %q match %q = %v, want %v", tt.pattern, tt.give, got, tt.want)
		}
	}
}

func TestLoose(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{give: "delete_repo", want: "delete_repo"},
		{give: "DELETE-Repo", want: "delete_repo"},
		{give: "Delete.Repo", want: "delete_repo"},
		{give: "ＤＥＬＥＴＥ．ｒｅｐｏ", want: "delete_repo"},
		{give: "STRASSE", want: "strasse"},
		{give: "Straße", want: "strasse"}, // full case folding
		{give: "\u212Aelvin", want: "kelvin"},
		{give: "de\u200Blete", want: "delete"},
		{give: "de\u00ADlete", want: "delete"},
		{give: "wıpe_disk", want: "wipe_disk"},       // U+0131 upper-cases to I elsewhere
		{give: "ADMİN_reset", want: "admin_reset"},   // U+0130 folds to i + U+0307
		{give: "admi\u0307n", want: "admin"},         // i + U+0307 COMBINING DOT ABOVE
		{give: "a\u0307", want: "\u0227"},            // the dot stays after other letters (NFKC: ȧ)
		{give: "\u13a0\uab70", want: "\uab70\uab70"}, // Cherokee: both cases one form
		{give: "\u03a3\u03c2", want: "σσ"},
		{give: "wipe\u2010disk", want: "wipe_disk"}, // HYPHEN
		{give: "wipe\u2011disk", want: "wipe_disk"}, // NON-BREAKING HYPHEN
		{give: "wipe\u2012disk", want: "wipe_disk"}, // FIGURE DASH
		{give: "wipe\u2013disk", want: "wipe_disk"}, // EN DASH
		{give: "wipe\u2014disk", want: "wipe_disk"}, // EM DASH
		{give: "wipe\u2212disk", want: "wipe_disk"}, // MINUS SIGN
		{give: "wipe\u207bdisk", want: "wipe_disk"}, // SUPERSCRIPT MINUS (NFKC: U+2212)
		{give: "wipe\ufe63disk", want: "wipe_disk"}, // SMALL HYPHEN-MINUS
		{give: "wipe\uff0ddisk", want: "wipe_disk"}, // FULLWIDTH HYPHEN-MINUS
		{give: "wipe\u2e3adisk", want: "wipe_disk"}, // TWO-EM DASH
		{give: "wipe\u30a0disk", want: "wipe_disk"}, // KATAKANA-HIRAGANA DOUBLE HYPHEN
		{give: "wipe__disk", want: "wipe__disk"},    // runs are not collapsed
		{give: "wipe-\u2013disk", want: "wipe__disk"},
		{give: "_wipe_disk-", want: "_wipe_disk_"}, // nor ends trimmed
		{give: "a*b", want: "a*b"},
		{give: "a/b", want: "a/b"},
		{give: "", want: ""},
	}
	for _, tt := range tests {
		if got := loose(tt.give); got != tt.want {
			t.Errorf("loose(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
