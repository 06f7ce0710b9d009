package extauthz

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// DenialStatus chooses the HTTP status of policy denials (deny and ask).
type DenialStatus int

const (
	// DenialStatusAuto answers a policy denial of a JSON-RPC request on
	// Streamable HTTP (a POST whose Accept includes text/event-stream) with
	// HTTP 200 and the JSON-RPC error response, as an MCP server that refuses
	// a call itself does: every SDK hands that error to the caller intact
	// and keeps the session. Everything else gets its HTTP error status.
	DenialStatusAuto DenialStatus = iota
	// DenialStatusHTTPError answers every denial with its HTTP error status
	// (403 for policy denials).
	DenialStatusHTTPError
)

// ParseDenialStatus parses the --denial-status values "auto" and "http-error".
func ParseDenialStatus(s string) (DenialStatus, error) {
	switch s {
	case "auto":
		return DenialStatusAuto, nil
	case "http-error":
		return DenialStatusHTTPError, nil
	}
	return 0, fmt.Errorf("denial status %q: want auto or http-error", s)
}

func (s DenialStatus) String() string {
	if s == DenialStatusHTTPError {
		return "http-error"
	}
	return "auto"
}

// Status returns the HTTP status of the answer to d, a request with headers
// h. Allowed: 200. Token denials: 401. Request faults: 400, 405, 413, 415.
// Unavailable: 503; internal: 500. Rate limited: 429. Policy denials
// (deny, ask) and rate limited: 200 under
// DenialStatusAuto when the request is a JSON-RPC request (it has an id and
// is not a batch or a response) on Streamable HTTP, else 403. The
// CheckResponse's gRPC status names the real decision either way.
func (rs *Responder) Status(d *decision.Decision, h decision.Headers) int {
	o := outcomeOf(d.Reason)
	if (o.class == classPolicy || o.class == classRateLimited) && rs.DenialStatus == DenialStatusAuto && streamableRequest(d, h) {
		return http.StatusOK
	}
	return o.http
}

// streamableRequest reports whether d decided a single JSON-RPC request
// (not a notification, response or batch) sent over Streamable HTTP: a POST
// whose Accept lists text/event-stream (MCP 2025-03-26 and later, "Sending
// Messages to the Server"). Legacy HTTP+SSE clients (2024-11-05) do not send
// it; they read responses from their GET stream only, so an HTTP 200 would
// leave them waiting.
func streamableRequest(d *decision.Decision, h decision.Headers) bool {
	if len(d.RPCID) == 0 || d.BatchIndex >= 0 || d.Method == "" || mcpmethod.Pseudo(d.Method) {
		return false
	}
	for _, v := range h["accept"] {
		for _, mr := range strings.Split(v, ",") {
			typ, params, _ := strings.Cut(mr, ";")
			if !strings.EqualFold(strings.TrimSpace(typ), "text/event-stream") {
				continue
			}
			if q, ok := qValue(params); ok && q == 0 {
				continue // "q=0": not acceptable (RFC 9110 section 12.4.2)
			}
			return true
		}
	}
	return false
}

// qValue returns the q parameter of a media range's parameters, if any.
func qValue(params string) (float64, bool) {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, true // an unreadable weight counts as "not acceptable"
		}
		return q, true
	}
	return 0, false
}
