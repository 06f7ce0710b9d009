package mcpparse

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// Markers of the MCP 2026-07-28 header value encoding; lowercase and
// case-sensitive.
const (
	headerB64Prefix = "=?base64?"
	headerB64Suffix = "?="
)

// DecodeHeaderValue decodes an MCP 2026-07-28 header value (Mcp-Name,
// Mcp-Param-*): a value of the form `=?base64?<standard base64>?=` is
// base64-decoded (standard alphabet with padding, strict: no line breaks,
// no non-zero padding bits), and the result must be valid UTF-8; any other
// value is returned unchanged. Clients must encode plain values that look
// like the marker, so a value wearing the markers is always decoded. The
// error is a plain error and never quotes the value.
func DecodeHeaderValue(v string) (string, error) {
	if len(v) < len(headerB64Prefix)+len(headerB64Suffix) ||
		!strings.HasPrefix(v, headerB64Prefix) || !strings.HasSuffix(v, headerB64Suffix) {
		return v, nil
	}
	enc := v[len(headerB64Prefix) : len(v)-len(headerB64Suffix)]
	dec, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || strings.ContainsAny(enc, "\r\n") {
		return "", errors.New("mcpparse: header value: invalid base64 in =?base64?…?= form")
	}
	if !utf8.Valid(dec) {
		return "", errors.New("mcpparse: header value: decoded =?base64?…?= value is not valid UTF-8")
	}
	return string(dec), nil
}
