// Package policy compiles a YAML authorization policy for MCP (Model Context
// Protocol, revisions 2025-06-18, 2025-11-25 and 2026-07-28) traffic once,
// and evaluates it for each operation: a JSON-RPC 2.0 request or
// notification, a client's JSON-RPC response, or a bodiless HTTP GET or
// DELETE. It is pure: no I/O, no logging, no clock. A compiled *Policy is
// immutable and safe for concurrent use.
//
// # Format
//
//	default: deny            # deny | ask; absent means deny; allow is an error (fail closed)
//	refusal: explain         # explain | conceal (see Refusals); absent means explain
//	deny:                    # tool, resource and prompt rules
//	  - "*/delete_*"         # a string is short for {match: ...}
//	ask:
//	  - id: big-refunds      # optional; otherwise "<list>[<index>]", e.g. "ask[0]"
//	    match: payments/issue_refund
//	    when: args.amountMinor > 2500   # optional CEL condition
//	    scopes: [refunds:write]         # optional: OAuth scopes the token needs (allow, ask)
//	allow:
//	  - match: "*/read_file"
//	    when: inside(args.path, "/data")
//	  - "resource:payments/file:///reports/*"
//	  - "prompt:payments/summarize"
//	methods:                 # every other operation; ids "methods.allow[0]" etc.
//	  allow:
//	    - initialize
//	    - GET                # a bodiless HTTP GET (SSE stream)
//	    - DELETE             # a bodiless HTTP DELETE (session end)
//	    - response           # a client's JSON-RPC response
//	    - method: logging/setLevel
//	      id: log-level
//	      when: claims.role == "admin"
//	  deny: []
//	  ask: []
//	scopes: [mcp:tools]    # optional: OAuth scopes the rules rely on (claims.scope)
//
// scopes never decides anything: it is advertised as scopes_supported in
// the RFC 9728 protected resource metadata, so a client asks its
// authorization server for them. Each is an RFC 6749 section 3.3 scope
// token, listed once.
//
// A rule is a string or a mapping with the keys id, match (deny, ask,
// allow) or method (methods.*), when, shadow (bool), scopes (allow and ask
// rules), refusal (tool, prompt and resource rules) and, in methods.* only,
// custom (bool). An empty file (no document, null or {}), unknown
// keys, duplicate keys, duplicate rule ids, YAML aliases and more than one
// YAML document are compile errors. Compile reports every problem as
// `file:line:col: rule "name": message`, where name is the rule's id, else
// its place ("deny[0]", "methods.allow[2]").
//
// Scalars are read as YAML 1.2 typed values, never as raw text: shadow and
// custom take true, True, TRUE, false, False or FALSE (yes, no, on and off
// are strings in YAML 1.2 and are refused there); id, match, method, when
// and default must be strings, so `match: 404` or `match: true` is an error
// that says to quote it, and `- no` is the tool named "no".
//
// A method pattern must match a method some MCP revision defines (either
// direction, the table in internal/mcpmethod), so a typo such as "tool/list" is an error;
// a rule for a method of your own says so with `custom: true`.
//
// # Patterns
//
// A match pattern is one of
//
//	server/tool   or  tool              a tools/call (tool alone: any server)
//	resource:server/URI-pattern         a resources/read, resources/subscribe or resources/unsubscribe,
//	                                    and each URI of a subscriptions/listen
//	prompt:server/name or prompt:name   a prompts/get
//
// Tool rules never match resources or prompts, nor the other way round. The
// server and the name are matched separately, never as one joined string,
// and a tool or prompt pattern with more than one '/' is an error. '*' is
// the only wildcard ('.', '?', '[' are literal) and matches any run of
// characters. In allow rules '*' never matches '/'. In deny and ask rules
// '*' in a server, tool or prompt name also matches a '/' in the request's
// name, so a tool called "delete_x/y" cannot slip past "*/delete_*".
//
// # Resource URIs
//
// A request's URI is parsed and normalized with ParseURI before any rule
// (scheme and host case, percent-encoding of unreserved characters, default
// ports, trailing-dot hosts, numeric IPv4 forms, IPv6 and IPv4-mapped
// literals, "file:/p" and "file://localhost/p", empty path segments of
// file, http, https, ws and wss). A URI it refuses (no scheme, userinfo,
// dot segments, encoded '/', '\', '.' or '%', control characters,
// characters NFKC turns into '/', '\', '.', '%', '?' or '#', hosts that are
// not ASCII names or IP literals, and more; see ParseURI) is denied with
// CauseUnsafeURI before looking at any rule. subscriptions/listen's URIs
// (Input.URIs) are each decided as a resources/subscribe.
//
// Windows names. A server on Windows, or one mapping URLs onto Windows
// files, opens several spellings of a name as one file. In file, http,
// https, ws and wss paths deny and ask rules compare each request segment
// as written and as Windows resolves it: trailing dots and spaces dropped
// (also encoded, after NFKC, and mixed: "secret.txt.", "secret.txt%20",
// "secret.txt. ." and "private./x" are caught by "…/secret.txt" and
// "…/private/**"), a trailing '/' dropped, and, in web paths, where ':'
// is common, an NTFS stream read as its file ("secret.txt::$DATA",
// "secret.txt:s:$DATA" and "secret.txt:s" by "…/secret.txt"; a rule on
// "report.md:notes" also catches "report.md:notes:$DATA"). Case is folded
// already. What no rule can see through is refused (CauseUnsafeURI): in
// file URIs ':' and '|' other than a drive ("file:///C:/x"; a stream, or a
// drive for Python's url2pathname: "file:///data/C:/x" is C:\x), a path
// that starts with "//" (UNC on Windows), device names ("CON", "nul.txt",
// "COM1"); in file and web paths segments Windows resolves to nothing
// ("...", "%20", "::$DATA") and 8.3 short names ("SECRET~1.TXT"). allow
// rules match as written, so an alias never widens them: "file:///pub/*.txt"
// does not allow "file:///pub/a.txt." (default deny). Patterns must be
// written as Windows resolves them: "file:///data/secret.txt." is a compile
// error. Other schemes' paths (s3, urn, …) are compared as written.
//
// The URI of a resource pattern is normalized the same way at compile time
// (a pattern without a normal form is an error) and matched component by
// component, never as one string:
//
//	**                                          every URI
//	scheme ":" [ "//" host [ ":" port ] ] path [ "?" query ] [ "#" fragment ]
//
//	scheme    a literal ("file", "https"), or "*" for any scheme
//	host      labels separated by '.'; '*' matches within one label, '**'
//	          any number of whole labels: "*.example.com" matches
//	          "a.example.com", not "a.b.example.com" nor "evil.test?.example.com";
//	          "**.example.com" matches both subdomains; no userinfo
//	port      absent: the scheme's default (or none); digits; "*": any port
//	path      '*' matches within one '/' segment, '**' across segments
//	query     '*' matches within one '&'-separated pair, '**' across
//	fragment  '*' and '**' match any run
//
// A '**' that is a whole segment (a host label, a query pair), a
// globstar, reads by the rule's list, loose for deny and ask, exact for
// allow. In deny and ask rules it matches zero or more whole segments, as
// bash globstar, gitignore, minimatch and doublestar read it:
// "file:///data/**/keys/**" matches "file:///data/keys/id_rsa",
// "file:///data/keys" and "file:///data/a/keys/b" (not
// "file:///data/monkeys/b"); "dir/**" covers dir itself;
// "https://**.example.com/**" covers example.com. In allow rules it
// matches one or more, never none: "file:///data/**" allows
// "file:///data/x" and "file:///data/", not "file:///data", and
// "file:///a/**/b" needs a segment between a and b, so a directory itself
// is allowed by a rule of its own. Consecutive globstars are one; a '**'
// inside a segment ("a**", "**.md") is a run of any characters, the
// separator included, in every list.
//
// A pattern without a query (or fragment) matches only URIs without one in
// allow rules, unless it ends in "**"; in deny and ask rules it matches any.
// So a query or fragment never matches a path pattern, and '*' never crosses
// a delimiter of its component. "scheme://**" and "scheme://**.example.com"
// also cover every path. Examples: "file:///srv/docs/*" matches
// "file:///srv/docs/a.md" and "file:///srv//docs/a.md", not
// "file:///srv/docs/sub/a.md"; "http://169.254.169.254/**" matches
// "http://2852039166:80/latest" and "http://[::ffff:a9fe:a9fe]/x".
//
// deny and ask rules match loosely: pattern literals and request names
// (server, tool, prompt, and a URI's path, query and fragment; hosts are
// compared lower-cased) are compared after NFKC, Unicode case
// folding, the case mappings of other languages ("ı" U+0131 and "İ"
// U+0130 are "i", as Java's equalsIgnoreCase and JavaScript's and
// Python's upper() treat them), removal of default-ignorable characters,
// and mapping '-', '.', '_', every dash (category Pd, e.g. U+2010 HYPHEN,
// U+2013 EN DASH) and minus sign (U+2212) to one character, each to one:
// runs are not collapsed nor ends trimmed. So "*/delete_*" catches
// "Delete-Repo", "DELETE_Repo", "Delete.Repo", "Delete‐Repo" and
// "ＤＥＬＥＴＥ.repo", "*/admin_*" catches "admın_reset" and "ADMİN_reset",
// and "delete-*" catches "delete_repo"; "*/wipe_disk" does not catch
// "wipe__disk". allow rules match exactly and case-sensitively:
// allow "read_*" does not allow "READ_FILE".
//
// A method pattern matches the JSON-RPC method exactly and case-sensitively
// in every list; '*' matches within one '/'-separated segment
// ("notifications/*"). GET, DELETE and response are reserved words that
// match only their operation, never a JSON-RPC method of that name. Method
// rules never decide tools/call, resources/read, resources/subscribe,
// resources/unsubscribe or prompts/get; naming one of them in a methods list
// is an error.
//
// # Decisions
//
// Any matching deny rule denies; otherwise any matching ask rule asks;
// otherwise any matching allow rule allows; otherwise the default decides.
// List order only chooses which rule id is reported: the first match in its
// list. Shadow rules (`shadow: true`) are evaluated on every request and
// reported in Result.Shadow but never decide. An Input that cannot be
// decided (nil, an unknown Op, OpRequest without a method, or a tools/call,
// resources/* or prompts/get without its name or URI) is denied with
// CauseInvalidInput, whatever the rules say.
//
// # Scopes and refusals
//
// `scopes` lists OAuth scopes (RFC 6749 section 3.3) a token must hold when
// the rule decides; Result.Scopes reports them and the caller compares them
// with the token (MCP authorization 2025-11-25, scope step-up: a token
// without them is refused with insufficient_scope, so the client can ask for
// more). A deny rule never admits, so scopes on it are an error.
//
// `refusal: conceal`, on a rule or the whole policy (a rule's own setting
// wins), asks the caller to answer a refused tools/call, prompts/get or
// resources/read as the MCP server answers an unknown tool, prompt or
// resource; the policy's (method rules take none) also asks it to answer a
// refused tasks/get, tasks/result, tasks/cancel or tasks/update
// (task_not_owned above all) as the server answers an unknown task.
// Result.Refusal reports it. Other operations are always explained.
//
// # Quotas
//
// `quotas` lists rules that bound how often a request may be made (quota.go):
//
//	quotas:
//	  - id: search-per-user        # optional; otherwise "quotas[<index>]"
//	    match: "*/search"          # a tool, resource or prompt pattern; or method: tools/list
//	    per: principal             # principal (default) | client | everyone
//	    limit: 10                  # requests per window, 1..1000000
//	    window: 1m                 # a Go duration from 1s to 744h
//	    burst: 10                  # optional bucket size, 1..1000000; default limit
//	    when: claims.tier != "gold"  # optional CEL condition
//	    on_store_error: deny       # deny (default) | allow
//
// Evaluate decides nothing by a quota: it reports in Result.Quotas those an
// operation is charged to, matched loosely as deny rules are (a failing
// `when` matches), after the deny rules and before the pins, ask and allow
// rules: an operation a deny rule (or a refusal before any rule) denies is
// charged to none. The caller keeps the token buckets and refuses an
// operation whose bucket is empty.
//
// # Conditions
//
// `when` is a CEL expression (https://cel.dev) over
//
//	args    map(string, dyn)  tools/call or prompts/get arguments (JSON: int, double, string, bool, null, list, map)
//	claims  map(string, dyn)  verified token claims (JSON numbers are doubles)
//	method  string            the JSON-RPC method ("" for GET, DELETE, response)
//	server  string            the MCP server id
//	tool    string            tools/call params.name
//	uri     string            the normal form of the resource URI
//	prompt  string            prompts/get params.name
//
// with the standard library (size, in, has, matches, startsWith, endsWith,
// contains, exists, all, map, filter, int, double, string, ...), the
// function inside(path, dir) bool: true iff path is absolute, and
// path.Clean(path) is path.Clean(dir) or lies below it, under POSIX path
// rules; a relative path or a '..' escape gives false. Percent signs are
// literal ("%2e%2e" is a name): a tool that URL-decodes its paths needs its
// own check. A NUL, a '\', a drive-letter prefix ("C:", "/C:") or a leading
// "//" in either argument is an error, which fails closed (a deny or ask
// rule matches, an allow rule does not), since a Windows server would
// resolve "/data/x\..\..\Windows" outside /data. And these cel-go
// extension libraries (cel.dev/cel-go/ext):
//
//	strings    s.lowerAscii(), s.split(","), s.indexOf("x"), s.replace("a", "b"), s.trim(), ["a","b"].join(","), "%s/%d".format([a, n])
//	lists      l.distinct(), l.flatten(), l.slice(0, 2), l.sort(), lists.range(n) (n <= 1000)
//	sets       sets.contains(claims.groups, ["admins"]), sets.intersects(a, b), sets.equivalent(a, b)
//	math       math.abs(x), math.greatest([..]), math.least([..]), math.ceil(x), math.isNaN(x)
//	encoders   base64.decode(s), base64.encode(b)
//	regex      regex.extract(s, re), regex.extractAll(s, re), regex.replace(s, re, r) (RE2: linear time)
//	optional   args.?limit.orValue(10), claims.?scope.hasValue()
//	bindings   cel.bind(d, args.email.split("@")[1], d == "example.com")
//	comprehensions  l.all(i, v, ...), m.exists(k, v, ...) (two variables)
//
// Numbers compare across int and double, so `args.amountMinor > 2500` works
// whether the JSON number decoded as int64 or float64. An expression whose
// type is known and is not bool is a compile error. Expressions are limited
// in size (4096 code points) and in evaluation cost (100000 cost units,
// about one per operation or element visited).
//
// In YAML, quote a `when` (or use a block scalar, `when: |`) when it starts
// with [ { ! & * ' " | > % @ or holds ": " or " #": `when: !has(args.x)` is a
// YAML tag, `when: "EUR" == args.currency` is a quoted string followed by
// junk, and `when: args.x == "a: b"` starts a mapping.
//
// At run time an expression that fails (a missing key, a wrong type, the
// cost limit) or yields a non-bool counts as matching in deny and ask rules
// and as not matching in allow rules: it fails closed.
package policy
