package decision

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/mcp-extauthz/mcp-extauthz/internal/argschema"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// LoadedPolicy is a compiled policy and the identity of the file it came
// from. It is never mutated after it is stored.
type LoadedPolicy struct {
	Policy *policy.Policy
	File   string
	// Version is "sha256:" + lowercase hex SHA-256 of the file bytes; of a
	// policy naming schema files (arguments schema_file), of the file
	// bytes followed, for each schema file in policy order, by a NUL, its
	// name as written, a NUL and its bytes: editing a schema file and then
	// the policy makes a new version.
	Version string
	// Schemas are the compiled schema_file schemas, by name as written.
	Schemas map[string]*argschema.Schema

	seam *Policy // Policy as the seam holds it, made once by CompilePolicy
}

// Seam is lp's policy as the response seam holds it (PolicyOf), made once
// per compiled policy rather than per side stream; nil for a nil lp.
func (lp *LoadedPolicy) Seam() *Policy {
	switch {
	case lp == nil:
		return nil
	case lp.seam != nil && lp.seam.p == lp.Policy:
		return lp.seam
	}
	return PolicyOf(lp.Policy) // a LoadedPolicy not made by CompilePolicy
}

// PolicyStore holds the live policy; Load and Store are atomic, so a
// decision sees either the old or the new policy, never a mix.
type PolicyStore struct{ p atomic.Pointer[LoadedPolicy] }

// Load returns the live policy, or nil before the first Store.
func (s *PolicyStore) Load() *LoadedPolicy { return s.p.Load() }

// Store publishes lp.
func (s *PolicyStore) Store(lp *LoadedPolicy) { s.p.Store(lp) }

// CompilePolicy compiles src (the bytes of file) into a LoadedPolicy, and
// reads and compiles the schema files it names (relative to file's
// directory unless absolute). Errors are *policy.CompileError, or an
// error naming the schema file that cannot be read or compiled
// (argschema.ErrUnusable).
func CompilePolicy(file string, src []byte) (*LoadedPolicy, error) {
	p, err := policy.Compile(file, src)
	if err != nil {
		return nil, err
	}
	lp := &LoadedPolicy{Policy: p, File: file, Version: mcpparse.Digest(src), seam: PolicyOf(p)}
	files := p.SchemaFiles()
	if len(files) == 0 {
		return lp, nil
	}
	lp.Schemas = make(map[string]*argschema.Schema, len(files))
	all := append([]byte(nil), src...)
	for _, name := range files {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(file), path)
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: arguments schema_file %q: %w", file, name, err)
		}
		s, err := argschema.Compile(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: arguments schema_file %q: %w", file, name, err)
		}
		lp.Schemas[name] = s
		all = append(append(append(append(all, 0), name...), 0), doc...)
	}
	lp.Version = mcpparse.Digest(all)
	return lp, nil
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
