package decision

import (
	"strings"
	"sync"

	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// sessionHashes caches toolpin.SessionHash by session, so a session's
// requests after its first hand the response seam its hash (Decision
// SessionHash) without hashing or allocating again. Bounded: past
// maxSessionHashes entries it starts over (a miss costs one SHA-256).
var sessionHashes = struct {
	mu sync.RWMutex
	m  map[string]string
}{m: map[string]string{}}

// maxSessionHashes bounds sessionHashes (about 200 KiB with 48-byte ids).
const maxSessionHashes = 2048

// sessionHash is toolpin.SessionHash(session), cached.
func sessionHash(session string) string {
	if session == "" {
		return ""
	}
	sessionHashes.mu.RLock()
	h, ok := sessionHashes.m[session]
	sessionHashes.mu.RUnlock()
	if ok {
		return h
	}
	h = toolpin.SessionHash(session)
	sessionHashes.mu.Lock()
	if len(sessionHashes.m) >= maxSessionHashes {
		clear(sessionHashes.m)
	}
	sessionHashes.m[strings.Clone(session)] = h // the key must not alias request memory
	sessionHashes.mu.Unlock()
	return h
}
