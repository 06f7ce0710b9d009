package policy

import "strings"

// tokKind is a piece of a compiled glob.
type tokKind uint8

const (
	tokLit  tokKind = iota // literal text
	tokStar                // any run of bytes without the separator
	tokAny                 // any run of bytes, the separator included
	// tokDirs is a globstar segment and the separator after it ("**/"
	// under zeroSegments): the empty string, or any run that ends in the
	// separator. "a/**/b" is "a/", tokDirs, "b": "a/b", "a/x/b", "a/x/y/b".
	tokDirs
	// tokRest is a final globstar segment and the separator before it
	// ("/**" at the end under zeroSegments): the empty string, or the
	// separator and any run. "a/**" is "a", tokRest: "a", "a/", "a/x/y".
	tokRest
)

type tok struct {
	kind tokKind
	lit  string
}

// glob is a compiled wildcard pattern. Only '*' (and '**' where enabled)
// is special; every other character, '.', '?' and '[' included, is literal.
type glob struct {
	exact bool // no wildcard: match is s == lit
	lit   string
	sep   byte // the byte a single '*' never matches
	toks  []tok
}

// globOptions says how parseGlob reads a pattern.
type globOptions struct {
	// sep is the separator a single '*' never crosses; 0 means '/'.
	sep byte
	// doubleStar makes "**" a wildcard that crosses the separator. Without
	// it "**" is rejected by parseGlob's caller (see hasDoubleStar).
	doubleStar bool
	// zeroSegments (with doubleStar) makes a globstar segment, a segment of
	// two or more '*' and nothing else, stand for zero or more whole
	// segments, as bash globstar, gitignore, minimatch and doublestar read
	// it: "a/**/b" matches "a/b" and "a/**" matches "a". Without it such a
	// segment is a run of any bytes between its separators, one or more
	// segments: "a/**/b" needs a segment between, "a/**" something after
	// "a/". Consecutive globstar segments are one ("a/**/**" is "a/**").
	// A "**" inside a segment ("a**", "**.md") is a run of any bytes either
	// way.
	zeroSegments bool
	// starCrossesSlash makes a single '*' cross the separator as well.
	starCrossesSlash bool
	// fold, if set, is applied to each literal run between wildcards, so a
	// wildcard is never normalized away and never created by folding.
	fold func(string) string
}

// hasDoubleStar reports whether pattern contains "**".
func hasDoubleStar(pattern string) bool { return strings.Contains(pattern, "**") }

// isGlobstar reports whether seg is a globstar segment: two or more '*'
// and nothing else.
func isGlobstar(seg string) bool {
	return len(seg) >= 2 && strings.Count(seg, "*") == len(seg)
}

// parseGlob compiles pattern.
func parseGlob(pattern string, o globOptions) glob {
	if !strings.Contains(pattern, "*") {
		lit := pattern
		if o.fold != nil {
			lit = o.fold(lit)
		}
		return glob{exact: true, lit: lit}
	}
	sep := o.sep
	if sep == 0 {
		sep = '/'
	}
	b := globBuilder{o: o, sep: sep}
	if o.doubleStar && o.zeroSegments {
		b.segments(pattern)
	} else {
		b.run(pattern)
	}
	return glob{toks: b.toks, sep: sep}
}

// globBuilder accumulates the tokens of one pattern.
type globBuilder struct {
	o    globOptions
	sep  byte
	toks []tok
}

// add appends a wildcard. Adjacent '*' and "**" runs collapse into the
// wider one; globstar tokens never collapse with others.
func (b *globBuilder) add(k tokKind) {
	if n := len(b.toks); n > 0 {
		prev := &b.toks[n-1]
		if (prev.kind == tokStar || prev.kind == tokAny) && (k == tokStar || k == tokAny) {
			if k == tokAny {
				prev.kind = tokAny
			}
			return
		}
		if prev.kind == k && k == tokDirs {
			return
		}
	}
	b.toks = append(b.toks, tok{kind: k})
}

// segments tokenizes pattern under zeroSegments: globstar segments become
// tokDirs or tokRest, the rest is read by run.
func (b *globBuilder) segments(pattern string) {
	sep := string(b.sep)
	var segs []string
	for _, s := range strings.Split(pattern, sep) {
		if isGlobstar(s) && len(segs) > 0 && isGlobstar(segs[len(segs)-1]) {
			continue // "**/**" is "**"
		}
		segs = append(segs, s)
	}
	if len(segs) == 1 && isGlobstar(segs[0]) {
		b.add(tokAny)
		return
	}
	var lit strings.Builder
	for i, s := range segs {
		last := i == len(segs)-1
		switch {
		case isGlobstar(s) && !last:
			b.run(lit.String()) // "" or ends in sep
			lit.Reset()
			b.add(tokDirs)
		case isGlobstar(s):
			// The previous segment was not a globstar, so lit ends in sep.
			b.run(strings.TrimSuffix(lit.String(), sep))
			b.add(tokRest)
			return
		default:
			lit.WriteString(s)
			if !last {
				lit.WriteString(sep)
			}
		}
	}
	b.run(lit.String())
}

// run tokenizes s with '*' (and "**" under doubleStar) as wildcards.
func (b *globBuilder) run(s string) {
	o := b.o
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '*')
		if i < 0 {
			i = len(rest)
		}
		if i > 0 {
			lit := rest[:i]
			if o.fold != nil {
				lit = o.fold(lit)
			}
			if lit != "" {
				b.toks = append(b.toks, tok{kind: tokLit, lit: lit})
			}
			rest = rest[i:]
			continue
		}
		switch {
		case o.doubleStar && strings.HasPrefix(rest, "**"):
			b.add(tokAny)
			rest = rest[2:]
		case o.starCrossesSlash:
			b.add(tokAny)
			rest = rest[1:]
		default:
			b.add(tokStar)
			rest = rest[1:]
		}
	}
}

// stackMatch is the longest subject matched without a heap allocation.
const stackMatch = 256

// match reports whether s matches g. It runs in O(len(s) * tokens) time.
func (g *glob) match(s string) bool {
	if g.exact {
		return s == g.lit
	}
	if len(g.toks) == 0 {
		return s == ""
	}
	// Cheap rejections on a literal head or tail.
	if t := g.toks[0]; t.kind == tokLit && !strings.HasPrefix(s, t.lit) {
		return false
	}
	if t := g.toks[len(g.toks)-1]; t.kind == tokLit && !strings.HasSuffix(s, t.lit) {
		return false
	}
	n := len(s)
	var buf [2 * (stackMatch + 1)]bool
	var cur, next []bool
	if n <= stackMatch {
		cur, next = buf[:n+1], buf[stackMatch+1:stackMatch+1+n+1]
	} else {
		b := make([]bool, 2*(n+1))
		cur, next = b[:n+1], b[n+1:]
	}
	// cur[j]: the tokens so far match s[:j].
	cur[0] = true
	for _, t := range g.toks {
		any := false
		switch t.kind {
		case tokLit:
			l := len(t.lit)
			for j := 0; j <= n; j++ {
				next[j] = j >= l && cur[j-l] && s[j-l:j] == t.lit
				any = any || next[j]
			}
		case tokStar:
			reach := false
			for j := 0; j <= n; j++ {
				if j > 0 && s[j-1] == g.sep {
					reach = false
				}
				reach = reach || cur[j]
				next[j] = reach
				any = any || reach
			}
		case tokAny:
			reach := false
			for j := 0; j <= n; j++ {
				reach = reach || cur[j]
				next[j] = reach
			}
			any = reach
		case tokDirs:
			// s[i:j] is empty or ends in sep.
			reach := false // cur[i] for some i < j
			for j := 0; j <= n; j++ {
				next[j] = cur[j] || (reach && s[j-1] == g.sep)
				reach = reach || cur[j]
				any = any || next[j]
			}
		case tokRest:
			// s[i:j] is empty or starts with sep.
			reach := false // cur[i] && s[i] == sep for some i < j
			for j := 0; j <= n; j++ {
				next[j] = cur[j] || reach
				if j < n && cur[j] && s[j] == g.sep {
					reach = true
				}
				any = any || next[j]
			}
		}
		if !any {
			return false
		}
		cur, next = next, cur
	}
	return cur[n]
}
