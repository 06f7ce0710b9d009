package state

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Redis topologies a --state-store URL can name.
const (
	redisSingle   = "single"   // one server, or the primary behind a fixed address
	redisSentinel = "sentinel" // Sentinel names the primary (go-redis failover client)
	redisCluster  = "cluster"  // Redis Cluster (go-redis cluster client)
)

// redisTarget is a parsed Redis URL.
type redisTarget struct {
	mode     string
	tls      bool
	network  string   // "tcp" or "unix"
	addrs    []string // host:port; for unix, the socket path
	master   string   // Sentinel: the monitored primary's name
	db       int
	username string
	password string // from the URL; "" when absent
	hasPass  bool
}

// parseRedisURL reads the URL forms of --state-store:
//
//	redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]            one server (rediss:// for TLS)
//	unix://[USER[:PASSWORD]@]/PATH[?db=DB]                 one server on a Unix socket
//	redis-sentinel://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/MASTER[/DB]
//	                                                       Sentinels and the primary's name (rediss-sentinel:// for TLS)
//	redis-cluster://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]
//	                                                       seed nodes of a Redis Cluster (rediss-cluster:// for TLS)
//
// USER and PASSWORD authenticate to the data nodes (Redis 6 ACL; without
// USER, the default user). Ports default to 6379 (26379 for Sentinels).
// Query parameters are refused (but db on unix://): go-redis would read
// retries, timeouts and skip_verify from them, and a retried claim or an
// unverified server breaks single use. Errors never repeat the password.
func parseRedisURL(raw string) (redisTarget, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return redisTarget{}, fmt.Errorf("state store %q: not a URL", redactURL(raw))
	}
	t := redisTarget{network: "tcp", mode: redisSingle}
	defaultPort := "6379"
	switch scheme {
	case "redis", "rediss":
	case "unix":
		t.network = "unix"
	case "redis-sentinel", "rediss-sentinel":
		t.mode, defaultPort = redisSentinel, "26379"
	case "redis-cluster", "rediss-cluster":
		t.mode = redisCluster
	default:
		return redisTarget{}, fmt.Errorf("state store %q: scheme %q is not redis, rediss, unix, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster", redactURL(raw), scheme)
	}
	t.tls = strings.HasPrefix(scheme, "rediss")
	bad := func(why string) (redisTarget, error) {
		return redisTarget{}, fmt.Errorf("state store %q: %s", redactURL(raw), why)
	}

	// User information ends at the last "@", even where a password holds
	// an unescaped "/", "?" or "@".
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		user, pass, hasPass := strings.Cut(rest[:i], ":")
		var err1, err2 error
		t.username, err1 = url.PathUnescape(user)
		t.password, err2 = url.PathUnescape(pass)
		if err1 != nil || err2 != nil {
			return bad("malformed user information")
		}
		t.hasPass = hasPass
		rest = rest[i+1:]
	}
	rest, query, _ := strings.Cut(rest, "?")
	if strings.Contains(rest, "#") || strings.Contains(query, "#") {
		return bad("a fragment is not allowed")
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}

	if t.network == "unix" {
		if authority != "" || strings.TrimSpace(path) == "" {
			return bad("want unix:///path/to/redis.sock")
		}
		p, err := url.PathUnescape(path)
		if err != nil {
			return bad("malformed socket path")
		}
		t.addrs = []string{p}
		if query != "" {
			q, err := url.ParseQuery(query)
			if err != nil || len(q) != 1 || len(q["db"]) != 1 {
				return bad("the only query parameter of unix:// is db")
			}
			if t.db, err = strconv.Atoi(q["db"][0]); err != nil || t.db < 0 {
				return bad("db is not a database number")
			}
		}
		return t, nil
	}
	if query != "" {
		return bad("query parameters are not accepted (timeouts, retries and TLS verification are fixed so that a claim is never retried or sent unverified)")
	}

	hosts := strings.Split(authority, ",")
	if t.mode == redisSingle && len(hosts) > 1 {
		return bad("one host only; several are redis-sentinel:// or redis-cluster://")
	}
	for _, h := range hosts {
		addr, err := hostPort(h, defaultPort)
		if err != nil {
			return bad(err.Error())
		}
		t.addrs = append(t.addrs, addr)
	}

	segs := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	switch t.mode {
	case redisSentinel:
		if len(segs) == 0 {
			return bad("name the primary: redis-sentinel://HOST:PORT/MASTER[/DB]")
		}
		m, err := url.PathUnescape(segs[0])
		if err != nil || m == "" {
			return bad("malformed primary name")
		}
		t.master, segs = m, segs[1:]
	case redisCluster:
		if len(segs) != 0 {
			return bad("a cluster has database 0 only: no path")
		}
	}
	switch len(segs) {
	case 0:
	case 1:
		db, err := strconv.Atoi(segs[0])
		if err != nil || db < 0 {
			return bad("the path is not a database number")
		}
		t.db = db
	default:
		return bad("malformed path")
	}
	return t, nil
}

// hostPort validates HOST[:PORT] (IPv6 in brackets) and adds defaultPort.
func hostPort(s, defaultPort string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("a host is missing")
	}
	host, port := s, defaultPort
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Contains(s, ":") {
		return "", fmt.Errorf("host %q: want HOST:PORT", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("host %q: port is not 1-65535", s)
	}
	if host == "" || strings.ContainsAny(host, " /@[]") {
		return "", fmt.Errorf("host %q: not a host name", s)
	}
	return net.JoinHostPort(host, port), nil
}

// redactURL drops the password of a redis URL for error messages.
func redactURL(s string) string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		rest = s
	}
	head := len(s) - len(rest)
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		return s[:head] + "REDACTED" + s[head+at:]
	}
	return s
}
