package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serveForTest runs `extauthz serve` on the example config with extra
// flags on loopback ports and returns its gRPC and HTTP addresses.
func serveForTest(t *testing.T, extra ...string) (grpcAddr, httpAddr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan error, 1)
	args := append([]string{"serve", "--config", "examples/config.yaml", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--drain-period", "0s"}, extra...)
	go func() { done <- run(ctx, args, io.Discard, &stderr) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	grpcRE := regexp.MustCompile(`"grpc_addr":"([^"]+)"`)
	httpRE := regexp.MustCompile(`"http_addr":"([^"]+)"`)
	for deadline := time.Now().Add(10 * time.Second); (grpcAddr == "" || httpAddr == "") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := grpcRE.FindStringSubmatch(stderr.String()); m != nil {
			grpcAddr = m[1]
		}
		if m := httpRE.FindStringSubmatch(stderr.String()); m != nil {
			httpAddr = m[1]
		}
	}
	if grpcAddr == "" || httpAddr == "" {
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	return grpcAddr, httpAddr
}

// TestSignInDiscoveryAndDenialAsClientSees: README's quick start. The
// protected resource metadata answers without a token; a refused call is
// HTTP 200 with the JSON-RPC error under --denial-status auto (the
// example request is Streamable HTTP) and 403 under http-error.
func TestSignInDiscoveryAndDenialAsClientSees(t *testing.T) {
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--config", "examples/config.yaml", "--sub", "alice"}, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	for mode, wantStatus := range map[string]string{"auto": "200", "http-error": "403"} {
		t.Run(mode, func(t *testing.T) {
			grpcAddr, httpAddr := serveForTest(t, "--denial-status", mode)
			resp, err := http.Get("http://" + httpAddr + "/.well-known/oauth-protected-resource/mcp")
			if err != nil {
				t.Fatal(err)
			}
			var md struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
			}
			err = json.NewDecoder(resp.Body).Decode(&md)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || md.Resource != "https://mcp.example.com/mcp" || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != "https://idp.example.com" {
				t.Errorf("metadata: %d %+v %v", resp.StatusCode, md, err)
			}
			var out bytes.Buffer
			err = run(t.Context(), []string{"check", "--addr", grpcAddr, "--token", strings.TrimSpace(tok.String()), "examples/requests/delete-repo-denied.json"}, &out, io.Discard)
			got := out.String()
			if exitCode(err) != 1 || !strings.Contains(got, "http_status:    "+wantStatus+"\n") ||
				!strings.Contains(got, `"code":-32010`) || !strings.Contains(got, `"reason":"policy_denied"`) {
				t.Errorf("check: exit %d\n%s", exitCode(err), got)
			}
		})
	}
}

func TestDenialStatusFlag(t *testing.T) {
	err := run(t.Context(), []string{"serve", "--config", "examples/config.yaml", "--denial-status", "always-200"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--denial-status") {
		t.Errorf("err = %v", err)
	}
}
