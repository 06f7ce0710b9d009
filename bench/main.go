// Command bench holds the Go pieces of bench/run.sh, the CPU-per-request
// measurement of the ext_authz service against a do-nothing ext_authz
// server:
//
//	bench null  --addr ADDR           serve envoy.service.auth.v3 answering OK at once
//	bench gen   --token JWT --out DIR write the CheckRequests (ghz -B files) and the protoset
//	bench probe --addr ADDR --dir DIR send each CheckRequest once, print its decision
//	bench shape --dir DIR             print the CheckRequests' shape (fields, headers, sizes, SHA-256)
//	bench load  --addr ADDR --dir DIR --case NAME --rps N [--streams 64] [--duration 10s]
//	                                  open-loop load at a fixed rate, print latency percentiles
//	bench seamgen   --addr OURS --token JWT --out DIR
//	                                  write the seam cases (Check + ProcessingRequests) as Envoy sends them
//	bench seamshape --dir DIR         print the seam cases' message shapes
//	bench seamprobe --addr ADDR --dir DIR [--filtered]
//	                                  send each seam case once; --filtered: fail unless lists were filtered
//	bench seamload  --addr ADDR --dir DIR --case NAME [--streams 50] [--duration 8s]
//	                                  closed loop: Check, then the route's side stream; print requests done
//	bench setup     --url URL --addr UPSTREAM --token JWT --rps N [--duration 10s]
//	                                  serve a do-nothing MCP upstream on UPSTREAM and send, open loop,
//	                                  a GET and a POST ping in turn through the sidecar at URL: time to
//	                                  the upstream and to the response headers; p50, p99 and GET / POST
//
// null serves both envoy.service.auth.v3.Authorization (OK at once) and
// envoy.service.ext_proc.v3.ExternalProcessor (the empty answer to each
// message), as the service serves both on one port.
//
// The CheckRequests are built as Envoy's ext_authz filter builds them (lower-cased
// headers with pseudo-headers, body in raw_body) from the example requests of
// examples/requests. load sends the bytes of DIR/NAME.bin as they are (no
// re-encoding), so every server measured gets byte-identical CheckRequests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/benchdata"
	"github.com/mcp-extauthz/mcp-extauthz/internal/capture"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: bench null|gen|probe|shape|load|seamgen|seamshape|seamprobe|seamload|setup [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9291", "gRPC address (null, probe)")
	token := fs.String("token", "", "bearer token for the requests (gen)")
	out := fs.String("out", ".", "output directory (gen)")
	dir := fs.String("dir", ".", "directory of the CheckRequests (probe)")
	examples := fs.String("examples", "examples/requests", "captured example requests (gen)")
	cs := fs.String("case", "small", "request to send: a Case name (load)")
	rps := fs.Float64("rps", 1000, "requests per second, open loop (load)")
	streams := fs.Int("streams", 64, "concurrent streams on one connection (load)")
	duration := fs.Duration("duration", 10*time.Second, "how long to send (load, seamload)")
	filtered := fs.Bool("filtered", false, "fail unless list answers were filtered (seamprobe)")
	url := fs.String("url", "http://127.0.0.1:8080/mcp", "the sidecar's MCP URL (setup)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "null":
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serveNull(ctx, *addr)
	case "gen":
		if *token == "" {
			return errors.New("gen: --token is required")
		}
		return gen(*examples, *token, *out)
	case "probe":
		return probe(ctx, *addr, *dir, stdout)
	case "shape":
		return shape(*dir, stdout)
	case "load":
		b, err := os.ReadFile(filepath.Join(*dir, *cs+".bin"))
		if err != nil {
			return err
		}
		if *rps <= 0 || *streams <= 0 || *duration <= 0 {
			return errors.New("load: --rps, --streams and --duration must be positive")
		}
		r, err := Load(ctx, *addr, b, *rps, *streams, *duration)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, r)
		return nil
	case "seamgen":
		if *token == "" {
			return errors.New("seamgen: --token is required")
		}
		return seamGen(ctx, *addr, *examples, *token, *out)
	case "setup":
		if *token == "" {
			return errors.New("setup: --token is required")
		}
		get, post, err := Setup(ctx, *url, *addr, *token, *rps, *duration)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n%s\n", get, post)
		if post.P50 > 0 && post.UpP50 > 0 {
			fmt.Fprintf(stdout, "GET / POST: to the upstream p50 %.2fx p99 %.2fx; to the headers p50 %.2fx p99 %.2fx\n",
				get.UpP50/post.UpP50, get.UpP99/post.UpP99, get.P50/post.P50, get.P99/post.P99)
		}
		return nil
	case "seamshape":
		return seamShape(*dir, stdout)
	case "seamprobe":
		return seamProbe(ctx, *addr, *dir, *filtered, stdout)
	case "seamload":
		f, err := readSeam(*dir, *cs)
		if err != nil {
			return err
		}
		if *streams <= 0 || *duration <= 0 {
			return errors.New("seamload: --streams and --duration must be positive")
		}
		ok, failed, err := SeamLoad(ctx, *addr, f, *streams, *duration)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "ok %d failed %d\n", ok, failed)
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// nullServer answers every Check with OK at once: the floor of an ext_authz
// service in grpc-go (transport, CheckRequest decoding, response encoding).
type nullServer struct {
	authv3.UnimplementedAuthorizationServer
}

func (nullServer) Check(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	return &authv3.CheckResponse{Status: &rpcstatus.Status{}}, nil
}

func serveNull(ctx context.Context, addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(16 << 20))
	authv3.RegisterAuthorizationServer(gs, nullServer{})
	extprocv3.RegisterExternalProcessorServer(gs, nullProcessor{})
	go func() {
		<-ctx.Done()
		gs.Stop()
	}()
	return gs.Serve(lis)
}

// Case is one measured request: the example it comes from and its decision.
type Case struct {
	Name    string // file stem of the ghz binary file: <Name>.bin
	Example string // file in examples/requests
	Args    string // replaces params.arguments when not empty
	Want    string // reason Check gives
}

// Cases are the measured requests: a small allowed tools/call, three with
// 64 KiB of arguments (mixed; mostly numbers; mostly non-ASCII text: the
// slow paths of a canonicalizer), and a denied one.
var Cases = []Case{
	{Name: "small", Example: "search-allowed.json", Want: "allowed"},
	{Name: "64KiB", Example: "search-allowed.json", Args: LargeArgs(64 << 10), Want: "allowed"},
	{Name: "numbers", Example: "search-allowed.json", Args: benchdata.Numbers(64 << 10), Want: "allowed"},
	{Name: "text", Example: "search-allowed.json", Args: benchdata.Text(64 << 10), Want: "allowed"},
	{Name: "denied", Example: "delete-repo-denied.json", Want: "policy_denied"},
}

// LargeArgs returns tools/call arguments of about n bytes: a query and an
// array of small objects with Unicode strings and decimals.
func LargeArgs(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"query":"refund policy Zürich 🧾","items":[`)
	for i := 0; sb.Len() < n-64; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"Crème brûlée №%d — 東京","price":%d.%02d,"tags":["ä","ß"]}`, i, i, i%500, i%100)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

// Build returns the CheckRequest of c with token, as Envoy sends it.
func (c Case) Build(examples, token string) (*authv3.CheckRequest, error) {
	b, err := os.ReadFile(filepath.Join(examples, c.Example))
	if err != nil {
		return nil, err
	}
	cr, err := capture.Parse(b)
	if err != nil {
		return nil, err
	}
	if c.Args != "" {
		body := string(cr.Body)
		i := strings.Index(body, `"arguments":`)
		j := strings.LastIndex(body, `}},"jsonrpc"`)
		if i < 0 || j < i {
			return nil, fmt.Errorf("%s: no arguments to replace", c.Example)
		}
		cr.Body = []byte(body[:i+len(`"arguments":`)] + c.Args + body[j+1:])
	}
	cr.Headers["authorization"] = "Bearer " + token
	cr.Headers["content-length"] = strconv.Itoa(len(cr.Body))
	return cr.CheckRequest(true), nil
}

func gen(examples, token, out string) error {
	for _, c := range Cases {
		req, err := c.Build(examples, token)
		if err != nil {
			return err
		}
		b, err := proto.Marshal(req)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, c.Name+".bin"), b, 0o644); err != nil {
			return err
		}
	}
	set, err := proto.Marshal(Protoset(authv3.File_envoy_service_auth_v3_external_auth_proto))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "auth.protoset"), set, 0o644)
}

// Protoset returns fd and every file it imports, dependencies first, as ghz
// reads them with --protoset.
func Protoset(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorSet {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(fd)
	return set
}

// probe sends each case's CheckRequest once and fails unless Check gives
// the case's reason.
func probe(ctx context.Context, addr, dir string, stdout io.Writer) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	for _, c := range Cases {
		b, req, err := readCase(dir, c.Name)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := client.Check(cctx, req)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		reason := resp.GetDynamicMetadata().GetFields()["reason"].GetStringValue()
		fmt.Fprintf(stdout, "%s: %d bytes, reason %s\n", c.Name, len(b), reason)
		if reason != c.Want {
			return fmt.Errorf("%s: reason %q, want %q", c.Name, reason, c.Want)
		}
	}
	return nil
}

// readCase reads DIR/NAME.bin, the encoded CheckRequest of a case, and
// decodes it.
func readCase(dir, name string) ([]byte, *authv3.CheckRequest, error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".bin"))
	if err != nil {
		return nil, nil, err
	}
	req := &authv3.CheckRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, nil, fmt.Errorf("%s.bin: %w", name, err)
	}
	return b, req, nil
}
