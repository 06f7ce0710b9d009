package extauthz

import "errors"

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
