package main

import (
	"fmt"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkeys"
)

// publishedKeysRefusal is the Accept of the --jwks-file and
// --approver-jwks-file key sets: a set that holds a key this repository
// publishes (examples/TEST-ONLY-*.jwk.json, found by RFC 7638 thumbprint)
// is refused, since anyone can sign tokens or approvals with it, unless
// --allow-test-keys is on; then it is accepted with a warning.
func publishedKeysRefusal(flag string, allow bool, log *zap.Logger) func([]jose.JSONWebKey) error {
	return func(keys []jose.JSONWebKey) error {
		found := testkeys.Find(keys)
		if len(found) == 0 {
			return nil
		}
		what := make([]string, len(found))
		for i, k := range found {
			what[i] = fmt.Sprintf("thumbprint %s (private half published as %s)", k.Thumbprint, k.File)
		}
		if allow {
			log.Warn("--"+flag+" trusts published test keys (--allow-test-keys): anyone can sign with them; demos and tests only",
				zap.Strings("keys", what))
			return nil
		}
		return fmt.Errorf("the key set holds a published test key, %s: anyone can sign with it, so it is refused unless --allow-test-keys (EXTAUTHZ_ALLOW_TEST_KEYS=true; Helm testOnly.allowPublishedTestKeys) says this is a demo or a test",
			strings.Join(what, ", "))
	}
}

// publishedCursorKeysRefusal refuses --cursor-key-file keys that hold the
// cursor key this repository publishes (examples/TEST-ONLY-cursor-key,
// found by RFC 7638 thumbprint), with which anyone can forge a sealed
// cursor for any principal, unless --allow-test-keys is on; then it warns.
func publishedCursorKeysRefusal(keys [][]byte, allow bool, log *zap.Logger) error {
	found := testkeys.FindSecrets(keys)
	if len(found) == 0 {
		return nil
	}
	what := make([]string, len(found))
	for i, k := range found {
		what[i] = fmt.Sprintf("thumbprint %s (published as %s)", k.Thumbprint, k.File)
	}
	if allow {
		log.Warn("--cursor-key-file holds a published test key (--allow-test-keys): anyone can forge sealed cursors with it; demos and tests only",
			zap.Strings("keys", what))
		return nil
	}
	return fmt.Errorf("the key file holds a published test key, %s: anyone can forge sealed cursors with it, so it is refused unless --allow-test-keys (EXTAUTHZ_ALLOW_TEST_KEYS=true; Helm testOnly.allowPublishedTestKeys) says this is a demo or a test",
		strings.Join(what, ", "))
}
