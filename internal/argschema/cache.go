package argschema

import (
	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultCacheSize is how many compiled schemas a Cache of size 0 keeps.
const DefaultCacheSize = 1024

// Cache keeps compiled schemas by the fingerprint of the definition they
// came from (internal/toolpin: the fingerprint covers the whole
// inputSchema, so one fingerprint names one schema), the oldest evicted
// first: a warm call compiles nothing and takes a read lock only (a hit
// does not reorder the entries, so concurrent Checks do not serialize on
// it). A schema that failed to compile is kept too, with its error. Safe
// for concurrent use.
type Cache struct{ c *lru.Cache[string, entry] }

type entry struct {
	s   *Schema
	err error
}

// NewCache returns a Cache of size schemas (DefaultCacheSize when size <= 0).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	c, _ := lru.New[string, entry](size) // size > 0: no error
	return &Cache{c: c}
}

// Lookup returns the compiled schema kept for key (or its compile error),
// and whether one is kept.
func (c *Cache) Lookup(key string) (s *Schema, ok bool, err error) {
	e, ok := c.c.Peek(key)
	return e.s, ok, e.err
}

// Compile returns the schema kept for key, or compiles doc and keeps it
// (or its error) under key.
func (c *Cache) Compile(key string, doc []byte) (*Schema, error) {
	if e, ok := c.c.Peek(key); ok {
		return e.s, e.err
	}
	s, err := Compile(doc)
	if prev, ok, _ := c.c.PeekOrAdd(key, entry{s, err}); ok { // compiled meanwhile
		return prev.s, prev.err
	}
	return s, err
}
