package state_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// partitionProxy forwards TCP connections from a 127.0.0.1 port to a
// Redis server. Once cut, the replication connections through it (those
// whose client sent PSYNC) lose every byte either way, while both ends
// stay connected: a partition between a primary and its replica that
// neither notices before its timeouts. Other connections pass.
type partitionProxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *partitionProxy {
	t.Helper()
	ln := testkit.Listen(t)
	p := &partitionProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			var repl atomic.Bool
			p.wg.Add(2)
			go p.pipe(up, c, &repl, true)
			go p.pipe(c, up, &repl, false)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *partitionProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *partitionProxy) pipe(dst, src net.Conn, repl *atomic.Bool, sniff bool) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if sniff && bytes.Contains(buf[:n], []byte("PSYNC")) {
				repl.Store(true)
			}
			if !(repl.Load() && p.cut.Load()) {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// admin is a plain client for setting servers up.
func admin(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// eventually polls cond every 50ms until it holds or 30s pass (a bound
// far above what it takes, not a timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func infoField(c *redis.Client, section, field string) string {
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// onlineReplicas is the number of replicas the server at c lists as online.
func onlineReplicas(c *redis.Client) int {
	info, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		return 0
	}
	return strings.Count(info, ",state=online,")
}

// claimer claims fresh keys through one store from a few goroutines,
// recording when each admitted claim was acknowledged.
type claimer struct {
	name   string
	st     *state.Redis
	next   atomic.Int64
	mu     sync.Mutex
	admits map[string]time.Time
	denied atomic.Int64
	notRep atomic.Int64
}

func newClaimer(name string, st *state.Redis) *claimer {
	return &claimer{name: name, st: st, admits: map[string]time.Time{}}
}

func (c *claimer) run(ctx context.Context, wg *sync.WaitGroup) {
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				key := "k" + strconv.FormatInt(c.next.Add(1), 10)
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				claimed, _, err := c.st.Claim(cctx, key, "first", 10*time.Minute)
				cancel()
				switch {
				case err != nil:
					c.denied.Add(1)
					if errors.Is(err, state.ErrNotReplicated) {
						c.notRep.Add(1)
					}
					time.Sleep(2 * time.Millisecond) // a denied client backs off a little
				case claimed:
					c.mu.Lock()
					c.admits[key] = time.Now()
					c.mu.Unlock()
				}
				time.Sleep(time.Millisecond) // a bounded rate: fewer keys to check afterwards

			}
		}()
	}
}

func (c *claimer) admitted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.admits)
}

// admittedAgain claims every admitted key once more, with another value:
// each success is a request the store would admit a second time. It
// returns those keys' first admission times.
func (c *claimer) admittedAgain(t *testing.T) []time.Time {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make(chan string)
	var mu sync.Mutex
	var again []time.Time
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range keys {
				var claimed bool
				var err error
				for try := 0; try < 20; try++ { // the store may still be settling
					if claimed, _, err = c.st.Claim(context.Background(), key, "again", 10*time.Minute); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if err != nil {
					failed.Store(fmt.Errorf("claiming %s again: %w", key, err))
				}
				if claimed {
					mu.Lock()
					again = append(again, c.admits[key])
					mu.Unlock()
				}
			}
		}()
	}
	for key := range c.admits {
		keys <- key
	}
	close(keys)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return again
}

// failoverReport checks and reports one failover: with WAIT nothing is
// admitted twice; without it the lost claims and their window are
// reported (and some must be lost, or the partition did not happen).
func failoverReport(t *testing.T, topology string, waited, unwaited *claimer, cut, paused time.Time) {
	t.Helper()
	if twice := waited.admittedAgain(t); len(twice) > 0 {
		t.Errorf("%s with WAIT: %d of %d admitted claims were admitted again after the failover", topology, len(twice), waited.admitted())
	}
	lost := unwaited.admittedAgain(t)
	if len(lost) == 0 {
		t.Errorf("%s without WAIT: no admitted claim was lost: the partition did not take effect, so the test shows nothing", topology)
		return
	}
	first, last := lost[0], lost[0]
	for _, at := range lost {
		first, last = minTime(first, at), maxTime(last, at)
	}
	t.Logf("%s without WAIT: %d of %d admitted claims lost in the failover and admitted again; replay window: claims acknowledged from %v to %v after the partition (the primary was paused %v after it)",
		topology, len(lost), unwaited.admitted(), first.Sub(cut).Round(time.Millisecond), last.Sub(cut).Round(time.Millisecond), paused.Sub(cut).Round(time.Millisecond))
	t.Logf("%s with WAIT 1: %d admitted, %d denied (%d as not replicated), none admitted twice", topology, waited.admitted(), waited.denied.Load(), waited.notRep.Load())
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestRedisWaitReplicas: with WaitReplicas a claim is admitted once the
// replica acknowledged it; with the replica cut off it is refused
// (ErrNotReplicated) and released, so that it can be claimed once the
// replica is back.
func TestRedisWaitReplicas(t *testing.T) {
	primary := statetest.StartServer(t)
	proxy := startProxy(t, primary.Addr)
	statetest.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(proxy.port()))
	p := admin(t, primary.Addr)
	eventually(t, "replica online", func() bool { return onlineReplicas(p) == 1 })

	// A second of WAIT: the replica on loopback answers within
	// milliseconds, but a loaded CI machine has missed 100 ms; the cut-off
	// claims below each wait this long.
	r, err := state.OpenRedis("redis://"+primary.Addr, state.RedisOptions{Prefix: statetest.Prefix(), WaitReplicas: 1, WaitTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	mustClaim(t, r, "a", "1", true)
	mustClaim(t, r, "a", "1", false) // a retry, the held claim written again and waited for
	proxy.cut.Store(true)
	if _, _, err := r.Claim(ctx, "b", "1", time.Minute); !errors.Is(err, state.ErrNotReplicated) || !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("replica cut off: err = %v, want ErrNotReplicated and ErrUnavailable", err)
	}
	if _, _, err := r.Claim(ctx, "a", "1", time.Minute); !errors.Is(err, state.ErrNotReplicated) {
		t.Fatalf("retry with the replica cut off: err = %v, want ErrNotReplicated", err)
	}
	proxy.cut.Store(false)
	// The replica's link is stale: drop it so that it reconnects.
	if err := p.Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica back", func() bool {
		claimed, _, err := r.Claim(ctx, "b", "1", time.Minute)
		if err == nil && !claimed {
			t.Fatal("the claim refused as not replicated was kept, not released")
		}
		return err == nil && claimed
	})
}

// TestRedisSentinelFailover: a primary, a replica behind a partition proxy
// and a Sentinel. Claims run through two stores, with and without WAIT 1;
// the replica is cut off, the primary paused, Sentinel promotes the
// replica, the old primary comes back as its replica. Nothing admitted
// with WAIT is admitted again; without WAIT the lost claims are counted.
func TestRedisSentinelFailover(t *testing.T) {
	primary := statetest.StartServer(t)
	proxy := startProxy(t, primary.Addr)
	replica := statetest.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(proxy.port()))
	p, r := admin(t, primary.Addr), admin(t, replica.Addr)
	eventually(t, "replica online", func() bool { return onlineReplicas(p) == 1 })
	sentinel := statetest.StartSentinel(t,
		"sentinel monitor m 127.0.0.1 "+strconv.Itoa(primary.Port)+" 1",
		"sentinel down-after-milliseconds m 400",
		"sentinel failover-timeout m 5000",
		"sentinel parallel-syncs m 1")
	s := admin(t, sentinel.Addr)
	eventually(t, "Sentinel knows the replica", func() bool {
		res, err := s.Do(context.Background(), "sentinel", "replicas", "m").Slice()
		return err == nil && len(res) == 1
	})

	url := "redis-sentinel://" + sentinel.Addr + "/m"
	open := func(o state.RedisOptions) *state.Redis {
		o.Prefix = statetest.Prefix()
		st, err := state.OpenRedis(url, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	waited := newClaimer("wait", open(state.RedisOptions{WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond}))
	unwaited := newClaimer("no wait", open(state.RedisOptions{}))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	waited.run(ctx, &wg)
	unwaited.run(ctx, &wg)
	defer func() { stop(); wg.Wait() }()

	eventually(t, "claims admitted", func() bool { return waited.admitted() > 20 && unwaited.admitted() > 20 })
	cut := time.Now()
	proxy.cut.Store(true)
	before := unwaited.admitted()
	eventually(t, "claims admitted on the cut-off primary", func() bool { return unwaited.admitted() > before+50 })
	paused := time.Now()
	primary.Pause()
	eventually(t, "Sentinel promotes the replica", func() bool {
		addr, err := s.Do(context.Background(), "sentinel", "get-master-addr-by-name", "m").StringSlice()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port) && infoField(r, "replication", "role") == "master"
	})
	before = unwaited.admitted()
	eventually(t, "claims admitted on the new primary", func() bool { return unwaited.admitted() > before+20 })
	primary.Resume()
	// Sentinel turns the old primary into a replica once it sees it again,
	// which its 10s INFO period can delay: do what it would do.
	if err := p.ReplicaOf(context.Background(), "127.0.0.1", strconv.Itoa(replica.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "old primary back as a replica", func() bool { return onlineReplicas(r) == 1 })
	before = waited.admitted()
	eventually(t, "WAIT claims admitted again", func() bool { return waited.admitted() > before+20 })
	stop()
	wg.Wait()
	failoverReport(t, "Sentinel", waited, unwaited, cut, paused)
}

// cluster is three primaries (slots in thirds) and one replica of the
// first, whose clients and replica reach it through a partition proxy
// (cluster-announce-port).
type cluster struct {
	primaries []*statetest.Server
	replica   *statetest.Server
	proxy     *partitionProxy
	seed      string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	busPort := map[*statetest.Server]int{}
	node := func() *statetest.Server {
		bus := statetest.FreePort(t)
		s := statetest.StartServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-port", strconv.Itoa(bus))
		busPort[s] = bus
		return s
	}
	// The first primary announces the proxy's port: every client and its
	// replica reach it through the proxy.
	c := &cluster{}
	a := node()
	c.proxy = startProxy(t, a.Addr)
	ctx := context.Background()
	if err := admin(t, a.Addr).ConfigSet(ctx, "cluster-announce-port", strconv.Itoa(c.proxy.port())).Err(); err != nil {
		t.Fatal(err)
	}
	c.primaries = []*statetest.Server{a, node(), node()}
	c.replica = node()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, s := range c.primaries {
		if err := admin(t, s.Addr).Do(ctx, "cluster", "addslotsrange", ranges[i][0], ranges[i][1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	first := admin(t, c.primaries[1].Addr)
	for _, s := range append([]*statetest.Server{c.primaries[0], c.primaries[2]}, c.replica) {
		if err := first.Do(ctx, "cluster", "meet", "127.0.0.1", s.Port, busPort[s]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	aID, err := admin(t, a.Addr).Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatal(err)
	}
	rep := admin(t, c.replica.Addr)
	eventually(t, "replica knows the first primary", func() bool {
		nodes, err := rep.ClusterNodes(ctx).Result()
		return err == nil && strings.Contains(nodes, aID)
	})
	if err := rep.Do(ctx, "cluster", "replicate", aID).Err(); err != nil {
		t.Fatal(err)
	}
	pa := admin(t, a.Addr)
	eventually(t, "replica online", func() bool { return onlineReplicas(pa) == 1 })
	for _, s := range append(c.primaries, c.replica) {
		cl := admin(t, s.Addr)
		eventually(t, "cluster state ok", func() bool { return infoField2(cl) == "ok" })
	}
	c.seed = c.primaries[1].Addr
	return c
}

func infoField2(c *redis.Client) string {
	info, err := c.ClusterInfo(context.Background()).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cluster_state:"); ok {
			return v
		}
	}
	return ""
}

// TestRedisClusterFailover: a three-primary Redis Cluster; the first
// primary's replica is cut off, the primary paused, the replica takes its
// slots, the old primary comes back as its replica. Claims of both stores
// (WAIT 1, none) cover every slot.
func TestRedisClusterFailover(t *testing.T) {
	c := startCluster(t)
	url := "redis-cluster://" + c.seed
	open := func(o state.RedisOptions) *state.Redis {
		o.Prefix = statetest.Prefix()
		st, err := state.OpenRedis(url, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	// Only the first primary has a replica: the WAIT store admits the
	// keys of its slots and refuses the others' (a short wait for those).
	waited := newClaimer("wait", open(state.RedisOptions{WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond}))
	unwaited := newClaimer("no wait", open(state.RedisOptions{}))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	waited.run(ctx, &wg)
	unwaited.run(ctx, &wg)
	defer func() { stop(); wg.Wait() }()

	eventually(t, "claims admitted", func() bool { return waited.admitted() > 20 && unwaited.admitted() > 60 })
	cut := time.Now()
	c.proxy.cut.Store(true)
	before := unwaited.admitted()
	eventually(t, "claims admitted on the cut-off primary", func() bool { return unwaited.admitted() > before+150 })
	paused := time.Now()
	c.primaries[0].Pause()
	rep := admin(t, c.replica.Addr)
	eventually(t, "the replica takes over", func() bool { return infoField(rep, "replication", "role") == "master" })
	c.primaries[0].Resume()
	eventually(t, "old primary back as a replica", func() bool { return onlineReplicas(rep) == 1 })
	before = waited.admitted()
	eventually(t, "WAIT claims admitted again", func() bool { return waited.admitted() > before+20 })
	stop()
	wg.Wait()
	failoverReport(t, "Cluster", waited, unwaited, cut, paused)
}
