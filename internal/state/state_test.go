package state_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-extauthz/mcp-extauthz/internal/state"
	"github.com/mcp-extauthz/mcp-extauthz/internal/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stores runs f against a Memory store and a real Redis.
func stores(t *testing.T, f func(t *testing.T, s state.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, state.NewMemory(16, nil)) })
	t.Run("redis", func(t *testing.T) {
		r, err := state.NewRedis(statetest.RedisURL(t), statetest.Prefix())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if err := r.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		f(t, r)
	})
}

func TestClaim(t *testing.T) {
	type claim struct {
		key, value  string
		wantClaimed bool
		wantPrev    string
	}
	tests := []struct {
		name string
		give []claim
	}{
		{"first claim wins", []claim{{"k", "a", true, ""}}},
		{"same key again returns the held value", []claim{{"k", "a", true, ""}, {"k", "a", false, "a"}}},
		{"other value does not replace", []claim{{"k", "a", true, ""}, {"k", "b", false, "a"}, {"k", "c", false, "a"}}},
		{"keys are independent", []claim{{"k1", "a", true, ""}, {"k2", "b", true, ""}, {"k1", "x", false, "a"}}},
	}
	stores(t, func(t *testing.T, s state.Store) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := statetest.Prefix() // keys unique per case
				for i, c := range tt.give {
					claimed, prev, err := s.Claim(context.Background(), p+c.key, c.value, time.Minute)
					if err != nil {
						t.Fatalf("claim %d: %v", i, err)
					}
					if claimed != c.wantClaimed || prev != c.wantPrev {
						t.Errorf("claim %d (%s=%s) = %v, %q; want %v, %q", i, c.key, c.value, claimed, prev, c.wantClaimed, c.wantPrev)
					}
				}
			})
		}
	})
}

func TestClaimConcurrentExactlyOneWins(t *testing.T) {
	stores(t, func(t *testing.T, s state.Store) {
		key := statetest.Prefix() + "race"
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				claimed, _, err := s.Claim(context.Background(), key, string(rune('a'+i%26)), time.Minute)
				if err != nil {
					t.Error(err)
				}
				if claimed {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d claims won, want exactly 1", wins.Load())
		}
	})
}

func TestRelease(t *testing.T) {
	stores(t, func(t *testing.T, s state.Store) {
		ctx := context.Background()
		key := statetest.Prefix() + "rel"
		mustClaim(t, s, key, "a", true)
		if err := s.Release(ctx, key, "b"); err != nil { // another value: kept
			t.Fatal(err)
		}
		mustClaim(t, s, key, "c", false)
		if err := s.Release(ctx, key, "a"); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, s, key, "c", true)
	})
}

func mustClaim(t *testing.T, s state.Store, key, value string, want bool) {
	t.Helper()
	claimed, _, err := s.Claim(context.Background(), key, value, time.Minute)
	if err != nil || claimed != want {
		t.Fatalf("Claim(%s, %s) = %v, %v; want %v", key, value, claimed, err, want)
	}
}

func TestMemoryExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := state.NewMemory(2, func() time.Time { return now })
	ctx := context.Background()
	mustClaim(t, m, "a", "1", true)
	mustClaim(t, m, "b", "1", true)
	if _, _, err := m.Claim(ctx, "c", "1", time.Minute); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("full store: err = %v, want ErrUnavailable (never evict a live claim)", err)
	}
	now = now.Add(time.Minute) // a and b expire exactly now
	mustClaim(t, m, "a", "2", true)
	mustClaim(t, m, "c", "1", true)
	if m.Len() != 2 {
		t.Fatalf("Len = %d after purge, want 2", m.Len())
	}
}

func TestRedisExpiry(t *testing.T) {
	r, err := state.NewRedis(statetest.RedisURL(t), statetest.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustClaimTTL := func(want bool) {
		t.Helper()
		claimed, _, err := r.Claim(context.Background(), "k", "v", time.Second)
		if err != nil || claimed != want {
			t.Fatalf("Claim = %v, %v; want %v", claimed, err, want)
		}
	}
	mustClaimTTL(true)
	mustClaimTTL(false)
	time.Sleep(1100 * time.Millisecond) // a 1s TTL: the two claims above never straddle it, even under load
	mustClaimTTL(true)
}

func TestRedisUnavailable(t *testing.T) {
	url, stop := statetest.StartRedis(t)
	r, err := state.NewRedis(url, statetest.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustClaim(t, r, "k", "v", true)
	stop()
	for _, op := range []func() error{
		func() error { _, _, err := r.Claim(context.Background(), "k2", "v", time.Minute); return err },
		func() error { return r.Release(context.Background(), "k", "v") },
		func() error { return r.Ping(context.Background()) },
	} {
		if err := op(); !errors.Is(err, state.ErrUnavailable) {
			t.Errorf("err = %v, want ErrUnavailable", err)
		}
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		give    string
		wantErr bool
	}{
		{"", false}, {"memory", false}, {"redis://127.0.0.1:6379/0", false},
		{"rediss://user:secret@redis.example.com:6380", false}, {"unix:///run/redis.sock", false},
		{"redis-sentinel://s1:26379,s2:26379/mymaster", false}, {"rediss-cluster://n1:7000,n2:7000", false},
		{"http://127.0.0.1", true}, {"redis://user:secret@[bad", true}, {"redis://user:secret@h/0?skip_verify=true", true},
		{"127.0.0.1:6379", true},
	}
	for _, tt := range tests {
		s, err := state.Open(tt.give)
		if (err != nil) != tt.wantErr {
			t.Errorf("Open(%q) err = %v, wantErr %v", tt.give, err, tt.wantErr)
		}
		if err != nil && contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error leaks the password: %v", tt.give, err)
		}
		if s != nil {
			s.Close()
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestOpenWithOptionsRefuses: settings that cannot work together are
// start-up errors, never a store that would fail at the first claim.
func TestOpenWithOptionsRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		giveURL string
		give    state.RedisOptions
		want    string
	}{
		{"Redis settings with memory", "memory", state.RedisOptions{WaitReplicas: 1, WaitTimeout: time.Second}, "need a Redis URL"},
		{"negative replicas", "redis://h", state.RedisOptions{WaitReplicas: -1}, "negative"},
		{"wait without timeout", "redis://h", state.RedisOptions{WaitReplicas: 1}, "timeout of 1ms"},
		{"wait under a millisecond", "redis://h", state.RedisOptions{WaitReplicas: 1, WaitTimeout: time.Microsecond}, "timeout of 1ms"},
		{"two passwords", "redis://h", state.RedisOptions{Password: "a", PasswordFile: empty}, "give one"},
		{"URL password and a file", "redis://u:secret@h", state.RedisOptions{PasswordFile: empty}, "give one"},
		{"password file missing", "redis://h", state.RedisOptions{PasswordFile: filepath.Join(dir, "none")}, "password file"},
		{"password file empty", "redis://h", state.RedisOptions{PasswordFile: empty}, "is empty"},
		{"Sentinel password without Sentinel", "redis://h", state.RedisOptions{SentinelPassword: "a"}, "redis-sentinel://"},
		{"TLS CA on plaintext", "redis://u:secret@h", state.RedisOptions{TLSCAFile: empty}, "rediss scheme"},
		{"client certificate without key", "rediss://h", state.RedisOptions{TLSCertFile: empty}, "both"},
		{"CA file without PEM", "rediss://h", state.RedisOptions{TLSCAFile: empty}, "no PEM"},
		{"client certificate unreadable", "rediss://h", state.RedisOptions{TLSCertFile: empty, TLSKeyFile: empty}, "client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := state.OpenWithOptions(tt.giveURL, tt.give)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("err = %v, want one mentioning %q (and no password)", err, tt.want)
			}
		})
	}
}
