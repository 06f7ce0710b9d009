package mcpdecision

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// FuzzVerify: whatever the header value, Verify never panics and returns
// either a statement or an *Error of the closed set; and it admits only a
// JWS whose signed header and payload are byte for byte the ones the
// signer wrote (the oracle: the decoded parts of the seed it came from),
// for the call that statement names.
func FuzzVerify(f *testing.F) {
	keys, err := ParseKeys(mustReadF(f, "../examples/TEST-ONLY-decision-key.jwk.json"))
	if err != nil {
		f.Fatal(err)
	}
	s, err := NewSigner(keys)
	if err != nil {
		f.Fatal(err)
	}
	ks, err := StaticKeys(s.PublicKeySet())
	if err != nil {
		f.Fatal(err)
	}
	st := baseStatement(`{"query":"refunds"}`)
	good, err := s.Sign(st)
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(good, ".")
	wantHeader, _ := base64.RawURLEncoding.DecodeString(parts[0])
	wantPayload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	f.Add(good)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".." + parts[2])
	f.Add("e30.e30.e30")
	f.Add(good + "." + parts[2])
	reasons := map[Reason]bool{}
	for _, r := range Reasons() {
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, jws string) {
		v := &Verifier{Audience: vAud, Keys: ks, Now: func() time.Time { return time.Unix(vectorNow, 0) }}
		got, err := v.Verify(context.Background(), []string{jws}, searchCall)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !reasons[e.Reason] {
				t.Fatalf("error %v (%T) outside the closed set", err, err)
			}
			return
		}
		p := strings.Split(strings.TrimSpace(jws), ".")
		if len(p) != 3 {
			t.Fatalf("admitted %q: not three parts", jws)
		}
		h, err1 := base64.RawURLEncoding.DecodeString(p[0])
		pl, err2 := base64.RawURLEncoding.DecodeString(p[1])
		if err1 != nil || err2 != nil || !bytes.Equal(h, wantHeader) || !bytes.Equal(pl, wantPayload) || got.ID != st.ID {
			t.Fatalf("admitted %q: not what the signer wrote", jws)
		}
	})
}

func mustReadF(f *testing.F, file string) []byte {
	b, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// TestReasonsDocumented: every Reason is a row of the check table of
// docs/digests.md, "The algorithm", and js/mcp-decision lists the same set.
func TestReasonsDocumented(t *testing.T) {
	readme := []byte(testkit.Docs(t, ".."))
	js, err := os.ReadFile("../js/mcp-decision/index.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Reasons() {
		if !bytes.Contains(readme, []byte("| `"+string(r)+"` |")) {
			t.Errorf("README has no row for %s", r)
		}
		if !bytes.Contains(js, []byte("'"+string(r)+"'")) {
			t.Errorf("js/mcp-decision/index.js lacks %s", r)
		}
	}
	if n := bytes.Count(js, []byte(": 'decision_")); n != len(Reasons()) {
		t.Errorf("js/mcp-decision/index.js has %d reasons, Go %d", n, len(Reasons()))
	}
}
