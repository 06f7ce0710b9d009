package state

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRedisURL(t *testing.T) {
	tests := []struct {
		give string
		want redisTarget
	}{
		{"redis://127.0.0.1:6379/0", redisTarget{mode: redisSingle, network: "tcp", addrs: []string{"127.0.0.1:6379"}}},
		{"redis://redis.example.svc", redisTarget{mode: redisSingle, network: "tcp", addrs: []string{"redis.example.svc:6379"}}},
		{"rediss://extauthz:p%40ss@redis.example.com:6380/2", redisTarget{mode: redisSingle, network: "tcp", tls: true, addrs: []string{"redis.example.com:6380"}, db: 2, username: "extauthz", password: "p@ss", hasPass: true}},
		{"redis://:only-password@[::1]:7000", redisTarget{mode: redisSingle, network: "tcp", addrs: []string{"[::1]:7000"}, password: "only-password", hasPass: true}},
		{"redis://u:a/b?c@h:1", redisTarget{mode: redisSingle, network: "tcp", addrs: []string{"h:1"}, username: "u", password: "a/b?c", hasPass: true}},
		{"redis://extauthz@h", redisTarget{mode: redisSingle, network: "tcp", addrs: []string{"h:6379"}, username: "extauthz"}},
		{"unix:///run/redis.sock", redisTarget{mode: redisSingle, network: "unix", addrs: []string{"/run/redis.sock"}}},
		{"unix://u:p@/run/redis.sock?db=3", redisTarget{mode: redisSingle, network: "unix", addrs: []string{"/run/redis.sock"}, db: 3, username: "u", password: "p", hasPass: true}},
		{"redis-sentinel://s1:26379,s2,[::1]:26380/mymaster/1", redisTarget{mode: redisSentinel, network: "tcp", addrs: []string{"s1:26379", "s2:26379", "[::1]:26380"}, master: "mymaster", db: 1}},
		{"rediss-sentinel://extauthz@s1/m", redisTarget{mode: redisSentinel, network: "tcp", tls: true, addrs: []string{"s1:26379"}, master: "m", username: "extauthz"}},
		{"redis-cluster://n1:7000,n2:7001,n3", redisTarget{mode: redisCluster, network: "tcp", addrs: []string{"n1:7000", "n2:7001", "n3:6379"}}},
		{"rediss-cluster://u:p@n1:7000", redisTarget{mode: redisCluster, network: "tcp", tls: true, addrs: []string{"n1:7000"}, username: "u", password: "p", hasPass: true}},
	}
	for _, tt := range tests {
		got, err := parseRedisURL(tt.give)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseRedisURL(%q) = %+v, %v; want %+v", tt.give, got, err, tt.want)
		}
	}
}

func TestParseRedisURLRefuses(t *testing.T) {
	tests := []struct {
		give string
		want string // in the error
	}{
		{"http://127.0.0.1", "scheme"},
		{"redis", "not a URL"},
		{"user:secret@host", "not a URL"},
		{"redis://h:6379/0?skip_verify=true", "query parameters"},
		{"rediss://u:secret@h/0?max_retries=3", "query parameters"},
		{"redis://h1,h2", "one host only"},
		{"redis://h:0", "port"},
		{"redis://h:99999", "port"},
		{"redis://h:x", "port"},
		{"redis://:secret@", "host is missing"},
		{"redis://h/0/1", "malformed path"},
		{"redis://h/x", "database number"},
		{"redis-sentinel://s1,s2", "name the primary"},
		{"redis-sentinel://u:secret@s1,,s2/m", "host is missing"},
		{"redis-cluster://n1/0", "no path"},
		{"unix://host/sock", "unix:///path"},
		{"unix:///sock?db=1&x=2", "only query parameter"},
		{"redis://u:secret@h#frag", "fragment"},
	}
	for _, tt := range tests {
		_, err := parseRedisURL(tt.give)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseRedisURL(%q) err = %v, want one mentioning %q", tt.give, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("parseRedisURL(%q) error repeats the password: %v", tt.give, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ give, want string }{
		{"redis://u:secret@h:1/0", "redis://REDACTED@h:1/0"},
		{"redis://u:se/cr?et@h", "redis://REDACTED@h"},
		{"redis-sentinel://:secret@s1,s2/m", "redis-sentinel://REDACTED@s1,s2/m"},
		{"u:secret@h", "REDACTED@h"},
		{"redis://h:1/0", "redis://h:1/0"},
	}
	for _, tt := range tests {
		if got := redactURL(tt.give); got != tt.want {
			t.Errorf("redactURL(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestKind(t *testing.T) {
	tests := []struct{ give, want string }{
		{"", "memory"}, {"memory", "memory"}, {"redis://u:p@h", "redis"}, {"unix:///s", "redis"},
		{"rediss-sentinel://s/m", "redis-sentinel"}, {"redis-cluster://n1,n2", "redis-cluster"}, {"postgres://x", ""},
	}
	for _, tt := range tests {
		if got := Kind(tt.give); got != tt.want {
			t.Errorf("Kind(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
