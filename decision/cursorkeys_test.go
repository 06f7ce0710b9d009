package decision

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
)

// TestCursorKeys: a key file read by ReadCursorKeys makes a sealer whose
// cursor opens for its binding only, and with a file of the previous key
// after it (rotation); a malformed file or key is an error.
func TestCursorKeys(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	file := func(keys ...[]byte) []byte {
		var b []byte
		b = append(b, "# cursor keys\n\n"...)
		for _, k := range keys {
			b = append(append(b, base64.StdEncoding.EncodeToString(k)...), '\n')
		}
		return b
	}
	sealerOf := func(b []byte) *CursorSealer {
		t.Helper()
		keys, err := ReadCursorKeys(b)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewCursorSealer(keys...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	bind := cursor.Binding{Method: "tools/list", Server: "payments", Principal: "iss alice", PolicyVersion: "v1"}
	sealed, err := sealerOf(file(k1)).Seal(bind, "page-2")
	if err != nil {
		t.Fatal(err)
	}
	if up, err := sealerOf(file(k2, k1)).Open(bind, sealed); err != nil || up != "page-2" {
		t.Fatalf("Open after rotation = %q, %v", up, err)
	}
	other := bind
	other.Principal = "iss bob"
	if _, err := sealerOf(file(k1)).Open(other, sealed); err == nil {
		t.Fatal("a cursor opened for another principal")
	}
	if _, err := sealerOf(file(k2)).Open(bind, sealed); err == nil {
		t.Fatal("a cursor opened without its key")
	}
	tests := []struct {
		name string
		give []byte
	}{
		{"not base64", []byte("not base64!\n")},
		{"a short key", file(bytes.Repeat([]byte{3}, 16))},
		{"no key", []byte("# nothing\n")},
		{"five keys", file(k1, k2, k1, k2, k1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ReadCursorKeys(tt.give)
			if err == nil {
				_, err = NewCursorSealer(keys...)
			}
			if err == nil {
				t.Fatal("a sealer from a bad key file")
			}
		})
	}
}
