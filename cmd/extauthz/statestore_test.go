package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

// TestServeStateStoreFlags: the memory store is refused for approvals and
// idempotency keys unless acknowledged; the Redis settings are checked at
// start-up, one line each, never repeating a password.
func TestServeStateStoreFlags(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--policy", "examples/policy.yaml", "--issuer", "https://i", "--audience", "https://mcp.example.com/mcp"}
	tests := []struct {
		name    string
		give    []string
		giveEnv map[string]string
		want    string // in the error; "" means valid
	}{
		{"memory with the default idempotency header", nil, nil, "--state-store-memory-per-replica-ok"},
		{"memory with approvals", []string{"--idempotency-header", "", "--approver-issuer", "https://approvals.example.com", "--approver-jwks-file", "examples/approver-jwks.json"}, nil, "approvals (--approver-issuer)"},
		{"memory with idempotency keys in _meta", []string{"--idempotency-header", "", "--idempotency-meta", "io.mcp-extauthz/idempotency-key"}, nil, "idempotency keys (--idempotency-meta)"},
		{"memory, acknowledged", []string{"--state-store-memory-per-replica-ok"}, nil, ""},
		{"memory, acknowledged in the environment", nil, map[string]string{"EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK": "true"}, ""},
		{"memory with nothing to store", []string{"--idempotency-header", ""}, nil, ""},
		{"acknowledgment with Redis", []string{"--state-store", "redis://h:6379", "--state-store-memory-per-replica-ok"}, nil, "is for --state-store memory"},
		{"Redis", []string{"--state-store", "redis://h:6379"}, nil, ""},
		{"Sentinel", []string{"--state-store", "redis-sentinel://s1:26379,s2:26379/mymaster", "--state-store-sentinel-password-file", pw}, nil, ""},
		{"Cluster with TLS", []string{"--state-store", "rediss-cluster://n1:7000,n2:7000", "--state-store-tls-server-name", "redis.example.com"}, nil, ""},
		{"password file", []string{"--state-store", "redis://extauthz@h", "--state-store-password-file", pw}, nil, ""},
		{"password in the environment", []string{"--state-store", "redis://extauthz@h"}, map[string]string{envStateStorePassword: "s3cret"}, ""},
		{"password in the environment and the URL", []string{"--state-store", "redis://extauthz:secret@h"}, map[string]string{envStateStorePassword: "other"}, "give one"},
		{"password with memory", []string{"--state-store-memory-per-replica-ok"}, map[string]string{envStateStorePassword: "secret"}, "--state-store is memory"},
		{"wait with memory", []string{"--state-store-memory-per-replica-ok", "--state-store-wait-replicas", "1"}, nil, "need a Redis URL"},
		{"wait", []string{"--state-store", "redis://h", "--state-store-wait-replicas", "2"}, nil, ""},
		{"wait without timeout", []string{"--state-store", "redis://h", "--state-store-wait-replicas", "1", "--state-store-wait-timeout", "0s"}, nil, "timeout of 1ms"},
		{"TLS CA on plaintext", []string{"--state-store", "redis://u:secret@h", "--state-store-tls-ca-file", pw}, nil, "rediss"},
		{"query parameters", []string{"--state-store", "rediss://u:secret@h/0?skip_verify=true"}, nil, "query parameters"},
		{"password file missing", []string{"--state-store", "redis://h", "--state-store-password-file", filepath.Join(dir, "none")}, nil, "password file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseServeConfig(append(append([]string{}, base...), tt.give...), func(k string) string { return tt.giveEnv[k] }, io.Discard)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want a valid configuration", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
				t.Fatalf("err = %v (config %+v), want one line containing %q and no password", err, c, tt.want)
			}
		})
	}
}

// TestServeStateStorePasswordVariableIsNoUnknownFlag: the password
// variables have no flag (a command line is visible to every user of the
// host) and are not reported as typos.
func TestServeStateStorePasswordVariableIsNoUnknownFlag(t *testing.T) {
	t.Setenv(envStateStorePassword, "s3cret")
	var warn bytes.Buffer
	c, err := parseServeConfig([]string{"--policy", "examples/policy.yaml", "--issuer", "https://i", "--audience", "https://mcp.example.com/mcp", "--state-store", "redis://extauthz@h"}, os.Getenv, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if c.StateStoreRedis.Password != "s3cret" || strings.Contains(warn.String(), envStateStorePassword) {
		t.Fatalf("password %q, warnings %s", c.StateStoreRedis.Password, warn.String())
	}
	var usage bytes.Buffer
	_, _ = parseServeConfig([]string{"-h"}, os.Getenv, &usage)
	if strings.Contains(usage.String(), "state-store-password ") || !strings.Contains(usage.String(), "state-store-password-file") {
		t.Errorf("usage offers a password flag or no password file:\n%s", usage.String())
	}
}

// TestServeStateStoreReachesRedis: the flags and variables reach the
// store serve builds: an ACL user whose password comes from a file named
// in the config file (relative to it), claims waited for nowhere.
func TestServeStateStoreReachesRedis(t *testing.T) {
	srv := statetest.StartServer(t, "--user", "default", "off", "--user", "extauthz", "on", ">s3cret", "~mcp-extauthz:*", "-@all",
		"+ping", "+hello", "+set", "+get", "+del", "+eval", "+evalsha", "+wait")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "redis-password"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("examples/policy.yaml")
	conf := filepath.Join(dir, "config.yaml")
	body := "policy: " + abs + "\nissuer: https://i\naudience: [https://mcp.example.com/mcp]\nstate-store: redis://extauthz@" + srv.Addr + "/0\nstate-store-password-file: redis-password\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeConfig([]string{"--config", conf}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := newBinding(cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := "test:" + t.Name()
	claimed, _, err := b.Store.Claim(ctx, key, "d", time.Minute)
	if err != nil || !claimed {
		t.Fatalf("claim through serve's store: %v, %v", claimed, err)
	}
	if claimed, _, err = b.Store.Claim(ctx, key, "d", time.Minute); err != nil || claimed {
		t.Fatalf("second claim: %v, %v; want held", claimed, err)
	}
}

// TestDefinitionStoreOwnBudget: with the memory state store, tool
// definition observations fill a store of their own: approvals and
// idempotency keys still claim when it is full. With Redis they share the
// one store (every replica must see the same observations).
func TestDefinitionStoreOwnBudget(t *testing.T) {
	ctx := context.Background()
	main := state.NewMemory(4, nil)
	pins := definitionStore("memory", main)
	if pins == state.Reader(main) {
		t.Fatal("memory: observations share the approvals' store")
	}
	for i := 0; ; i++ {
		if _, _, err := pins.Claim(ctx, fmt.Sprintf("tooldef:%d", i), "x", time.Hour); err != nil {
			break // full
		}
		if i > 1_000_000 {
			t.Fatal("the observation store never fills")
		}
	}
	if claimed, _, err := main.Claim(ctx, "approval:jti-1", "x", time.Hour); err != nil || !claimed {
		t.Errorf("an approval claim after observations filled their store: %v %v", claimed, err)
	}
	if got := definitionStore("redis://127.0.0.1:6379", main); got != state.Reader(main) {
		t.Error("redis: observations not in the shared store")
	}
}
