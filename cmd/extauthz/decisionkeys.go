package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	jose "github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

// decisionJWKSPath is where the HTTP port serves the public key set of
// --decision-key-file, for MCP servers' verifiers (mcpdecision.RemoteKeys).
const decisionJWKSPath = "/decision-jwks.json"

// decisionKeys signs allowed decisions (issue 28) with --decision-key-file
// and publishes its public halves: served on the HTTP port and written to
// --decision-jwks-out.
type decisionKeys struct {
	signer *mcpdecision.Signer
	file   string
	out    string // "" writes no file
	accept func([]jose.JSONWebKey) error
}

// newDecisionKeys reads cfg.DecisionKeyFile (nil, nil when unset): its
// keys (mcpdecision.ParseKeys) may not be a published test key unless
// --allow-test-keys. The public key set is written to
// cfg.DecisionJWKSOut before the first statement is signed.
func newDecisionKeys(cfg *Config, log *zap.Logger) (*decisionKeys, error) {
	if cfg.DecisionKeyFile == "" {
		return nil, nil
	}
	dk := &decisionKeys{file: cfg.DecisionKeyFile, out: cfg.DecisionJWKSOut,
		accept: publishedKeysRefusal("decision-key-file", cfg.AllowTestKeys, log)}
	keys, err := dk.read()
	if err != nil {
		return nil, err
	}
	if dk.signer, err = mcpdecision.NewSigner(keys); err != nil {
		return nil, fmt.Errorf("--decision-key-file %s: %w", dk.file, err)
	}
	if err := dk.publish(); err != nil {
		return nil, err
	}
	return dk, nil
}

// read reads and vets the key file.
func (dk *decisionKeys) read() ([]jose.JSONWebKey, error) {
	b, err := os.ReadFile(dk.file)
	if err != nil {
		return nil, fmt.Errorf("--decision-key-file: %w", err)
	}
	keys, err := mcpdecision.ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("--decision-key-file %s: %w", dk.file, err)
	}
	if err := dk.accept(keys); err != nil {
		return nil, fmt.Errorf("--decision-key-file %s: %w", dk.file, err)
	}
	return keys, nil
}

// reload reads the key file again after a change: the new first key
// signs from now on, every key is published. On error the keys in use
// stay (and stay published).
func (dk *decisionKeys) reload() error {
	keys, err := dk.read()
	if err != nil {
		return err
	}
	// Published before the new key signs, so a server reading the file
	// knows the key of the first statement it sees.
	prev := dk.signer.Keys()
	if err := dk.signer.SetKeys(keys); err != nil {
		return fmt.Errorf("--decision-key-file %s: %w", dk.file, err)
	}
	if err := dk.publish(); err != nil {
		_ = dk.signer.SetKeys(prev)
		return err
	}
	return nil
}

// publish writes the public key set to --decision-jwks-out, atomically
// (a temporary file renamed over it).
func (dk *decisionKeys) publish() error {
	if dk.out == "" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(dk.out), ".decision-jwks-*")
	if err != nil {
		return fmt.Errorf("--decision-jwks-out: %w", err)
	}
	_, err = tmp.Write(dk.signer.PublicKeySet())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dk.out)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("--decision-jwks-out: %w", err)
	}
	return nil
}

// ServeHTTP serves the public key set (RFC 7517 section 8.5 media type).
func (dk *decisionKeys) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(dk.signer.PublicKeySet())
}
