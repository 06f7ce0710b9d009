package state

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisKeyPrefix namespaces every key the service writes.
const RedisKeyPrefix = "mcp-extauthz:"

// Timeouts of the Redis client: a Check waits for the store at most this
// long per round trip before it is denied (state_store_unavailable); the
// Check's own gRPC deadline cuts sooner when it is shorter. With
// RedisOptions.WaitReplicas the read timeout grows by WaitTimeout.
const (
	redisDialTimeout = time.Second
	redisIOTimeout   = 500 * time.Millisecond
)

// RedisOptions configure a Redis store beyond its URL. The zero value is a
// store without replication wait, with the URL's credentials and the
// system's CA pool.
type RedisOptions struct {
	// Prefix goes before every key. OpenWithOptions uses RedisKeyPrefix
	// when it is empty; OpenRedis uses it as it is.
	Prefix string

	// Password authenticates to the data nodes (with the URL's user, or
	// the default user), instead of a password in the URL: giving both is
	// an error.
	Password string
	// PasswordFile names a file holding that password (surrounding
	// whitespace trimmed). It is read at open and again for every new
	// connection, so a rotated Kubernetes Secret applies without a
	// restart. Exclusive with Password and the URL's password.
	PasswordFile string
	// SentinelPassword, or SentinelPasswordFile (read at open), is the
	// password of the Sentinels of a redis-sentinel:// URL; neither means
	// the Sentinels are asked without AUTH.
	SentinelPassword     string
	SentinelPasswordFile string

	// TLSCAFile is a PEM bundle the servers' certificates must chain to,
	// instead of the system pool (rediss schemes only).
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are a client certificate chain and its
	// key (PEM), for servers with tls-auth-clients. Read at open and at
	// every new connection's handshake (rotation needs no restart).
	TLSCertFile, TLSKeyFile string
	// TLSServerName is the name the servers' certificates must carry.
	// Empty: the URL's host for redis:// and rediss://, and for Sentinel
	// and Cluster the address each node is reached at (Sentinel and
	// CLUSTER SLOTS give IP addresses, so their certificates then need IP
	// SANs, or set this).
	TLSServerName string

	// WaitReplicas, when positive, makes every claim wait (Redis WAIT)
	// until that many replicas of the primary holding the key acknowledged
	// it. Fewer within WaitTimeout is an error wrapping ErrNotReplicated
	// (and ErrUnavailable), and a claim this call made is released.
	WaitReplicas int
	// WaitTimeout bounds the wait, in whole milliseconds; at least 1ms
	// with WaitReplicas.
	WaitTimeout time.Duration
}

// ErrNotReplicated is wrapped (with ErrUnavailable) by a claim that fewer
// than RedisOptions.WaitReplicas replicas acknowledged in time.
var ErrNotReplicated = errors.New("claim not acknowledged by enough replicas")

// Redis is a Store in Redis 7.0 or later (SET with both NX and GET), shared
// by every replica of the service: one server, a primary found by Sentinel,
// or a Redis Cluster. A claim is one round trip on one key,
// `SET key value NX PX ttl GET`, or with WaitReplicas a script doing the
// same on the key's primary followed by `WAIT n timeout` on the same
// connection. The client never retries a command: a retried SET NX could
// find its own first write and report it as held.
//
// Redis replicates asynchronously: without WaitReplicas, a failover can
// lose a claim the primary acknowledged, and the promoted replica then
// accepts the same key again. WAIT narrows that window to the promotion of
// a replica that had not acknowledged; it does not make Redis strongly
// consistent.
type Redis struct {
	c       redis.UniversalClient
	cluster *redis.ClusterClient // c, when the URL named a cluster
	prefix  string
	wait    int
	waitFor time.Duration
}

var _ Store = (*Redis)(nil)

func init() {
	// go-redis logs dial failures through the standard logger; the caller
	// reports ErrUnavailable instead.
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// NewRedis is OpenRedis with the key prefix only.
func NewRedis(rawURL, prefix string) (*Redis, error) {
	return OpenRedis(rawURL, RedisOptions{Prefix: prefix})
}

// OpenRedis connects lazily to the Redis named by rawURL (the forms of
// parseRedisURL: redis://, rediss://, unix://, redis-sentinel://,
// rediss-sentinel://, redis-cluster://, rediss-cluster://) with o. It
// reads the files o names but does no network I/O; use Ping to check the
// servers. Errors name the setting at fault and never hold a password.
func OpenRedis(rawURL string, o RedisOptions) (*Redis, error) {
	t, err := parseRedisURL(rawURL)
	if err != nil {
		return nil, err
	}
	switch {
	case o.WaitReplicas < 0:
		return nil, errors.New("state store: replicas to wait for must not be negative")
	case o.WaitReplicas > 0 && o.WaitTimeout < time.Millisecond:
		return nil, errors.New("state store: waiting for replicas needs a timeout of 1ms or more (WAIT 0 would block forever)")
	case o.Password != "" && o.PasswordFile != "":
		return nil, errors.New("state store: a password and a password file: give one")
	case t.hasPass && (o.Password != "" || o.PasswordFile != ""):
		return nil, fmt.Errorf("state store %q: a password in the URL and another given apart: give one", redactURL(rawURL))
	case o.SentinelPassword != "" && o.SentinelPasswordFile != "":
		return nil, errors.New("state store: a Sentinel password and a Sentinel password file: give one")
	case t.mode != redisSentinel && (o.SentinelPassword != "" || o.SentinelPasswordFile != ""):
		return nil, errors.New("state store: a Sentinel password needs a redis-sentinel:// URL")
	case !t.tls && (o.TLSCAFile != "" || o.TLSCertFile != "" || o.TLSKeyFile != "" || o.TLSServerName != ""):
		return nil, fmt.Errorf("state store %q: TLS settings need a rediss scheme (rediss://, rediss-sentinel://, rediss-cluster://)", redactURL(rawURL))
	case (o.TLSCertFile == "") != (o.TLSKeyFile == ""):
		return nil, errors.New("state store: a TLS client certificate needs both the certificate and the key file")
	}

	password, credentials := t.password, credentialsFunc(nil)
	if o.Password != "" {
		password = o.Password
	}
	if o.PasswordFile != "" {
		if _, err := readSecretFile(o.PasswordFile); err != nil {
			return nil, err
		}
		user, file := t.username, o.PasswordFile
		credentials = func(context.Context) (string, string, error) {
			p, err := readSecretFile(file)
			return user, p, err
		}
	}
	sentinelPassword := o.SentinelPassword
	if o.SentinelPasswordFile != "" {
		if sentinelPassword, err = readSecretFile(o.SentinelPasswordFile); err != nil {
			return nil, err
		}
	}
	var tc *tls.Config
	if t.tls {
		if tc, err = o.tlsConfig(t); err != nil {
			return nil, err
		}
	}

	readTimeout := redisIOTimeout
	if o.WaitReplicas > 0 {
		readTimeout += o.WaitTimeout // the WAIT reply comes after the wait
	}
	r := &Redis{prefix: o.Prefix, wait: o.WaitReplicas, waitFor: o.WaitTimeout}
	switch t.mode {
	case redisSingle:
		r.c = redis.NewClient(&redis.Options{
			Network: t.network, Addr: t.addrs[0], DB: t.db,
			Username: t.username, Password: password, CredentialsProviderContext: credentials,
			TLSConfig:   tc,
			DialTimeout: redisDialTimeout, ReadTimeout: readTimeout, WriteTimeout: redisIOTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1, // never resend a claim
			DialerRetries:         1, DialerRetryTimeout: 10 * time.Millisecond,
		})
	case redisSentinel:
		r.c = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: t.master, SentinelAddrs: t.addrs, SentinelPassword: sentinelPassword, DB: t.db,
			Username: t.username, Password: password, CredentialsProviderContext: credentials,
			TLSConfig:   tc,
			DialTimeout: redisDialTimeout, ReadTimeout: readTimeout, WriteTimeout: redisIOTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
			DialerRetries:         1, DialerRetryTimeout: 10 * time.Millisecond,
		})
	case redisCluster:
		r.cluster = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:    t.addrs,
			Username: t.username, Password: password, CredentialsProviderContext: credentials,
			TLSConfig:   tc,
			DialTimeout: redisDialTimeout, ReadTimeout: readTimeout, WriteTimeout: redisIOTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
			DialerRetries:         1, DialerRetryTimeout: 10 * time.Millisecond,
		})
		r.c = r.cluster
	}
	return r, nil
}

type credentialsFunc = func(context.Context) (string, string, error)

// readSecretFile reads a password file, trimming the newline editors and
// `kubectl create secret --from-file` leave.
func readSecretFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("state store password file: %w", err)
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", fmt.Errorf("state store password file %s is empty", name)
	}
	return p, nil
}

// tlsConfig builds the client TLS settings of o for t.
func (o RedisOptions) tlsConfig(t redisTarget) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
	if tc.ServerName == "" && t.mode == redisSingle && t.network == "tcp" {
		tc.ServerName = t.addrs[0][:strings.LastIndexByte(t.addrs[0], ':')]
		tc.ServerName = strings.TrimSuffix(strings.TrimPrefix(tc.ServerName, "["), "]")
	}
	if o.TLSCAFile != "" {
		pem, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("state store TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("state store TLS CA file %s: no PEM certificate", o.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	if o.TLSCertFile != "" {
		if _, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("state store TLS client certificate: %w", err)
		}
		cert, key := o.TLSCertFile, o.TLSKeyFile
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("state store TLS client certificate: %w", err)
			}
			return &c, nil
		}
	}
	return tc, nil
}

// Claim implements Store with SET key value NX PX ttl GET: the reply is nil
// when the key was set, else the value held. With WaitReplicas see
// claimReplicated.
func (r *Redis) Claim(ctx context.Context, key, value string, ttl time.Duration) (bool, string, error) {
	if ttl <= 0 {
		return false, "", fmt.Errorf("%w: ttl %v is not positive", ErrUnavailable, ttl)
	}
	ttl = max(ttl, time.Millisecond) // PX takes whole milliseconds, at least 1
	if r.wait > 0 {
		return r.claimReplicated(ctx, r.prefix+key, value, ttl)
	}
	c := r.c
	if r.cluster != nil {
		// The node's own client: the cluster client would resend a
		// command after a timeout, to the same or another node.
		node, err := r.cluster.MasterForKey(ctx, r.prefix+key)
		if err != nil {
			return false, "", fmt.Errorf("%w: redis cluster: %w", ErrUnavailable, err)
		}
		c = node
	}
	prev, err := c.SetArgs(ctx, r.prefix+key, value, redis.SetArgs{Mode: "NX", TTL: ttl, Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return true, "", nil
	case err != nil:
		r.reloadTopology()
		return false, "", fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	return false, prev, nil
}

// claimReplicatedScript is the claim of a replicated store: SET NX GET,
// and when the key already holds this very value (a retry), the same
// value written again, so that the WAIT after it covers the held claim
// too: a replica that acknowledged this connection's write has every
// write the primary made before it, the first claim included.
var claimReplicatedScript = `local prev = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2], "GET")
if prev == ARGV[1] then redis.call("SET", KEYS[1], ARGV[1], "XX", "KEEPTTL") end
return prev`

// claimReplicated claims k on the primary that holds it and, on the same
// connection in the same round trip, waits until r.wait replicas
// acknowledged. Too few in r.waitFor: the claim (if this call made it) is
// released and the error wraps ErrNotReplicated.
func (r *Redis) claimReplicated(ctx context.Context, k, value string, ttl time.Duration) (bool, string, error) {
	var c redis.Cmdable = r.c
	if r.cluster != nil {
		node, err := r.cluster.MasterForKey(ctx, k)
		if err != nil {
			return false, "", fmt.Errorf("%w: redis cluster: %w", ErrUnavailable, err)
		}
		c = node
	}
	// A *redis.Client pipeline writes and reads on one connection: WAIT
	// counts the acknowledgements of the script's writes.
	pipe := c.Pipeline()
	claim := pipe.Eval(ctx, claimReplicatedScript, []string{k}, value, ttl.Milliseconds())
	acks := pipe.Do(ctx, "wait", r.wait, r.waitFor.Milliseconds())
	_, _ = pipe.Exec(ctx) // errors are read per command below
	prev, err := claim.Text()
	claimed := errors.Is(err, redis.Nil)
	if err != nil && !claimed {
		r.reloadTopology()
		return false, "", fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	n, err := acks.Int64()
	if err != nil || n < int64(r.wait) {
		if claimed {
			_ = r.release(ctx, k, value) // best effort: a retry may then claim it again
		}
		if err != nil {
			r.reloadTopology()
			return false, "", fmt.Errorf("%w: %w: redis WAIT: %w", ErrUnavailable, ErrNotReplicated, err)
		}
		return false, "", fmt.Errorf("%w: %w: %d of %d replicas within %v", ErrUnavailable, ErrNotReplicated, n, r.wait, r.waitFor)
	}
	if claimed {
		return true, "", nil
	}
	return false, prev, nil
}

// reloadTopology asks a cluster client to fetch the slot map again (in the
// background), after an error that may mean a failover or a resharding;
// the claims in between are refused rather than redirected.
func (r *Redis) reloadTopology() {
	if r.cluster != nil {
		r.cluster.ReloadState(context.Background())
	}
}

// releaseScript deletes KEYS[1] only while it holds ARGV[1].
var releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// Release implements Store.
func (r *Redis) Release(ctx context.Context, key, value string) error {
	return r.release(ctx, r.prefix+key, value)
}

func (r *Redis) release(ctx context.Context, k, value string) error {
	if err := releaseScript.Run(ctx, r.c, []string{k}, value).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	return nil
}

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	return nil
}

// Close implements Store.
func (r *Redis) Close() error { return r.c.Close() }

// Open returns the store named by spec: "" or "memory" for a Memory store of
// DefaultMemoryCapacity, or a Redis URL (OpenRedis) with RedisKeyPrefix.
func Open(spec string) (Store, error) { return OpenWithOptions(spec, RedisOptions{}) }

// OpenWithOptions is Open with the options of a Redis store; o must be the
// zero value for a Memory store.
func OpenWithOptions(spec string, o RedisOptions) (Store, error) {
	if spec == "" || spec == "memory" {
		if o != (RedisOptions{}) {
			return nil, errors.New("state store memory: the Redis settings (password, TLS, replicas to wait for) need a Redis URL")
		}
		return NewMemory(0, nil), nil
	}
	if !strings.Contains(spec, "://") {
		return nil, fmt.Errorf("state store %q: want memory or a Redis URL (redis://, rediss://, unix://, redis-sentinel://, redis-cluster://)", redactURL(spec))
	}
	if o.Prefix == "" {
		o.Prefix = RedisKeyPrefix
	}
	r, err := OpenRedis(spec, o)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// IsMemory reports whether spec names the Memory store.
func IsMemory(spec string) bool { return spec == "" || spec == "memory" }

// Kind names the store spec selects, for logs (a URL may hold a
// password): memory, redis, redis-sentinel or redis-cluster; "" when spec
// is none of them.
func Kind(spec string) string {
	if IsMemory(spec) {
		return "memory"
	}
	t, err := parseRedisURL(spec)
	if err != nil {
		return ""
	}
	switch t.mode {
	case redisSentinel:
		return "redis-sentinel"
	case redisCluster:
		return "redis-cluster"
	}
	return "redis"
}
