package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// One port, two services: serve answers ext_proc's Process next to Check,
// and a processed JSON answer without Check's metadata is refused (503).
func TestServeRegistersExtProc(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "cursor.key")
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr, _ := serveForTest(t, "--response-seam", "--cursor-key-file", keyFile)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := extprocv3.NewExternalProcessorClient(conn).Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")}, {Key: "content-type", RawValue: []byte("application/json")}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if ir := resp.GetImmediateResponse(); ir == nil || ir.GetStatus().GetCode() != 503 || !strings.Contains(string(ir.GetBody()), "no_authorization_metadata") {
		t.Fatalf("response %v", resp)
	}
	_ = stream.CloseSend()
}

func TestServeRefusesBadCursorKeyFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "cursor.key")
	if err := os.WriteFile(bad, []byte("c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeConfig([]string{"--config", "examples/config.yaml", "--cursor-key-file", bad}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newService(cfg, zap.NewNop(), zap.NewNop(), newMetrics(prometheus.NewRegistry())); err == nil || !strings.Contains(err.Error(), "--cursor-key-file") || strings.Contains(err.Error(), "c2hvcnQ") {
		t.Fatalf("err %v", err)
	}
}

// TestServeRefusesPublishedCursorKey: a --cursor-key-file holding the
// published examples/TEST-ONLY-cursor-key (alone or behind a fresh key, as
// during a rotation) stops serve at start-up naming the file it comes from,
// never the key, unless --allow-test-keys; then it starts with a warning.
// A fresh key file starts without one.
func TestServeRefusesPublishedCursorKey(t *testing.T) {
	published, err := os.ReadFile("examples/TEST-ONLY-cursor-key")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fresh := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("f", 32)))
	freshFile := write("fresh.key", fresh+"\n")
	rotated := write("rotated.key", fresh+"\n"+string(published))
	var publishedKey string
	for _, l := range strings.Split(string(published), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			publishedKey = strings.TrimRight(l, "=")
		}
	}
	if publishedKey == "" {
		t.Fatal("no key in examples/TEST-ONLY-cursor-key")
	}
	const warning = "--cursor-key-file holds a published test key (--allow-test-keys)"
	tests := []struct {
		name    string
		give    []string
		refused bool
		warned  bool
	}{
		{"the published key", []string{"--cursor-key-file", "examples/TEST-ONLY-cursor-key"}, true, false},
		{"the published key behind a fresh one", []string{"--cursor-key-file", rotated}, true, false},
		{"the published key with --allow-test-keys", []string{"--cursor-key-file", "examples/TEST-ONLY-cursor-key", "--allow-test-keys"}, false, true},
		{"a fresh key", []string{"--cursor-key-file", freshFile}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh key set for tokens: only the cursor key is at issue.
			jwks := filepath.Join(t.TempDir(), "jwks.json")
			writeJSON(t, jwks, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{freshKey(t, "fresh")}})
			args := append([]string{"--policy", "examples/policy.yaml", "--issuer", "https://idp.example.com", "--audience", "https://mcp.example.com/mcp",
				"--jwks-file", jwks, "--state-store-memory-per-replica-ok", "--response-seam"}, tt.give...)
			cfg, err := parseServeConfig(args, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			svc, err := newService(cfg, zap.New(core), zap.NewNop(), newMetrics(prometheus.NewRegistry()))
			if svc != nil {
				defer svc.store.Close()
			}
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "--cursor-key-file") || !strings.Contains(err.Error(), "published as examples/TEST-ONLY-cursor-key") ||
					!strings.Contains(err.Error(), "unless --allow-test-keys") || strings.Contains(err.Error(), publishedKey) {
					t.Fatalf("err %v; want a refusal naming examples/TEST-ONLY-cursor-key and --allow-test-keys, never the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if warned := logs.FilterMessageSnippet(warning).Len() == 1; warned != tt.warned {
				t.Errorf("warned %v, want %v: %v", warned, tt.warned, logs.All())
			}
			for _, e := range logs.All() {
				if strings.Contains(fmt.Sprint(e.ContextMap()), publishedKey) {
					t.Errorf("the key is logged: %v", e.ContextMap())
				}
			}
		})
	}
}
