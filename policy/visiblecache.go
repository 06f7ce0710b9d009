package policy

import (
	"strings"
	"sync"
)

// visibleCache remembers the Visible answers of one policy for tool and
// prompt items, so a catalog listed again costs a map lookup per item.
//
// It is correct because such an answer depends only on what its key holds:
// the rules are the policy's (immutable); arguments are unknown for every
// item (Visible replaces Args, LazyArgs and URIs); annotations are those of
// the item's Definition (the processor passes the listed item's own, Listed
// and not Changed, whose hints the key holds; any other Definition is not
// cached) and the policy's trusted_servers, else conservative; `when` expressions
// are pure CEL (no clock, no I/O, a deterministic cost limit) over the
// variables args, claims, method, server, tool, uri, prompt and
// annotations. The key holds Op, Method (tools/call or prompts/get, the
// only methods cached), Server, Tool, URI and Prompt, so
// the one input it leaves out is Claims: a kind is cached (on) only when no
// deny, ask or allow rule of that kind has a `when` whose source mentions
// "claims" (a textual test, decided at compile time: it can only cache
// less, never serve an answer that another caller's claims would change).
// An Input with a Definition not Listed or Changed is never cached, nor a key longer than
// visibleKeyMax. It holds at most visibleCacheMax entries and
// visibleCacheMaxBytes of keys, and forgets all of them when full.
type visibleCache struct {
	on    [numKinds]bool
	mu    sync.RWMutex
	m     map[visibleKey]Visibility
	bytes int
}

type visibleKey struct {
	op                        Op
	kind                      kind // of the method: tools/call or prompts/get
	server, tool, uri, prompt string
	listed                    bool  // an Input.Definition, Listed and not Changed
	hints                     Hints // its declared annotations
}

const (
	visibleCacheMax      = 1 << 14
	visibleCacheMaxBytes = 4 << 20
	visibleKeyMax        = 1 << 10
)

// newVisibleCache decides which kinds of p's items can be cached.
func newVisibleCache(p *Policy) *visibleCache {
	c := &visibleCache{}
	for _, k := range [...]kind{kindTool, kindPrompt} {
		c.on[k] = true
		for d := range numDecisions {
			for _, ru := range p.rules[d][k] {
				if ru.when != nil && strings.Contains(ru.whenSrc, "claims") {
					c.on[k] = false
				}
			}
		}
	}
	return c
}

// key returns in's key and whether in may be cached at all.
func (c *visibleCache) key(in *Input) (visibleKey, bool) {
	if c == nil || in.Definition != nil && (!in.Definition.Listed || in.Definition.Changed) {
		return visibleKey{}, false
	}
	var k kind
	switch in.Method {
	case methodToolsCall:
		k = kindTool
	case methodPromptsGet:
		k = kindPrompt
	}
	if !c.on[k] || len(in.Server)+len(in.Tool)+len(in.URI)+len(in.Prompt) > visibleKeyMax {
		return visibleKey{}, false
	}
	key := visibleKey{op: in.Op, kind: k, server: in.Server, tool: in.Tool, uri: in.URI, prompt: in.Prompt}
	if in.Definition != nil {
		key.listed, key.hints = true, in.Definition.Hints
	}
	return key, true
}

func (c *visibleCache) get(k visibleKey) (Visibility, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *visibleCache) put(k visibleKey, v Visibility) {
	n := len(k.server) + len(k.tool) + len(k.uri) + len(k.prompt)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= visibleCacheMax || c.bytes+n > visibleCacheMaxBytes {
		c.m, c.bytes = make(map[visibleKey]Visibility), 0
	}
	if _, ok := c.m[k]; !ok {
		c.bytes += n
	}
	c.m[k] = v
}
