package main

import (
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
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
