package cursor

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func key(c byte) []byte { return bytes.Repeat([]byte{c}, KeySize) }

func mustNew(t testing.TB, keys ...[]byte) *Sealer {
	t.Helper()
	s, err := New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var alice = Binding{Method: "tools/list", Server: "payments", Principal: "alice", PolicyVersion: "v1"}

func TestSealOpen(t *testing.T) {
	s := mustNew(t, key(1))
	sealed, err := s.Seal(alice, "page-2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealed, Prefix) || strings.Contains(sealed, "page-2") {
		t.Fatalf("sealed %q", sealed)
	}
	got, err := s.Open(alice, sealed)
	if err != nil || got != "page-2" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	again, _ := s.Seal(alice, "page-2")
	if again == sealed {
		t.Error("two seals of one cursor are equal: the nonce is not random")
	}
}

func TestOpenRefuses(t *testing.T) {
	s := mustNew(t, key(1))
	sealed, _ := s.Seal(alice, "page-2")
	other := func(f func(*Binding)) Binding { b := alice; f(&b); return b }
	tests := []struct {
		name   string
		b      Binding
		sealed string
	}{
		{"another principal", other(func(b *Binding) { b.Principal = "bob" }), sealed},
		{"another server", other(func(b *Binding) { b.Server = "github" }), sealed},
		{"another method", other(func(b *Binding) { b.Method = "prompts/list" }), sealed},
		{"a policy change", other(func(b *Binding) { b.PolicyVersion = "v2" }), sealed},
		{"the upstream's own cursor", alice, "page-2"},
		{"prefix only", alice, Prefix},
		{"not base64", alice, Prefix + "!!!"},
		{"padded base64", alice, sealed + "=="},
		{"truncated", alice, sealed[:len(sealed)-2]},
		{"one bit flipped", alice, flip(sealed)},
		{"length-prefix confusion", Binding{Method: "tools/list", Server: "paymentsalice", Principal: "", PolicyVersion: "v1"}, sealed},
	}
	for _, tt := range tests {
		if got, err := s.Open(tt.b, tt.sealed); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Open = %q, %v; want ErrInvalid", tt.name, got, err)
		}
	}
	// A Sealer with another key refuses it too.
	if _, err := mustNew(t, key(2)).Open(alice, sealed); !errors.Is(err, ErrInvalid) {
		t.Errorf("another key: %v", err)
	}
}

func flip(s string) string {
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, Prefix))
	raw[len(raw)/2] ^= 1
	return Prefix + base64.RawURLEncoding.EncodeToString(raw)
}

func TestRotation(t *testing.T) {
	old := mustNew(t, key(1))
	sealed, _ := old.Seal(alice, "p")
	rotated := mustNew(t, key(2), key(1))
	if got, err := rotated.Open(alice, sealed); err != nil || got != "p" {
		t.Fatalf("previous key not accepted: %q %v", got, err)
	}
	fresh, _ := rotated.Seal(alice, "p")
	if _, err := old.Open(alice, fresh); !errors.Is(err, ErrInvalid) {
		t.Fatal("the new sealing key is not the first one")
	}
	if _, err := mustNew(t, key(2)).Open(alice, sealed); !errors.Is(err, ErrInvalid) {
		t.Fatal("a dropped key still opens")
	}
}

func TestParseKeyFile(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString(key(1))
	k2 := base64.RawURLEncoding.EncodeToString(key(2))
	s, err := ParseKeyFile([]byte("# cursor keys\n" + k1 + "\n\n" + k2 + "\n"))
	if err != nil || len(s.aeads) != 2 {
		t.Fatalf("%v", err)
	}
	for _, bad := range []string{"", "# only a comment\n", "c2hvcnQ=\n", k1 + "\n" + k1 + "\n" + k1 + "\n" + k1 + "\n" + k1 + "\n"} {
		if _, err := ParseKeyFile([]byte(bad)); err == nil {
			t.Errorf("ParseKeyFile(%q) accepted", bad)
		} else if strings.Contains(err.Error(), k1) {
			t.Errorf("error names the key: %v", err)
		}
	}
	if _, err := New(key(1)[:16]); err == nil {
		t.Error("a 16-byte key accepted")
	}
	if _, err := mustNew(t, key(1)).Seal(alice, strings.Repeat("x", maxCursor+1)); err == nil {
		t.Error("an oversized upstream cursor sealed")
	}
}

func FuzzOpen(f *testing.F) {
	s := mustNew(f, key(1))
	sealed, _ := s.Seal(alice, "page-2")
	f.Add(sealed, "alice")
	f.Add("mcx1.AAAA", "bob")
	f.Fuzz(func(t *testing.T, c, principal string) {
		b := alice
		b.Principal = principal
		got, err := s.Open(b, c)
		// The seed's sealed cursor is made again in every fuzz worker (a new
		// nonce each time), so the oracle is the plaintext and the
		// principal, not the exact bytes: only cursors sealed for alice
		// open for alice, and the only one sealed for her here says page-2.
		if err == nil && (principal != "alice" || got != "page-2") {
			t.Fatalf("Open(%q, %q) = %q: only the issued cursor for alice opens", c, principal, got)
		}
		// Round trip for any upstream cursor and binding.
		sc, err := s.Seal(b, c)
		if err != nil {
			return
		}
		if got, err := s.Open(b, sc); err != nil || got != c {
			t.Fatalf("round trip %q: %q %v", c, got, err)
		}
	})
}

func BenchmarkSealOpen(b *testing.B) {
	s := mustNew(b, key(1))
	b.ReportAllocs()
	for b.Loop() {
		c, _ := s.Seal(alice, "eyJwYWdlIjoyfQ")
		if _, err := s.Open(alice, c); err != nil {
			b.Fatal(err)
		}
	}
}
