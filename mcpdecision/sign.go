package mcpdecision

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Signer signs statements with the first key of its key file; the others
// are published (PublicKeySet) so statements of a previous key still
// verify while it rotates out. It is safe for concurrent use; SetKeys
// swaps keys atomically.
type Signer struct {
	cur atomic.Pointer[signingKeys]
}

// signingKeys is one key file's keys, immutable once stored.
type signingKeys struct {
	header []byte // base64url of the protected header, then '.'
	ed     ed25519.PrivateKey
	ec     *ecdsa.PrivateKey
	public []byte // the JWK Set of the public halves
	keys   []jose.JSONWebKey
}

// ParseKeys reads a key file: one private JWK (RFC 7517) or a JWK Set of
// them, each an Ed25519 key (kty OKP, crv Ed25519: alg EdDSA) or a P-256
// key (kty EC: alg ES256) with a kid; the first signs. Errors name the
// member that is not such a key, or a kid given twice.
func ParseKeys(b []byte) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	var probe struct {
		Keys json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("not a JWK or JWK Set: %w", err)
	}
	if probe.Keys != nil {
		if err := json.Unmarshal(b, &set); err != nil {
			return nil, fmt.Errorf("JWK Set: %w", err)
		}
	} else {
		var k jose.JSONWebKey
		if err := json.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("JWK: %w", err)
		}
		set.Keys = []jose.JSONWebKey{k}
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("no key")
	}
	seen := map[string]bool{}
	for i, k := range set.Keys {
		if k.KeyID == "" {
			return nil, fmt.Errorf("key %d: no kid", i)
		}
		if seen[k.KeyID] {
			return nil, fmt.Errorf("key %d: kid %q given twice", i, k.KeyID)
		}
		seen[k.KeyID] = true
		switch p := k.Key.(type) {
		case ed25519.PrivateKey:
		case *ecdsa.PrivateKey:
			if p.Curve != elliptic.P256() {
				return nil, fmt.Errorf("key %q: EC key not on P-256", k.KeyID)
			}
		default:
			return nil, fmt.Errorf("key %q: %T: want a private Ed25519 (OKP) or P-256 (EC) key", k.KeyID, k.Key)
		}
	}
	return set.Keys, nil
}

// NewSigner returns a Signer with keys (ParseKeys).
func NewSigner(keys []jose.JSONWebKey) (*Signer, error) {
	s := new(Signer)
	if err := s.SetKeys(keys); err != nil {
		return nil, err
	}
	return s, nil
}

// SetKeys replaces the signing keys: keys[0] signs from now on, every key's
// public half is published. On error the keys in use stay.
func (s *Signer) SetKeys(keys []jose.JSONWebKey) error {
	if len(keys) == 0 {
		return errors.New("no key")
	}
	sk := &signingKeys{keys: keys}
	first := keys[0]
	alg := ""
	switch p := first.Key.(type) {
	case ed25519.PrivateKey:
		sk.ed, alg = p, string(jose.EdDSA)
	case *ecdsa.PrivateKey:
		if p.Curve != elliptic.P256() {
			return fmt.Errorf("key %q: EC key not on P-256", first.KeyID)
		}
		sk.ec, alg = p, string(jose.ES256)
	default:
		return fmt.Errorf("key %q: %T: want a private Ed25519 or P-256 key", first.KeyID, first.Key)
	}
	h := append([]byte(`{"alg":"`+alg+`","kid":`), mcpparse.AppendJCSString(nil, first.KeyID)...)
	h = append(h, `,"typ":"`+Type+`"}`...)
	sk.header = append(base64.RawURLEncoding.AppendEncode(nil, h), '.')
	pub := jose.JSONWebKeySet{}
	for _, k := range keys {
		p := k.Public()
		if !p.Valid() {
			return fmt.Errorf("key %q: no public key", k.KeyID)
		}
		p.Use = "sig"
		switch p.Key.(type) {
		case ed25519.PublicKey:
			p.Algorithm = string(jose.EdDSA)
		case *ecdsa.PublicKey:
			p.Algorithm = string(jose.ES256)
		default:
			return fmt.Errorf("key %q: %T: want an Ed25519 or P-256 key", k.KeyID, p.Key)
		}
		pub.Keys = append(pub.Keys, p)
	}
	b, err := json.Marshal(pub)
	if err != nil {
		return err
	}
	sk.public = b
	s.cur.Store(sk)
	return nil
}

// PublicKeySet returns the JWK Set (JSON) of the public halves of the
// signer's keys: what MCP servers verify with.
func (s *Signer) PublicKeySet() []byte {
	if sk := s.cur.Load(); sk != nil {
		return sk.public
	}
	return []byte(`{"keys":[]}`)
}

// Keys returns the signer's keys, the signing key first.
func (s *Signer) Keys() []jose.JSONWebKey {
	if sk := s.cur.Load(); sk != nil {
		return sk.keys
	}
	return nil
}

// Sign returns st as a compact JWS of type Type signed with the signing
// key. The payload is st's members in lexicographic order, without
// whitespace, strings written as RFC 8785 writes them (AppendPayload);
// an Ed25519 signature is deterministic, so the same st and key give the
// same JWS.
func (s *Signer) Sign(st *Statement) (string, error) {
	sk := s.cur.Load()
	if sk == nil {
		return "", errors.New("signer without keys")
	}
	var room [1024]byte
	payload := AppendPayload(room[:0], st)
	n := len(sk.header) + base64.RawURLEncoding.EncodedLen(len(payload))
	out := make([]byte, 0, n+1+base64.RawURLEncoding.EncodedLen(ed25519.SignatureSize))
	out = append(out, sk.header...)
	out = base64.RawURLEncoding.AppendEncode(out, payload)
	var sig []byte
	var sigRoom [64]byte
	switch {
	case sk.ed != nil:
		sig = ed25519.Sign(sk.ed, out)
	case sk.ec != nil:
		h := sha256.Sum256(out)
		r, ss, err := ecdsa.Sign(rand.Reader, sk.ec, h[:])
		if err != nil {
			return "", err
		}
		r.FillBytes(sigRoom[:32])
		ss.FillBytes(sigRoom[32:])
		sig = sigRoom[:]
	default:
		return "", errors.New("no signing key")
	}
	out = append(out, '.')
	out = base64.RawURLEncoding.AppendEncode(out, sig)
	return string(out), nil
}

// AppendPayload appends st's JSON form to b: the members in lexicographic
// order (empty omitempty members left out), strings as RFC 8785 writes
// them, no whitespace. It is the RFC 8785 form of st.
func AppendPayload(b []byte, st *Statement) []byte {
	b = append(b, '{')
	sep := false
	str := func(name, v string, always bool) {
		if v == "" && !always {
			return
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = mcpparse.AppendJCSString(b, v)
	}
	num := func(name string, v int64) {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, v, 10)
	}
	str("approval_id", st.ApprovalID, false)
	str("args_digest", st.ArgsDigest, false)
	str("aud", st.Audience, true)
	if len(st.Batch) > 0 {
		b = append(b, `,"batch":[`...)
		for i, e := range st.Batch {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"args_digest":`...)
			b = mcpparse.AppendJCSString(b, e.ArgsDigest)
			b = append(b, `,"method":`...)
			b = mcpparse.AppendJCSString(b, e.Method)
			b = append(b, `,"request_digest":`...)
			b = mcpparse.AppendJCSString(b, e.RequestDigest)
			b = append(b, `,"target":`...)
			b = mcpparse.AppendJCSString(b, e.Target)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	str("client_id", st.ClientID, false)
	num("exp", st.ExpiresAt)
	num("iat", st.IssuedAt)
	str("iss", st.Issuer, true)
	str("jti", st.ID, true)
	str("method", st.Method, true)
	str("policy_version", st.PolicyVersion, true)
	str("request_digest", st.RequestDigest, true)
	str("rule_id", st.RuleID, false)
	str("server", st.Server, true)
	str("sub", st.Subject, true)
	str("target", st.Target, true)
	return append(b, '}')
}
