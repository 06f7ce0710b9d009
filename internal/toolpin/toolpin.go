// Package toolpin fingerprints MCP tool definitions, so a definition that
// changed after it was approved (a "rug pull": a reworded description, a
// widened inputSchema, a flipped annotation) is noticed (issue 18;
// notes/RESPONSE-SEAM.md 5.6).
//
// A fingerprint is "tooldef-v1:sha256:<64 lowercase hex>": SHA-256 of the
// RFC 8785 form of the projection {name, title, description, inputSchema,
// outputSchema, annotations, execution} of one Tool object of a tools/list
// result (MCP 2025-06-18 through 2026-07-28, schema "Tool"), absent members
// omitted (never null), icons, _meta and any other member left out. The
// version tag lets the projection change later without old pins matching
// new fingerprints by accident. Pure: no I/O.
//
// Not done here: where fingerprints are kept (the policy's pins, the state
// store's observations) and what a changed one decides.
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
const Version = "tooldef-v1"

// Projected are the Tool members a fingerprint covers, in RFC 8785 order
// (these names are ASCII, so UTF-16 order is byte order).
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
	canon, err := mcpparse.Canonicalize(def, mcpparse.Limits{})
	if err != nil {
		return "", "", fmt.Errorf("toolpin: %w", err)
	}
	if len(canon) == 0 || canon[0] != '{' {
		return "", "", ErrNotATool
	}
	var members map[string]json.RawMessage // canonical: no duplicates, values already in RFC 8785 form
	if err := json.Unmarshal(canon, &members); err != nil {
		return "", "", fmt.Errorf("toolpin: %w", err)
	}
	if err := json.Unmarshal(members["name"], &name); err != nil || name == "" {
		return "", "", ErrNotATool
	}
	b := make([]byte, 0, len(canon))
	b = append(b, '{')
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
	return Version + ":sha256:" + hex.EncodeToString(sum[:]), name, nil
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
func Valid(s string) bool {
	const prefix = Version + ":sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	for _, c := range []byte(s[len(prefix):]) {
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
