package bearer

import (
	"slices"
	"time"
)

// KeySetStatus is what /statusz shows of a key set: never key material.
type KeySetStatus struct {
	URL         string    `json:"jwks_uri,omitempty"` // empty for a fixed set (--jwks-file)
	Kids        []string  `json:"kids"`               // of the keys in use, sorted
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastError   string    `json:"last_error,omitempty"` // of the last fetch or load, if it failed
}

// Status reports the key set's kids and its last fetch.
func (s *KeySet) Status() KeySetStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := KeySetStatus{URL: s.URL, Kids: make([]string, 0, len(s.keys)), LastSuccess: s.lastOK}
	for _, k := range s.keys {
		st.Kids = append(st.Kids, k.KeyID)
	}
	slices.Sort(st.Kids)
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}

// VerifierStatus is what /statusz shows of an identity provider.
type VerifierStatus struct {
	Issuer         string        `json:"issuer"`
	Ready          bool          `json:"ready"`      // signing keys available
	Discovered     bool          `json:"discovered"` // discovery done (always, with a fixed key set)
	DiscoveryError string        `json:"discovery_error,omitempty"`
	KeySet         *KeySetStatus `json:"key_set,omitempty"`
}

// Status reports discovery and the key set.
func (v *OIDCVerifier) Status() VerifierStatus {
	v.mu.Lock()
	st := VerifierStatus{Issuer: v.cfg.Issuer, Discovered: v.keys != nil}
	if v.lastDiscover != nil && v.keys == nil {
		st.DiscoveryError = v.lastDiscover.Error()
	}
	keys := v.keys
	v.mu.Unlock()
	if ks, ok := keys.(*KeySet); ok {
		kst := ks.Status()
		st.KeySet = &kst
	}
	st.Ready = v.Ready()
	return st
}

// ReplayCacheSize is the number of proof ids (jti) remembered.
func (v *DPoPVerifier) ReplayCacheSize() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen)
}
