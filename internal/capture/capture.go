// Package capture reads the captured-request format of the MCP traffic corpus
// and of the test cases, and builds from a captured request the CheckRequest
// Envoy's ext_authz filter (transport_api_version V3) would send. It is a
// format for the command line and the tests, not part of the service.
package capture

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Request is one recorded HTTP request, in the shape of the lines of
// the MCP traffic corpus ({"http": {...}}) or of a test case ({"request":
// {...}}); a bare {"method", "path", "headers", ...} object is accepted too.
type Request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   string            `json:"query"`
	Headers map[string]string `json:"headers"` // lower-cased names; repeated headers joined with ", "
	Body    []byte            `json:"-"`       // from body_b64, body_hex or body_text, in that order
}

// limits bound the strict parse of a capture: a recorded body may be far
// larger than a JSON-RPC message.
var limits = mcpparse.Limits{MaxBytes: 256 << 20, MaxKeys: 1 << 20, MaxElements: 1 << 22, MaxStringLen: 256 << 20}

// Parse decodes one captured request. It must be strict JSON
// (mcpparse.Canonicalize): a duplicate member (two body_text, two
// headers of one name) or two header names that differ only in case would
// otherwise be decided on whichever encoding/json kept, so they are
// refused, as are invalid UTF-8 and trailing data. Errors name what is
// missing or malformed.
func Parse(b []byte) (*Request, error) {
	if _, err := mcpparse.Canonicalize(b, limits); err != nil {
		return nil, fmt.Errorf("captured request: not strict JSON: %w", err)
	}
	var outer struct {
		HTTP    json.RawMessage `json:"http"`
		Request json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(b, &outer); err != nil {
		return nil, fmt.Errorf("captured request: %w", err)
	}
	inner := b
	switch {
	case len(outer.HTTP) > 0:
		inner = outer.HTTP
	case len(outer.Request) > 0:
		inner = outer.Request
	}
	var raw struct {
		Request
		BodyText *string `json:"body_text"`
		BodyB64  *string `json:"body_b64"`
		BodyHex  *string `json:"body_hex"`
	}
	if err := json.Unmarshal(inner, &raw); err != nil {
		return nil, fmt.Errorf("captured request: %w", err)
	}
	c := raw.Request
	if c.Method == "" {
		return nil, errors.New("captured request: no method")
	}
	var err error
	switch {
	case raw.BodyB64 != nil:
		c.Body, err = base64.StdEncoding.DecodeString(*raw.BodyB64)
	case raw.BodyHex != nil:
		c.Body, err = hex.DecodeString(*raw.BodyHex)
	case raw.BodyText != nil:
		c.Body = []byte(*raw.BodyText)
	}
	if err != nil {
		return nil, fmt.Errorf("captured request body: %w", err)
	}
	lower := make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		lower[strings.ToLower(k)] = v
	}
	c.Headers = lower
	return &c, nil
}

// CheckRequest builds the CheckRequest Envoy's ext_authz filter sends for c:
// lower-cased headers plus the :method, :path and :authority pseudo-headers,
// and the body in raw_body (pack_as_bytes: true) or else in body.
func (c *Request) CheckRequest(packAsBytes bool) *authv3.CheckRequest {
	path := c.Path
	if c.Query != "" {
		path += "?" + c.Query
	}
	headers := map[string]string{":method": c.Method, ":path": path, ":authority": c.Headers["host"]}
	for k, v := range c.Headers {
		headers[k] = v
	}
	h := &authv3.AttributeContext_HttpRequest{
		Id:       "capture",
		Method:   c.Method,
		Path:     path,
		Host:     c.Headers["host"],
		Scheme:   "http",
		Protocol: "HTTP/1.1",
		Headers:  headers,
		Size:     int64(len(c.Body)),
	}
	if cl, ok := c.Headers["content-length"]; ok {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil {
			h.Size = n
		}
	}
	if packAsBytes {
		h.RawBody = c.Body
	} else {
		h.Body = string(c.Body)
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Source:      &authv3.AttributeContext_Peer{Address: socketAddress("127.0.0.1", 50000)},
		Destination: &authv3.AttributeContext_Peer{Address: socketAddress("127.0.0.1", 8080)},
		Request:     &authv3.AttributeContext_Request{Http: h},
	}}
}

func socketAddress(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}
