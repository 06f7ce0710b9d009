package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/benchdata"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
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
		{"numbers", [2]int{63 << 10, 65 << 10}},
		{"text", [2]int{63 << 10, 65 << 10}},
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
	addr := startNull(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := Cases[0].Build("../examples/requests", "tok")
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer ccancel()
	resp, err := authv3.NewAuthorizationClient(conn).Check(cctx, req, grpc.WaitForReady(true))
	if err != nil || resp.GetStatus().GetCode() != 0 {
		t.Fatalf("null server: %v, %v", resp, err)
	}
}

// TestPayloadsAreWhatTheySay: the numbers case is mostly number text and
// the text case mostly non-ASCII bytes.
func TestPayloadsAreWhatTheySay(t *testing.T) {
	count := func(s string, is func(byte) bool) int {
		n := 0
		for i := range len(s) {
			if is(s[i]) {
				n++
			}
		}
		return n
	}
	num := benchdata.Numbers(64 << 10)
	if n := count(num, func(c byte) bool { return c >= '0' && c <= '9' || strings.IndexByte(".eE+-", c) >= 0 }); n < len(num)/2 {
		t.Errorf("Numbers: %d of %d bytes are number text", n, len(num))
	}
	txt := benchdata.Text(64 << 10)
	if n := count(txt, func(c byte) bool { return c >= 0x80 }); n < len(txt)/2 {
		t.Errorf("Text: %d of %d bytes are non-ASCII", n, len(txt))
	}
}

// startNull serves the null server on a loopback port until the test ends.
func startNull(t *testing.T) string {
	t.Helper()
	lis := testkit.Listen(t)
	addr := lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serveNull(ctx, addr) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// serveNull listens on its own: a caller must not dial before it does.
	testkit.PollUntil(t, "the null server listening on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// TestLoad: an open-loop run against the null server sends every request
// due and gets every one answered OK, with ordered percentiles; the bytes
// sent are the file's (the null server decodes them to the same message).
func TestLoad(t *testing.T) {
	addr := startNull(t)
	req, err := Cases[0].Build("../examples/requests", "tok")
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(t.Context(), addr, b, 400, 8, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Due != 40 || r.OK != 40 || r.Denied != 0 || r.Failed != 0 {
		t.Fatalf("%v", r)
	}
	if !(0 < r.P50 && r.P50 <= r.P99 && r.P99 <= r.P999 && r.P999 <= r.Max) {
		t.Fatalf("percentiles out of order: %v", r)
	}
	if !strings.Contains(r.String(), "due 40 ok 40 denied 0 failed 0") {
		t.Fatalf("String: %s", r)
	}
}

// TestLoadCountsFailures: requests the server rejects (here: bytes that
// are no CheckRequest) count as failed and infinitely slow.
func TestLoadCountsFailures(t *testing.T) {
	addr := startNull(t)
	_, err := Load(t.Context(), addr, []byte{0xff, 0xff}, 100, 2, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "first Check") {
		t.Fatalf("got %v, want the first Check to fail", err)
	}
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 1000; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tt := range []struct {
		give float64
		want time.Duration
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0, 1}} {
		if got := quantile(d, tt.give); got != tt.want {
			t.Errorf("quantile(%v) = %d, want %d", tt.give, got, tt.want)
		}
	}
}

// TestShape names the body field, the attributes and the headers of each
// case, with the SHA-256 of the bytes every server gets.
func TestShape(t *testing.T) {
	dir := t.TempDir()
	if err := run(t.Context(), []string{"gen", "--token", "tok", "--out", dir, "--examples", "../examples/requests"}, nil); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := run(t.Context(), []string{"shape", "--dir", dir}, &sb); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(sb.String()), "\n")
	if len(lines) != len(Cases) {
		t.Fatalf("%d lines for %d cases:\n%s", len(lines), len(Cases), sb.String())
	}
	for i, l := range lines {
		for _, want := range []string{Cases[i].Name + ":", "attributes source+destination + request.http", "raw_body", "authorization", ":path", "sha256 "} {
			if !strings.Contains(l, want) {
				t.Errorf("line %q lacks %q", l, want)
			}
		}
	}
}
