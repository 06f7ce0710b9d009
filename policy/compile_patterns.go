package policy

import (
	"fmt"
	"strings"
)

// anyGlob matches everything; it is the server of a bare `tool` pattern.
var anyGlob = glob{toks: []tok{{kind: tokAny}}}

// compileMatch fills in ru from a tool, resource or prompt pattern and
// returns a problem message, or "".
func compileMatch(ru *rule, s string) string {
	if s == "" {
		return "empty match"
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		return "match has a control character"
	}
	// Deny and ask fold literals and let '*' cross '/' inside a name (fail
	// closed); allow compares exactly and '*' stops at '/'.
	nameOpts := globOptions{starCrossesSlash: ru.loose}
	if ru.loose {
		nameOpts.fold = loose
	}
	switch {
	case strings.HasPrefix(s, "resource:"):
		ru.kind = kindResource
		rest := s[len("resource:"):]
		i := strings.IndexByte(rest, '/')
		if i <= 0 || i == len(rest)-1 {
			return fmt.Sprintf("resource pattern %q: want resource:server/URI", s)
		}
		server, uri := rest[:i], rest[i+1:]
		if hasDoubleStar(server) {
			return "'**' is only allowed in the URI of a resource pattern"
		}
		pat, problem := compileURIPattern(uri, ru.loose)
		if problem != "" {
			return problem
		}
		ru.server = parseGlob(server, nameOpts)
		ru.uri = pat
		return ""
	case strings.HasPrefix(s, "prompt:"):
		ru.kind = kindPrompt
		return compileName(ru, s, s[len("prompt:"):], nameOpts)
	default:
		ru.kind = kindTool
		return compileName(ru, s, s, nameOpts)
	}
}

// compileName compiles a `server/name` or bare `name` pattern.
func compileName(ru *rule, full, s string, o globOptions) string {
	if hasDoubleStar(s) {
		return "'**' is only allowed in the URI of a resource pattern"
	}
	server, name, split := strings.Cut(s, "/")
	if !split {
		if s == "" {
			return fmt.Sprintf("%q: empty name", full)
		}
		ru.server, ru.name = anyGlob, parseGlob(s, o)
		return ""
	}
	if strings.Contains(name, "/") {
		return fmt.Sprintf("%q has more than one '/': want server/name or name", full)
	}
	if server == "" || name == "" {
		return fmt.Sprintf("%q: empty server or name", full)
	}
	ru.server, ru.name = parseGlob(server, o), parseGlob(name, o)
	ru.literal = ru.server.exact && ru.name.exact && !ru.loose
	return ""
}

// compileMethod fills in ru from a method pattern and returns a problem
// message, or "".
func compileMethod(ru *rule, s string) string {
	switch s {
	case "":
		return "empty method"
	case reservedGET:
		ru.kind = kindGET
		return ""
	case reservedDELETE:
		ru.kind = kindDELETE
		return ""
	case reservedResponse:
		ru.kind = kindResponse
		return ""
	case methodToolsCall:
		return "tools/call is decided by tool rules (deny/ask/allow match), not method rules"
	case methodResRead, methodResSub, methodResUnsub:
		return s + " is decided by resource rules (match: resource:server/URI), not method rules"
	case methodPromptsGet:
		return "prompts/get is decided by prompt rules (match: prompt:server/name), not method rules"
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		return "method has a control character"
	}
	if hasDoubleStar(s) {
		return "'**' is only allowed in the URI of a resource pattern"
	}
	ru.kind = kindMethod
	ru.name = parseGlob(s, globOptions{})
	return ""
}
