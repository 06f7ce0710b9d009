package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// uriPattern is a compiled resource URI pattern, matched component by
// component against a URI in normal form (see the package doc, Patterns).
type uriPattern struct {
	any          bool   // "**": every URI
	scheme       string // lower case, or "*" for any scheme
	hasAuthority bool
	host         glob   // '*' within a label, '**' across labels
	port         string // "" (none or the default), "*" (any) or digits
	path         glob   // '*' within a segment, '**' across segments
	// query and fragment are nil when the pattern has none: then deny and
	// ask rules, and patterns ending in "**", match any query or fragment;
	// other allow rules only their absence.
	query, fragment *glob
	openEnd         bool // the pattern ends in "**"
	loose           bool
	// zeroSegments: a '**' segment matches zero or more segments (deny and
	// ask), else one or more (allow).
	zeroSegments bool
	src          string // the URI pattern as written, for Explain
}

// compileURIPattern compiles the URI part of a resource pattern. loose
// rules (deny, ask) fold path, query and fragment literals. It returns a
// problem message, or "".
func compileURIPattern(s string, loose bool) (*uriPattern, string) {
	return compileURIPatternAs(s, loose, loose)
}

// compileURIPatternAs is compileURIPattern with the reading of '**'
// segments chosen apart from loose (Explain compares the two readings).
func compileURIPatternAs(s string, loose, zeroSegments bool) (*uriPattern, string) {
	if s == "**" {
		return &uriPattern{any: true, loose: loose, zeroSegments: zeroSegments, src: s}, ""
	}
	const bad = "URI pattern %q has no normal form: want scheme:[//host[:port]]/path[?query][#fragment] " +
		"with no userinfo, dot segments, encoded '/', '.', '%%' or '\\', control characters, " +
		"or characters NFKC turns into delimiters"
	anyScheme := strings.HasPrefix(s, "*:")
	rest := s
	if anyScheme {
		rest = "x" + s[1:] // a placeholder scheme, replaced below
	}
	out, ok := normalizeEscapes(rest)
	if !ok {
		return nil, fmt.Sprintf(bad, s)
	}
	u, ok := splitURI(out)
	if !ok || strings.IndexByte(u.Scheme, '*') >= 0 {
		return nil, fmt.Sprintf(bad, s)
	}
	if anyScheme {
		u.Scheme = "*"
	}
	hostOnly := u.HasAuthority && u.Path == "" && !u.HasQuery && !u.HasFragment
	switch problem := normalizeURIParts(&u, true); problem {
	case "":
	case noNormalForm:
		return nil, fmt.Sprintf(bad, s)
	default:
		return nil, fmt.Sprintf("URI pattern %q: %s", s, problem)
	}
	if strings.Contains(u.Host, "**") && u.Host != "**" && !strings.HasPrefix(u.Host, "**.") {
		return nil, fmt.Sprintf("URI pattern %q: '**' in a host stands for whole labels: \"**\" or \"**.example.com\"", s)
	}
	if strings.Contains(u.Port, "*") && u.Port != "*" {
		return nil, fmt.Sprintf("URI pattern %q: a port is digits or '*'", s)
	}
	if hostOnly && strings.HasSuffix(u.Host, "**") && u.Port == "" {
		u.Path = "/**" // "scheme://**" and "scheme://**.example.com": every path
	}
	p := &uriPattern{
		scheme:       u.Scheme,
		hasAuthority: u.HasAuthority,
		host:         parseGlob(u.Host, globOptions{sep: '.', doubleStar: true, zeroSegments: zeroSegments}),
		port:         u.Port,
		loose:        loose,
		zeroSegments: zeroSegments,
		src:          s,
		openEnd:      !u.HasQuery && !u.HasFragment && strings.HasSuffix(u.Path, "**"),
	}
	o := globOptions{doubleStar: true, sep: '/', zeroSegments: zeroSegments}
	if loose {
		o.fold = looseURI
	}
	p.path = parseGlob(u.Path, o)
	if u.HasQuery {
		o.sep = '&'
		g := parseGlob(u.Query, o)
		p.query = &g
	}
	if u.HasFragment {
		o.sep = '#'
		g := parseGlob(u.Fragment, o)
		p.fragment = &g
	}
	return p, ""
}

// resourceTarget is a request's URI with the forms rules compare, the
// loose ones computed at most once.
type resourceTarget struct {
	u         URI
	looseDone bool
	loosePath string
	looseQ    string
	looseF    string
	// For file and web URIs, the loose forms of the path as Windows
	// resolves each segment (winPath) and as the files their streams
	// belong to; nil where equal to loosePath or to winLoose.
	winLoose, fileLoose *string
}

func (t *resourceTarget) looseForms() (path, query, fragment string) {
	if !t.looseDone {
		t.loosePath, t.looseQ, t.looseF = looseURI(t.u.Path), looseURI(t.u.Query), looseURI(t.u.Fragment)
		if winScheme(t.u.Scheme) {
			w, f := winPath(t.u.Path, false), ""
			if mayHaveStream(t.u.Path) {
				f = winPath(t.u.Path, true)
			} else {
				f = w
			}
			if w != t.u.Path {
				if lw := loose(w); lw != t.loosePath {
					t.winLoose = &lw
				}
			}
			if f != w {
				if lf := loose(f); lf != t.loosePath && (t.winLoose == nil || lf != *t.winLoose) {
					t.fileLoose = &lf
				}
			}
		}
		t.looseDone = true
	}
	return t.loosePath, t.looseQ, t.looseF
}

// match reports whether t matches p.
func (p *uriPattern) match(t *resourceTarget) bool {
	if p.any {
		return true
	}
	u := &t.u
	if (p.scheme != "*" && p.scheme != u.Scheme) || p.hasAuthority != u.HasAuthority {
		return false
	}
	if !p.host.match(u.Host) || (p.port != "*" && p.port != u.Port) {
		return false
	}
	path, query, fragment := u.Path, u.Query, u.Fragment
	if p.loose {
		path, query, fragment = t.looseForms()
	}
	anyRest := p.loose || p.openEnd
	return p.pathMatch(t, path) &&
		optionalMatch(p.query, u.HasQuery, query, anyRest) &&
		optionalMatch(p.fragment, u.HasFragment, fragment, anyRest)
}

// pathMatch matches the path (path: t's exact or loose form, by p.loose).
// A loose pattern also matches a file or web path as Windows resolves it
// and as the files its streams belong to.
func (p *uriPattern) pathMatch(t *resourceTarget, path string) bool {
	if p.path.match(path) {
		return true
	}
	if !p.loose {
		return false
	}
	return (t.winLoose != nil && p.path.match(*t.winLoose)) || (t.fileLoose != nil && p.path.match(*t.fileLoose))
}

// optionalMatch matches a query or fragment: a pattern without one matches
// any when anyRest is set, else only its absence.
func optionalMatch(g *glob, has bool, s string, anyRest bool) bool {
	if g == nil {
		return anyRest || !has
	}
	return has && g.match(s)
}

// globstarNote says, for Explain, when a '**' segment's reading decided
// whether p matched t: a deny or ask pattern that held only through a '**'
// of zero segments, or an allow pattern that missed only because its '**'
// needs one or more. Otherwise it returns "".
func (p *uriPattern) globstarNote(t *resourceTarget, held bool) string {
	if p.any || !strings.Contains(p.src, "**") {
		return ""
	}
	other, problem := compileURIPatternAs(p.src, p.loose, !p.zeroSegments)
	if problem != "" || other.match(t) == held {
		return ""
	}
	if held {
		return "through a '**' of zero segments: in deny and ask rules a '**' segment is zero or more segments"
	}
	return "an allow rule's '**' segment is one or more segments, never none; allow this URI with a rule of its own"
}

// windowsNote says, for Explain, when a deny or ask pattern held only on
// t's path as Windows resolves it ("secret.txt." as "secret.txt") or as the
// file a stream belongs to; otherwise it returns "".
func (p *uriPattern) windowsNote(t *resourceTarget, held bool) string {
	if !held || !p.loose || p.any {
		return ""
	}
	path, _, _ := t.looseForms()
	switch {
	case p.path.match(path):
		return ""
	case t.winLoose != nil && p.path.match(*t.winLoose):
		return "as Windows resolves the path: " + strconv.Quote(winPath(t.u.Path, false))
	default:
		return "as Windows resolves the path, the file of its stream: " + strconv.Quote(winPath(t.u.Path, true))
	}
}
