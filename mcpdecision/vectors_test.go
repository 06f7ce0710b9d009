package mcpdecision

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// vectorsFile holds the shared test vectors: the signer, this verifier
// and js/mcp-decision's pass every one (docs/digests.md, "Signed decisions").
const vectorsFile = "testdata/vectors.json"

// vectorNow is the clock of every vector (2026-01-01T00:00:00Z).
const vectorNow = 1767225600

// vectorFile is testdata/vectors.json.
type vectorFile struct {
	Comment string          `json:"comment"`
	Keys    json.RawMessage `json:"keys"` // the published key set (JWK Set)
	Vectors []vector        `json:"vectors"`
}

// vector is one case: verify statement (null: no header) for message, the
// JSON-RPC message as the server's JSON parser read it, with audience,
// the clock at now, used ids already in the replay store and, when not
// empty, the accepted policy versions; want is "ok" or a Reason.
type vector struct {
	Name           string          `json:"name"`
	Audience       string          `json:"audience"`
	Now            int64           `json:"now"`
	Used           []string        `json:"used,omitempty"`
	PolicyVersions []string        `json:"policy_versions,omitempty"`
	Statement      *string         `json:"statement"`
	Message        json.RawMessage `json:"message"`
	Want           string          `json:"want"`
	// ArgsJCS is, for vectors whose arguments the service accepts, the
	// RFC 8785 form of params.arguments the service computes from the raw
	// bytes (mcpparse.Canonicalize): the verifier's digest must be its.
	ArgsJCS string `json:"args_jcs,omitempty"`
}

const (
	vAud    = "https://mcp.example.com/mcp"
	vPolicy = "sha256:6f1ed002ab5595859014ebf0951522d9ca5c3be2b1cf0f62cf0b1c6a30e1f5b4"
)

// baseStatement is the statement of a tools/call of search.
func baseStatement(args string) *Statement {
	d, err := digestOfRaw(args)
	if err != nil {
		panic(err)
	}
	return &Statement{
		Issuer: "https://idp.example.com", Subject: "alice", ClientID: "agent-1", Audience: vAud, Server: "payments",
		Method: "tools/call", Target: "search", ArgsDigest: d,
		RequestDigest: "sha256:0b9d1b0c8f2e1d2a0e1d0c6b7f8a9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b5a69",
		ID:            "7d2c4f0e9a8b4c1d8e7f6a5b4c3d2e1f", PolicyVersion: vPolicy, RuleID: "search-anyone",
		IssuedAt: vectorNow - 1, ExpiresAt: vectorNow - 1 + MaxLifetime,
	}
}

// digestOfRaw is the service's arguments digest of raw JSON ("" = absent).
func digestOfRaw(raw string) (string, error) {
	if raw == "" {
		raw = "{}"
	}
	c, err := mcpparse.Canonicalize([]byte(raw), mcpparse.Limits{})
	if err != nil {
		return "", err
	}
	return mcpparse.Digest(c), nil
}

func callMessage(method, params string) json.RawMessage {
	return json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`)
}

// buildVectors makes the vectors with the published test key, a fresh
// ES256 key (published in the vectors' key set), and keys not in it.
func buildVectors(t *testing.T) vectorFile {
	t.Helper()
	testKey := testkit.ReadJWK(t, "../examples/TEST-ONLY-decision-key.jwk.json")
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecKey := jose.JSONWebKey{Key: ec, KeyID: "vector-es256", Algorithm: "ES256", Use: "sig"}
	signer, err := NewSigner([]jose.JSONWebKey{testKey, ecKey})
	if err != nil {
		t.Fatal(err)
	}
	ecSigner, err := NewSigner([]jose.JSONWebKey{ecKey})
	if err != nil {
		t.Fatal(err)
	}
	_, impostor, _ := ed25519.GenerateKey(rand.Reader)
	sameKid, _ := NewSigner([]jose.JSONWebKey{{Key: impostor, KeyID: testKey.KeyID}})
	unknownKid, _ := NewSigner([]jose.JSONWebKey{{Key: impostor, KeyID: "not-published"}})
	sign := func(s *Signer, st *Statement) *string {
		j, err := s.Sign(st)
		if err != nil {
			t.Fatal(err)
		}
		return &j
	}
	with := func(args string, f func(*Statement)) *Statement {
		st := baseStatement(args)
		if f != nil {
			f(st)
		}
		return st
	}
	ok := `{"query":"refunds"}`
	tricky := `{"b":[1,2.5,1e21,1e-7,-3,0.1],"a":{"z":"\u00e9\u20ac","y":"\ud83d\ude00"},"\uff5a":1,"\ud83d\ude00":2,"\u00e9":true,"esc":"\"\\\/\b\f\n\r\t\u0001\u001f\u007f"}`
	hdr := func(h string, payload *Statement) *string { // a hand-made JWS, EdDSA-signed with the test key
		p := base64.RawURLEncoding.EncodeToString(AppendPayload(nil, payload))
		in := base64.RawURLEncoding.EncodeToString([]byte(h)) + "." + p
		sig := ed25519.Sign(testKey.Key.(ed25519.PrivateKey), []byte(in))
		s := in + "." + base64.RawURLEncoding.EncodeToString(sig)
		return &s
	}
	batch := with(ok, func(st *Statement) {
		d2, _ := digestOfRaw(`{"id":"o-1"}`)
		st.Method, st.Target, st.ArgsDigest, st.RuleID = BatchMethod, "", "", ""
		st.Batch = []Element{
			{Method: "tools/call", Target: "search", ArgsDigest: st.ArgsDigest, RequestDigest: "sha256:" + strings.Repeat("1", 64)},
			{Method: "tools/call", Target: "get_order", ArgsDigest: d2, RequestDigest: "sha256:" + strings.Repeat("2", 64)},
		}
		st.Batch[0].ArgsDigest, _ = digestOfRaw(ok)
	})
	ed := func(name string, st *Statement, msg json.RawMessage, want string) vector {
		return vector{Name: name, Audience: vAud, Now: vectorNow, Statement: sign(signer, st), Message: msg, Want: want}
	}
	vs := []vector{
		ed("allowed tools/call", with(ok, nil), callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), "ok"),
		ed("arguments in another order and spacing", with(ok, nil), callMessage("tools/call", `{"arguments": { "query" : "refunds" },"name":"search"}`), "ok"),
		ed("RFC 8785: number forms, UTF-16 key order, escapes", with(tricky, func(st *Statement) {}), callMessage("tools/call", `{"name":"search","arguments":`+tricky+`}`), "ok"),
		ed("no arguments: the digest of {}", with("", nil), callMessage("tools/call", `{"name":"search"}`), "ok"),
		ed("empty arguments: the digest of {}", with("", nil), callMessage("tools/call", `{"name":"search","arguments":{}}`), "ok"),
		ed("prompts/get", with(`{"lang":"en"}`, func(st *Statement) { st.Method, st.Target = "prompts/get", "summary" }),
			callMessage("prompts/get", `{"name":"summary","arguments":{"lang":"en"}}`), "ok"),
		ed("resources/read names the URI", with("", func(st *Statement) { st.Method, st.Target = "resources/read", "file:///ledger/2026.csv" }),
			callMessage("resources/read", `{"uri":"file:///ledger/2026.csv"}`), "ok"),
		ed("completion/complete names the ref", with("", func(st *Statement) { st.Method, st.Target = "completion/complete", "summary" }),
			callMessage("completion/complete", `{"ref":{"type":"ref/prompt","name":"summary"},"argument":{"name":"lang","value":"e"}}`), "ok"),
		ed("subscriptions/listen names its URIs as a JSON array", with("", func(st *Statement) {
			st.Method, st.Target = "subscriptions/listen", `["file:///a","file:///b"]`
		}), callMessage("subscriptions/listen", `{"notifications":{"resourceSubscriptions":["file:///a","file:///b"]}}`), "ok"),
		ed("tools/list", with("", func(st *Statement) { st.Method, st.Target = "tools/list", "" }), callMessage("tools/list", `{}`), "ok"),
		ed("notification", with("", func(st *Statement) { st.Method, st.Target = "notifications/initialized", "" }),
			json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "ok"),
		{Name: "ES256", Audience: vAud, Now: vectorNow, Statement: sign(ecSigner, with(ok, nil)),
			Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: "ok"},
		ed("batch: the first element", batch, callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), "ok"),
		ed("batch: the second element", batch, callMessage("tools/call", `{"name":"get_order","arguments":{"id":"o-1"}}`), "ok"),
		ed("batch: a message no element names", batch, callMessage("tools/call", `{"name":"get_order","arguments":{"id":"o-2"}}`), string(ReasonMismatch)),

		{Name: "no statement", Audience: vAud, Now: vectorNow, Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonMissing)},
		ed("other arguments", with(ok, nil), callMessage("tools/call", `{"name":"search","arguments":{"query":"refunds","limit":1000}}`), string(ReasonMismatch)),
		ed("an argument changed after the decision", with(`{"amount":1}`, func(st *Statement) { st.Target = "refund" }),
			callMessage("tools/call", `{"name":"refund","arguments":{"amount":1000}}`), string(ReasonMismatch)),
		ed("a number read otherwise: 1 vs 1.5", with(`{"amount":1}`, nil), callMessage("tools/call", `{"name":"search","arguments":{"amount":1.5}}`), string(ReasonMismatch)),
		ed("another tool", with(ok, nil), callMessage("tools/call", `{"name":"delete_repo","arguments":`+ok+`}`), string(ReasonMismatch)),
		ed("another method", with("", nil), callMessage("prompts/get", `{"name":"search"}`), string(ReasonMismatch)),
		ed("a case variant of the tool name", with(ok, nil), callMessage("tools/call", `{"name":"Search","arguments":`+ok+`}`), string(ReasonMismatch)),
		ed("another server's audience", with(ok, func(st *Statement) { st.Audience = "https://other.example.com/mcp" }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonWrongAudience)),
		ed("expired", with(ok, func(st *Statement) { st.IssuedAt, st.ExpiresAt = vectorNow-120, vectorNow-60 }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonExpired)),
		ed("expires now", with(ok, func(st *Statement) { st.IssuedAt, st.ExpiresAt = vectorNow-60, vectorNow }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonExpired)),
		ed("issued in the future", with(ok, func(st *Statement) { st.IssuedAt, st.ExpiresAt = vectorNow+10, vectorNow+20 }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonExpired)),
		ed("issued 6 s ahead of the clock", with(ok, func(st *Statement) { st.IssuedAt, st.ExpiresAt = vectorNow+6, vectorNow+66 }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonExpired)),
		ed("issued 5 s ahead of the clock: within the allowed skew", with(ok, func(st *Statement) { st.IssuedAt, st.ExpiresAt = vectorNow+5, vectorNow+65 }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), "ok"),
		ed("lives longer than a minute", with(ok, func(st *Statement) { st.IssuedAt, st.ExpiresAt = vectorNow-1, vectorNow+60 }),
			callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonExpired)),
		func() vector {
			v := ed("replayed", with(ok, nil), callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonReplayed))
			v.Used = []string{baseStatement(ok).ID}
			return v
		}(),
		func() vector {
			v := ed("batch: an element used before", batch, callMessage("tools/call", `{"name":"get_order","arguments":{"id":"o-1"}}`), string(ReasonReplayed))
			v.Used = []string{baseStatement(ok).ID + "/1"}
			return v
		}(),
		func() vector {
			v := ed("another policy version", with(ok, nil), callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), string(ReasonWrongPolicy))
			v.PolicyVersions = []string{"sha256:" + strings.Repeat("0", 64)}
			return v
		}(),
		{Name: "signed by another key under the published kid", Audience: vAud, Now: vectorNow, Statement: sign(sameKid, with(ok, nil)),
			Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonUnverified)},
		{Name: "signed by a key not in the key set", Audience: vAud, Now: vectorNow, Statement: sign(unknownKid, with(ok, nil)),
			Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonUnverified)},
		{Name: "typ JWT: an access token's, not a decision's", Audience: vAud, Now: vectorNow,
			Statement: hdr(`{"alg":"EdDSA","kid":"`+testKey.KeyID+`","typ":"JWT"}`, with(ok, nil)),
			Message:   callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonMalformed)},
		{Name: "no typ", Audience: vAud, Now: vectorNow,
			Statement: hdr(`{"alg":"EdDSA","kid":"`+testKey.KeyID+`"}`, with(ok, nil)),
			Message:   callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonMalformed)},
		{Name: "alg none", Audience: vAud, Now: vectorNow,
			Statement: func() *string {
				s := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"`+testKey.KeyID+`","typ":"mcp-decision+jwt"}`)) + "." +
					base64.RawURLEncoding.EncodeToString(AppendPayload(nil, with(ok, nil))) + "."
				return &s
			}(),
			Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonMalformed)},
		{Name: "not a JWS", Audience: vAud, Now: vectorNow, Statement: func() *string { s := "not-a-jws"; return &s }(),
			Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonMalformed)},
		{Name: "a signature byte flipped", Audience: vAud, Now: vectorNow, Statement: func() *string {
			s := *sign(signer, with(ok, nil))
			i := strings.LastIndexByte(s, '.') + 5
			c := byte('A')
			if s[i] == 'A' {
				c = 'B'
			}
			s = s[:i] + string(c) + s[i+1:]
			return &s
		}(), Message: callMessage("tools/call", `{"name":"search","arguments":`+ok+`}`), Want: string(ReasonUnverified)},
	}
	for i := range vs {
		if vs[i].Want == "ok" {
			if p := paramsArgs(t, vs[i].Message); p != "" {
				c, err := mcpparse.Canonicalize([]byte(p), mcpparse.Limits{})
				if err != nil {
					t.Fatalf("%s: the service refuses the arguments: %v", vs[i].Name, err)
				}
				vs[i].ArgsJCS = string(c)
			}
		}
	}
	keys := signer.PublicKeySet()
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, keys, "", "  ")
	return vectorFile{
		Comment: "mcp-extauthz signed decisions (docs/digests.md, \"Signed decisions\"): verify each statement for message (its params as the server's JSON parser read them) against keys, with audience, the clock at now (Unix seconds), the ids in used already claimed and, when given, only policy_versions accepted; want is ok or the refusal's reason. args_jcs is the RFC 8785 form of the arguments. Regenerate: go test ./mcpdecision -run TestVectors -update",
		Keys:    pretty.Bytes(), Vectors: vs,
	}
}

// paramsArgs returns params.arguments of msg as raw JSON ("" when absent).
func paramsArgs(t *testing.T, msg json.RawMessage) string {
	var m struct {
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	return string(m.Params.Arguments)
}

// runVector verifies one vector with a Verifier set up as it says and
// returns "ok" or the reason.
func runVector(t *testing.T, keys KeySet, v vector) string {
	t.Helper()
	var msg map[string]any
	if err := json.Unmarshal(v.Message, &msg); err != nil {
		t.Fatal(err)
	}
	method, _ := msg["method"].(string)
	params, _ := msg["params"].(map[string]any)
	replay := &MemoryReplay{Now: func() time.Time { return time.Unix(v.Now, 0) }}
	for _, id := range v.Used {
		_, _ = replay.Claim(context.Background(), id, time.Unix(v.Now+MaxLifetime, 0))
	}
	ver := &Verifier{Audience: v.Audience, Keys: keys, Replay: replay, PolicyVersions: v.PolicyVersions,
		Now: func() time.Time { return time.Unix(v.Now, 0) }}
	var values []string
	if v.Statement != nil {
		values = []string{*v.Statement}
	}
	_, err := ver.Verify(context.Background(), values, CallOf(method, params))
	if err == nil {
		return "ok"
	}
	me, ok := err.(*Error)
	if !ok {
		t.Fatalf("%s: %T %v, want *Error", v.Name, err, err)
	}
	return string(me.Reason)
}

func readVectors(t *testing.T) vectorFile {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v (go test ./mcpdecision -run TestVectors -update writes it)", err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestVectors: this verifier gives every vector's verdict, and for every
// accepted vector its arguments digest is the service's (args_jcs, what
// mcpparse.Canonicalize makes of the raw bytes). -update regenerates the
// file (a fresh ES256 key each time).
func TestVectors(t *testing.T) {
	if *testkit.Update {
		f := buildVectors(t)
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := readVectors(t)
	keys, err := StaticKeys(f.Keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) < 30 {
		t.Fatalf("%d vectors", len(f.Vectors))
	}
	reasons := map[string]bool{}
	for _, tt := range f.Vectors {
		t.Run(tt.Name, func(t *testing.T) {
			if got := runVector(t, keys, tt); got != tt.Want {
				t.Errorf("got %s, want %s", got, tt.Want)
			}
			reasons[tt.Want] = true
			if tt.ArgsJCS == "" {
				return
			}
			var msg struct {
				Params struct {
					Arguments any `json:"arguments"`
				} `json:"params"`
			}
			if err := json.Unmarshal(tt.Message, &msg); err != nil {
				t.Fatal(err)
			}
			got, err := ArgumentsDigest(msg.Params.Arguments)
			if want := mcpparse.Digest([]byte(tt.ArgsJCS)); err != nil || got != want {
				t.Errorf("arguments digest %s (%v), the service's %s", got, err, want)
			}
		})
	}
	for _, r := range Reasons() {
		if r != ReasonUnavailable && !reasons[string(r)] {
			t.Errorf("no vector for %s", r)
		}
	}
}

// TestSignerPassesVectors: for every accepted EdDSA vector, the signer
// given the statement's payload writes the vector's JWS byte for byte
// (Ed25519 is deterministic), so the vectors are the signer's output.
func TestSignerPassesVectors(t *testing.T) {
	f := readVectors(t)
	keys, err := ParseKeys(mustRead(t, "../examples/TEST-ONLY-decision-key.jwk.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(keys)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range f.Vectors {
		if v.Want != "ok" || v.Statement == nil || !strings.HasPrefix(*v.Statement, "eyJhbGciOiJFZERTQSI") {
			continue
		}
		parts := strings.Split(*v.Statement, ".")
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		var st Statement
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		got, err := s.Sign(&st)
		if err != nil || got != *v.Statement {
			t.Errorf("%s: signed\n%s\nwant\n%s", v.Name, got, *v.Statement)
		}
		n++
	}
	if n < 10 {
		t.Errorf("%d EdDSA vectors signed, want at least 10", n)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
