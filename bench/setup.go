package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Stream setup through the sidecar (issue 31): how long a client waits
// for the response headers of a GET (the standalone SSE stream the MCP
// clients open before their first call) against those of a POST, each
// request through Envoy (here the e2e rig's stand-in, on envoy/sidecar.yaml)
// and its Check and side stream, to a do-nothing MCP upstream.

// setupPing is the POST of the comparison: a JSON-RPC ping, answered as
// JSON (the quick-start policy allows it; its side stream opens at the
// response headers).
const setupPing = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// seqHeader numbers each request of Setup, so the upstream in the same
// process can note when it arrived.
const seqHeader = "x-bench-seq"

// serveUpstream answers as a do-nothing MCP server on lis until ctx ends:
// a GET with the headers of an SSE stream at once (flushed), then holds it
// until the client goes; a POST with a JSON-RPC result for id 1. When
// arrived is not nil, it is called with each request's seqHeader value as
// the request arrives.
func serveUpstream(ctx context.Context, lis net.Listener, arrived func(seq string)) error {
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived != nil {
			arrived(r.Header.Get(seqHeader))
		}
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			<-r.Context().Done()
		case http.MethodPost:
			_, _ = io.Copy(io.Discard, r.Body)
			const body = `{"jsonrpc":"2.0","id":1,"result":{}}`
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = io.WriteString(w, body)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// SetupResult is one kind's times, in µs, from each request's release on
// schedule: to the upstream (Up*: when the MCP server got it) and to the
// response headers at the client.
type SetupResult struct {
	Kind           string
	OK, Failed     int
	UpP50, UpP99   float64
	P50, P99, P999 float64
}

func (r SetupResult) String() string {
	return fmt.Sprintf("%-4s ok %d failed %d  to the upstream p50 %.0f p99 %.0f  to the headers p50 %.0f p99 %.0f p99.9 %.0f µs",
		r.Kind, r.OK, r.Failed, r.UpP50, r.UpP99, r.P50, r.P99, r.P999)
}

// Setup serves the do-nothing upstream on upstream (serveUpstream) and
// sends, open loop at rps requests per second for d, a GET and a POST ping
// in turn to url (the sidecar in front of that upstream) with token, each
// timed from its release on schedule to its arrival at the upstream and to
// its response headers (a GET's stream is closed there); a request that
// fails, is not 200 or never reached the upstream counts as failed. It
// returns the GET's and the POST's results.
func Setup(ctx context.Context, url, upstream, token string, rps float64, d time.Duration) (get, post SetupResult, err error) {
	if rps <= 0 || d <= 0 {
		return get, post, errors.New("setup: rate and duration must be positive")
	}
	var arrivals sync.Map // seq -> time.Time
	lis, err := net.Listen("tcp", upstream)
	if err != nil {
		return get, post, err
	}
	uctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- serveUpstream(uctx, lis, func(seq string) { arrivals.Store(seq, time.Now()) })
	}()
	defer func() { stop(); <-served }()
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var mu sync.Mutex
	times, ups := map[string][]float64{}, map[string][]float64{}
	failed := map[string]int{}
	one := func(kind string, seq int, due time.Time) {
		var body io.Reader
		method := http.MethodGet
		if kind == "POST" {
			method, body = http.MethodPost, strings.NewReader(setupPing)
		}
		req, rerr := http.NewRequestWithContext(ctx, method, url, body)
		if rerr != nil {
			mu.Lock()
			failed[kind]++
			mu.Unlock()
			return
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set(seqHeader, fmt.Sprint(seq))
		if kind == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, rerr := client.Do(req)
		took := float64(time.Since(due).Microseconds())
		ok := rerr == nil && resp.StatusCode == http.StatusOK
		if rerr == nil {
			_ = resp.Body.Close()
		}
		at, reached := arrivals.LoadAndDelete(fmt.Sprint(seq))
		mu.Lock()
		if ok && reached {
			times[kind] = append(times[kind], took)
			ups[kind] = append(ups[kind], float64(at.(time.Time).Sub(due).Microseconds()))
		} else {
			failed[kind]++
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	start := time.Now()
	every := time.Duration(float64(time.Second) / rps)
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * every)
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(due))
		kind := "GET"
		if i%2 == 1 {
			kind = "POST"
		}
		wg.Add(1)
		go func() { defer wg.Done(); one(kind, i, due) }()
	}
	wg.Wait()
	pct := func(ts []float64, q float64) float64 {
		if len(ts) == 0 {
			return 0
		}
		return ts[min(len(ts)-1, int(q*float64(len(ts))))]
	}
	res := func(kind string) SetupResult {
		ts, us := times[kind], ups[kind]
		slices.Sort(ts)
		slices.Sort(us)
		return SetupResult{Kind: kind, OK: len(ts), Failed: failed[kind], UpP50: pct(us, 0.50), UpP99: pct(us, 0.99),
			P50: pct(ts, 0.50), P99: pct(ts, 0.99), P999: pct(ts, 0.999)}
	}
	return res("GET"), res("POST"), nil
}
