package decision

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
)

// write runs m.Write into a map and the order of its keys, failing on a
// key written twice.
func write(t testing.TB, m *Metadata) (map[string]string, []string) {
	t.Helper()
	out := map[string]string{}
	var order []string
	m.Write(func(k, v string) {
		if _, dup := out[k]; dup {
			t.Fatalf("member %s written twice", k)
		}
		out[k] = v
		order = append(order, k)
	})
	if len(order) > MetadataMembers {
		t.Fatalf("%d members written, more than MetadataMembers (%d)", len(order), MetadataMembers)
	}
	return out, order
}

func getter(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// full is metadata with every member set.
var full = Metadata{
	DecisionID: "0123456789abcdef0123456789abcdef", Decision: "allow", Reason: ReasonAllowed, RuleID: "search",
	Method: "tools/call", Server: "payments", Target: "search", ArgsDigest: "sha256:aa", RequestDigest: "sha256:bb",
	PolicyVersion: "sha256:cc", Principal: "alice", Issuer: "https://idp.example.com", Retry: true, RPCID: `"r-1"`,
	ProtocolVersion: "2025-11-25", TaskRequested: true, Session: "s-hash", RecoverKey: "k-hash", Detail: "mcpparse: too_deep at offset 84", DryRun: true, SeamClass: "call",
	Claims: `{"sub":"alice","groups":["eng"]}`,
}

// TestMetadataRoundTrip: what Write writes ParseMetadata reads back as
// it was, member by member, for each reason of the closed set; Write
// writes every member name once, with the names written here by hand
// (the wire's, which Envoy configs and the processor read).
func TestMetadataRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		give Metadata
		want []string // the members written, in order
	}{
		{name: "full", give: full, want: []string{"decision_id", "decision", "reason", "rule_id", "method", "server", "target",
			"args_digest", "request_digest", "policy_version", "principal", "issuer", "retry", "rpc_id", "protocol_version",
			"task_requested", "session", "recover_key", "detail", "dry_run", "seam_class", "claims"}},
		{name: "least", give: Metadata{DecisionID: "d", Decision: "deny", Reason: ReasonTokenMissing}, want: []string{"decision_id",
			"decision", "reason", "rule_id", "method", "server", "target", "args_digest", "request_digest", "policy_version"}},
		{name: "issuer only", give: Metadata{DecisionID: "d", Issuer: "https://idp"}, want: []string{"decision_id",
			"decision", "reason", "rule_id", "method", "server", "target", "args_digest", "request_digest", "policy_version", "principal", "issuer"}},
	}
	for _, r := range Reasons() {
		m := full
		m.Reason, m.Decision = r, r.Verdict().String()
		tests = append(tests, struct {
			name string
			give Metadata
			want []string
		}{name: string(r), give: m, want: tests[0].want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, order := write(t, &tt.give)
			if !reflect.DeepEqual(order, tt.want) {
				t.Errorf("written %v, want %v", order, tt.want)
			}
			got, err := ParseMetadata(getter(w))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.give {
				t.Errorf("ParseMetadata(Write(m)) = %+v, want %+v", got, tt.give)
			}
		})
	}
}

// TestMetadataOf: a decision's metadata, and Write's members from it, as
// Check has always written them.
func TestMetadataOf(t *testing.T) {
	d := &Decision{ID: "d1", Reason: ReasonAuthorizationRequired, RuleID: "big-refunds", Method: "tools/call", Server: "payments",
		Target: "issue_refund", ArgsDigest: "sha256:aa", RequestDigest: "sha256:bb", PolicyVersion: "sha256:cc",
		Principal: &bearer.Principal{Subject: "alice", Issuer: "https://idp"}, RPCID: []byte("7"), ProtocolVersion: "2025-06-18",
		TaskRequested: true, SessionHash: "sh", RecoverResults: true, IdempotencyKeyID: "ik"}
	md := MetadataOf(d, true, "call")
	w, _ := write(t, &md)
	want := map[string]string{"decision_id": "d1", "decision": "ask", "reason": "authorization_required", "rule_id": "big-refunds",
		"method": "tools/call", "server": "payments", "target": "issue_refund", "args_digest": "sha256:aa", "request_digest": "sha256:bb",
		"policy_version": "sha256:cc", "principal": "alice", "issuer": "https://idp", "rpc_id": "7", "protocol_version": "2025-06-18",
		"task_requested": "true", "session": "sh", "dry_run": "true", "seam_class": "call"} // no recover_key: not allowed
	if !reflect.DeepEqual(w, want) {
		t.Errorf("MetadataOf members = %v\nwant %v", w, want)
	}
	d.Reason = ReasonAllowed
	if m := MetadataOf(d, false, ""); m.RecoverKey != "ik" || m.DryRun || m.SeamClass != "" || m.Decision != "allow" {
		t.Errorf("allowed first call: %+v, want recover_key ik", m)
	}
	d.Retry = true
	if m := MetadataOf(d, false, ""); m.RecoverKey != "" || !m.Retry {
		t.Errorf("allowed retry: %+v, want retry and no recover_key", m)
	}
	if m := MetadataOf(&Decision{ID: "x", Reason: ReasonTokenMissing}, false, ""); m.Principal != "" || m.Issuer != "" {
		t.Errorf("no principal: %+v", m)
	}
}

// TestMetadataClaims: the principal's claims go with the requests whose
// answers the seam decides item by item (ClaimsFor), as one JSON object
// that decodes to the claims as the token's verifier decoded them, and
// with no other request.
func TestMetadataClaims(t *testing.T) {
	claims := map[string]any{"sub": "alice", "iss": "https://idp", "groups": []any{"eng", "<ops>"}, "n": 1.5e300, "x": map[string]any{"y": nil}}
	for _, tt := range []struct {
		method string
		want   bool
	}{
		{"tools/list", true}, {"prompts/list", true}, {"resources/list", true}, {"resources/templates/list", true},
		{"tasks/list", true}, {"batch", true}, {"GET", true},
		{"tools/call", false}, {"initialize", false}, {"ping", false}, {"tasks/get", false}, {"DELETE", false},
		{"response", false}, {"roots/list", false}, {"notifications/initialized", false},
	} {
		d := &Decision{ID: "d", Reason: ReasonAllowed, Method: tt.method, Principal: &bearer.Principal{Subject: "alice", Claims: claims}}
		m := MetadataOf(d, false, "")
		if got := m.Claims != ""; got != tt.want {
			t.Errorf("%s: claims written = %v, want %v", tt.method, got, tt.want)
			continue
		}
		if !tt.want {
			continue
		}
		var back map[string]any
		if err := json.Unmarshal([]byte(m.Claims), &back); err != nil || !reflect.DeepEqual(back, claims) {
			t.Errorf("%s: claims %s decode to %v (%v), want %v", tt.method, m.Claims, back, err, claims)
		}
	}
	// A principal whose verifier kept no claims: an empty object.
	if m := MetadataOf(&Decision{ID: "d", Method: "GET", Principal: &bearer.Principal{Subject: "a"}}, false, ""); m.Claims != "{}" {
		t.Errorf("principal without claims: %q, want {}", m.Claims)
	}
	// No principal, no claims; claims JSON cannot encode, none.
	if m := MetadataOf(&Decision{ID: "d", Method: "tools/list"}, false, ""); m.Claims != "" {
		t.Errorf("no principal: claims %q", m.Claims)
	}
	bad := &Decision{ID: "d", Method: "tools/list", Principal: &bearer.Principal{Subject: "a", Claims: map[string]any{"f": func() {}}}}
	if m := MetadataOf(bad, false, ""); m.Claims != "" {
		t.Errorf("unencodable claims: %q", m.Claims)
	}
}

// TestParseMetadataRefuses: metadata Check did not write is refused, with
// ErrNoMetadata when it has no decision id.
func TestParseMetadataRefuses(t *testing.T) {
	tests := []struct {
		name string
		give map[string]string
		want string // "" for ErrNoMetadata, else a part of the error
	}{
		{name: "empty", give: map[string]string{}},
		{name: "no decision id", give: map[string]string{"method": "tools/list", "decision": "allow"}},
		{name: "empty decision id", give: map[string]string{"decision_id": ""}},
		{name: "flag false", give: map[string]string{"decision_id": "d", "task_requested": "false"}, want: "task_requested"},
		{name: "flag TRUE", give: map[string]string{"decision_id": "d", "dry_run": "TRUE"}, want: "dry_run"},
		{name: "flag empty", give: map[string]string{"decision_id": "d", "retry": ""}, want: "retry"},
		{name: "unknown reason", give: map[string]string{"decision_id": "d", "reason": "allowed_maybe"}, want: "reason"},
		{name: "unknown decision", give: map[string]string{"decision_id": "d", "decision": "permit"}, want: "decision"},
		{name: "decision against reason", give: map[string]string{"decision_id": "d", "decision": "allow", "reason": "policy_denied"}, want: "decision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMetadata(getter(tt.give))
			switch {
			case err == nil:
				t.Fatal("accepted")
			case tt.want == "" && !errors.Is(err, ErrNoMetadata):
				t.Errorf("err = %v, want ErrNoMetadata", err)
			case tt.want != "" && (errors.Is(err, ErrNoMetadata) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
	// What a processor needs alone is enough; unknown members are ignored.
	m, err := ParseMetadata(getter(map[string]string{"decision_id": "d", "method": "tools/list", "extra": "x"}))
	if err != nil || m.DecisionID != "d" || m.Method != "tools/list" {
		t.Errorf("minimal metadata: %+v, %v", m, err)
	}
}

// FuzzMetadataRoundTrip: for any member values, ParseMetadata(Write(m))
// is m once m is what Check can write (a reason of the set with its
// verdict, or neither; a decision id).
func FuzzMetadataRoundTrip(f *testing.F) {
	f.Add("d", 0, "r", "m", "s", "t", "a", "q", "v", "p", "i", "1", "2025-11-25", "sh", "rk", "call", `{"sub":"p"}`, uint8(0xff))
	f.Add("d", 3, "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", uint8(0))
	f.Fuzz(func(t *testing.T, id string, reason int, rule, method, server, target, args, req, ver, principal, issuer, rpcID, proto, session, recoverKey, seam, claims string, flags uint8) {
		if id == "" {
			return
		}
		rs := Reasons()
		m := Metadata{DecisionID: id, RuleID: rule, Method: method, Server: server, Target: target, ArgsDigest: args,
			RequestDigest: req, PolicyVersion: ver, Principal: principal, Issuer: issuer, RPCID: rpcID, ProtocolVersion: proto,
			Session: session, RecoverKey: recoverKey, SeamClass: seam, Claims: claims,
			Retry: flags&1 != 0, TaskRequested: flags&2 != 0, DryRun: flags&4 != 0}
		if reason >= 0 && reason < len(rs) {
			m.Reason, m.Decision = rs[reason], rs[reason].Verdict().String()
		}
		w, _ := write(t, &m)
		got, err := ParseMetadata(getter(w))
		if err != nil {
			t.Fatalf("ParseMetadata(Write(%+v)): %v", m, err)
		}
		if got != m {
			t.Fatalf("ParseMetadata(Write(m)) = %+v, want %+v", got, m)
		}
	})
}

// TestShippedConfigsReadWrittenMembers: every member of Check's metadata
// that a shipped Envoy config (envoy/, k8s/: access logs'
// %DYNAMIC_METADATA(ns:key)%, rate limits' metadata_key) or the
// documentation reads is one Write writes.
func TestShippedConfigsReadWrittenMembers(t *testing.T) {
	written, _ := write(t, &full)
	ns := regexp.QuoteMeta(MetadataNamespace)
	refs := []*regexp.Regexp{
		regexp.MustCompile(ns + `:([A-Za-z0-9_]+)\)?%`),
		regexp.MustCompile(`key: *"?` + ns + `"?, *path: *\[ *\{ *key: *"?([A-Za-z0-9_]+)`),
	}
	n := 0
	err := filepath.WalkDir("..", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if name := e.Name(); strings.HasPrefix(name, ".") && p != ".." || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" && ext != ".md" && ext != ".json" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, re := range refs {
			for _, m := range re.FindAllSubmatch(b, -1) {
				n++
				if _, ok := written[string(m[1])]; !ok {
					t.Errorf("%s reads member %q of %s, which Check does not write", p, m[1], MetadataNamespace)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Fatalf("%d references found: the walk is broken", n)
	}
}
