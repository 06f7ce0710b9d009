package policy

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxURILen bounds a resource URI in bytes before any decoding or folding;
// a longer URI is refused (CauseUnsafeURI).
const MaxURILen = 8192

// URI is a resource URI in normal form, split into its RFC 3986 components.
type URI struct {
	Scheme       string // lower case
	HasAuthority bool   // "//" follows the scheme
	Host         string // lower case; IPv4 in dotted decimal; IPv6 as "[…]" in RFC 5952 form; "" for file's local host
	Port         string // decimal without leading zeros; "" when absent or the scheme's default
	Path         string // never has empty segments for file, http, https, ws and wss
	HasQuery     bool
	Query        string // without '?'
	HasFragment  bool
	Fragment     string // without '#'
}

// String recomposes u: scheme ":" ["//" host [":" port]] path ["?" query]
// ["#" fragment].
func (u *URI) String() string {
	var b strings.Builder
	b.Grow(len(u.Scheme) + len(u.Host) + len(u.Port) + len(u.Path) + len(u.Query) + len(u.Fragment) + 8)
	b.WriteString(u.Scheme)
	b.WriteByte(':')
	if u.HasAuthority {
		b.WriteString("//")
		b.WriteString(u.Host)
		if u.Port != "" {
			b.WriteByte(':')
			b.WriteString(u.Port)
		}
	}
	b.WriteString(u.Path)
	if u.HasQuery {
		b.WriteByte('?')
		b.WriteString(u.Query)
	}
	if u.HasFragment {
		b.WriteByte('#')
		b.WriteString(u.Fragment)
	}
	return b.String()
}

// NormalizeURI returns the normal form of uri (see ParseURI), or ok=false
// for a URI that must be denied rather than matched. The normal form of a
// normal form is itself.
func NormalizeURI(uri string) (normal string, ok bool) {
	u, ok := ParseURI(uri)
	if !ok {
		return "", false
	}
	return u.String(), true
}

// ParseURI parses an absolute URI (RFC 3986 section 4.3; IRI text kept) and
// normalizes it so that spellings a server resolves to one resource have one
// form:
//
//   - everywhere: percent-encoded unreserved characters (ALPHA, DIGIT, '-',
//     '_', '~') decoded and other escapes' hex upper-cased (RFC 3986 section
//     6.2.2); scheme and host lower-cased;
//   - host: one trailing '.' removed; a host whose last label is a number
//     (decimal, octal "0…" or hex "0x…") read as IPv4 the way WHATWG URL and
//     inet_aton do ("2130706433", "0x7f.1", "0177.0.0.1", "127.1" are all
//     127.0.0.1); an IPv6 literal in RFC 5952 form, an IPv4-mapped one
//     ("[::ffff:a.b.c.d]") as its IPv4 address;
//   - port: leading zeros removed; removed when empty or the scheme's
//     default (http and ws 80, https and wss 443, ftp 21);
//   - file: "file:/p" and "file://localhost/p" are "file:///p"; empty path
//     segments merged ("file:///etc//passwd" is "file:///etc/passwd");
//   - http, https, ws, wss: empty path segments merged, an empty path is "/".
//
// It refuses (ok=false) what it cannot normalize safely: longer than
// MaxURILen; invalid UTF-8, or escapes that do not decode to UTF-8 (the
// overlong "%C0%AE"); invalid percent-encoding; no scheme (a relative
// reference); a control character (C0, DEL, C1), raw or encoded; a '\', or
// an encoded '/', '\', '.' or '%'; a character whose NFKC form holds '/',
// '\', '.', '%', '?' or '#' (U+FF0F fullwidth solidus, U+2025 "‥"), raw or
// encoded, since a server that normalizes would see other delimiters; a "."
// or ".." segment anywhere (segments split at '/', '?' and '#'); userinfo;
// a host that is not ASCII letters, digits, '-', '.', '_' and '~' or an IP
// literal, has an empty label, or reads as an IPv4 address out of range; a
// zone or IPvFuture literal; a port that is not a number up to 65535; no
// host for http, https, ws and wss, a port for file, a rootless file path;
// empty path segments in other schemes; and Windows aliases deny rules
// cannot see through (winPathProblem): in file URIs a path that starts with
// "//" (UNC on Windows), ':' or '|' other than a drive ("file:///C:/x"), a
// device name ("CON", "nul.txt"), an authority ending in ':'
// ("file://C:/x"); in file, http, https, ws and wss paths a segment Windows
// resolves to nothing ("...", "%20", "::$DATA") or an 8.3 short name
// ("SECRET~1.TXT"). Trailing dots and spaces and, outside file, NTFS
// streams are kept: deny and ask rules compare them as Windows resolves
// them.
func ParseURI(uri string) (URI, bool) {
	out, ok := normalizeEscapes(uri)
	if !ok {
		return URI{}, false
	}
	u, ok := splitURI(out)
	if !ok || normalizeURIParts(&u, false) != "" {
		return URI{}, false
	}
	return u, true
}

// uriProblem says why ParseURI refuses uri where the reason is a Windows
// name (winPathProblem's message), "" otherwise; for Explain.
func uriProblem(uri string) string {
	out, ok := normalizeEscapes(uri)
	if !ok {
		return ""
	}
	u, ok := splitURI(out)
	if !ok {
		return ""
	}
	if p := normalizeURIParts(&u, false); p != noNormalForm {
		return p
	}
	return ""
}

// normalizeEscapes checks uri's characters and escapes and returns it with
// unreserved escapes decoded and the others' hex upper-cased.
func normalizeEscapes(uri string) (string, bool) {
	if len(uri) > MaxURILen || !utf8.ValidString(uri) {
		return "", false
	}
	if !safeRunes(uri) {
		return "", false
	}
	var b []byte // nil until the output differs from uri
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		if c != '%' {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if i+2 >= len(uri) || !isHex(uri[i+1]) || !isHex(uri[i+2]) {
			return "", false
		}
		v := unhex(uri[i+1])<<4 | unhex(uri[i+2])
		switch {
		case v < 0x20 || v == 0x7f || v == '/' || v == '\\' || v == '.' || v == '%':
			return "", false
		case isUnreserved(v):
			if b == nil {
				b = append(make([]byte, 0, len(uri)), uri[:i]...)
			}
			b = append(b, v)
		default:
			esc := [3]byte{'%', upperHex[v>>4], upperHex[v&0xf]}
			if b == nil && uri[i:i+3] != string(esc[:]) {
				b = append(make([]byte, 0, len(uri)), uri[:i]...)
			}
			if b != nil {
				b = append(b, esc[:]...)
			}
		}
		i += 2
	}
	out := uri
	if b != nil {
		out = string(b)
	}
	// Escaped octets must decode to UTF-8 text whose characters pass the
	// same checks as raw ones.
	if strings.IndexByte(out, '%') >= 0 {
		d, ok := percentDecode(out)
		if !ok || !safeRunes(d) {
			return "", false
		}
	}
	return out, true
}

// safeRunes reports whether s has no control character, no '\' and no
// character whose NFKC form holds a delimiter ('/', '\', '.', '%', '?',
// '#'): checks made on s hold after a server applies NFKC.
func safeRunes(s string) bool {
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\\':
			return false
		case r >= utf8.RuneSelf:
			var buf [utf8.UTFMax]byte
			rs := buf[:utf8.EncodeRune(buf[:], r)]
			if norm.NFKC.IsNormal(rs) {
				continue
			}
			if strings.ContainsAny(string(norm.NFKC.Bytes(rs)), `/\.%?#`) {
				return false
			}
		}
	}
	return true
}

// splitURI splits s (escapes already normalized) into components without
// normalizing them; the host still holds its port.
func splitURI(s string) (URI, bool) {
	var u URI
	i := strings.IndexByte(s, ':')
	if i <= 0 || !isScheme(s[:i]) {
		return URI{}, false
	}
	u.Scheme, s = strings.ToLower(s[:i]), s[i+1:]
	if j := strings.IndexByte(s, '#'); j >= 0 {
		u.HasFragment, u.Fragment, s = true, s[j+1:], s[:j]
	}
	if j := strings.IndexByte(s, '?'); j >= 0 {
		u.HasQuery, u.Query, s = true, s[j+1:], s[:j]
	}
	if strings.HasPrefix(s, "//") {
		s = s[2:]
		j := strings.IndexByte(s, '/')
		if j < 0 {
			j = len(s)
		}
		u.HasAuthority, u.Host, s = true, s[:j], s[j:]
	}
	u.Path = s
	return u, true
}

// defaultPorts are the ports a scheme implies when none is given.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// webScheme reports whether scheme names a URL that must have a host and
// whose empty path segments servers merge.
func webScheme(scheme string) bool {
	return scheme == "http" || scheme == "https" || scheme == "ws" || scheme == "wss"
}

// noNormalForm is normalizeURIParts' problem for everything but Windows
// names.
const noNormalForm = "no normal form"

// normalizeURIParts normalizes the authority and path of u in place and
// returns "", or the problem that leaves u without a normal form
// (noNormalForm, or winPathProblem's message). In a pattern, '*' may stand
// in the host, the port and the path.
func normalizeURIParts(u *URI, pattern bool) string {
	if u.HasAuthority {
		if u.Scheme == "file" && strings.HasSuffix(u.Host, ":") {
			return noNormalForm // "file://C:/x": a drive to WHATWG URL, a host here
		}
		host, port, ok := splitHostPort(u.Host)
		if !ok {
			return noNormalForm
		}
		if host, ok = normalizeHost(host, pattern); !ok {
			return noNormalForm
		}
		if port, ok = normalizePort(port, pattern); !ok {
			return noNormalForm
		}
		if port == defaultPorts[u.Scheme] {
			port = ""
		}
		u.Host, u.Port = host, port
	}
	if hasDotSegment(u.Path) || hasDotSegment(u.Query) || hasDotSegment(u.Fragment) {
		return noNormalForm
	}
	switch {
	case u.Scheme == "file":
		if !u.HasAuthority {
			if !strings.HasPrefix(u.Path, "/") {
				return noNormalForm // rootless: relative to what?
			}
			u.HasAuthority = true
		}
		if u.Port != "" {
			return noNormalForm
		}
		if u.Host == "localhost" {
			u.Host = ""
		}
		if p := winPathProblem(u.Scheme, u.Path, pattern); p != "" {
			return p
		}
		u.Path = mergeSlashes(u.Path)
		if u.Path == "" {
			u.Path = "/"
		}
	case webScheme(u.Scheme):
		if !u.HasAuthority || u.Host == "" {
			return noNormalForm
		}
		if p := winPathProblem(u.Scheme, u.Path, pattern); p != "" {
			return p
		}
		u.Path = mergeSlashes(u.Path)
		if u.Path == "" {
			u.Path = "/"
		}
	case u.Scheme == "*":
		if strings.Contains(u.Path, "//") {
			return noNormalForm
		}
		if p := winPathProblem(u.Scheme, u.Path, pattern); p != "" {
			return p
		}
	default:
		if strings.Contains(u.Path, "//") {
			return noNormalForm
		}
	}
	return ""
}

// splitHostPort splits an authority (no userinfo allowed) into host and
// port ("" when absent).
func splitHostPort(a string) (host, port string, ok bool) {
	if strings.IndexByte(a, '@') >= 0 {
		return "", "", false
	}
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := a[:end+1], a[end+1:]
		if rest == "" {
			return host, "", true
		}
		if rest[0] != ':' {
			return "", "", false
		}
		return host, rest[1:], true
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		return a[:i], a[i+1:], true
	}
	return a, "", true
}

// normalizeHost lower-cases host and reads IP literals and numeric IPv4
// forms; see ParseURI. In a pattern a host with '*' is only checked.
func normalizeHost(host string, pattern bool) (string, bool) {
	if host == "" {
		return "", true
	}
	if host[0] == '[' {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
		if a.Is4In6() {
			return a.Unmap().String(), true
		}
		return "[" + a.String() + "]", true
	}
	host = strings.ToLower(host)
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || (pattern && c == '*')) {
			return "", false
		}
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || host[0] == '.' || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return "", false
	}
	if pattern && strings.IndexByte(host, '*') >= 0 {
		return host, true
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if !endsInNumber(last) {
		return host, true
	}
	ip, ok := parseIPv4(host)
	if !ok {
		return "", false
	}
	return ip, true
}

// endsInNumber reports whether a host's last label makes WHATWG URL read
// the host as IPv4: all decimal digits, or "0x" and hex digits.
func endsInNumber(label string) bool {
	if label == "" {
		return false
	}
	if allDigits(label) {
		return true
	}
	if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
		for i := 2; i < len(label); i++ {
			if !isHex(label[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// parseIPv4 is WHATWG URL's IPv4 parser: one to four parts, each decimal,
// octal (leading 0) or hex (0x), the last filling the remaining bytes.
func parseIPv4(host string) (string, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return "", false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
	}
	lastBits := uint(8 * (5 - len(nums)))
	if nums[len(nums)-1] >= 1<<lastBits {
		return "", false
	}
	v := nums[len(nums)-1]
	for i, n := range nums[:len(nums)-1] {
		v |= n << (8 * uint(3-i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String(), true
}

func parseIPv4Number(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true // WHATWG: "0x" is zero
		}
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	if len(p) > 32 {
		return 0, false
	}
	n, err := strconv.ParseUint(p, base, 64)
	return n, err == nil
}

// normalizePort checks a port and removes its leading zeros; "*" stands in
// patterns.
func normalizePort(port string, pattern bool) (string, bool) {
	if port == "" || (pattern && port == "*") {
		return port, true
	}
	if !allDigits(port) || len(port) > 16 {
		return "", false
	}
	n, err := strconv.ParseUint(port, 10, 32)
	if err != nil || n > 65535 {
		return "", false
	}
	return strconv.FormatUint(n, 10), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// mergeSlashes replaces every run of '/' in p with one.
func mergeSlashes(p string) string {
	if !strings.Contains(p, "//") {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b = append(b, p[i])
	}
	return string(b)
}

// isScheme reports whether s is an RFC 3986 scheme:
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// hasDotSegment reports whether s has a "." or ".." segment between '/',
// '?' and '#' delimiters. Escaped dots and characters whose NFKC form is a
// dot are refused before, by normalizeEscapes.
func hasDotSegment(s string) bool {
	for s != "" {
		i := strings.IndexAny(s, "/?#")
		seg := s
		if i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if isDots(seg) {
			return true
		}
	}
	return false
}

func isDots(seg string) bool { return seg == "." || seg == ".." }

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '~' // '.' is unreserved too, but %2E is refused
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

const upperHex = "0123456789ABCDEF"
