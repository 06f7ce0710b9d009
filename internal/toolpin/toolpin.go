// Package toolpin fingerprints MCP tool definitions, so a definition that
// changed after it was approved (a "rug pull": a reworded description, a
// widened inputSchema, a flipped annotation, another UI resource) is
// noticed (issue 18, issue 26; notes/RESPONSE-SEAM.md 5.6).
//
// A fingerprint is "tooldef-v2:sha256:<64 lowercase hex>": SHA-256 of the
// RFC 8785 form of the projection {name, title, description, inputSchema,
// outputSchema, annotations, execution, _meta} of one Tool object of a
// tools/list result (MCP 2025-06-18 through 2026-07-28, schema "Tool"),
// absent members omitted (never null). Of _meta it keeps what the MCP Apps
// extension (io.modelcontextprotocol/ui, SEP-1865, stable 2026-01-26)
// reads to decide what a host renders and who sees the tool:
// _meta.ui.resourceUri (the ui:// resource rendered with the tool's
// results), _meta.ui.visibility (["model", "app"]: whether the model is
// shown the tool and may call it) and the deprecated flat
// _meta["ui/resourceUri"], which hosts read when ui.resourceUri is absent.
// Only those three, each only when present, in their places (_meta.ui and
// _meta left out when none of them is there); the rest of _meta stays
// outside (progress tokens, tracing, vendor keys: servers may vary them per
// request, and no client reads them as the definition), and so do icons
// (pictures a client shows; a changed icon changes no behaviour) and any
// other member. A tooldef-v2 fingerprint of a definition without those
// _meta members hashes the same bytes as tooldef-v1 did; the tags differ,
// and fingerprints compare as whole strings.
//
// Version "tooldef-v1" (issue 18) was the projection without _meta: a
// server could swap a tool's UI resource, or make an app-only tool visible
// to the model, without changing it. Fingerprints of an earlier version
// (Superseded) never match one of this Version: a pin or stored baseline of
// one reads as changed, never as the tool's baseline, until it is pinned
// again (extauthz pin). Pure: no I/O.
//
// Not done here: where fingerprints are kept (the policy's pins, the state
// store's observations, observe.go) and what a changed one decides.
package toolpin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Version is the projection's tag, the prefix of every fingerprint.
const Version = "tooldef-v2"

// superseded are the tags of earlier projections, oldest first.
var superseded = []string{"tooldef-v1"}

// Projected are the Tool members a fingerprint covers whole, in RFC 8785
// order (these names are ASCII, so UTF-16 order is byte order). _meta,
// which sorts before them, is covered in part (appendMeta).
var Projected = []string{"annotations", "description", "execution", "inputSchema", "name", "outputSchema", "title"}

// ErrNotATool is returned for a value that is not a JSON object with a
// string name.
var ErrNotATool = errors.New("toolpin: not a tool definition (a JSON object with a string name)")

// Fingerprint returns the fingerprint of def, the bytes of one Tool object,
// and its name. Errors: def is not strict JSON as mcpparse.Canonicalize
// reads it (duplicate or case-variant member names, invalid UTF-8, a number
// that loses precision, a limit), or not a Tool (ErrNotATool). A caller
// must treat a definition it cannot fingerprint as changed.
func Fingerprint(def []byte) (fp, name string, err error) {
	fp, name, _, err = fingerprint(def)
	return fp, name, err
}

// fingerprint is Fingerprint, and the RFC 8785 form of the Tool's
// inputSchema (nil when it has none).
func fingerprint(def []byte) (fp, name string, inputSchema []byte, err error) {
	canon, err := mcpparse.Canonicalize(def, mcpparse.Limits{})
	if err != nil {
		return "", "", nil, fmt.Errorf("toolpin: %w", err)
	}
	if len(canon) == 0 || canon[0] != '{' {
		return "", "", nil, ErrNotATool
	}
	var members map[string]json.RawMessage // canonical: no duplicates, values already in RFC 8785 form
	if err := json.Unmarshal(canon, &members); err != nil {
		return "", "", nil, fmt.Errorf("toolpin: %w", err)
	}
	if err := json.Unmarshal(members["name"], &name); err != nil || name == "" {
		return "", "", nil, ErrNotATool
	}
	b := make([]byte, 0, len(canon))
	b = append(b, '{')
	b = appendMeta(b, members["_meta"])
	for _, k := range Projected {
		v, ok := members[k]
		if !ok {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = mcpparse.AppendJCSString(b, k)
		b = append(b, ':')
		b = append(b, v...)
	}
	b = append(b, '}')
	sum := sha256.Sum256(b)
	inputSchema = members["inputSchema"] // a fresh copy: json.Unmarshal copies RawMessage
	return Version + ":sha256:" + hex.EncodeToString(sum[:]), name, inputSchema, nil
}

// appendMeta appends `"_meta":{…}` with the members of meta (the canonical
// value of a Tool's _meta, nil when absent) a fingerprint covers, in RFC
// 8785 order: ui.resourceUri, ui.visibility, "ui/resourceUri" (each value
// canonical already), when meta is an object holding at least one of them;
// else nothing. A _meta or _meta.ui that is not an object holds none
// (hosts read no member of it).
func appendMeta(b []byte, meta json.RawMessage) []byte {
	m := object(meta)
	if m == nil {
		return b
	}
	ui := object(m["ui"])
	uri, vis := ui["resourceUri"], ui["visibility"]
	legacy := m["ui/resourceUri"]
	if uri == nil && vis == nil && legacy == nil {
		return b
	}
	b = append(b, `"_meta":{`...)
	if uri != nil || vis != nil {
		b = append(b, `"ui":{`...)
		if uri != nil {
			b = append(append(b, `"resourceUri":`...), uri...)
		}
		if vis != nil {
			if uri != nil {
				b = append(b, ',')
			}
			b = append(append(b, `"visibility":`...), vis...)
		}
		b = append(b, '}')
		if legacy != nil {
			b = append(b, ',')
		}
	}
	if legacy != nil {
		b = append(append(b, `"ui/resourceUri":`...), legacy...)
	}
	return append(b, '}')
}

// object returns the members of v, a canonical JSON value, when it is an
// object; nil otherwise.
func object(v json.RawMessage) map[string]json.RawMessage {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	return m
}

// RawFingerprint is the fingerprint of a definition Fingerprint refuses
// (not strict JSON, not a Tool): SHA-256 of its bytes as sent, in the same
// form, so it is stable while the bytes are and never equals the
// fingerprint of a definition that can be canonicalized but by chance.
func RawFingerprint(def []byte) string {
	sum := sha256.Sum256(append([]byte("tooldef-raw\x00"), def...))
	return Version + ":sha256:" + hex.EncodeToString(sum[:])
}

// Valid reports whether s has the form of a fingerprint of this Version.
func Valid(s string) bool { return validOf(Version, s) }

// Superseded reports whether s has the form of a fingerprint of an earlier
// Version ("tooldef-v1:sha256:<64 lowercase hex>"): no fingerprint of this
// Version equals it, so a pin or baseline of one never matches (the tool
// reads as changed) until the tool is pinned again.
func Superseded(s string) bool {
	for _, v := range superseded {
		if validOf(v, s) {
			return true
		}
	}
	return false
}

// validOf reports whether s is version + ":sha256:" and 64 lowercase hex
// digits.
func validOf(version, s string) bool {
	const alg = ":sha256:"
	n := len(version) + len(alg)
	if len(s) != n+64 || s[:len(version)] != version || s[len(version):n] != alg {
		return false
	}
	for _, c := range []byte(s[n:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Cache remembers what Parse read of a definition by its raw bytes (leading
// and trailing white space aside), so a list that repeats byte for byte
// costs one map lookup per tool, and canonicalizes only on a miss. A
// definition of at most RawKeyMax bytes is keyed by its bytes themselves (a
// hit compares every byte: no hash collision can return another
// definition's fingerprint); a longer one by the SHA-256 of its bytes. It
// holds at most Max entries (default 4096) and MaxBytes bytes of keys
// (default 16 MiB), and forgets all of them when either is reached. Safe for
// concurrent use; the zero value is ready. Errors are not cached.
type Cache struct {
	Max      int
	MaxBytes int
	mu       sync.Mutex
	raw      map[string]Definition   // by the definition's bytes
	big      map[[32]byte]Definition // by their SHA-256
	bytes    int                     // of raw's keys
}

// RawKeyMax is the longest definition a Cache keys by its bytes.
const RawKeyMax = 16 << 10

func (c *Cache) max() int {
	if c.Max <= 0 {
		return 4096
	}
	return c.Max
}

func (c *Cache) maxBytes() int {
	if c.MaxBytes <= 0 {
		return 16 << 20
	}
	return c.MaxBytes
}

// get returns the cached Definition of def (trimmed); sum is def's SHA-256
// when def is longer than RawKeyMax.
func (c *Cache) get(def []byte) (d Definition, sum [32]byte, ok bool) {
	if len(def) > RawKeyMax {
		sum = sha256.Sum256(def)
		c.mu.Lock()
		d, ok = c.big[sum]
		c.mu.Unlock()
		return d, sum, ok
	}
	c.mu.Lock()
	d, ok = c.raw[string(def)]
	c.mu.Unlock()
	return d, sum, ok
}

// put caches d as the Definition of def (trimmed), sum as get returned it.
func (c *Cache) put(def []byte, sum [32]byte, d Definition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.raw)+len(c.big) >= c.max() || c.bytes+len(def) > c.maxBytes() {
		c.raw, c.big, c.bytes = nil, nil, 0
	}
	if len(def) > RawKeyMax {
		if c.big == nil {
			c.big = make(map[[32]byte]Definition)
		}
		c.big[sum] = d
		return
	}
	if c.raw == nil {
		c.raw = make(map[string]Definition)
	}
	c.raw[string(def)] = d
	c.bytes += len(def)
}

// Fingerprint is the package's Fingerprint of def, from the cache when def's
// raw bytes were fingerprinted (or parsed) before. Errors are not cached.
func (c *Cache) Fingerprint(def []byte) (fp, name string, err error) {
	d, err := Parse(def, c)
	if err != nil {
		return "", "", err
	}
	return d.Fingerprint, d.Name, nil
}
