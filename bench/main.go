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
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

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
		return errors.New("usage: bench null|gen|probe [flags]")
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
	duration := fs.Duration("duration", 10*time.Second, "how long to send (load)")
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
	{Name: "numbers", Example: "search-allowed.json", Args: NumberArgs(64 << 10), Want: "allowed"},
	{Name: "text", Example: "search-allowed.json", Args: TextArgs(64 << 10), Want: "allowed"},
	{Name: "denied", Example: "delete-repo-denied.json", Want: "policy_denied"},
}

// NumberArgs returns tools/call arguments of about n bytes that are mostly
// numbers: shortest round-trip doubles of 16-17 significant digits (as
// JavaScript and Python print measurements), short decimals, exponents
// (1.5e10, 6.02E23, -2.5e-7), negative zero, integers up to 2^53 and
// powers of ten beyond it; each exactly representable, so allowed.
func NumberArgs(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteString(`{"series":"sensor-7","points":[`)
	for i := 0; sb.Len() < n-200; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		f := rng.Float64()*2000 - 1000
		fmt.Fprintf(&sb, `{"t":%d,"v":%s,"w":[%s,%d.%de%d,%s,%d,1%s,%s],"ok":%t}`,
			1700000000000+i*250, strconv.FormatFloat(f, 'g', -1, 64),
			strconv.FormatFloat(float64(i%1000)/8, 'f', -1, 64), i%10, i%97, i%30-15,
			strconv.FormatFloat(rng.NormFloat64()*1e-6, 'e', -1, 64), 1<<53-i, strings.Repeat("0", 16+i%5),
			[]string{"-0", "0.5", "6.02E23", "1.5e10", "-2.5e-7", "1E21"}[i%6], f >= 0)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

// TextArgs returns tools/call arguments of about n bytes that are mostly
// non-ASCII strings (CJK, Cyrillic, Greek, Devanagari, emoji), some member
// names non-ASCII too, with the odd escape.
func TextArgs(n int) string {
	texts := []string{
		"東京都渋谷区の店舗で購入した商品の返金を希望します。",
		"Здравствуйте, прошу вернуть деньги за заказ №",
		"Παρακαλώ επιστρέψτε τα χρήματα για την παραγγελία",
		"😀🧾🚀 — café crème brûlée, naïve façade, Ångström",
		`नमस्ते, कृपया मेरा पैसा वापस करें \"जल्दी\"`,
		"한국어 텍스트와 중국语文本混合",
	}
	var sb strings.Builder
	sb.WriteString(`{"язык":"mixed","messages":[`)
	for i := 0; sb.Len() < n-600; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"автор":"Łukasz Żółć %d","текст":"%s%s","タグ":["返金","срочно","ελληνικά"],"note":"%s\n"}`,
			i, texts[i%len(texts)], texts[(i+1)%len(texts)], texts[(i+2)%len(texts)])
	}
	sb.WriteString(`]}`)
	return sb.String()
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
		b, err := os.ReadFile(filepath.Join(dir, c.Name+".bin"))
		if err != nil {
			return err
		}
		req := &authv3.CheckRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
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
