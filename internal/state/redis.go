package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisKeyPrefix namespaces every key the service writes.
const RedisKeyPrefix = "mcp-extauthz:"

// Timeouts of the Redis client: a Check waits for the store at most this
// long per round trip before it is denied (state_store_unavailable); the
// Check's own gRPC deadline cuts sooner when it is shorter.
const (
	redisDialTimeout = time.Second
	redisIOTimeout   = 500 * time.Millisecond
)

// Redis is a Store in a Redis server (7.0 or later: SET with both NX and GET), shared
// by every replica. A claim is one round trip, `SET key value NX PX ttl GET`.
// The client does not retry: a failed command is an error at once.
type Redis struct {
	c      *redis.Client
	prefix string
}

var _ Store = (*Redis)(nil)

func init() {
	// go-redis logs dial failures through the standard logger; the caller
	// reports ErrUnavailable instead.
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// NewRedis connects lazily to the server named by rawURL
// (redis://[user:password@]host:port[/db], rediss:// for TLS, unix://path)
// and puts prefix before every key (RedisKeyPrefix in production; tests
// isolate themselves with their own). It does no I/O; use Ping to check the
// server.
func NewRedis(rawURL, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("state store %q: not a redis URL", redactURL(rawURL)) // err would repeat the password
	}
	opt.DialTimeout = redisDialTimeout
	opt.ReadTimeout = redisIOTimeout
	opt.WriteTimeout = redisIOTimeout
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1 // a retried SET NX could find its own first write
	opt.DialerRetries = 1
	opt.DialerRetryTimeout = 10 * time.Millisecond
	return &Redis{c: redis.NewClient(opt), prefix: prefix}, nil
}

// Claim implements Store with SET key value NX PX ttl GET: the reply is nil
// when the key was set, else the value held.
func (r *Redis) Claim(ctx context.Context, key, value string, ttl time.Duration) (bool, string, error) {
	if ttl <= 0 {
		return false, "", fmt.Errorf("%w: ttl %v is not positive", ErrUnavailable, ttl)
	}
	prev, err := r.c.SetArgs(ctx, r.prefix+key, value, redis.SetArgs{Mode: "NX", TTL: ttl, Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return true, "", nil
	case err != nil:
		return false, "", fmt.Errorf("%w: redis: %w", ErrUnavailable, err)
	}
	return false, prev, nil
}

// releaseScript deletes KEYS[1] only while it holds ARGV[1].
var releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// Release implements Store.
func (r *Redis) Release(ctx context.Context, key, value string) error {
	if err := releaseScript.Run(ctx, r.c, []string{r.prefix + key}, value).Err(); err != nil && !errors.Is(err, redis.Nil) {
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

// redactURL drops the password of a redis URL for error messages.
func redactURL(s string) string {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "://" {
			rest := s[i+3:]
			for j := 0; j < len(rest) && rest[j] != '/'; j++ {
				if rest[j] == '@' {
					return s[:i+3] + "REDACTED" + rest[j:]
				}
			}
			break
		}
	}
	return s
}

// Open returns the store named by spec: "" or "memory" for a Memory store of
// DefaultMemoryCapacity, or a redis://, rediss:// or unix:// URL.
func Open(spec string) (Store, error) {
	switch {
	case spec == "" || spec == "memory":
		return NewMemory(0, nil), nil
	case hasScheme(spec, "redis"), hasScheme(spec, "rediss"), hasScheme(spec, "unix"):
		r, err := NewRedis(spec, RedisKeyPrefix)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("state store %q: want memory or a redis:// URL", redactURL(spec))
}

func hasScheme(s, scheme string) bool {
	return len(s) > len(scheme)+3 && s[:len(scheme)+3] == scheme+"://"
}
