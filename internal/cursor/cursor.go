// Package cursor seals the MCP pagination cursors (MCP 2025-11-25
// "Pagination": nextCursor, params.cursor; opaque to clients) that a filtered
// list hands out, so a cursor works only for the principal, server, list
// method and policy version it was issued for, and the upstream gets back
// exactly its own cursor.
//
// A sealed cursor is "mcx1." + base64url(no padding) of a 12-byte random
// nonce and the AES-256-GCM sealing of the upstream cursor, with the binding
// (a fixed label, then the length-prefixed method, server, principal and
// policy version) as additional data. Replicas share the keys (one Secret
// file); a Sealer seals with its first key and opens with any of its keys, so
// a key is rotated by prepending the new one and dropping the old one after
// the longest-lived cursor is gone.
//
// Not done: no expiry inside the cursor (a policy change or a key rotation
// ends every cursor), no replay bound (the same principal may reuse a cursor,
// as MCP lets clients do).
package cursor

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every sealed cursor.
const Prefix = "mcx1."

// KeySize is the size of a key in bytes (AES-256).
const KeySize = 32

// MaxKeys bounds the keys of one Sealer (the current one and the previous
// ones still accepted).
const MaxKeys = 4

// maxCursor bounds an upstream cursor (bytes): a larger one is refused
// rather than sealed.
const maxCursor = 8 << 10

// ErrInvalid is returned by Open for a cursor that is not one this Sealer
// issued for this binding: malformed, sealed for another principal, server,
// method or policy version, or with a key no longer held. Check answers it
// as JSON-RPC -32602 (invalid params), as MCP says of invalid cursors.
var ErrInvalid = errors.New("cursor: invalid cursor")

// Binding is what a cursor is sealed to.
type Binding struct {
	Method        string // the list method, "tools/list", ...
	Server        string // the MCP server id
	Principal     string // the token's issuer and subject (state.TaskOwner's "<iss> <sub>")
	PolicyVersion string
}

// Sealer seals and opens cursors. It is immutable and safe for concurrent
// use.
type Sealer struct {
	aeads []cipher.AEAD
}

// New returns a Sealer that seals with keys[0] and opens with any of keys.
// Each key is KeySize bytes; at most MaxKeys.
func New(keys ...[]byte) (*Sealer, error) {
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, fmt.Errorf("cursor: want 1 to %d keys, have %d", MaxKeys, len(keys))
	}
	s := &Sealer{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("cursor: key %d is %d bytes, want %d", i+1, len(k), KeySize)
		}
		b, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		a, err := cipher.NewGCM(b)
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, a)
	}
	return s, nil
}

// ParseKeyFile reads a key file (ReadKeyFile) and returns a Sealer of its
// keys. Errors name the line, never the key.
func ParseKeyFile(b []byte) (*Sealer, error) {
	keys, err := ReadKeyFile(b)
	if err != nil {
		return nil, err
	}
	return New(keys...)
}

// ReadKeyFile returns the keys of a key file, in its order: one key per
// line, base64 (standard or URL alphabet, padded or not) of KeySize bytes,
// the sealing key first; blank lines and lines starting with '#' are
// skipped. It does not check their number (New does). Errors name the
// line, never the key.
func ReadKeyFile(b []byte) ([][]byte, error) {
	var keys [][]byte
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := decodeKey(line)
		if err != nil {
			return nil, fmt.Errorf("cursor key file line %d: not base64 of %d bytes", n+1, KeySize)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, errors.New("bad key")
}

// ad returns the additional data for b.
func (b Binding) ad() []byte {
	out := []byte("mcp-extauthz cursor v1\x00")
	for _, s := range [...]string{b.Method, b.Server, b.Principal, b.PolicyVersion} {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	return out
}

// Seal returns the cursor handed to the client for the upstream cursor
// upstream under binding b. It fails only for an upstream cursor over 8 KiB
// or a failing random source.
func (s *Sealer) Seal(b Binding, upstream string) (string, error) {
	if len(upstream) > maxCursor {
		return "", fmt.Errorf("cursor: upstream cursor of %d bytes, over %d", len(upstream), maxCursor)
	}
	a := s.aeads[0]
	buf := make([]byte, a.NonceSize(), a.NonceSize()+len(upstream)+a.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	buf = a.Seal(buf, buf[:a.NonceSize()], []byte(upstream), b.ad())
	return Prefix + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Open returns the upstream cursor sealed in sealed for binding b, or
// ErrInvalid.
func (s *Sealer) Open(b Binding, sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, Prefix)
	if !ok || len(rest) > base64.RawURLEncoding.EncodedLen(maxCursor+64) {
		return "", ErrInvalid
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil {
		return "", ErrInvalid
	}
	ad := b.ad()
	for _, a := range s.aeads {
		if len(raw) < a.NonceSize()+a.Overhead() {
			return "", ErrInvalid
		}
		nonce, ct := raw[:a.NonceSize()], raw[a.NonceSize():]
		if pt, err := a.Open(nil, nonce, bytes.Clone(ct), ad); err == nil {
			return string(pt), nil
		}
	}
	return "", ErrInvalid
}
