// Package testkeys names the signing keys this repository publishes for
// demos and tests (examples/TEST-ONLY-*.jwk.json). Their private halves are
// public, so anyone can sign tokens and approvals with them: a key set that
// trusts one admits anybody. extauthz serve refuses such a key set unless a
// test-only setting says it runs a demo or a test.
//
// Keys are compared by their RFC 7638 SHA-256 thumbprint, which covers the
// public key's required members only, so a copy under another kid, alg or
// use is found too.
package testkeys

import (
	"crypto"
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
