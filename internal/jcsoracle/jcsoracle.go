// Package jcsoracle is a second RFC 8785 (JSON Canonicalization Scheme)
// implementation, written to be obviously correct rather than fast, for
// tests that recompute golden digests. It shares no code with mcpparse's
// canonicalizer nor with gowebpki/jcs (whose number formatter mcpparse
// uses): encoding/json's tokenizer decodes, numbers are laid out here by
// ECMA-262's Number::toString (section 6.1.6.1.20) from strconv's shortest
// round-trip digits, and object members are sorted by UTF-16 code units
// (RFC 8785 section 3.2.3).
package jcsoracle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Transform returns the RFC 8785 serialization of the single JSON value in
// in. Errors: invalid JSON, invalid UTF-8, a duplicate member name, a
// number outside the IEEE 754 double range, or trailing data.
func Transform(in []byte) ([]byte, error) {
	if !utf8.Valid(in) {
		return nil, errors.New("jcsoracle: invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var out bytes.Buffer
	if err := value(dec, &out); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("jcsoracle: trailing data")
	}
	return out.Bytes(), nil
}

// Digest is "sha256:" and the lowercase hex SHA-256 of Transform(in).
func Digest(in []byte) (string, error) {
	c, err := Transform(in)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func value(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("jcsoracle: %w", err)
	}
	return valueFrom(tok, dec, out)
}

func valueFrom(tok json.Token, dec *json.Decoder, out *bytes.Buffer) error {
	switch v := tok.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case string:
		writeString(out, v)
	case json.Number:
		s, err := Number(string(v))
		if err != nil {
			return err
		}
		out.WriteString(s)
	case json.Delim:
		switch v {
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := value(dec, out); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return fmt.Errorf("jcsoracle: %w", err)
			}
			out.WriteByte(']')
		case '{':
			type member struct {
				key  string
				text []byte
			}
			var ms []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("jcsoracle: %w", err)
				}
				k := kt.(string)
				if seen[k] {
					return fmt.Errorf("jcsoracle: duplicate member %q", k)
				}
				seen[k] = true
				var b bytes.Buffer
				if err := value(dec, &b); err != nil {
					return err
				}
				ms = append(ms, member{k, b.Bytes()})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return fmt.Errorf("jcsoracle: %w", err)
			}
			sort.Slice(ms, func(i, j int) bool { return lessUTF16(ms[i].key, ms[j].key) })
			out.WriteByte('{')
			for i, m := range ms {
				if i > 0 {
					out.WriteByte(',')
				}
				writeString(out, m.key)
				out.WriteByte(':')
				out.Write(m.text)
			}
			out.WriteByte('}')
		default:
			return fmt.Errorf("jcsoracle: unexpected %v", v)
		}
	}
	return nil
}

// lessUTF16 orders strings by their UTF-16 code units (RFC 8785 section
// 3.2.3).
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// writeString writes s as RFC 8785 section 3.2.2.2 requires: '"' and '\'
// escaped, U+0000..U+001F as \b \t \n \f \r or \u00xx (lowercase hex),
// everything else as raw UTF-8.
func writeString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			out.WriteString(`\"`)
		case r == '\\':
			out.WriteString(`\\`)
		case r == '\b':
			out.WriteString(`\b`)
		case r == '\t':
			out.WriteString(`\t`)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\f':
			out.WriteString(`\f`)
		case r == '\r':
			out.WriteString(`\r`)
		case r < 0x20:
			fmt.Fprintf(out, `\u%04x`, r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
}

// Number returns the RFC 8785 form of a JSON number literal: the IEEE 754
// double nearest to it, printed as ECMA-262 Number::toString does. Errors:
// not a number, or outside the double range.
func Number(lit string) (string, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("jcsoracle: number %q has no IEEE 754 double form", lit)
	}
	return formatES(f), nil
}

// formatES is ECMA-262 Number::toString(x) for finite x: k shortest digits
// s with x = s × 10^(n−k); then by n: integer digits padded with zeros,
// a decimal point inside the digits, "0." and leading zeros, or exponent
// form with an explicit sign.
func formatES(x float64) string {
	if x == 0 {
		return "0" // and -0
	}
	if x < 0 {
		return "-" + formatES(-x)
	}
	e := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±xx, shortest round trip
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	k := len(digits)
	p, _ := strconv.Atoi(exp)
	n := p + 1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	abs := n - 1
	if abs < 0 {
		abs = -abs
	}
	if k == 1 {
		return digits + "e" + sign + strconv.Itoa(abs)
	}
	return digits[:1] + "." + digits[1:] + "e" + sign + strconv.Itoa(abs)
}
