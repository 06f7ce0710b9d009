package extauthz

import (
	"runtime"
	"strings"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// maxUnauthAlloc is what one Check may allocate for a request without a
// valid token, whatever its body (issue 7: a request nobody vouched for).
const maxUnauthAlloc = 64 << 10

// unauthBodies are hostile bodies up to the 1 MiB default limit.
func unauthBodies() map[string]string {
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"a":`
	return map[string]string{
		"small":              `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"100k-empty-objects": head + `[` + strings.Repeat(`{},`, 100_000) + `{}]}}}`,
		"deep-nesting":       head + strings.Repeat(`[`, 200_000) + strings.Repeat(`]`, 200_000) + `}}}`,
		"50k-keys":           `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{` + manyArgKeys(50_000) + `}}}`,
		"256KiB-string":      head + `"` + strings.Repeat("x", 256<<10) + `"}}}`,
		"long-tool-name":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("\ufdfa", 87_000) + `"}}`,
		"id-last":            `{"method":"tools/call","params":{"name":"search","arguments":{"a":[` + strings.Repeat(`{},`, 100_000) + `{}]}},"jsonrpc":"2.0","id":99}`,
	}
}

func manyArgKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(itoa(i))
		b.WriteString(`":0`)
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

// unauthRig is a server that verifies tokens against a loopback identity
// provider, and tokens it refuses: none, malformed, signed by another key.
func unauthRig(t testing.TB) (*Server, map[string]string) {
	idp := newTestIdP(t, newTestKey(t, "k1"))
	srv := newTestServer(referencePolicy(t), newDiscoveryVerifier(t, idp), nil)
	return srv, map[string]string{
		"missing":   "",
		"malformed": "Bearer not-a-jwt",
		"foreign":   "Bearer " + newTestKey(t, "other").sign(t, idp.claims()),
	}
}

func unauthRequest(body, authz string) *authv3.CheckRequest {
	c := postReq(body)
	if authz == "" {
		delete(c.Headers, "authorization")
	} else {
		c.Headers["authorization"] = authz
	}
	return c.CheckRequest(true)
}

// TestUnauthenticatedCost: a request without a valid token is denied with
// its id (or null) while allocating at most 64 KiB, whatever its body: no
// strict parse, canonical form or digest is paid for it.
func TestUnauthenticatedCost(t *testing.T) {
	srv, tokens := unauthRig(t)
	for name, body := range unauthBodies() {
		for tname, authz := range tokens {
			t.Run(name+"/"+tname, func(t *testing.T) {
				req := unauthRequest(body, authz)
				resp, _ := srv.Check(t.Context(), req) // warm: key set fetched, pools filled
				d, status := parseDenial(t, resp)
				if status != 401 {
					t.Fatalf("status %d %s", status, d.Error.Data.Reason)
				}
				if want := map[string]string{"id-last": "99", "long-tool-name": "1"}[name]; want == "" && string(d.ID) != "1" || want != "" && string(d.ID) != want {
					t.Errorf("id %s", d.ID)
				}
				const runs = 20
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range runs {
					_, _ = srv.Check(t.Context(), req)
				}
				runtime.ReadMemStats(&after)
				if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > maxUnauthAlloc {
					t.Errorf("%d-byte body: %d bytes allocated per Check, want <= %d", len(body), per, maxUnauthAlloc)
				}
			})
		}
	}
}

// BenchmarkCheckUnauthenticated measures a Check refused for its token
// (signed by an unknown key) per body shape; B/op must stay <= 64 KiB.
func BenchmarkCheckUnauthenticated(b *testing.B) {
	srv, tokens := unauthRig(b)
	bodies := unauthBodies()
	for _, name := range []string{"small", "100k-empty-objects", "deep-nesting", "50k-keys", "256KiB-string"} {
		b.Run(name, func(b *testing.B) {
			req := unauthRequest(bodies[name], tokens["foreign"])
			b.SetBytes(int64(len(bodies[name])))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = srv.Check(b.Context(), req)
			}
		})
	}
}
