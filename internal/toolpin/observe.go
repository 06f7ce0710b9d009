package toolpin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// Defaults of Observations' zero fields.
const (
	// DefaultTTL is how long one observation of a tool lasts: a tool not
	// listed again within it reads as never listed.
	DefaultTTL = 24 * time.Hour
	// DefaultBaselineTTL is how long a trust-on-first-use baseline lasts.
	DefaultBaselineTTL = 30 * 24 * time.Hour
	// DefaultBaselineWindow is how long after a server's first observed
	// list its tools still join the trust-on-first-use baseline (the pages
	// of that first list); a tool first seen later is new.
	DefaultBaselineWindow = time.Minute
)

// Observations keeps what tools/list answers showed, per MCP server and
// tool, in a state store shared by every replica (memory for one replica,
// Redis for several), under keys of the tool (a kind, then the
// length-prefixed scope and the tool, so no pair names another's key): the
// first fingerprint observed within TTL and the tool's declared hints
// (kindObserved); another fingerprint observed within TTL (kindDivergent:
// the tool is then divergent; kindMany marks a third); and, for pin_mode
// tofu, the first fingerprint ever observed within BaselineTTL
// (kindBaseline), marked new when the tool first appeared more than
// BaselineWindow after the server's first list ("tooldef-srv:" + server): a
// tool added or renamed later is not trusted on first use.
//
// The observation kinds are named by the fingerprint Version, so what a
// replica of an earlier version observed is neither read nor overwritten
// (it expires within TTL); the baseline's kind is every version's, so a
// baseline an earlier version stored is read, never matches (Superseded),
// and the tool stays changed until pinned again: the upgrade trusts
// nothing anew. Errors wrap state.ErrUnavailable: callers fail closed.
type Observations struct {
	// Recent, when set, remembers what this process recorded lately, so a
	// list repeated with the same definitions costs no store round trip
	// (every write Observe makes is a first-claim-wins claim: writing the
	// same fingerprint again changes nothing while the claims live).
	Recent         *Recent
	Store          state.Reader
	TTL            time.Duration    // zero: DefaultTTL
	BaselineTTL    time.Duration    // zero: DefaultBaselineTTL
	BaselineWindow time.Duration    // zero: DefaultBaselineWindow
	Now            func() time.Time // nil: time.Now
}

func toolKey(kind, scope, tool string) string {
	return kind + ":" + strconv.Itoa(len(scope)) + ":" + scope + ":" + tool
}

// The kinds of toolKey.
const (
	kindObserved  = Version           // the first fingerprint observed within TTL, and its hints
	kindDivergent = Version + "-div"  // a second one observed within TTL
	kindMany      = Version + "-many" // a third one
	kindBaseline  = "tooldef-base"    // tofu's baseline, of any version
)

// lookupKinds are the kinds of toolKey Lookup reads, in its order; the
// last only for a trust-on-first-use tool without pins.
var lookupKinds = [4]string{kindObserved, kindDivergent, kindMany, kindBaseline}

// lookup is Lookup's working memory, one allocation: the keys it reads and
// the definition it returns.
type lookup struct {
	k   [len(lookupKinds)]string
	def policy.ToolDefinition
}

// keys returns toolKey(kind, scope, tool) of the first three lookupKinds,
// and of the fourth with base, as substrings of one string built once (the
// same bytes as toolKey's: replicas share the keys) and kept in lookupKeys
// for the next request of the scope and tool. The scope is server, or with
// hx (a SessionHash) ScopeOfHash's server + " session:" + hx.
func (lk *lookup) keys(server string, hx *[32]byte, tool string, base bool) []string {
	n := 3
	if base {
		n = 4
	}
	id := keysID{server: server, tool: tool}
	if hx != nil {
		id.hex, id.scoped = *hx, true
	}
	if k, ok := lookupKeys.get(&id); ok {
		lk.k = k
		return lk.k[:n]
	}
	scopeLen := len(server)
	if id.scoped {
		scopeLen += len(sessionScope) + len(id.hex)
	}
	var lenBuf [20]byte
	scopeLenText := strconv.AppendInt(lenBuf[:0], int64(scopeLen), 10)
	size := 0
	for _, kind := range lookupKinds {
		size += len(kind) + 1 + len(scopeLenText) + 1 + scopeLen + 1 + len(tool)
	}
	var b strings.Builder
	b.Grow(size)
	for _, kind := range lookupKinds {
		b.WriteString(kind)
		b.WriteByte(':')
		b.Write(scopeLenText)
		b.WriteByte(':')
		b.WriteString(server)
		if id.scoped {
			b.WriteString(sessionScope)
			b.Write(id.hex[:])
		}
		b.WriteByte(':')
		b.WriteString(tool)
	}
	all, at := b.String(), 0
	for i, kind := range lookupKinds {
		end := at + len(kind) + 1 + len(scopeLenText) + 1 + scopeLen + 1 + len(tool)
		lk.k[i], at = all[at:end], end
	}
	lookupKeys.put(&id, lk.k, len(all))
	return lk.k[:n]
}

// keysID is what Lookup's keys are made of: the server, the session's
// hash when the scope is a session's (never the session id), the tool.
type keysID struct {
	server string
	scoped bool
	hex    [32]byte
	tool   string
}

// keysCache remembers the keys of the scopes and tools Lookup read lately,
// so a warm tools/call builds none. The keys are a function of keysID
// alone, which is the cache's key. It holds at most keysCacheMax entries
// and keysCacheMaxBytes of their strings, and forgets all of them when
// full; ids longer than keysIDMax are not kept. Safe for concurrent use.
type keysCache struct {
	mu    sync.RWMutex
	m     map[keysID][len(lookupKinds)]string
	bytes int
}

const (
	keysCacheMax      = 1 << 12
	keysCacheMaxBytes = 2 << 20
	keysIDMax         = 1 << 10
)

// lookupKeys is the process's keysCache: the keys are the same for every
// Observations (they name the store's records, not a store).
var lookupKeys keysCache

func (c *keysCache) get(id *keysID) ([len(lookupKinds)]string, bool) {
	c.mu.RLock()
	k, ok := c.m[*id]
	c.mu.RUnlock()
	return k, ok
}

// put keeps k, whose strings hold size bytes, for id. id's strings are
// copied: they may be substrings of a request body the cache must not keep
// alive.
func (c *keysCache) put(id *keysID, k [len(lookupKinds)]string, size int) {
	if len(id.server)+len(id.tool) > keysIDMax {
		return
	}
	key := *id
	key.server, key.tool = strings.Clone(id.server), strings.Clone(id.tool)
	size += len(key.server) + len(key.tool)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= keysCacheMax || c.bytes+size > keysCacheMaxBytes {
		c.m, c.bytes = make(map[keysID][len(lookupKinds)]string), 0
	}
	if _, ok := c.m[key]; !ok {
		c.bytes += size
	}
	c.m[key] = k
}

// Session is the MCP session a request belongs to, for pin_scope session:
// its Mcp-Session-Id header (Streamable HTTP), else the sessionId query
// parameter of its path (the 2024-11-05 HTTP+SSE transport posts to
// /messages?sessionId=… with the TypeScript SDK, ?sessionid=… with the Go
// SDK; one of them, once), else "" (no session: MCP 2026-07-28, stateless
// servers).
//
// With no session, revision (the MCP-Protocol-Version the request names)
// stands in as "rev:<revision>": a server may show other definitions under
// another revision, and sessionless clients of one revision see one
// catalog.
func Session(header, path, revision string) string {
	if header != "" {
		return header
	}
	if s := legacySession(path); s != "" {
		return s
	}
	if revision != "" {
		if s, ok := revSessions[revision]; ok {
			return s
		}
		return "rev:" + revision
	}
	return ""
}

// revSessions are Session's "rev:" names of the MCP revisions, built once
// rather than per request.
var revSessions, revSessionHex = func() (map[string]string, map[string][32]byte) {
	m, h := map[string]string{}, map[string][32]byte{}
	for _, r := range mcpmethod.Revisions {
		m[r] = "rev:" + r
		h[m[r]] = sessionHex(m[r])
	}
	return m, h
}()

// sessionHex is the hex of the first 16 bytes of session's SHA-256, as
// Scope writes it (revSessionHex holds it for the revisions' names).
func sessionHex(session string) (hx [32]byte) {
	sum := sha256.Sum256([]byte(session))
	hex.Encode(hx[:], sum[:16])
	return hx
}

// SessionHash names a session (Session's answer) as a Scope does and as
// the response seam knows it (Check's dynamic metadata member "session"):
// the hex of the first 16 bytes of its SHA-256, 32 lowercase hex digits;
// "" for no session. Never the session id itself.
func SessionHash(session string) string {
	if session == "" {
		return ""
	}
	hx, ok := revSessionHex[session]
	if !ok {
		hx = sessionHex(session)
	}
	return string(hx[:])
}

// ScopeOfHash is Scope of a session known by its SessionHash only (hash ""
// for none): ScopeOfHash(p, server, SessionHash(s)) == Scope(p, server, s).
// It does not check hash's form; LookupScope refuses a scope whose hash is
// not SessionHash's, so a malformed one decides no item as some other
// scope would.
func ScopeOfHash(p *policy.Policy, server, hash string) string {
	if p == nil || p.PinScope() != policy.PinScopeSession || hash == "" {
		return server
	}
	return server + sessionScope + hash
}

// scopeHash returns the session hash of scope, a Scope of server: nil for
// server itself; ok is false for any string Scope and ScopeOfHash do not
// build for server (server + " session:" + 32 lowercase hex).
func scopeHash(server, scope string) (hx *[32]byte, ok bool) {
	if scope == server {
		return nil, true
	}
	if !strings.HasPrefix(scope, server) || !strings.HasPrefix(scope[len(server):], sessionScope) {
		return nil, false
	}
	rest := scope[len(server)+len(sessionScope):]
	if len(rest) != len(hx) {
		return nil, false
	}
	hx = new([32]byte)
	for i := range len(rest) {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil, false
		}
		hx[i] = c
	}
	return hx, true
}

// legacySession is the sessionId / sessionid query parameter of path.
func legacySession(path string) string {
	_, q, ok := strings.Cut(path, "?")
	if !ok {
		return ""
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	// The TypeScript SDK's endpoint says sessionId, the Go SDK's sessionid.
	ids := append(v["sessionId"], v["sessionid"]...)
	if len(ids) != 1 {
		return ""
	}
	return "sse:" + ids[0]
}

// Scope is the name observations of server's tools are kept under for a
// request of session (its Mcp-Session-Id, "" for none) under p's
// pin_scope: the server id, or with pin_scope session and a session id the
// server id and the SHA-256 of the session id (never the id itself).
func Scope(p *policy.Policy, server, session string) string {
	if p == nil || p.PinScope() != policy.PinScopeSession || session == "" {
		return server
	}
	sum := sha256.Sum256([]byte(session))
	return server + sessionScope + hex.EncodeToString(sum[:16])
}

// sessionScope marks a Scope of one session.
const sessionScope = " session:"

func (o Observations) ttl() time.Duration {
	if o.TTL > 0 {
		return o.TTL
	}
	return DefaultTTL
}

func (o Observations) baselineTTL() time.Duration {
	if o.BaselineTTL > 0 {
		return o.BaselineTTL
	}
	return DefaultBaselineTTL
}

// Definition is one tool of a tools/list answer as Observe records it.
type Definition struct {
	Name        string
	Fingerprint string
	Hints       policy.Hints
	// Raw: Fingerprint is RawFingerprint's (the definition is not strict
	// JSON; no hints). Parse never sets it; its caller does, falling back.
	Raw bool
	// InputSchema is the RFC 8785 form of the Tool's inputSchema (nil when
	// absent or Raw): Observe keeps it under the fingerprint
	// (SchemaKey), for Check's argument validation.
	InputSchema string
}

// Parse fingerprints def (the bytes of one Tool object) and reads its
// declared annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint; a member that is not a boolean counts as absent). Errors
// are Fingerprint's.
func Parse(def []byte, c *Cache) (Definition, error) {
	if c == nil {
		return parse(def)
	}
	key := bytes.TrimSpace(def)
	d, sum, ok := c.get(key)
	if ok {
		return d, nil
	}
	d, err := parse(def)
	if err != nil {
		return Definition{}, err
	}
	c.put(key, sum, d)
	return d, nil
}

// parse is Parse without a cache.
func parse(def []byte) (Definition, error) {
	fp, name, schema, err := fingerprint(def)
	if err != nil {
		return Definition{}, err
	}
	d := Definition{Name: name, Fingerprint: fp, InputSchema: string(schema)}
	var tool struct {
		Annotations map[string]json.RawMessage `json:"annotations"`
	}
	if json.Unmarshal(def, &tool) == nil { // strict JSON already: Fingerprint accepted it
		hint := func(k string) policy.Hint {
			switch string(tool.Annotations[k]) {
			case "true":
				return policy.HintTrue
			case "false":
				return policy.HintFalse
			}
			return policy.HintAbsent
		}
		d.Hints = policy.Hints{ReadOnly: hint("readOnlyHint"), Destructive: hint("destructiveHint"),
			Idempotent: hint("idempotentHint"), OpenWorld: hint("openWorldHint")}
	}
	return d, nil
}

// encodeHints writes h as four characters, one per hint: '-' absent, 't',
// 'f'.
func encodeHints(h policy.Hints) string {
	c := func(x policy.Hint) byte {
		switch x {
		case policy.HintTrue:
			return 't'
		case policy.HintFalse:
			return 'f'
		}
		return '-'
	}
	return string([]byte{c(h.ReadOnly), c(h.Destructive), c(h.Idempotent), c(h.OpenWorld)})
}

func decodeHints(s string) policy.Hints {
	h := func(i int) policy.Hint {
		if i < len(s) {
			switch s[i] {
			case 't':
				return policy.HintTrue
			case 'f':
				return policy.HintFalse
			}
		}
		return policy.HintAbsent
	}
	return policy.Hints{ReadOnly: h(0), Destructive: h(1), Idempotent: h(2), OpenWorld: h(3)}
}

// Observe records that a tools/list answer in scope (Scope: a server id,
// or a server and session) showed d.
func (o Observations) Observe(ctx context.Context, scope string, d Definition) (err error) {
	server := scope
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	var kb [256]byte
	rk := strconv.AppendInt(kb[:0], int64(len(scope)), 10)
	rk = append(append(rk, ':'), scope...)
	rk = strconv.AppendInt(append(rk, ':'), int64(len(d.Name)), 10)
	rk = append(append(rk, ':'), d.Name...)
	rk = append(append(rk, ':'), d.Fingerprint...)
	if o.Recent.seenKey(rk, now()) { // the common case: no allocation
		return nil
	}
	rkey := string(rk)
	defer func() {
		if err == nil {
			o.Recent.add(rkey, now(), o.ttl())
		}
	}()
	if d.Name == "" || !Valid(d.Fingerprint) {
		return fmt.Errorf("%w: toolpin: observe %q: not a fingerprinted tool", state.ErrUnavailable, d.Name)
	}
	val := d.Fingerprint + " " + encodeHints(d.Hints)
	claimed, prev, err := o.Store.Claim(ctx, toolKey(kindObserved, server, d.Name), val, o.ttl())
	if err != nil {
		return err
	}
	if !claimed && !strings.HasPrefix(prev, d.Fingerprint+" ") {
		// A second definition within TTL; a third one, which the first
		// claim of each key cannot hold, marks the tool ambiguous
		// (tooldef-many): no approval can name what it runs then.
		divClaimed, divPrev, err := o.Store.Claim(ctx, toolKey(kindDivergent, server, d.Name), d.Fingerprint, o.ttl())
		if err != nil {
			return err
		}
		if !divClaimed && divPrev != d.Fingerprint {
			if _, _, err := o.Store.Claim(ctx, toolKey(kindMany, server, d.Name), d.Fingerprint, o.ttl()); err != nil {
				return err
			}
		}
	}
	if len(d.InputSchema) > 0 {
		// Content-addressed: the fingerprint covers the inputSchema, so
		// every claim of this key holds the same bytes.
		if _, _, err := o.Store.Claim(ctx, SchemaKey(d.Fingerprint), d.InputSchema, o.ttl()); err != nil {
			return err
		}
	}
	t := now()
	baseTTL := o.baselineTTL()
	if strings.Contains(scope, sessionScope) && o.ttl() < baseTTL {
		// A session's baseline lives as long as its observations: a client
		// can name any number of sessions, and each costs keys.
		baseTTL = o.ttl()
	}
	_, first, err := o.Store.Claim(ctx, "tooldef-srv:"+strconv.Itoa(len(server))+":"+server, strconv.FormatInt(t.UnixMilli(), 10), baseTTL)
	if err != nil {
		return err
	}
	base := d.Fingerprint
	window := o.BaselineWindow
	if window <= 0 {
		window = DefaultBaselineWindow
	}
	if ms, perr := strconv.ParseInt(first, 10, 64); perr == nil && t.Sub(time.UnixMilli(ms)) > window {
		base = "new " + base // appeared after the server's first list
	}
	_, _, err = o.Store.Claim(ctx, toolKey(kindBaseline, server, d.Name), base, baseTTL)
	return err
}

// SchemaKey is the state store key of the inputSchema of the definition
// whose fingerprint is fp (Observe writes it, InputSchema reads it).
func SchemaKey(fp string) string { return "tooldef-schema:" + fp }

// InputSchema returns the inputSchema (RFC 8785 form) of the definition
// whose fingerprint is fp, as Observe recorded it within TTL; found is
// false when none is recorded (never listed lately, listed without an
// inputSchema, or not strict JSON). Errors wrap state.ErrUnavailable.
func (o Observations) InputSchema(ctx context.Context, fp string) (schema []byte, found bool, err error) {
	vals, ok, err := o.Store.GetMany(ctx, SchemaKey(fp))
	if err != nil {
		return nil, false, err
	}
	if len(vals) != 1 || len(ok) != 1 {
		return nil, false, fmt.Errorf("%w: toolpin: %d answers for 1 key", state.ErrUnavailable, len(vals))
	}
	if !ok[0] {
		return nil, false, nil
	}
	return []byte(vals[0]), true, nil
}

// AmbiguousFingerprint is Lookup's Fingerprint for a tool listed with more
// than two definitions within TTL, or with two outside its baseline: not a
// fingerprint (Valid is false), so no approval can name it.
const AmbiguousFingerprint = Version + ":ambiguous"

// Lookup returns what a tools/call of server's tool is decided with under
// p's pinning (policy.Input.Definition): nil when pin_mode is off; Listed
// false when no list showed the tool within TTL; Changed when the observed
// fingerprint, or a second one observed within TTL, is outside the
// baseline (the policy's pins for the tool when it lists some; else, under
// tofu, the first fingerprint observed if the tool was in the server's
// first list; under strict, or for a tool that appeared later, nothing).
// Fingerprint names the definition a changed call may run, which an
// approval must name: the one outside the baseline (the second observed
// when the first is the baseline), AmbiguousFingerprint when two are
// outside it or three were observed. With two definitions observed, Hints
// are absent (neither's declared values apply). Superseded: changed, and
// the baseline holds fingerprints of an earlier Version only (pins or a
// stored baseline from before tooldef-v2), which never match.
// It reads the store once (state.Reader.GetMany of the tool's keys): one
// round trip per pinned tools/call.
func (o Observations) Lookup(ctx context.Context, p *policy.Policy, server, session, tool string) (*policy.ToolDefinition, error) {
	if p.PinMode() == policy.PinOff {
		return nil, nil
	}
	var hx *[32]byte
	if p.PinScope() == policy.PinScopeSession && session != "" {
		// Scope's form: server + " session:" + SessionHash(session).
		h, ok := revSessionHex[session]
		if !ok {
			h = sessionHex(session)
		}
		hx = &h
	}
	return o.lookup(ctx, p, server, hx, tool)
}

// LookupScope is Lookup in scope, the Scope (or ScopeOfHash) of
// server that Observe was given, as the response seam knows it: what a
// tools/call of server's tool in that scope is decided with. Errors:
// Lookup's, and a scope that is neither server nor server + " session:" +
// a SessionHash (never read as another scope).
func (o Observations) LookupScope(ctx context.Context, p *policy.Policy, server, scope, tool string) (*policy.ToolDefinition, error) {
	if p.PinMode() == policy.PinOff {
		return nil, nil
	}
	hx, ok := scopeHash(server, scope)
	if !ok {
		return nil, fmt.Errorf("toolpin: %q is not a pin scope of server %q", scope, server)
	}
	return o.lookup(ctx, p, server, hx, tool)
}

// LookupScopeMany is LookupScope of each of tools (the tool names of one
// tools/list, each once) in one store read: a single state.Reader.GetMany
// of every key of every tool, so a list of n tools costs one round trip,
// not n. defs[i] answers tools[i] as LookupScope would; like n LookupScope
// calls, the read is not a snapshot across keys on Redis. nil, nil when
// pin_mode is off. Errors are LookupScope's (then no tool is decided); a
// name repeated in tools is read twice.
func (o Observations) LookupScopeMany(ctx context.Context, p *policy.Policy, server, scope string, tools []string) ([]policy.ToolDefinition, error) {
	if p.PinMode() == policy.PinOff {
		return nil, nil
	}
	if _, ok := scopeHash(server, scope); !ok {
		return nil, fmt.Errorf("toolpin: %q is not a pin scope of server %q", scope, server)
	}
	defs := make([]policy.ToolDefinition, len(tools))
	if len(tools) == 0 {
		return defs, nil
	}
	keys := listKeys.get(p, server, scope, tools)
	vals, found, err := o.Store.GetMany(ctx, keys...)
	if err != nil {
		return nil, err
	}
	if len(vals) != len(keys) || len(found) != len(keys) {
		return nil, fmt.Errorf("%w: toolpin: %d answers for %d keys", state.ErrUnavailable, len(vals), len(keys))
	}
	at := 0
	for i, tool := range tools {
		pins := p.Pins(server, tool)
		n := keysOf(p, pins)
		decide(&defs[i], pins, vals[at:at+n], found[at:at+n])
		at += n
	}
	return defs, nil
}

// keysOf is how many of lookupKinds Lookup reads for a tool with pins:
// the baseline's too for a trust-on-first-use tool without pins.
func keysOf(p *policy.Policy, pins []string) int {
	if len(pins) == 0 && p.PinMode() == policy.PinTOFU {
		return 4
	}
	return 3
}

// manyKeys returns the keys LookupScopeMany reads, tool after tool, each
// toolKey(kind, scope, tool) of its keysOf first lookupKinds: substrings
// of one string, built at once, whose length it returns too.
func manyKeys(p *policy.Policy, server, scope string, tools []string) (keys []string, size int) {
	var lenBuf [20]byte
	scopeLen := strconv.AppendInt(lenBuf[:0], int64(len(scope)), 10)
	fixed := len(scopeLen) + 1 + len(scope) + 1 + 1 // ":<len>:<scope>:" beside kind and tool
	size, nkeys := 0, 0
	for _, tool := range tools {
		n := keysOf(p, p.Pins(server, tool))
		for _, kind := range lookupKinds[:n] {
			size += len(kind) + fixed + len(tool)
		}
		nkeys += n
	}
	var b strings.Builder
	b.Grow(size)
	for _, tool := range tools {
		for _, kind := range lookupKinds[:keysOf(p, p.Pins(server, tool))] {
			b.WriteString(kind)
			b.WriteByte(':')
			b.Write(scopeLen)
			b.WriteByte(':')
			b.WriteString(scope)
			b.WriteByte(':')
			b.WriteString(tool)
		}
	}
	all, at := b.String(), 0
	keys = make([]string, 0, nkeys)
	for _, tool := range tools {
		for _, kind := range lookupKinds[:keysOf(p, p.Pins(server, tool))] {
			end := at + len(kind) + fixed + len(tool)
			keys, at = append(keys, all[at:end]), end
		}
	}
	return keys, size
}

// listKeysCache remembers the keys of the lists LookupScopeMany read
// lately, so a list decided again (the same tools, in the same order, in
// the same scope under the same policy) builds none: manyKeys is a
// function of these alone, and an entry is used only when its keys name
// the tools asked for. It holds at most listKeysMax lists and
// listKeysMaxBytes of their keys, forgetting any one to make room; a list
// over a quarter of that is not kept. Safe for concurrent use.
type listKeysCache struct {
	mu    sync.RWMutex
	m     map[listKeysID][]string
	bytes int
}

// listKeysID names a list's keys in listKeysCache: the policy (which
// tools have pins decides how many keys a tool has), the scope, and a hash
// of the tool names (listSeed).
type listKeysID struct {
	p     *policy.Policy
	scope string
	sum   uint64
}

const (
	listKeysMax      = 256
	listKeysMaxBytes = 8 << 20
	stringHeader     = 16 // bytes of a string header (64-bit)
)

// listKeys is the process's listKeysCache: keys name the store's
// records, the same for every Observations.
var listKeys listKeysCache

var listSeed = maphash.MakeSeed()

// get returns manyKeys(p, server, scope, tools), remembered or built (and
// then remembered). The keys returned must not be modified.
func (c *listKeysCache) get(p *policy.Policy, server, scope string, tools []string) []string {
	var h maphash.Hash
	h.SetSeed(listSeed)
	for _, tool := range tools {
		h.WriteString(tool)
		h.WriteByte(0)
	}
	id := listKeysID{p: p, scope: scope, sum: h.Sum64()}
	c.mu.RLock()
	keys, ok := c.m[id]
	c.mu.RUnlock()
	if ok && namesTools(keys, p, server, scope, tools) {
		return keys
	}
	keys, size := manyKeys(p, server, scope, tools)
	size += len(keys) * stringHeader
	if size > listKeysMaxBytes/4 {
		return keys
	}
	id.scope = strings.Clone(scope)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[id]; ok {
		c.bytes -= keysBytes(old)
		delete(c.m, id)
	}
	for k, v := range c.m {
		if len(c.m) < listKeysMax && c.bytes+size <= listKeysMaxBytes {
			break
		}
		c.bytes -= keysBytes(v)
		delete(c.m, k)
	}
	if c.m == nil {
		c.m = make(map[listKeysID][]string)
	}
	c.m[id], c.bytes = keys, c.bytes+size
	return keys
}

// keysBytes is what manyKeys' keys hold: their bytes (one string) and
// their headers.
func keysBytes(keys []string) int {
	n := len(keys) * stringHeader
	for _, k := range keys {
		n += len(k)
	}
	return n
}

// namesTools reports whether keys, manyKeys' of p, server and scope for
// some tools, are those of tools: the same names in the same order.
func namesTools(keys []string, p *policy.Policy, server, scope string, tools []string) bool {
	var lenBuf [20]byte
	prefix := len(kindObserved) + 1 + len(strconv.AppendInt(lenBuf[:0], int64(len(scope)), 10)) + 1 + len(scope) + 1
	at := 0
	for _, tool := range tools {
		if at >= len(keys) || len(keys[at]) != prefix+len(tool) || keys[at][prefix:] != tool {
			return false
		}
		at += keysOf(p, p.Pins(server, tool))
	}
	return at == len(keys)
}

// lookup is Lookup in the scope of server and hx (nil: server's own).
func (o Observations) lookup(ctx context.Context, p *policy.Policy, server string, hx *[32]byte, tool string) (*policy.ToolDefinition, error) {
	mode := p.PinMode()
	baseline := p.Pins(server, tool)
	// One allocation holds the key slice and the answer; the keys come
	// from lookupKeys, or are built in one string.
	lk := new(lookup)
	keys := lk.keys(server, hx, tool, len(baseline) == 0 && mode == policy.PinTOFU)
	// One round trip for every key the decision needs.
	vals, found, err := o.Store.GetMany(ctx, keys...)
	if err != nil {
		return nil, err
	}
	if len(vals) != len(keys) || len(found) != len(keys) {
		return nil, fmt.Errorf("%w: toolpin: %d answers for %d keys", state.ErrUnavailable, len(vals), len(keys))
	}
	decide(&lk.def, baseline, vals, found)
	return &lk.def, nil
}

// decide sets *def from the answers of a tool's keys (lookupKinds, the
// baseline's read only when vals has four) and baseline, the policy's
// pins of the tool: Lookup's decision. *def must be zero.
func decide(def *policy.ToolDefinition, baseline, vals []string, found []bool) {
	if !found[0] {
		return
	}
	fp, hints, _ := strings.Cut(vals[0], " ")
	*def = policy.ToolDefinition{Listed: true, Fingerprint: fp, Hints: decodeHints(hints)}
	other, divergent := vals[1], found[1]
	if len(vals) == 4 && found[3] && !strings.HasPrefix(vals[3], "new ") {
		baseline = []string{vals[3]}
	}
	inFirst := slices.Contains(baseline, fp)
	switch {
	case found[2]:
		// Three or more definitions within TTL: no approval can say which
		// one a call would run; changed until they expire or the policy
		// pins them.
		def.Changed, def.Fingerprint, def.Hints = true, AmbiguousFingerprint, policy.Hints{}
	case !divergent:
		def.Changed = !inFirst
	default:
		// Two definitions: neither's declared hints apply, and an approval
		// must name the one outside the baseline, which a call may run.
		def.Hints = policy.Hints{}
		switch inSecond := slices.Contains(baseline, other); {
		case inFirst && !inSecond:
			def.Changed, def.Fingerprint = true, other
		case !inFirst && inSecond:
			def.Changed = true
		case !inFirst && !inSecond:
			def.Changed, def.Fingerprint = true, AmbiguousFingerprint
		}
	}
	def.Superseded = def.Changed && supersededOnly(baseline)
}

// supersededOnly reports whether baseline holds fingerprints and all of
// them are of an earlier Version.
func supersededOnly(baseline []string) bool {
	for _, fp := range baseline {
		if !Superseded(fp) {
			return false
		}
	}
	return len(baseline) > 0
}

// Recent is a bounded, process-local memory of observations Observe
// recorded, each for a quarter of the observation TTL (so a claim that
// expired in the store is written again well before anyone misses it).
// Safe for concurrent use; the zero value holds up to 16384 entries, and
// as many whole lists (ListSeen) within MaxListBytes. A nil *Recent
// remembers nothing.
type Recent struct {
	Max int
	// MaxListBytes bounds the bytes of the whole lists it remembers
	// (ListSeen; default 16 MiB).
	MaxListBytes int
	mu           sync.Mutex
	m            map[string]time.Time // until
	// lists[scope][list bytes] is what ListObserved recorded of that list;
	// listBytes counts the keys' bytes.
	lists             map[string]map[string]time.Time // until when
	listBytes, nlists int
}

// ListSeen reports whether this process observed every tool of the tools
// array list (its bytes as a tools/list answer carried it, "[" to "]") in
// scope lately, so observing each of them again would write nothing: then
// Observe need not be called for them. It is Recent's memory of the items,
// for a whole list at once: a list that differs by one byte is not seen,
// nor one whose observation is older than a quarter of TTL. Only the list's
// bytes are kept (bounded by MaxListBytes), not its Definitions. at is when
// to pass to ListObserved after observing the list's tools.
func (o Observations) ListSeen(scope string, list []byte) (seen bool, at time.Time) {
	at = o.now()
	r := o.Recent
	if r == nil {
		return false, at
	}
	r.mu.Lock()
	until, ok := r.lists[scope][string(list)]
	r.mu.Unlock()
	return ok && at.Before(until), at
}

// ListObserved records that Observe succeeded for every tool of list in
// scope, the first of them no earlier than at (ListSeen's).
func (o Observations) ListObserved(scope string, list []byte, at time.Time) {
	r := o.Recent
	if r == nil {
		return
	}
	max := r.MaxListBytes
	if max <= 0 {
		max = 16 << 20
	}
	if len(list) > max {
		return
	}
	until := at.Add(o.ttl() / 4)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lists == nil || r.listBytes+len(list) > max || r.nlists >= r.max() {
		r.lists, r.listBytes, r.nlists = make(map[string]map[string]time.Time), 0, 0
	}
	m := r.lists[scope]
	if m == nil {
		m = make(map[string]time.Time)
		r.lists[scope] = m
	}
	if _, ok := m[string(list)]; !ok {
		r.listBytes += len(list)
		r.nlists++
	}
	m[string(list)] = until
}

func (o Observations) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (r *Recent) max() int {
	if r.Max <= 0 {
		return 16384
	}
	return r.Max
}

func (r *Recent) seen(k string, now time.Time) bool { return r.seenKey([]byte(k), now) }

func (r *Recent) seenKey(k []byte, now time.Time) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	until, ok := r.m[string(k)]
	r.mu.Unlock()
	return ok && now.Before(until)
}

func (r *Recent) add(k string, now time.Time, ttl time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= r.max() {
		r.m = make(map[string]time.Time)
	}
	r.m[k] = now.Add(ttl / 4)
}
