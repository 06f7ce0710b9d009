package policy

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Windows names. A server on Windows, or one that maps URLs onto Windows
// files, opens several spellings of a path segment as one file: trailing
// dots and spaces are dropped ("secret.txt.", "secret.txt%20",
// "secret.txt. ." are "secret.txt"; "private./x" is "private/x"), an NTFS
// stream suffix names a stream of the file ("secret.txt::$DATA" is its
// content, "secret.txt:s:$DATA" and "secret.txt:s" a stream of it), an 8.3
// short name ("SECRET~1.TXT") names the long one, names compare without
// case, and a device name ("CON", "nul.txt") is a device in any directory.
// Paths of file, http, https, ws and wss URIs are read with these rules:
// ParseURI refuses what no rule can see through, and deny and ask rules
// also compare each segment as Windows resolves it (resourceTarget).

// winScheme reports whether paths of scheme get Windows name handling.
func winScheme(scheme string) bool { return scheme == "file" || webScheme(scheme) }

// segmentText returns a path segment as a server that decodes and
// normalizes it reads it: percent-decoded (when the escapes decode to
// UTF-8), then NFKC.
func segmentText(seg string) string {
	if d, ok := percentDecode(seg); ok {
		seg = d
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] >= utf8.RuneSelf {
			return norm.NFKC.String(seg)
		}
	}
	return seg
}

// winName is the name Windows resolves for one segment's text (see
// segmentText): trailing dots, spaces and default-ignorable characters
// removed, and an NTFS attribute type at the end (":$DATA",
// ":$INDEX_ALLOCATION") removed with the empty stream name before it,
// until none is left. "secret.txt. ." and "secret.txt::$DATA" are
// "secret.txt"; "a:s:$DATA" is "a:s"; "..." is "".
func winName(s string) string {
	for {
		t := strings.TrimRightFunc(s, func(r rune) bool { return r == '.' || r == ' ' || ignorable(r) })
		if i := strings.LastIndexByte(t, ':'); i >= 0 && isAttrType(t[i+1:]) {
			t = strings.TrimSuffix(t[:i], ":") // "x::$DATA": an empty stream name
		}
		if t == s {
			return t
		}
		s = t
	}
}

// winFile is the name of the file a segment's stream belongs to: winName
// of the text before its first ':' ("secret.txt:s:$DATA" is "secret.txt").
func winFile(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return winName(s)
}

// mayHaveStream reports whether a segment of path may hold ':' once
// decoded and NFKC'd: it has ':', '%' or a non-ASCII byte.
func mayHaveStream(path string) bool {
	for i := 0; i < len(path); i++ {
		if c := path[i]; c == ':' || c == '%' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// isAttrType reports whether s is an NTFS attribute type name: '$' and
// letters, digits or '_' ("$DATA", "$data", "$I30", "$INDEX_ALLOCATION").
func isAttrType(s string) bool {
	if len(s) < 2 || s[0] != '$' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isShortName reports whether name has the shape of an 8.3 short name
// Windows generates for a long one ("SECRET~1.TXT", "PROGRA~1",
// "SE12AB~1.TXT"): a base of at most 8 characters without a dot, ending in
// '~' and digits after at least one character, and an extension of at most
// 3 characters.
func isShortName(name string) bool {
	base, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		base, ext = name[:i], name[i+1:]
	}
	if utf8.RuneCountInString(base) > 8 || utf8.RuneCountInString(ext) > 3 || strings.Contains(base, ".") {
		return false
	}
	t := strings.LastIndexByte(base, '~')
	return t >= 1 && allDigits(base[t+1:])
}

// isDeviceName reports whether Windows opens name (a winName) as a device
// in any directory: CON, PRN, AUX, NUL, COM0-9, LPT0-9 (superscript digits
// are digits after NFKC), CONIN$ or CONOUT$, in any case, with any
// extension and spaces before it ("nul.txt", "CON .log").
func isDeviceName(name string) bool {
	if len(name) < 3 || !strings.ContainsRune("CcPpAaNnLl", rune(name[0])) {
		return false
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimRight(name, " ")
	switch len(name) {
	case 3:
		return strings.EqualFold(name, "CON") || strings.EqualFold(name, "PRN") ||
			strings.EqualFold(name, "AUX") || strings.EqualFold(name, "NUL")
	case 4:
		return (strings.EqualFold(name[:3], "COM") || strings.EqualFold(name[:3], "LPT")) && name[3] >= '0' && name[3] <= '9'
	case 6, 7:
		return strings.EqualFold(name, "CONIN$") || strings.EqualFold(name, "CONOUT$")
	}
	return false
}

// isDrive reports whether s is a drive letter and ':' ("C:", "d:").
func isDrive(s string) bool {
	return len(s) == 2 && s[1] == ':' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// winPathProblem says why path (of a URI of scheme "file", a web scheme,
// or "*" in a pattern; not yet merged) has no safe normal form under
// Windows names, or returns "". In a file path:
//
//   - a leading "//": UNC (\\host\share) on Windows, local on POSIX;
//   - ':' or '|', raw, encoded or after NFKC, other than a raw drive as
//     the first segment ("/C:/…"): a stream, or a drive a converter finds
//     (Python's url2pathname reads "/data/C:/x" and "/data/C|/x" as C:\x;
//     "/C%3A/x" is a drive to Node's fileURLToPath, a name to Python);
//   - a device name (isDeviceName).
//
// In file and web paths: a segment Windows resolves to nothing (only dots,
// spaces and default-ignorable characters, or only a stream type: "...",
// "%20", ". .", "::$DATA"); an 8.3 short name (isShortName). A pattern's
// segments must also be written as Windows resolves them ("secret.txt",
// not "secret.txt." or "secret.txt::$DATA"), since deny and ask rules
// compare requests in that form too.
func winPathProblem(scheme, path string, pattern bool) string {
	file := scheme == "file"
	if file && strings.HasPrefix(path, "//") {
		return "a file path that starts with \"//\" is a UNC path (\\\\host\\share) on Windows and a local one elsewhere"
	}
	for i, start := 0, 0; start < len(path); i++ {
		end := start
		// One pass over the segment decides which checks it needs.
		var special, colon, tilde bool
		for ; end < len(path) && path[end] != '/'; end++ {
			switch c := path[end]; {
			case c == '%' || c >= utf8.RuneSelf:
				special = true
			case c == ':' || c == '|':
				colon = true
			case c == '~':
				tilde = true
			}
		}
		seg := path[start:end]
		start = end + 1
		if seg == "" {
			continue
		}
		text, name := seg, seg
		if special {
			text = segmentText(seg)
			colon = colon || strings.IndexByte(text, ':') >= 0 || strings.IndexByte(text, '|') >= 0
			tilde = tilde || strings.IndexByte(text, '~') >= 0
		}
		if file && colon && !(i == 1 && isDrive(seg)) {
			return "':' or '|' in a file path, other than a drive (file:///C:/…), names an NTFS stream or a drive on Windows"
		}
		if last := text[len(text)-1]; special || colon || last == '.' || last == ' ' {
			name = winName(text)
		}
		switch {
		case name == "":
			return "a path segment of only dots, spaces or a stream type (\"...\", \"%20\", \"::$DATA\") resolves to its directory on Windows"
		case pattern && name != text:
			return "Windows resolves the path segment " + strconv.Quote(text) + " as " + strconv.Quote(name) + ": write that"
		case tilde && isShortName(winFile(text)):
			return "a path segment shaped like an 8.3 short name (\"SECRET~1.TXT\") names another file on Windows"
		case file && isDeviceName(name):
			return "a file path segment named like a Windows device (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$, CONOUT$) opens the device"
		}
	}
	return ""
}

// winPath returns path (decoded and NFKC'd per segment, see segmentText)
// with each segment as Windows resolves it (winName), or, with ofFile set,
// as the file its stream belongs to (winFile), a drive as the first
// segment kept, and a trailing '/' dropped (a server opens "secret.txt/"
// or lists "keys/" as "keys"): the forms deny and ask rules also compare a
// file or web path in.
func winPath(path string, ofFile bool) string {
	seg := func(i int, s string) string {
		if i == 1 && isDrive(s) {
			return s
		}
		if ofFile {
			return winFile(segmentText(s))
		}
		return winName(segmentText(s))
	}
	// Most paths are their own Windows form: find out without allocating.
	same := !(strings.HasSuffix(path, "/") && strings.Count(path, "/") > 1)
	for i, rest := 0, path; same && rest != ""; i++ {
		s := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			s, rest = rest[:j], rest[j+1:]
		} else {
			rest = ""
		}
		same = seg(i, s) == s
	}
	if same {
		return path
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = seg(i, s)
	}
	if n := len(segs); n > 2 && segs[n-1] == "" {
		segs = segs[:n-1]
	}
	return strings.Join(segs, "/")
}

// ignorable reports whether loose drops r: a format character or another
// default-ignorable code point (soft hyphen, zero-width space, joiners,
// variation selectors, BOM).
func ignorable(r rune) bool {
	return r >= utf8.RuneSelf && (unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r))
}
