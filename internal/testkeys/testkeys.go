// Package testkeys names the keys this repository publishes for demos and
// tests: the signing keys examples/TEST-ONLY-*.jwk.json, whose private
// halves are public, so anyone can sign tokens and approvals with them (a
// key set that trusts one admits anybody), and the cursor sealing key
// examples/TEST-ONLY-cursor-key, with which anyone can forge a sealed
// cursor. extauthz serve refuses such keys unless a test-only setting says
// it runs a demo or a test.
//
// Keys are compared by their RFC 7638 SHA-256 thumbprint: of the public
// key's required members for a signing key, so a copy under another kid,
// alg or use is found too; of the symmetric JWK {"k","kty":"oct"} for a
// cursor key.
package testkeys

import (
	"crypto"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

//go:embed published.txt
var published string

// Key is one published key: its RFC 7638 SHA-256 thumbprint (base64url,
// no padding) and the repository file that holds its private half.
type Key struct {
	Thumbprint string
	File       string
}

// Published returns the published keys, in the order of published.txt.
func Published() []Key {
	var out []Key
	for _, l := range strings.Split(published, "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		tp, file, _ := strings.Cut(l, " ")
		out = append(out, Key{Thumbprint: tp, File: strings.TrimSpace(file)})
	}
	return out
}

// Thumbprint returns k's RFC 7638 SHA-256 thumbprint of its public key,
// base64url without padding; "" for a key that has none (a symmetric or
// undecodable key).
func Thumbprint(k jose.JSONWebKey) string {
	pub := k.Public()
	if !pub.Valid() {
		return ""
	}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

// SecretThumbprint returns the RFC 7638 SHA-256 thumbprint of the
// symmetric key k (as the JWK {"k": base64url(k), "kty": "oct"}),
// base64url without padding.
// (go-jose computes none for symmetric keys: RFC 7638 section 3.2, the
// members k and kty in lexicographic order, no whitespace.)
func SecretThumbprint(k []byte) string {
	tp := sha256.Sum256([]byte(`{"k":"` + base64.RawURLEncoding.EncodeToString(k) + `","kty":"oct"}`))
	return base64.RawURLEncoding.EncodeToString(tp[:])
}

// FindSecrets returns, for each of the symmetric keys (cursor keys) that is
// a published key, that published key, in the order of keys; nil when none
// is.
func FindSecrets(keys [][]byte) []Key {
	var out []Key
	for _, k := range keys {
		tp := SecretThumbprint(k)
		for _, p := range Published() {
			if tp != "" && tp == p.Thumbprint {
				out = append(out, p)
			}
		}
	}
	return out
}

// Find returns, for each of keys that is a published key, that published
// key (with the kid it carries in keys ignored), in the order of keys; nil
// when none is.
func Find(keys []jose.JSONWebKey) []Key {
	var out []Key
	for _, k := range keys {
		tp := Thumbprint(k)
		for _, p := range Published() {
			if tp != "" && tp == p.Thumbprint {
				out = append(out, p)
			}
		}
	}
	return out
}
