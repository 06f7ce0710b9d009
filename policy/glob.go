package policy

import "strings"

// tokKind is a piece of a compiled glob.
type tokKind uint8

const (
	tokLit  tokKind = iota // literal text
	tokStar                // any run of bytes without the separator
	tokAny                 // any run of bytes, the separator included
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
	// starCrossesSlash makes a single '*' cross the separator as well.
	starCrossesSlash bool
	// fold, if set, is applied to each literal run between wildcards, so a
	// wildcard is never normalized away and never created by folding.
	fold func(string) string
}

// hasDoubleStar reports whether pattern contains "**".
func hasDoubleStar(pattern string) bool { return strings.Contains(pattern, "**") }

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
	var toks []tok
	addWild := func(k tokKind) {
		if n := len(toks); n > 0 && toks[n-1].kind != tokLit {
			// Adjacent wildcards collapse into the wider one.
			if k == tokAny {
				toks[n-1].kind = tokAny
			}
			return
		}
		toks = append(toks, tok{kind: k})
	}
	rest := pattern
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
				toks = append(toks, tok{kind: tokLit, lit: lit})
			}
			rest = rest[i:]
			continue
		}
		switch {
		case o.doubleStar && strings.HasPrefix(rest, "**"):
			addWild(tokAny)
			rest = rest[2:]
		case o.starCrossesSlash:
			addWild(tokAny)
			rest = rest[1:]
		default:
			addWild(tokStar)
			rest = rest[1:]
		}
	}
	return glob{toks: toks, sep: sep}
}

// stackMatch is the longest subject matched without a heap allocation.
const stackMatch = 256

// match reports whether s matches g. It runs in O(len(s) * tokens) time.
func (g *glob) match(s string) bool {
	if g.exact {
		return s == g.lit
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
		}
		if !any {
			return false
		}
		cur, next = next, cur
	}
	return cur[n]
}
