package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// checkMethod is the full gRPC method name of ext_authz's Check.
const checkMethod = "/envoy.service.auth.v3.Authorization/Check"

// rawMsg is a message already encoded: rawCodec sends and receives its
// bytes as they are.
type rawMsg struct{ b []byte }

// rawCodec is a gRPC codec (content-subtype proto) that does no encoding:
// the load generator sends the bytes of the CheckRequest file, so every
// server gets the same bytes and the client spends no CPU marshalling.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMsg)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T is not *rawMsg", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMsg)
	if !ok {
		return fmt.Errorf("rawCodec: %T is not *rawMsg", v)
	}
	m.b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// LoadResult is one open-loop run: how many Checks were due, how they
// ended, and the latency percentiles over all of them, each measured from
// the time the request was released on schedule (not when a stream was
// free to send it), so queueing behind a slow server counts. A request that
// failed or did not finish counts as infinitely slow.
type LoadResult struct {
	Rate     float64       // requests per second asked for
	Due      int           // requests scheduled
	OK       int           // answered with gRPC OK and CheckResponse status OK
	Denied   int           // answered, but the CheckResponse status was not OK
	Failed   int           // gRPC error or not answered in time
	Elapsed  time.Duration // first due time to last answer
	P50, P99 time.Duration
	P999     time.Duration
	Max      time.Duration
}

// String is one line: rate, counts, achieved rate, percentiles in µs.
func (r LoadResult) String() string {
	us := func(d time.Duration) string {
		if d == time.Duration(math.MaxInt64) {
			return "inf"
		}
		return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("rate %.0f due %d ok %d denied %d failed %d achieved %.0f p50 %s p99 %s p99.9 %s max %s",
		r.Rate, r.Due, r.OK, r.Denied, r.Failed, float64(r.OK+r.Denied)/r.Elapsed.Seconds(),
		us(r.P50), us(r.P99), us(r.P999), us(r.Max))
}

// Load sends req (an encoded CheckRequest) to addr at rps requests per
// second for d, open loop: request i is due at start + i/rps whether or
// not earlier ones were answered, and goes out on the first of streams
// concurrent streams (one connection) that is free. A request not answered
// within d + 5 s of the start fails. One goroutine keeps the schedule: it
// sleeps until the next request is due, then releases every request due by
// then. Latency runs from that release, so a server that keeps every
// stream busy is charged the wait for a free one, but the generator's own
// timer lateness (about a millisecond on a loaded machine, which makes the
// arrivals a little bursty) is not. It does not spin: a goroutine that
// never parks would leave the runtime polling the network only every
// 10 ms or so.
func Load(ctx context.Context, addr string, req []byte, rps float64, streams int, d time.Duration) (LoadResult, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return LoadResult{}, err
	}
	defer conn.Close()
	in := &rawMsg{b: req}
	// One Check first: the connection is up before the clock starts.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = conn.Invoke(wctx, checkMethod, in, &rawMsg{}, grpc.WaitForReady(true))
	cancel()
	if err != nil {
		return LoadResult{}, fmt.Errorf("first Check: %w", err)
	}

	n := int(rps * d.Seconds())
	if n < 1 {
		return LoadResult{}, errors.New("load: rate × duration is less than one request")
	}
	interval := time.Duration(float64(time.Second) / rps)
	type job struct {
		i  int
		at time.Time // released
	}
	jobs := make(chan job, n)
	lat := make([]time.Duration, n)
	status := make([]int8, n) // 0 failed, 1 ok, 2 denied
	rctx, rcancel := context.WithTimeout(ctx, d+5*time.Second)
	defer rcancel()
	start := time.Now().Add(10 * time.Millisecond)
	var last time.Time
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			out := &rawMsg{}
			resp := &authv3.CheckResponse{}
			for j := range jobs {
				if rctx.Err() != nil {
					lat[j.i] = time.Duration(math.MaxInt64)
					continue
				}
				err := conn.Invoke(rctx, checkMethod, in, out)
				done := time.Now()
				lat[j.i] = done.Sub(j.at)
				switch {
				case err != nil:
					lat[j.i] = time.Duration(math.MaxInt64)
				case proto.Unmarshal(out.b, resp) == nil && resp.GetStatus().GetCode() == 0:
					status[j.i] = 1
				default:
					status[j.i] = 2
				}
				mu.Lock()
				if done.After(last) {
					last = done
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; i < n; {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		now := time.Now()
		for ; i < n && !start.Add(time.Duration(i)*interval).After(now); i++ {
			jobs <- job{i, now}
		}
	}
	close(jobs)
	wg.Wait()

	r := LoadResult{Rate: rps, Due: n, Elapsed: last.Sub(start)}
	if r.Elapsed <= 0 {
		r.Elapsed = time.Nanosecond
	}
	for _, s := range status {
		switch s {
		case 1:
			r.OK++
		case 2:
			r.Denied++
		default:
			r.Failed++
		}
	}
	slices.Sort(lat)
	r.P50, r.P99, r.P999, r.Max = quantile(lat, 0.50), quantile(lat, 0.99), quantile(lat, 0.999), lat[n-1]
	return r, nil
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// shape prints what the CheckRequests carry, so a figure can say which
// shape was measured: the attributes set, the body field and size, the
// header names, the encoded size and its SHA-256 (the same bytes go to
// every server).
func shape(dir string, w io.Writer) error {
	for _, c := range Cases {
		b, req, err := readCase(dir, c.Name)
		if err != nil {
			return err
		}
		a := req.GetAttributes()
		h := a.GetRequest().GetHttp()
		var set []string
		if a.GetSource() != nil {
			set = append(set, "source")
		}
		if a.GetDestination() != nil {
			set = append(set, "destination")
		}
		if len(a.GetContextExtensions()) > 0 {
			set = append(set, "context_extensions")
		}
		if a.GetMetadataContext() != nil {
			set = append(set, "metadata_context")
		}
		if a.GetTlsSession() != nil {
			set = append(set, "tls_session")
		}
		field, size := "raw_body", len(h.GetRawBody())
		if h.GetBody() != "" {
			field, size = "body", len(h.GetBody())
		}
		names := make([]string, 0, len(h.GetHeaders()))
		for k := range h.GetHeaders() {
			names = append(names, k)
		}
		slices.Sort(names)
		fmt.Fprintf(w, "%s: %d bytes encoded (sha256 %x), attributes %s + request.http, %s %d bytes, %d headers: %s\n",
			c.Name, len(b), sha256.Sum256(b), strings.Join(set, "+"), field, size, len(names), strings.Join(names, " "))
	}
	return nil
}
