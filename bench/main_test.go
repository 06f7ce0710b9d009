package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// TestGen: the files run.sh hands to ghz are what Envoy would send (valid
// JSON bodies of the intended sizes, content-length, the token) and the
// protoset resolves the Check method.
func TestGen(t *testing.T) {
	dir := t.TempDir()
	if err := run(t.Context(), []string{"gen", "--token", "tok", "--out", dir, "--examples", "../examples/requests"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		give     string
		wantBody [2]int // body length range
	}{
		{"small", [2]int{100, 1 << 10}},
		{"64KiB", [2]int{63 << 10, 65 << 10}},
		{"denied", [2]int{50, 1 << 10}},
	} {
		b, err := os.ReadFile(filepath.Join(dir, tt.give+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		req := &authv3.CheckRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Fatal(err)
		}
		h := req.GetAttributes().GetRequest().GetHttp()
		body := h.GetRawBody()
		if len(body) < tt.wantBody[0] || len(body) > tt.wantBody[1] || !json.Valid(body) {
			t.Errorf("%s: body of %d bytes (valid JSON: %v)", tt.give, len(body), json.Valid(body))
		}
		if h.GetHeaders()["content-length"] != strconv.Itoa(len(body)) || h.GetHeaders()["authorization"] != "Bearer tok" {
			t.Errorf("%s: headers %v", tt.give, h.GetHeaders())
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "auth.protoset"))
	if err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(raw, set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatalf("protoset does not resolve: %v", err)
	}
	if _, err := files.FindDescriptorByName("envoy.service.auth.v3.Authorization.Check"); err != nil {
		t.Fatal(err)
	}
}

// TestNullServer: the null server answers OK over gRPC on loopback.
func TestNullServer(t *testing.T) {
	lis := testkit.Listen(t)
	addr := lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serveNull(ctx, addr) }()
	defer func() {
		cancel()
		<-done
	}()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := Cases[0].Build("../examples/requests", "tok")
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	resp, err := authv3.NewAuthorizationClient(conn).Check(cctx, req, grpc.WaitForReady(true))
	if err != nil || resp.GetStatus().GetCode() != 0 {
		t.Fatalf("null server: %v, %v", resp, err)
	}
}
