package extproc

// Independent models of what the three MCP client families read from an
// HTTP answer, written from their sources (not from the processor's code),
// as oracles for the seam's tests: TypeScript (@modelcontextprotocol/sdk
// streamableHttp.ts: response.ok and not 202, mediaTypeEssence, fetch's
// json(), TextDecoderStream + eventsource-parser), Go (go-sdk
// mcp/streamable.go: every 2xx of a call, mime.ParseMediaType, its SSE
// scanner), Python (python-sdk streamable_http.py: below 400 and not 202,
// startswith on the lower-cased Content-Type, httpx-sse before 0.4.2 with
// str.splitlines). Each returns the JSON-RPC messages the client delivers.

import (
	"bytes"
	"encoding/json"
	"mime"
	"strings"
	"unicode/utf8"
)

// answer is what reached the client.
type answer struct {
	get    bool // the request was a GET
	status int
	ctypes []string // every Content-Type entry
	body   string
}

type reader func(a answer) []map[string]any

var clientReaders = map[string]reader{"ts": readTS, "go": readGo, "py": readPy}

func jsonMessages(b []byte) []map[string]any {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	var out []map[string]any
	switch v := v.(type) {
	case map[string]any:
		out = append(out, v)
	case []any:
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func readTS(a answer) []map[string]any {
	// fetch's null body statuses (101, 103, 204, 205, 304): body is null.
	if a.status < 200 || a.status > 299 || a.status == 202 || a.status == 204 || a.status == 205 {
		return nil
	}
	body := []byte(a.body)
	if a.get {
		return sseTS(body)
	}
	ct := strings.Join(a.ctypes, ", ")
	ess := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	switch ess {
	case "application/json":
		return jsonMessages(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")))
	case "text/event-stream":
		return sseTS(body)
	}
	return nil
}

// sseTS: TextDecoderStream (lossy UTF-8, a byte BOM stripped), then
// eventsource-parser (a leading "\xEF\xBB\xBF" as characters stripped;
// lines end at CR, LF, CRLF; one leading space of a value dropped; an event
// with data dispatched at a blank line; none at the end of the stream).
func sseTS(b []byte) []map[string]any {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.TrimPrefix(s, "\u00EF\u00BB\u00BF")
	var out []map[string]any
	var data []string
	name := ""
	lines := splitCRLF(s)
	for i, line := range lines {
		if i == len(lines)-1 && !strings.HasSuffix(s, "\n") && !strings.HasSuffix(s, "\r") {
			break // an unterminated last line is never processed
		}
		if line == "" {
			if len(data) > 0 && (name == "" || name == "message") {
				out = append(out, jsonMessages([]byte(strings.Join(data, "\n")))...)
			}
			data, name = nil, ""
			continue
		}
		f, v := field(line, true)
		switch f {
		case "data":
			data = append(data, v)
		case "event":
			name = v
		}
	}
	return out
}

func splitCRLF(s string) []string {
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

func field(line string, oneSpace bool) (string, string) {
	f, v, ok := strings.Cut(line, ":")
	if !ok {
		return line, ""
	}
	if oneSpace {
		return f, strings.TrimPrefix(v, " ")
	}
	return f, strings.TrimSpace(v)
}

func readGo(a answer) []map[string]any {
	// net/http's bodyAllowedForStatus: no body on 1xx, 204, 304.
	if a.status < 200 || a.status > 299 || a.status == 204 {
		return nil
	}
	var first string
	if len(a.ctypes) > 0 {
		first = a.ctypes[0]
	}
	base, _, err := mime.ParseMediaType(first)
	if err != nil {
		return nil
	}
	switch {
	case base == "application/json" && !a.get:
		return jsonMessages([]byte(a.body))
	case base == "text/event-stream":
		return sseGo([]byte(a.body))
	}
	return nil
}

// sseGo: lines at LF with CR trimmed, no BOM handling, values TrimSpace'd,
// a line without ':' ends the stream, an event dispatched at a blank line
// and at the end of the stream.
func sseGo(b []byte) []map[string]any {
	var out []map[string]any
	var data []string
	name, any := "", false
	flush := func() {
		if any && (name == "" || name == "message") && len(data) > 0 {
			out = append(out, jsonMessages([]byte(strings.Join(data, "\n")))...)
		}
		data, name, any = nil, "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			flush()
			continue
		}
		f, v, ok := strings.Cut(line, ":")
		if !ok {
			return out
		}
		v = strings.TrimSpace(v)
		switch f {
		case "data":
			data, any = append(data, v), true
		case "event":
			name, any = v, true
		case "id":
			any = true
		}
	}
	flush()
	return out
}

func readPy(a answer) []map[string]any {
	// h11 (httpx): no body on 1xx, 204, 304.
	if a.status >= 400 || a.status == 202 || a.status < 200 || a.status == 204 || a.status == 304 {
		return nil
	}
	ct := strings.ToLower(strings.Join(a.ctypes, ", "))
	if a.get {
		if !strings.Contains(strings.SplitN(ct, ";", 2)[0], "text/event-stream") {
			return nil
		}
		return ssePy(a.body)
	}
	switch {
	case strings.HasPrefix(ct, "application/json"):
		return jsonMessages([]byte(a.body))
	case strings.HasPrefix(ct, "text/event-stream"):
		return ssePy(a.body)
	}
	return nil
}

// ssePy: UTF-8 with replacement (no BOM stripped), str.splitlines line ends
// (httpx-sse before 0.4.2), one leading space of a value dropped, an event
// dispatched at a blank line when anything was set; the MCP client reads
// events named "message" (the default).
func ssePy(body string) []map[string]any {
	s := strings.ToValidUTF8(body, "\uFFFD")
	var out []map[string]any
	var data []string
	name, set := "", false
	for _, line := range pySplitLines(s) {
		if line == "" {
			if set && (name == "" || name == "message") {
				out = append(out, jsonMessages([]byte(strings.Join(data, "\n")))...)
			}
			data, name, set = nil, "", false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		f, v := field(line, true)
		switch f {
		case "data":
			data, set = append(data, v), true
		case "event":
			name, set = v, true
		case "id", "retry":
			set = true
		}
	}
	return out
}

// pySplitLines is Python's str.splitlines(): line boundaries \n \r \r\n \v
// \f \x1c \x1d \x1e \x85 \u2028 \u2029, no trailing empty line.
func pySplitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, s[start:i])
			i += n
			start = i
			continue
		case '\r':
			lines = append(lines, s[start:i])
			i += n
			if i < len(s) && s[i] == '\n' {
				i++
			}
			start = i
			continue
		}
		i += n
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// listedNames returns every list item name (tools, prompts, resources,
// resourceTemplates, tasks: name, uri, uriTemplate, taskId) in msgs'
// results, by exact member names as the clients match them.
func listedNames(msgs []map[string]any) []string {
	var names []string
	for _, m := range msgs {
		r, ok := m["result"].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"tools", "prompts", "resources", "resourceTemplates", "tasks"} {
			items, _ := r[k].([]any)
			for _, it := range items {
				o, _ := it.(map[string]any)
				for _, key := range []string{"name", "uri", "uriTemplate", "taskId"} {
					if s, ok := o[key].(string); ok {
						names = append(names, s)
					}
				}
			}
		}
	}
	return names
}
