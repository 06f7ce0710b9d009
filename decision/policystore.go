package decision

import (
	"errors"
	"sync/atomic"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// LoadedPolicy is a compiled policy and the identity of the file it came
// from. It is never mutated after it is stored.
type LoadedPolicy struct {
	Policy  *policy.Policy
	File    string
	Version string // "sha256:" + lowercase hex SHA-256 of the file bytes
}

// PolicyStore holds the live policy; Load and Store are atomic, so a
// decision sees either the old or the new policy, never a mix.
type PolicyStore struct{ p atomic.Pointer[LoadedPolicy] }

// Load returns the live policy, or nil before the first Store.
func (s *PolicyStore) Load() *LoadedPolicy { return s.p.Load() }

// Store publishes lp.
func (s *PolicyStore) Store(lp *LoadedPolicy) { s.p.Store(lp) }

// CompilePolicy compiles src (the bytes of file) into a LoadedPolicy.
// Errors are *policy.CompileError.
func CompilePolicy(file string, src []byte) (*LoadedPolicy, error) {
	p, err := policy.Compile(file, src)
	if err != nil {
		return nil, err
	}
	return &LoadedPolicy{Policy: p, File: file, Version: mcpparse.Digest(src)}, nil
}

// Publish compiles src (the bytes of file) and makes it the live policy
// unless a policy of the same Version is live already; it reports whether
// the live policy changed. Errors are *policy.CompileError; the live policy
// is then unchanged. It is internal/reload's Publish callback.
func (s *PolicyStore) Publish(file string, src []byte) (changed bool, err error) {
	lp, err := CompilePolicy(file, src)
	if err != nil {
		return false, err
	}
	for {
		cur := s.p.Load()
		if cur != nil && cur.Version == lp.Version {
			return false, nil
		}
		if s.p.CompareAndSwap(cur, lp) {
			return true, nil
		}
	}
}

// Ready returns nil once a policy is stored, else why not (a readiness
// check).
func (s *PolicyStore) Ready() error {
	if s.Load() == nil {
		return errNoPolicy
	}
	return nil
}

var errNoPolicy = errors.New("no policy compiled")
