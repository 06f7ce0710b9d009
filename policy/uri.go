package policy

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NormalizeURI returns the RFC 3986 section 6.2.2 normal form of uri: the
// scheme and the host lower-cased (ASCII only; userinfo and port kept),
// percent-encoding hex digits upper-cased, and percent-encoded unreserved
// characters (ALPHA, DIGIT, '-', '_', '~') decoded. It does no
// scheme-based normalization (default ports, empty paths) and does not
// resolve anything.
//
// It returns ok=false for a URI that must be denied rather than matched:
// not valid UTF-8; a control character (C0, DEL or C1), raw or
// percent-encoded (%00 included); a '\' or %5C; an encoded '/' (%2F); an
// encoded '.' (%2E) anywhere; a '.' or '..' segment anywhere in the URI
// (segments are split at '/', '?' and '#'; a segment whose NFKC form is '.'
// or '..', such as "．．", counts too, raw or percent-encoded); invalid
// percent-encoding, or percent-encoded octets of a segment that are not
// UTF-8 (such as the overlong "%C0%AE"). The empty string is ok.
//
// The normal form of a normal form is itself.
func NormalizeURI(uri string) (normal string, ok bool) {
	if !utf8.ValidString(uri) {
		return "", false
	}
	for _, r := range uri {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\\' {
			return "", false
		}
	}

	// Pass 1: check and normalize percent-encoding.
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
		case v < 0x20 || v == 0x7f || v == '/' || v == '\\' || v == '.':
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

	// Pass 2: lower-case the scheme and the host, found on the decoded
	// text (decoding can complete a scheme, as in "%41:"; it never
	// produces a delimiter). Escapes keep their upper-case hex.
	schemeEnd, hostStart, hostEnd := schemeAndHost(out)
	if hasUpper(out[:schemeEnd]) || hasUpperOutsideEscapes(out[hostStart:hostEnd]) {
		lb := []byte(out)
		lowerASCII(lb[:schemeEnd])
		lowerASCII(lb[hostStart:hostEnd])
		out = string(lb)
	}
	if hasDotSegment(out) {
		return "", false
	}
	return out, true
}

// schemeAndHost returns the end of the scheme (0 if uri has none) and the
// bounds of the host (empty if uri has no authority).
func schemeAndHost(uri string) (schemeEnd, hostStart, hostEnd int) {
	i := strings.IndexByte(uri, ':')
	if i <= 0 || !isScheme(uri[:i]) {
		return 0, 0, 0
	}
	schemeEnd = i
	rest := uri[i+1:]
	if !strings.HasPrefix(rest, "//") {
		return schemeEnd, 0, 0
	}
	start := i + 3
	end := len(uri)
	if j := strings.IndexAny(uri[start:], "/?#"); j >= 0 {
		end = start + j
	}
	if at := strings.LastIndexByte(uri[start:end], '@'); at >= 0 {
		start += at + 1
	}
	return schemeEnd, start, end
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
// '?' and '#' delimiters, or a segment that NFKC maps to one.
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
		// Judge the segment as a server would see it once decoded:
		// "%EF%BC%8E%EF%BC%8E" is "．．", whose NFKC form is "..". Escapes
		// that do not decode to UTF-8 (the overlong "%C0%AE") are refused.
		if strings.IndexByte(seg, '%') >= 0 {
			d, ok := percentDecode(seg)
			if !ok {
				return true
			}
			seg = d
			if isDots(seg) {
				return true
			}
		}
		if len(seg) <= 64 && !isASCII(seg) && isDots(norm.NFKC.String(seg)) {
			return true
		}
	}
	return false
}

func isDots(seg string) bool { return seg == "." || seg == ".." }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

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

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func hasUpperOutsideEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '%':
			i += 2
		case s[i] >= 'A' && s[i] <= 'Z':
			return true
		}
	}
	return false
}

// lowerASCII lower-cases b in place, leaving %XX escapes as they are.
func lowerASCII(b []byte) {
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '%':
			i += 2
		case b[i] >= 'A' && b[i] <= 'Z':
			b[i] += 'a' - 'A'
		}
	}
}
